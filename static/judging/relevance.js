// Relevance judging page: one passage at a time, keyboard first.
// Grades are sent as they are typed; each send is retried until the server confirms it, so a flaky network
// never loses a label, and the server stores a repeated identical submit only once.
(function () {
  "use strict";
  const root = document.getElementById("judge");
  if (!root) return;
  const J = window.EcastJudging;
  const data = JSON.parse(document.getElementById("relevance-data").textContent);
  const pairs = data.pairs;
  const turns = data.turns;
  const csrf = root.dataset.csrf;
  const $ = (id) => document.getElementById(id);
  let total = data.progress.total;
  // Adaptive pools (move-to-front, MM-NS): the server picks the next pair from the judgments so far, so after a
  // grade the page waits for its answer (the topic's queue) before showing the next passage.
  const ordered = !!data.ordered;
  let waiting = null; // pair id whose confirmation decides what comes next
  let index = firstUngraded(0);
  if (index < 0) index = 0;

  function firstUngraded(from) {
    for (let i = from; i < pairs.length; i++) if (pairs[i].grade === null || pairs[i].grade === undefined) return i;
    for (let i = 0; i < from; i++) if (pairs[i].grade === null || pairs[i].grade === undefined) return i;
    return -1;
  }

  function judgedCount() {
    return pairs.filter((p) => p.grade !== null && p.grade !== undefined).length;
  }

  function applyQueue(queue) {
    const byId = new Map(pairs.map((p) => [p.id, p]));
    const graded = (p) => p.grade !== null && p.grade !== undefined;
    const done = pairs.filter(graded);
    const rest = queue.map((id) => byId.get(id)).filter((p) => p && !graded(p));
    const seen = new Set(done.concat(rest).map((p) => p.id));
    const left = pairs.filter((p) => !seen.has(p.id));
    pairs.splice(0, pairs.length, ...done, ...rest, ...left);
  }

  function renderProgress() {
    J.renderProgress(judgedCount(), total, pending.size());
  }

  function renderConversation(pair) {
    const current = J.renderConversation($("conversation"), turns, pair.turn_number);
    $("reference").textContent = current ? current.manual || current.raw : "";
    // PTKB statements the current turn's response used: highlighted in the list and repeated under the reference.
    const cited = new Set(current && current.ptkb_provenance ? current.ptkb_provenance.map(String) : []);
    const used = [];
    for (const li of document.querySelectorAll("#ptkb-list li")) {
      li.classList.toggle("ptkb-cited", cited.has(li.dataset.number));
      if (cited.has(li.dataset.number)) used.push(li.dataset.number + ". " + li.textContent);
    }
    const line = $("ptkb-current");
    if (line) {
      line.hidden = !used.length;
      line.textContent = used.length ? "About the user, relied on for this turn: " + used.join(" · ") : "";
    }
  }

  function render() {
    const pair = pairs[index];
    $("pair-pos").textContent = index + 1 + " of " + pairs.length;
    $("pair-turn").textContent = pair.turn_id;
    $("pair-id").textContent = pair.passage_id;
    const passage = $("passage");
    passage.textContent = pair.text || "No text is stored for this passage; judge it from the corpus by its id.";
    passage.classList.toggle("missing", !pair.text);
    const note = $("cluster-note");
    note.hidden = !(pair.cluster_size > 1);
    note.textContent = "This grade also covers " + (pair.cluster_size - 1) + " near-duplicate passage(s).";
    for (const b of document.querySelectorAll(".grade-btn")) {
      b.classList.toggle("selected", String(pair.grade) === b.dataset.grade);
      b.classList.toggle("unsaved", pending.has(pair.id) && String(pending.get(pair.id)) === b.dataset.grade);
    }
    renderConversation(pair);
    renderProgress();
    const done = $("done");
    const finishing = done.hidden && firstUngraded(0) < 0;
    done.hidden = firstUngraded(0) >= 0;
    // The last grade shows the card below the item: bring it into view rather than leave it under the fold.
    if (finishing) done.scrollIntoView({ block: "nearest" });
  }

  // Grades not yet confirmed, per pair id, sent in typing order (static/ecast/send.js).
  const pending = window.EcastSend.queue({
    url: data.submit_url,
    csrf: csrf,
    message: $("message"),
    payload: (pairId, grade) => ({ pair: pairId, grade: grade }),
    onAnswer: (pairId, grade, result) => {
      if (!result.ok) {
        if (waiting === pairId) waiting = null;
        return;
      }
      total = result.body.progress.total;
      if (ordered && result.body.queue) {
        applyQueue(result.body.queue);
        if (waiting === pairId) {
          waiting = null;
          const next = firstUngraded(0);
          index = next >= 0 ? next : pairs.length - 1;
        }
      }
    },
    onChange: () => render(),
  });

  function grade(g) {
    if (waiting !== null) return; // the next passage is still being chosen
    const pair = pairs[index];
    const unchanged = pair.grade === g && !pending.has(pair.id);
    pair.grade = g;
    if (!unchanged) {
      if (ordered) {
        waiting = pair.id;
        $("message").textContent = "Choosing the next passage…";
        $("message").className = "muted";
      }
      pending.send(pair.id, g);
      if (ordered) return render();
    }
    const next = firstUngraded(index + 1);
    if (next >= 0) index = next;
    else if (index < pairs.length - 1) index += 1;
    render();
  }

  function move(delta) {
    index = Math.max(0, Math.min(pairs.length - 1, index + delta));
    render();
  }

  J.bindNavigation({
    move: move,
    onKey: (ev) => {
      if (ev.key < "0" || ev.key > "4") return false;
      ev.preventDefault();
      if (!ev.repeat) grade(Number(ev.key));
      return true;
    },
  });
  for (const b of document.querySelectorAll(".grade-btn")) {
    b.addEventListener("click", () => grade(Number(b.dataset.grade)));
  }
  render();
})();
