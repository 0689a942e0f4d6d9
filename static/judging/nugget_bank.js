// Nugget bank editor for one turn: select a span of a relevant passage and press a (or the button) to add it as a
// nugget; j/k move between nuggets, v toggles vital/okay, e edits, d deletes, m then m merges a duplicate into the
// nugget to keep. Every write goes through the one send queue (static/ecast/send.js); each answer carries the turn's
// nuggets, which the list is redrawn from.
(function () {
  "use strict";
  const root = document.getElementById("bank-turn");
  if (!root) return;
  const data = JSON.parse(document.getElementById("bank-data").textContent);
  const $ = (id) => document.getElementById(id);
  const idUrl = (template, id) => template.replace("/0/", "/" + id + "/");
  let nuggets = data.nuggets;
  let focus = 0;
  let picked = null; // the duplicate chosen with m, waiting for the nugget to keep
  let editing = null;
  let added = 0;

  const queue = window.EcastSend.queue({
    url: (key) => {
      const [op, id] = key.split(":");
      if (op === "add") return data.add_url;
      return idUrl({ edit: data.edit_url, del: data.delete_url, merge: data.merge_url }[op], id);
    },
    csrf: root.dataset.csrf,
    message: $("message"),
    payload: (key, value) => value,
    onAnswer: (key, value, result) => {
      if (!result.ok || !result.body || !result.body.nuggets) return;
      nuggets = result.body.nuggets;
      if (key.startsWith("add:")) focus = Math.max(0, nuggets.findIndex((n) => n.id === result.body.id));
      render();
    },
    onChange: () => {
      const st = queue.state();
      $("save-state").textContent = st.word;
      $("save-state").className = st.word === "not saved" ? "warn" : "muted";
    },
  });

  const live = () => nuggets.filter((n) => !n.merged_into);

  function render() {
    const list = $("nuggets");
    list.innerHTML = "";
    focus = Math.max(0, Math.min(focus, nuggets.length - 1));
    nuggets.forEach((n, i) => {
      const li = document.createElement("li");
      li.dataset.id = n.id;
      li.classList.toggle("focus", i === focus);
      li.classList.toggle("merged", !!n.merged_into);
      li.classList.toggle("picked", picked === n.id);
      const num = document.createElement("span");
      num.className = "num";
      num.textContent = i + 1;
      const body = document.createElement("div");
      if (editing === n.id) {
        const area = document.createElement("textarea");
        area.id = "edit-text";
        area.value = n.text;
        area.addEventListener("keydown", (ev) => {
          if (ev.key === "Enter" && !ev.shiftKey) {
            ev.preventDefault();
            editing = null;
            queue.send("edit:" + n.id, { text: area.value });
            n.text = area.value;
            render();
          } else if (ev.key === "Escape") {
            editing = null;
            render();
          }
        });
        body.appendChild(area);
        setTimeout(() => area.focus(), 0);
      } else {
        const badge = document.createElement("span");
        badge.className = "badge " + n.importance;
        badge.textContent = n.importance + (n.grade !== null ? " · grade " + n.grade : "");
        const origin = document.createElement("span");
        origin.className = "muted small";
        const merged = n.merged_into ? " · merged into " + (nuggets.findIndex((m) => m.id === n.merged_into) + 1) : "";
        origin.textContent = " " + n.origin + (n.labels ? " · " + n.labels + " labels" : "") + merged;
        body.append(badge, " ", n.text, origin);
      }
      const actions = document.createElement("div");
      actions.className = "choices";
      for (const [label, fn] of [["v", () => toggleImportance(n)], ["e", () => startEdit(n)], ["m", () => merge(n)], ["d", () => remove(n)]]) {
        const b = document.createElement("button");
        b.type = "button";
        b.innerHTML = "<kbd></kbd> ";
        b.firstChild.textContent = label;
        b.append({ v: n.importance === "vital" ? "okay" : "vital", e: "edit", m: picked === null ? "merge" : picked === n.id ? "cancel" : "keep this", d: "delete" }[label]);
        b.addEventListener("click", () => {
          focus = i;
          fn();
        });
        actions.appendChild(b);
      }
      li.append(num, body, actions);
      list.appendChild(li);
    });
    const vital = live().filter((n) => n.importance === "vital").length;
    $("nugget-count").textContent = live().length + " nuggets (" + vital + " vital)";
  }

  function current() {
    return nuggets[focus];
  }

  function toggleImportance(n) {
    n.importance = n.importance === "vital" ? "okay" : "vital";
    queue.send("edit:" + n.id, { importance: n.importance });
    render();
  }

  function startEdit(n) {
    editing = n.id;
    render();
  }

  function merge(n) {
    if (picked === null) {
      picked = n.id;
      window.EcastSend.showMessage($("message"), "Now press m on the nugget to keep.", "muted");
    } else if (picked === n.id) {
      picked = null;
      window.EcastSend.showMessage($("message"), "", "muted");
    } else {
      queue.send("merge:" + picked, { into: n.id });
      picked = null;
      window.EcastSend.showMessage($("message"), "", "muted");
    }
    render();
  }

  function remove(n) {
    if (!window.confirm("Delete this nugget?\n\n" + n.text)) return;
    queue.send("del:" + n.id, {});
  }

  function add(text, passages) {
    text = text.trim();
    if (!text) return;
    added += 1;
    queue.send("add:" + added, { text: text, importance: "okay", source_passages: passages });
  }

  function selection() {
    const sel = window.getSelection();
    if (!sel || sel.isCollapsed || !sel.rangeCount) return null;
    const card = (node) => node && (node.nodeType === 1 ? node : node.parentElement).closest("[data-passage]");
    const from = card(sel.anchorNode);
    const to = card(sel.focusNode);
    if (!from) return null;
    const ids = [from.dataset.passage];
    if (to && to !== from) ids.push(to.dataset.passage);
    return { text: sel.toString(), passages: ids };
  }

  function addSelection() {
    const s = selection();
    if (!s) return;
    add(s.text, s.passages);
    window.getSelection().removeAllRanges();
    updateSelection();
  }

  function updateSelection() {
    const s = selection();
    $("add-selection").disabled = !s;
    $("selection-note").textContent = s ? "“" + (s.text.length > 80 ? s.text.slice(0, 80) + "…" : s.text) + "”" : "Select a span of a passage below.";
  }

  document.addEventListener("selectionchange", updateSelection);
  $("add-selection").addEventListener("mousedown", (ev) => ev.preventDefault()); // keep the selection
  $("add-selection").addEventListener("click", addSelection);
  $("add-typed").addEventListener("click", () => {
    add($("new-text").value, []);
    $("new-text").value = "";
  });
  $("new-text").addEventListener("keydown", (ev) => {
    if (ev.key === "Enter" && !ev.shiftKey) {
      ev.preventDefault();
      add($("new-text").value, []);
      $("new-text").value = "";
    } else if (ev.key === "Escape") {
      $("new-text").blur();
    }
  });

  document.addEventListener("keydown", (ev) => {
    if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
    const tag = (ev.target && ev.target.tagName) || "";
    if (tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT") return;
    const n = current();
    if (ev.key === "a") addSelection();
    else if (ev.key === "n") {
      ev.preventDefault();
      $("new-text").focus();
    } else if (ev.key === "j" || ev.key === "ArrowDown") {
      ev.preventDefault();
      focus = Math.min(nuggets.length - 1, focus + 1);
      render();
    } else if (ev.key === "k" || ev.key === "ArrowUp") {
      ev.preventDefault();
      focus = Math.max(0, focus - 1);
      render();
    } else if (!n) {
      return;
    } else if (ev.key === "v") toggleImportance(n);
    else if (ev.key === "e") {
      ev.preventDefault();
      startEdit(n);
    } else if (ev.key === "m") merge(n);
    else if (ev.key === "d" || ev.key === "Delete") remove(n);
  });
  render();
})();
