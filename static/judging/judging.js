// What the relevance and PTKB judging pages share: the "conversation so far" list, the header's progress, the keys,
// and their queue of submits (static/ecast/send.js, loaded first).
(function () {
  "use strict";

  // Fill an <ol> with the conversation so far: the path to turn ``currentNumber`` (a conversation tree's branch, never
  // a sibling's; in a linear conversation every turn up to it), earlier User turns with a short response and System
  // turns as the system's side. Returns the current turn.
  function renderConversation(list, turns, currentNumber) {
    list.innerHTML = "";
    const here = turns.find((t) => t.number === currentNumber);
    const path = new Set(here && here.path ? here.path : turns.filter((t) => t.number <= currentNumber).map((t) => t.number));
    for (const t of turns) {
      if (!path.has(t.number)) continue;
      const li = document.createElement("li");
      li.dataset.turnId = t.turn_id;
      if (t.label) {
        li.classList.add("tree-turn"); // its branch-aware number is its label, not the list's count
        const label = document.createElement("span");
        label.className = "turn-label";
        label.textContent = t.label + " · " + t.participant;
        li.appendChild(label);
      } else {
        li.value = t.number;
      }
      if (t.participant === "System") {
        li.classList.add("system-turn");
        if (t.mixed_initiative) {
          const badge = document.createElement("span");
          badge.className = "badge mixed-initiative";
          badge.textContent = t.mixed_initiative === "clarification" ? "Clarifying question" : "Suggestion";
          li.appendChild(badge);
        }
        const said = document.createElement("div");
        said.className = "system-said";
        said.textContent = t.response.length > 300 ? t.response.slice(0, 300) + "…" : t.response;
        li.appendChild(said);
        list.appendChild(li);
        continue;
      }
      const u = document.createElement("div");
      u.textContent = t.raw;
      li.appendChild(u);
      if (t.number === currentNumber) {
        li.classList.add("turn-current");
      } else if (t.response) {
        const r = document.createElement("div");
        r.className = "muted response";
        r.textContent = "↳ " + (t.response.length > 240 ? t.response.slice(0, 240) + "…" : t.response);
        li.appendChild(r);
      }
      list.appendChild(li);
    }
    return here;
  }

  const showMessage = window.EcastSend.showMessage;

  // The header's progress bar, "done / total" and how many submits still wait for the server.
  function renderProgress(done, total, unsaved) {
    const $ = (id) => document.getElementById(id);
    $("progress-text").textContent = done + " / " + total;
    $("progress-bar").style.width = (total ? Math.round((100 * done) / total) : 0) + "%";
    $("save-state").textContent = unsaved ? unsaved + " unsaved…" : "all saved";
    $("save-state").className = unsaved ? "warn" : "muted";
  }

  // Keys and buttons every judging page has: ⌫/u and ← go back, → moves on, ? toggles the help, Esc closes it. The
  // page's own keys go first: ``onKey(ev)`` returns true when it handled the key. (Leaving with unsaved work warns:
  // send.js does that.)
  function bindNavigation({ move, onKey }) {
    const $ = (id) => document.getElementById(id);
    const toggleHelp = () => {
      $("help").hidden = !$("help").hidden;
    };
    document.addEventListener("keydown", (ev) => {
      if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
      const tag = (ev.target && ev.target.tagName) || "";
      if (tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT") return;
      if (onKey(ev)) return;
      if (ev.key === "Backspace" || ev.key === "u") {
        ev.preventDefault();
        move(-1);
      } else if (ev.key === "ArrowLeft") {
        move(-1);
      } else if (ev.key === "ArrowRight") {
        move(1);
      } else if (ev.key === "?") {
        toggleHelp();
      } else if (ev.key === "Escape") {
        $("help").hidden = true;
      }
    });
    $("back").addEventListener("click", () => move(-1));
    $("next").addEventListener("click", () => move(1));
    $("help-toggle").addEventListener("click", toggleHelp);
  }

  window.EcastJudging = { renderConversation, renderProgress, showMessage, bindNavigation };
})();
