// PTKB assessment page: which of the user's statements matter for each turn, a turn at a time, keyboard first.
// Number keys toggle statements, Enter submits the turn (unmarked = not relevant), Backspace/u goes back. Submits
// are sent one at a time in order and retried until the server confirms them, so a flaky network loses nothing.
(function () {
  "use strict";
  const root = document.getElementById("ptkb-judge");
  if (!root) return;
  const J = window.EcastJudging;
  const data = JSON.parse(document.getElementById("ptkb-data").textContent);
  const items = data.items;
  const turns = data.turns;
  const csrf = root.dataset.csrf;
  const $ = (id) => document.getElementById(id);
  const rows = Array.from(document.querySelectorAll("#statements li"));
  const numbers = rows.map((li) => Number(li.dataset.number));
  const maxNumber = Math.max(...numbers);
  // Marks being edited, per turn: start from what the server has.
  const marks = items.map((it) => new Set(it.relevant));
  // Submitted marks not yet confirmed, per turn index, sent in order (static/ecast/send.js).
  const queue = window.EcastSend.queue({
    url: data.submit_url,
    csrf: csrf,
    message: $("message"),
    payload: (i, relevant) => ({ turn: items[i].turn_id, relevant: relevant }),
    onAnswer: (i, relevant, result) => {
      if (!result.ok) return;
      items[i].done = true;
      items[i].relevant = relevant;
    },
    onChange: () => render(),
  });
  let index = firstUndone(0);
  if (index < 0) index = 0;
  let cursor = 0;
  let buffer = "";
  const commitLater = window.EcastDebounce.debounce(commitBuffer, 700);

  function firstUndone(from) {
    for (let i = from; i < items.length; i++) if (!items[i].done) return i;
    for (let i = 0; i < from; i++) if (!items[i].done) return i;
    return -1;
  }

  function renderConversation(item) {
    const current = J.renderConversation($("conversation"), turns, item.turn_number) || {};
    $("utterance").textContent = current.raw || "";
    $("resolved").textContent = current.manual || "(no resolved utterance)";
  }

  function render() {
    const item = items[index];
    $("turn-pos").textContent = index + 1 + " of " + items.length;
    $("turn-id").textContent = item.turn_id;
    const waiting = queue.has(index);
    $("turn-state").textContent = waiting ? "saving…" : item.done ? "submitted" : "not yet submitted";
    $("turn-state").className = "badge " + (item.done && !waiting ? "approved" : "candidate");
    rows.forEach((li, i) => {
      li.classList.toggle("on", marks[index].has(numbers[i]));
      li.classList.toggle("cursor", i === cursor);
    });
    $("marked-count").textContent = marks[index].size;
    J.renderProgress(items.filter((it) => it.done).length, items.length, queue.size());
    $("entry").textContent = buffer ? "· statement " + buffer + "…" : "";
    renderConversation(item);
    const done = $("done");
    const finishing = done.hidden && firstUndone(0) < 0;
    done.hidden = firstUndone(0) >= 0;
    // The last grade shows the card below the item: bring it into view rather than leave it under the fold.
    if (finishing) done.scrollIntoView({ block: "nearest" });
  }

  function toggle(number) {
    if (!numbers.includes(number)) {
      J.showMessage($("message"), "There is no statement " + number + ".", "warn");
      return;
    }
    const set = marks[index];
    if (set.has(number)) set.delete(number);
    else set.add(number);
    cursor = numbers.indexOf(number);
    J.showMessage($("message"), "");
    render();
  }

  function commitBuffer() {
    commitLater.cancel();
    const value = Number(buffer);
    buffer = "";
    if (value > 0) toggle(value);
    else render();
  }

  // A digit toggles at once when no longer number starts with what was typed ("3" with 12 statements); else the
  // page waits briefly for a second digit ("1" then "2" is statement 12; "1" alone is statement 1).
  function digit(d) {
    buffer += d;
    if (buffer === "0") {
      buffer = "";
      return;
    }
    if (Number(buffer) * 10 > maxNumber) commitBuffer();
    else {
      commitLater();
      render();
    }
  }

  function submit() {
    if (buffer) commitBuffer();
    const relevant = Array.from(marks[index]).sort((a, b) => a - b);
    queue.send(index, relevant);
    const next = firstUndone(index + 1);
    if (next >= 0 && next !== index) index = next;
    else if (index < items.length - 1) index += 1;
    cursor = 0;
    render();
  }

  function move(delta) {
    index = Math.max(0, Math.min(items.length - 1, index + delta));
    cursor = 0;
    render();
  }

  // Digits toggle statements, Enter submits the turn, ↑/↓ (j/k) move a cursor and Space (x) toggles under it.
  function onKey(ev) {
    if (ev.key >= "0" && ev.key <= "9") {
      if (!ev.repeat) digit(ev.key);
    } else if (ev.key === "Enter") {
      if (!ev.repeat) submit();
    } else if (ev.key === "ArrowDown" || ev.key === "j") {
      cursor = Math.min(rows.length - 1, cursor + 1);
      render();
    } else if (ev.key === "ArrowUp" || ev.key === "k") {
      cursor = Math.max(0, cursor - 1);
      render();
    } else if (ev.key === " " || ev.key === "x") {
      toggle(numbers[cursor]);
    } else {
      return false;
    }
    ev.preventDefault();
    return true;
  }

  J.bindNavigation({ move: move, onKey: onKey });
  rows.forEach((li, i) => li.addEventListener("click", () => toggle(numbers[i])));
  $("submit").addEventListener("click", submit);
  render();
})();
