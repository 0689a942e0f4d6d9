// Adjudication page: one disagreement between versions A and B at a time, keyboard first. 0–4 set the final grade,
// a/b take A's or B's, u/⌫ take back the last decision; every decision goes through the one send queue
// (static/ecast/send.js), so a flaky network never loses one and a repeat is stored once.
(function () {
  "use strict";
  const root = document.getElementById("adjudicate");
  if (!root) return;
  const J = window.EcastJudging;
  const data = JSON.parse(document.getElementById("adjudication-data").textContent);
  const items = data.items;
  const names = data.grade_names;
  const $ = (id) => document.getElementById(id);
  const decided = (it) => it.grade !== null && it.grade !== undefined;
  // The server's count when the page loaded covers none of this batch (it holds waiting items only), so the count
  // shown is that plus this page's decisions, until an answer with nothing else pending brings the server's own.
  let serverDone = data.progress.done;
  let total = data.progress.total;
  let base = serverDone;
  const decisions = []; // indexes in decision order, for undo
  let index = 0;
  const allowed = new Set(Array.from(document.querySelectorAll(".grade-btn")).map((b) => Number(b.dataset.grade)));

  function doneCount() {
    return base + items.filter(decided).length;
  }

  function firstWaiting(from) {
    for (let i = from; i < items.length; i++) if (!decided(items[i])) return i;
    for (let i = 0; i < from; i++) if (!decided(items[i])) return i;
    return -1;
  }

  function gradeText(g) {
    return g + " — " + (names[String(g)] || "");
  }

  function renderProgress() {
    const done = doneCount();
    $("progress-text").textContent = done + " of " + total + " adjudicated";
    $("progress-bar").style.width = (total ? Math.round((100 * done) / total) : 0) + "%";
    const state = pending.state();
    $("save-state").textContent = state.pending ? state.pending + " unsaved…" : state.word;
    $("save-state").className = state.pending || state.refused ? "warn" : "muted";
  }

  function render() {
    const it = items[index];
    const ctx = data.conversations[String(it.conversation)] || { turns: [] };
    const current = J.renderConversation($("conversation"), ctx.turns, it.turn_number);
    $("reference").textContent = current ? current.manual || current.raw : "";
    $("task-description-box").hidden = !ctx.description;
    $("task-description").textContent = ctx.description || "";
    $("item-pos").textContent = index + 1 + " of " + items.length + " on this page";
    $("item-topic").textContent = it.topic_id;
    $("item-turn").textContent = it.turn_id;
    $("item-passage").textContent = it.passage_id;
    const passage = $("passage");
    passage.textContent = it.text || "No text is stored for this passage; judge it from the corpus by its id.";
    passage.classList.toggle("missing", !it.text);
    $("label-a").textContent = gradeText(it.a);
    $("label-b").textContent = gradeText(it.b);
    $("label-final").textContent = decided(it) ? gradeText(it.grade) : "not set";
    $("label-final").className = decided(it) ? "" : "muted";
    for (const b of document.querySelectorAll(".grade-btn")) {
      const g = Number(b.dataset.grade);
      b.classList.toggle("selected", it.grade === g);
      b.classList.toggle("unsaved", pending.has(it.id) && pending.get(it.id) === g);
      b.querySelector(".who").textContent = [g === it.a ? "A" : "", g === it.b ? "B" : ""].filter(Boolean).join(" ");
    }
    renderProgress();
    const finished = firstWaiting(0) < 0;
    $("done").hidden = !finished;
    $("all-done").hidden = doneCount() < total;
    $("batch-more").hidden = doneCount() >= total;
    $("done-title").textContent = doneCount() >= total ? "All " + total + " disagreements adjudicated" : "This batch is adjudicated";
  }

  const pending = window.EcastSend.queue({
    url: data.submit_url,
    message: $("message"),
    payload: (itemId, grade) => ({ item: itemId, grade: grade }),
    onAnswer: (itemId, grade, result) => {
      if (!result.ok) return;
      total = result.body.progress.total;
      serverDone = result.body.progress.done;
      // With nothing else on its way, the server's count is the truth (another adjudicator may have worked too).
      if (pending.size() === 0) base = serverDone - items.filter(decided).length;
    },
    onChange: () => render(),
  });

  function decide(g) {
    const it = items[index];
    if (it.grade !== g || pending.has(it.id)) {
      it.grade = g;
      pending.send(it.id, g);
    }
    decisions.push(index);
    const next = firstWaiting(index + 1);
    if (next >= 0) index = next;
    render();
  }

  function undo() {
    const at = decisions.pop();
    if (at === undefined) return;
    const it = items[at];
    it.grade = null;
    pending.send(it.id, null);
    index = at;
    render();
  }

  function move(delta) {
    index = Math.max(0, Math.min(items.length - 1, index + delta));
    render();
  }

  J.bindNavigation({
    move: move,
    onKey: (ev) => {
      if (ev.repeat) return ev.key.length === 1;
      if (ev.key >= "0" && ev.key <= "9") {
        ev.preventDefault();
        // Binary versions (PTKB statements, crowd labels) offer 0 and 1 only: other digits are not grades here.
        if (allowed.has(Number(ev.key))) decide(Number(ev.key));
        else J.showMessage($("message"), "Grades here: " + Array.from(allowed).sort().join(", "), "warn");
        return true;
      }
      if (ev.key === "a" || ev.key === "b") {
        decide(items[index][ev.key]);
        return true;
      }
      if (ev.key === "u" || ev.key === "Backspace") {
        ev.preventDefault();
        undo();
        return true;
      }
      return false;
    },
  });
  for (const b of document.querySelectorAll(".grade-btn")) b.addEventListener("click", () => decide(Number(b.dataset.grade)));
  $("take-a").addEventListener("click", () => decide(items[index].a));
  $("take-b").addEventListener("click", () => decide(items[index].b));
  $("undo").addEventListener("click", undo);
  render();
})();
