// Response judging page (nugget assignment and citation support): one answer at a time, keyboard first.
// A label key (s/p/n, or f/p/n/x) labels the focused row and moves on; j/k or ↓/↑ move; 1–9 jump to a row; Enter or
// → submits the answer and shows the next; ⌫/u/← go back to the previous answer. Every label is saved at once
// through the one send queue (static/ecast/send.js), and the submit goes through it too, after them.
(function () {
  "use strict";
  const root = document.getElementById("judge");
  if (!root) return;
  const J = window.EcastJudging;
  const data = JSON.parse(document.getElementById("nuggets-data").textContent);
  const $ = (id) => document.getElementById(id);
  const nuggets = data.kind === "nuggets";
  const keyToValue = new Map(data.keys.map((k) => [k.key, k.value]));
  const leaseUrl = (template, lease) => template.replace("/0/", "/" + lease + "/");

  let item = null; // the answer shown: the API's payload
  let progress = null;
  let labels = new Map(); // row id -> label shown (saved, being saved, or the LLM's preselected)
  let focus = 0;
  let busy = false; // waiting for the next answer: keys wait too

  const queue = window.EcastSend.queue({
    url: (key) => {
      if (key === "next") return data.next_url;
      // "done:<lease>" finishes an answer; "<lease>:<row>" labels one row of it.
      if (key.startsWith("done:")) return leaseUrl(data.complete_url, key.split(":")[1]);
      return leaseUrl(data.labels_url, key.split(":")[0]);
    },
    csrf: root.dataset.csrf,
    message: $("message"),
    payload: (key, value) => ({ labels: value }),
    onAnswer: (key, value, result) => {
      if (key !== "next" && !key.startsWith("done:")) return;
      busy = false;
      if (result.ok) show(result.body);
      else if (key === "next") {
        root.hidden = true;  // the answer just finished is not left on screen with live buttons
        $("empty").hidden = false;
        $("empty").querySelector("p").textContent = result.detail;
      }
    },
    onChange: () => renderState(),
  });

  // The rows a person labels: every nugget; the sentences with a citation.
  const judgeable = (row) => nuggets || row.citations.length > 0;
  // A row that must have a label before the answer is done (a cited passage without text cannot be judged).
  const required = (row) => nuggets || (row.citations.length > 0 && row.passage !== null);
  const rows = () => (item ? item.items.filter(judgeable) : []);

  function show(body) {
    progress = body.progress;
    item = body.item;
    $("empty").hidden = !!item;
    root.hidden = !item;
    if (!item) {
      renderState();
      return;
    }
    labels = new Map();
    for (const row of item.items) {
      const value = row.label || row.llm; // post-edit: the LLM's label starts selected
      if (value) labels.set(row.id, value);
    }
    const list = rows();
    const firstOpen = list.findIndex((r) => required(r) && !labels.has(r.id));
    focus = firstOpen >= 0 ? firstOpen : 0;
    renderItem();
    window.scrollTo(0, 0);
  }

  function renderItem() {
    const t = item.turn;
    $("topic-id").textContent = t.topic_id;
    $("turn-id").textContent = t.turn_id;
    // Importers without titles name topics "Topic <id>"; repeating that beside the id is noise.
    const titled = t.title && t.title.toLowerCase() !== ("topic " + t.topic_id).toLowerCase();
    $("topic-title").textContent = titled ? " · " + t.title : "";
    J.renderConversation($("conversation"), item.conversation, t.number);
    $("reference").textContent = t.manual || t.raw;
    if (nuggets) $("answer").textContent = item.response.text;
    const list = $("rows");
    list.innerHTML = "";
    let n = 0;
    for (const row of item.items) {
      const li = document.createElement("li");
      li.dataset.id = row.id;
      const num = document.createElement("span");
      num.className = "num";
      const body = document.createElement("div");
      if (judgeable(row)) {
        n += 1;
        num.textContent = n;
        li.dataset.pos = n - 1;
      }
      if (nuggets) {
        const badge = document.createElement("span");
        badge.className = "badge " + row.importance;
        badge.textContent = row.importance + (row.grade !== null && row.grade !== undefined ? " · grade " + row.grade : "");
        body.append(badge, " ", row.text);
      } else {
        body.appendChild(citationBody(row));
      }
      li.append(num, body, choices(row));
      list.appendChild(li);
    }
    const plural = (n, word) => n + " " + word + (n === 1 ? "" : "s");
    $("row-count").textContent = nuggets
      ? plural(rows().length, "nugget")
      : plural(item.items.length, "sentence") + ", " + rows().length + " with a citation";
    renderState();
  }

  function citationBody(row) {
    const wrap = document.createElement("div");
    wrap.className = "cite-grid";
    const sentence = document.createElement("div");
    sentence.textContent = row.text;
    const passage = document.createElement("div");
    if (!row.citations.length) {
      passage.className = "cite-passage missing";
      passage.textContent = "No citation.";
    } else {
      const head = document.createElement("div");
      head.className = "muted small";
      head.textContent = "Cites " + row.citations[0];
      const text = document.createElement("div");
      text.className = "cite-passage" + (row.passage === null ? " missing" : "");
      text.textContent = row.passage === null ? "The corpus has no text for this passage: it cannot be judged (x if the sentence needs no citation)." : row.passage;
      passage.append(head, text);
      if (row.others.length) {
        const others = document.createElement("details");
        others.className = "others";
        const summary = document.createElement("summary");
        summary.textContent = "Also cites " + row.others.map((o) => o.id).join(", ");
        others.appendChild(summary);
        for (const o of row.others) {
          const p = document.createElement("div");
          p.className = "cite-passage" + (o.text ? "" : " missing");
          p.textContent = o.id + ": " + (o.text || "no text");
          others.appendChild(p);
        }
        passage.appendChild(others);
      }
    }
    wrap.append(sentence, passage);
    return wrap;
  }

  function choices(row) {
    const box = document.createElement("div");
    box.className = "choices";
    if (!judgeable(row)) return box;
    for (const k of data.keys) {
      const b = document.createElement("button");
      b.type = "button";
      b.dataset.value = k.value;
      b.innerHTML = "<kbd></kbd> ";
      b.firstChild.textContent = k.key;
      b.append(k.name);
      b.addEventListener("click", () => {
        focus = rows().indexOf(row);
        label(k.value);
      });
      box.appendChild(b);
    }
    return box;
  }

  function renderState() {
    if (progress) {
      $("progress-text").textContent = progress.done + " of " + progress.total + " answers judged (" + (progress.mine || 0) + " by you)";
      $("progress-bar").style.width = (progress.total ? Math.round((100 * progress.done) / progress.total) : 0) + "%";
    }
    const st = queue.state();
    $("save-state").textContent = busy ? "loading the next answer…" : st.word;
    $("save-state").className = st.word === "not saved" ? "warn" : "muted";
    if (!item) return;
    const list = rows();
    const open = list.filter((r) => required(r) && !labels.has(r.id)).length;
    $("item-pos").textContent = item.turn.turn_id;
    $("item-state").textContent = item.done ? "judged — you are reviewing it" : open ? open + " to label" : "ready to submit";
    $("item-state").className = "badge " + (item.done ? "approved" : open ? "candidate" : "approved");
    for (const li of $("rows").children) {
      const id = Number(li.dataset.id);
      const row = item.items.find((r) => r.id === id);
      li.classList.toggle("focus", li.dataset.pos !== undefined && Number(li.dataset.pos) === focus);
      li.classList.toggle("unneeded", labels.get(id) === "not_needed");
      for (const b of li.querySelectorAll("button[data-value]")) {
        b.classList.toggle("on", labels.get(id) === b.dataset.value);
        b.classList.toggle("llm", !!row.llm && row.llm === b.dataset.value);
        b.classList.toggle("unsaved", labels.get(id) === b.dataset.value && queue.has(item.lease + ":" + id));
        b.title = row.llm === b.dataset.value ? "The LLM's label" : "";
      }
    }
  }

  function label(value) {
    const row = rows()[focus];
    if (!row) return;
    if (!nuggets && row.passage === null && value !== "not_needed") {
      J.showMessage($("message"), "No text for this passage: it cannot be judged (x if the sentence needs no citation).", "warn");
      return;
    }
    labels.set(row.id, value);
    queue.send(item.lease + ":" + row.id, { [row.id]: value });
    if (focus < rows().length - 1) focus += 1;
    renderState();
    const li = $("rows").querySelector('li[data-pos="' + focus + '"]');
    if (li) li.scrollIntoView({ block: "nearest" });
  }

  function submit() {
    const missing = rows().findIndex((r) => required(r) && !labels.has(r.id));
    if (missing >= 0) {
      const left = rows().filter((r) => required(r) && !labels.has(r.id)).length;
      focus = missing;
      J.showMessage($("message"), "Label every " + (nuggets ? "nugget" : "cited sentence") + " first: " + left + " left.", "warn");
      renderState();
      return;
    }
    const all = {};
    for (const r of rows()) if (labels.has(r.id)) all[r.id] = labels.get(r.id);
    busy = true;
    queue.send("done:" + item.lease, all);
  }

  // Reads the previous answer (a GET; every write goes through the send queue).
  async function loadPrevious(url) {
    busy = true;
    renderState();
    const resp = await window.fetch(url, { method: "GET", credentials: "same-origin", headers: { Accept: "application/json" } });
    busy = false;
    const body = await resp.json().catch(() => ({}));
    if (!resp.ok) {
      J.showMessage($("message"), body.detail || "HTTP " + resp.status, "warn");
      renderState();
      return;
    }
    J.showMessage($("message"), "", "muted");
    show(body);
  }

  function back() {
    if (busy) return;
    const before = item ? "?before=" + item.lease : "";
    loadPrevious(data.previous_url + before);
  }

  function moveFocus(delta) {
    focus = Math.max(0, Math.min(rows().length - 1, focus + delta));
    renderState();
    const li = $("rows").querySelector('li[data-pos="' + focus + '"]');
    if (li) li.scrollIntoView({ block: "nearest" });
  }

  document.addEventListener("keydown", (ev) => {
    if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
    const tag = (ev.target && ev.target.tagName) || "";
    if (tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT") return;
    if (ev.key === "?") {
      $("help").hidden = !$("help").hidden;
      return;
    }
    if (ev.key === "Escape") {
      $("help").hidden = true;
      return;
    }
    if (busy) return;
    if (ev.key === "Backspace" || ev.key === "u" || ev.key === "ArrowLeft") {
      ev.preventDefault();
      back();
      return;
    }
    if (!item) return;
    if (keyToValue.has(ev.key)) {
      label(keyToValue.get(ev.key));
    } else if (ev.key === "j" || ev.key === "ArrowDown") {
      ev.preventDefault();
      moveFocus(1);
    } else if (ev.key === "k" || ev.key === "ArrowUp") {
      ev.preventDefault();
      moveFocus(-1);
    } else if (/^[1-9]$/.test(ev.key)) {
      moveFocus(Number(ev.key) - 1 - focus);
    } else if (ev.key === "Enter" || ev.key === "ArrowRight") {
      ev.preventDefault();
      submit();
    }
  });
  $("back").addEventListener("click", back);
  $("next").addEventListener("click", submit);
  $("help-toggle").addEventListener("click", () => {
    $("help").hidden = !$("help").hidden;
  });
  // The assessor's current answer, or a lease on the next free one.
  busy = true;
  queue.send("next", {});
})();
