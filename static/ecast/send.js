// The one send queue of every page that saves as the person works (rating, relevance and PTKB judging, utterance
// labelling, and any new judging page): the only browser code that writes to the server with fetch.
//
// - Ordered: one request at a time, in the order the saves were made; an item saved again while it waits keeps its
//   place and sends only its latest value.
// - One request per item in flight: a save of an item whose request is on its way waits for that answer, then sends
//   the latest value (after the items queued meanwhile), so a quick change never overtakes the value it replaces.
// - A network error or a 5xx is retried with exponential back-off (nothing behind it is sent before it: order holds).
//   A 4xx is the server's answer, never retried: its message is shown and the item is marked refused.
// - State: "all saved" / "saving…" / "not saved", for the page to show; leaving with unsaved work warns.
//
//   const q = EcastSend.queue({url, payload: (key, value) => ({...}), onAnswer, onChange, message});
//   q.send(key, value);   q.state() -> {pending, refused, retrying, word}
(function () {
  "use strict";

  // Django's CSRF token: the page's hidden form field, else the cookie.
  function csrfToken() {
    const field = document.querySelector("input[name=csrfmiddlewaretoken]");
    if (field && field.value) return field.value;
    const m = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
    return m ? decodeURIComponent(m[1]) : "";
  }

  // Exponential back-off between retries: 2 s, 4 s, … capped at 30 s.
  function retryDelay(attempt) {
    return Math.min(30000, 1000 * 2 ** Math.min(attempt, 5));
  }

  // One request; resolves to {ok: true, body} or {ok: false, status, detail} (a 4xx: refused), throws when it should
  // be retried (no answer, or a 5xx). ``window.fetch`` is looked up at each call so a page (or a test) can wrap it.
  async function request(method, url, csrf, payload) {
    const resp = await window.fetch(url, {
      method: method,
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", Accept: "application/json", "X-CSRFToken": csrf },
      body: JSON.stringify(payload),
    });
    if (resp.status >= 400 && resp.status < 500) {
      const body = await resp.json().catch(() => ({}));
      return { ok: false, status: resp.status, body: body, detail: body.detail || resp.statusText || "HTTP " + resp.status };
    }
    if (!resp.ok) throw new Error("HTTP " + resp.status);
    return { ok: true, status: resp.status, body: await resp.json().catch(() => null) };
  }

  const queues = [];

  // Leaving the page while any queue holds unsaved work asks first.
  window.addEventListener("beforeunload", (ev) => {
    if (queues.some((q) => q.size() > 0)) {
      ev.preventDefault();
      ev.returnValue = "";
    }
  });

  function showMessage(el, text, className) {
    if (!el) return;
    el.textContent = text;
    el.className = className || "muted";
  }

  // ``url``: a string or ``(key, value) => url``; ``payload(key, value)``: the JSON body; ``method``: POST by default.
  // ``onAnswer(key, value, result)`` sees every answer ({ok: true, body} or {ok: false, status, detail}); ``onChange()``
  // runs whenever the state changes (the page re-renders there); ``message``: an element for "Not saved: …" and
  // "Connection problem — retrying…" (optional). ``csrf`` defaults to the page's token.
  function queue({ url, payload, method, csrf, message, onAnswer, onChange }) {
    const values = new Map(); // key -> latest value not yet confirmed
    const order = []; // keys waiting to be sent, oldest first
    const refused = new Map(); // key -> the server's reason, until a later save of that key succeeds
    let inFlight = null; // key whose request is on its way
    let retrying = null; // the back-off timer while the head of the queue waits to be tried again
    let attempt = 0;
    const changed = () => onChange && onChange();

    async function pump() {
      if (inFlight !== null || retrying !== null || !order.length) return;
      const key = order.shift();
      const value = values.get(key);
      inFlight = key;
      changed();
      let result = null;
      try {
        const to = typeof url === "function" ? url(key, value) : url;
        result = await request(method || "POST", to, csrf || csrfToken(), payload(key, value));
      } catch (err) {
        result = null;
      }
      inFlight = null;
      if (result === null) {
        // No answer: this key goes back to the front (with its latest value) and nothing behind it is sent until
        // it gets through.
        const at = order.indexOf(key);
        if (at >= 0) order.splice(at, 1);
        order.unshift(key);
        attempt += 1;
        retrying = setTimeout(() => {
          retrying = null;
          pump();
        }, retryDelay(attempt));
        showMessage(message, "Connection problem — retrying…", "warn");
        changed();
        return;
      }
      attempt = 0;
      if (values.get(key) === value && !order.includes(key)) values.delete(key);
      // A refusal stays on screen until that item is saved: the next item's success must not wipe it away.
      refused.delete(key);
      if (!result.ok) refused.set(key, result.detail);
      const reasons = Array.from(refused.values());
      if (reasons.length) showMessage(message, "Not saved: " + reasons[reasons.length - 1], "error");
      else showMessage(message, "", "muted");
      if (onAnswer) onAnswer(key, value, result);
      changed();
      pump();
    }

    const q = {
      send(key, value) {
        values.set(key, value);
        // Waiting: the newer value replaces the older in place. In flight: it goes to the back, sent after the answer.
        if (!order.includes(key)) order.push(key);
        // A new save while the queue waits to retry is a good moment to try again at once (the back-off still grows).
        if (retrying !== null) {
          clearTimeout(retrying);
          retrying = null;
        }
        changed();
        pump();
      },
      has: (key) => values.has(key),
      get: (key) => values.get(key),
      size: () => values.size,
      refusedReason: (key) => refused.get(key),
      // {pending, refused, retrying, word}: word is "all saved", "saving…" or "not saved" (a refusal, or no
      // connection while retrying).
      state() {
        const word = retrying !== null || refused.size ? "not saved" : values.size ? "saving…" : "all saved";
        return { pending: values.size, refused: refused.size, retrying: retrying !== null, word: word };
      },
    };
    queues.push(q);
    return q;
  }

  window.EcastSend = { queue, csrfToken, showMessage, retryDelay };
})();
