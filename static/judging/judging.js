// What the relevance and PTKB judging pages share: the "conversation so far" list and the queue of submits, sent in
// order and retried until the server answers (a 4xx is an answer: the submit was refused; a network error or 5xx is
// retried).
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

  // POST JSON; resolves to {ok: true, body} or {ok: false, detail} (refused), throws when it should be retried.
  async function postJSON(url, csrf, payload) {
    const resp = await fetch(url, {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRFToken": csrf },
      body: JSON.stringify(payload),
    });
    if (resp.status >= 400 && resp.status < 500) {
      const body = await resp.json().catch(() => ({}));
      return { ok: false, detail: body.detail || resp.statusText };
    }
    if (!resp.ok) throw new Error(resp.statusText);
    return { ok: true, body: await resp.json() };
  }

  // Exponential back-off between retries, capped at 30 s.
  function retryDelay(attempt) {
    return Math.min(30000, 1000 * 2 ** Math.min(attempt, 5));
  }

  // Submits sent one at a time, in the order they were made, each retried until the server answers. A key (a pair,
  // a turn) has at most one value waiting: a newer value replaces one not sent yet, and a value changed while the
  // older one was in flight is sent after it, still in order, so the last value given is the one the server keeps
  // (a quick regrade must never reach the server before the grade it replaces).
  // ``payload(key, value)`` is the JSON body; ``onAnswer(key, value, result)`` sees every answer ({ok, body} or
  // {ok: false, detail}); ``onSettled()`` runs after each attempt (the page re-renders there).
  function sendQueue({ url, csrf, message, payload, onAnswer, onSettled }) {
    const values = new Map(); // key -> value not yet confirmed
    const order = []; // keys, oldest first
    let sending = false;
    let attempt = 0;

    async function pump() {
      if (sending || !order.length) return;
      sending = true;
      const key = order[0];
      const value = values.get(key);
      let retry = false;
      try {
        const result = await postJSON(url, csrf, payload(key, value));
        if (values.get(key) === value) values.delete(key);
        showMessage(message, result.ok ? "" : "Not saved: " + result.detail, result.ok ? "muted" : "error");
        onAnswer(key, value, result);
        attempt = 0;
      } catch (err) {
        retry = true;
        showMessage(message, "Connection problem — retrying…", "warn");
      }
      if (!retry) {
        order.shift();
        if (values.has(key)) order.push(key); // changed while in flight: the new value goes next, still in order
      }
      sending = false;
      onSettled();
      if (retry) {
        attempt += 1;
        setTimeout(pump, retryDelay(attempt));
      } else {
        pump();
      }
    }

    return {
      send(key, value) {
        values.set(key, value);
        if (!order.includes(key)) order.push(key);
        pump();
      },
      has: (key) => values.has(key),
      get: (key) => values.get(key),
      size: () => values.size,
    };
  }

  function showMessage(el, text, className) {
    el.textContent = text;
    el.className = className || "muted";
  }

  // The header's progress bar, "done / total" and how many submits still wait for the server.
  function renderProgress(done, total, unsaved) {
    const $ = (id) => document.getElementById(id);
    $("progress-text").textContent = done + " / " + total;
    $("progress-bar").style.width = (total ? Math.round((100 * done) / total) : 0) + "%";
    $("save-state").textContent = unsaved ? unsaved + " unsaved…" : "all saved";
    $("save-state").className = unsaved ? "warn" : "muted";
  }

  // Keys and buttons every judging page has: ⌫/u and ← go back, → moves on, ? toggles the help, Esc closes it. The
  // page's own keys go first: ``onKey(ev)`` returns true when it handled the key. Leaving with unsaved work warns.
  function bindNavigation({ move, onKey, unsaved }) {
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
    window.addEventListener("beforeunload", (ev) => {
      if (unsaved()) {
        ev.preventDefault();
        ev.returnValue = "";
      }
    });
  }

  window.EcastJudging = { renderConversation, renderProgress, sendQueue, showMessage, bindNavigation };
})();
