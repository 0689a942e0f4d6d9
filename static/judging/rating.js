// Keyboard-first rating page: digits answer the focused measure and move on, arrows/Tab move and change,
// Enter submits once every measure is answered, "?" shows the guidelines, "u" undoes the last answer.
// The answer goes through the one send queue (static/ecast/send.js): a dropped connection or a 5xx is retried with
// the same idempotency key (stored once), a refusal is shown here; once stored, the page moves to the next item.
(function () {
  "use strict";
  var form = document.getElementById("rating-form");
  if (!form) return;
  var measures = Array.prototype.slice.call(form.querySelectorAll("fieldset.measure"));
  var hint = document.getElementById("rating-hint");
  var guide = document.getElementById("guidelines");
  var current = 0;
  var submitted = false;
  var SAVED = "ecast-rating-saved";

  // The next item's page says "Saved." as the server's message after a form post did.
  if (sessionStorage.getItem(SAVED)) {
    sessionStorage.removeItem(SAVED);
    var list = document.querySelector("ul.messages") || document.createElement("ul");
    if (!list.parentNode) {
      list.className = "messages";
      var main = document.querySelector("main");
      main.insertBefore(list, main.firstChild);
    }
    var saved = document.createElement("li");
    saved.className = "success";
    saved.textContent = "Saved.";
    list.appendChild(saved);
  }

  var queue = window.EcastSend.queue({
    url: form.dataset.submitUrl,
    payload: function (id, answer) { return answer; },
    onAnswer: function (id, answer, result) {
      // "already submitted" (another tab, or an answer whose reply was lost): the item is done either way.
      var done = result.ok || (result.body && result.body.code === "conflict" && /already submitted/.test(result.detail));
      if (done) {
        if (result.ok) sessionStorage.setItem(SAVED, "1");
        window.location.assign(form.dataset.nextUrl);
        return;
      }
      submitted = false;
      document.getElementById("submit-rating").disabled = false;
      hint.textContent = "Not saved: " + result.detail;
      hint.classList.add("error");
    },
    onChange: function () {
      if (queue && queue.state().retrying) hint.textContent = "Connection problem — retrying…";
    },
  });

  // Time on task counts only while the page is visible.
  var visibleMs = 0, since = document.hidden ? null : performance.now();
  document.addEventListener("visibilitychange", function () {
    if (document.hidden && since !== null) { visibleMs += performance.now() - since; since = null; }
    else if (!document.hidden && since === null) { since = performance.now(); }
  });
  function secondsOnTask() { return (visibleMs + (since === null ? 0 : performance.now() - since)) / 1000; }

  function value(fs) { var c = fs.querySelector("input:checked"); return c ? parseInt(c.value, 10) : null; }
  function focusMeasure(i, initial) {
    current = Math.max(0, Math.min(measures.length - 1, i));
    measures.forEach(function (fs, j) { fs.classList.toggle("focused", j === current); });
    // The first focus must not scroll the conversation and paraphrases out of view; later moves follow the focus.
    measures[current].focus({ preventScroll: true });
    if (!initial) measures[current].scrollIntoView({ block: "nearest" });
  }
  function setValue(fs, v) {
    var input = fs.querySelector('input[value="' + v + '"]');
    if (input) { input.checked = true; fs.classList.add("answered"); }
  }
  function firstUnanswered() {
    for (var i = 0; i < measures.length; i++) { if (value(measures[i]) === null) return i; }
    return -1;
  }
  function trySubmit() {
    if (submitted) return;
    var missing = firstUnanswered();
    if (missing >= 0) {
      hint.textContent = "Answer every measure first (" + measures[missing].querySelector("legend strong").textContent + ").";
      focusMeasure(missing);
      return;
    }
    submitted = true;  // the idempotency key makes a repeat harmless, but one request is enough
    document.getElementById("submit-rating").disabled = true;
    hint.classList.remove("error");
    hint.textContent = "Saving…";
    var values = {};
    measures.forEach(function (fs) { values[fs.dataset.key] = value(fs); });
    queue.send(form.elements.assignment_id.value, {
      values: values,
      idempotency_key: form.elements.idempotency_key.value,
      seconds_on_task: Number(secondsOnTask().toFixed(2)),
    });
  }

  measures.forEach(function (fs, i) {
    fs.addEventListener("focus", function () { current = i; measures.forEach(function (f, j) { f.classList.toggle("focused", j === i); }); });
    fs.addEventListener("change", function () { fs.classList.add("answered"); });
    if (value(fs) !== null) fs.classList.add("answered");
  });
  form.addEventListener("submit", function (e) { e.preventDefault(); trySubmit(); });

  document.addEventListener("keydown", function (e) {
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    var k = e.key;
    if (k === "?" || k === "g") { e.preventDefault(); guide.hidden = !guide.hidden; return; }
    if (k === "Escape") { guide.hidden = true; return; }
    if (k === "u" || k === "U") {
      var undo = document.getElementById("undo-form");
      if (undo) { e.preventDefault(); undo.submit(); }
      return;
    }
    if (/^[1-5]$/.test(k)) {
      e.preventDefault();
      setValue(measures[current], k);
      var next = firstUnanswered();
      if (current < measures.length - 1) focusMeasure(current + 1);
      else if (next >= 0) focusMeasure(next);
      hint.textContent = firstUnanswered() < 0 ? "All answered: press Enter to submit." : "";
      return;
    }
    if (k === "ArrowDown") { e.preventDefault(); focusMeasure(current + 1); return; }
    if (k === "ArrowUp") { e.preventDefault(); focusMeasure(current - 1); return; }
    if (k === "ArrowRight" || k === "ArrowLeft") {
      e.preventDefault();
      var v = value(measures[current]) || (k === "ArrowRight" ? 0 : 6);
      setValue(measures[current], Math.max(1, Math.min(5, v + (k === "ArrowRight" ? 1 : -1))));
      return;
    }
    if (k === "Enter") { e.preventDefault(); trySubmit(); }
  });
  focusMeasure(firstUnanswered() >= 0 ? firstUnanswered() : 0, true);
})();
