// The admin's new-pool form.
(function () {
  "use strict";
  // The coverage preview: what the pool would hold and how much of it has text, asked again (debounced) whenever
  // the runs, depth, turns or qrels version change.
  const form = document.getElementById("pool-form");
  if (!form) return;
  const summary = document.getElementById("coverage-summary");
  const textOnlyLine = document.getElementById("coverage-text-only");
  const textOnly = form.elements["text_only"];
  const feedName = document.getElementById("id_feed_version_helptext");
  let touched = false, asked = 0;
  textOnly.addEventListener("change", function () { touched = true; });

  function runs() { return Array.from(form.querySelectorAll("input[name=runs]:checked")).map(function (i) { return i.value; }); }
  function pct(a, b) { return b ? Math.round(100 * a / b) + "%" : "–"; }
  function n(x) { return x.toLocaleString("en"); }
  function of(x, word) { return n(x) + " " + word + (x === 1 ? "" : "s"); }

  function showFeedName() {
    const version = form.elements["qrels_version"];
    // Without qrels the pool starts an empty base version (data-base-name) and derives the fed one from it.
    const parent = version.selectedIndex >= 0 && version.value ? version.options[version.selectedIndex].text
      : form.dataset.baseName || "<qrels version>";
    const name = form.elements["name"].value.trim() ||
      (form.dataset.collectionName + " depth-" + form.elements["depth"].value + " pool of " + runs().length + " run(s)");
    feedName.textContent = "Judgments go into “" + parent + " + " + name + "”, created if missing.";
  }

  function render(d) {
    summary.className = "";
    summary.innerHTML = "";
    const strong = document.createElement("strong");
    strong.textContent = n(d.passages_with_text) + " of " + of(d.passages, "passage") +
      (d.passages_with_text === 1 ? " has" : " have") + " text";
    summary.append("Coverage: ", strong, " (" + pct(d.passages_with_text, d.passages) + ") — " + n(d.pairs) +
      " unjudged (turn, passage) pair" + (d.pairs === 1 ? "" : "s") + " in " + of(d.turns, "turn") + ", " +
      n(d.pairs_with_text) + " with text; " + n(d.already_judged_skipped) + " top-" + d.depth +
      " pair" + (d.already_judged_skipped === 1 ? "" : "s") + " already judged.");
    const t = d.text_only;
    textOnlyLine.textContent = "Only passages with text: " + of(t.pairs, "pair") + " in " + of(t.turns, "turn") +
      ", all with text (depth " + d.depth + " counted over passages with text" +
      (t.deepest_rank > d.depth ? "; reaches rank " + t.deepest_rank : "") + ").";
    if (!touched) textOnly.checked = d.text_only_default;
  }

  function ask() {
    const chosen = runs();
    const version = form.elements["qrels_version"].value;
    if (!chosen.length || !(version || form.dataset.baseName)) {
      summary.className = "muted";
      summary.textContent = version ? "Choose runs to see how many of the pool's passages have text."
        : "Choose the qrels version that decides what is judged, and runs, to see how many passages have text.";
      textOnlyLine.textContent = "";
      return;
    }
    const q = new URLSearchParams({collection: form.dataset.collection, depth: form.elements["depth"].value});
    if (version) q.append("qrels_version", version);
    chosen.forEach(function (r) { q.append("runs", r); });
    const turns = form.elements["turn_ids"].value.trim();
    if (turns) q.append("turn_ids", turns);
    const mine = ++asked;
    summary.className = "muted";
    summary.textContent = "Counting…";
    fetch(form.dataset.preview + "?" + q.toString(), {credentials: "same-origin", headers: {Accept: "application/json"}})
      .then(function (r) { return r.json().then(function (d) { return {ok: r.ok, d: d}; }); })
      .then(function (res) {
        if (mine !== asked) return;  // a newer question is under way
        if (res.ok) { render(res.d); return; }
        summary.className = "error";
        summary.textContent = res.d.detail || "The preview failed.";
        textOnlyLine.textContent = "";
      })
      .catch(function () { if (mine === asked) { summary.className = "error"; summary.textContent = "The preview failed."; } });
  }

  const askLater = window.EcastDebounce.debounce(ask, 350);
  function later() { showFeedName(); askLater(); }
  form.addEventListener("change", function (e) { if (e.target !== textOnly) later(); });
  form.addEventListener("input", function (e) { if (e.target.type !== "checkbox") later(); });
  showFeedName();
  ask();
})();
