// The LLM judge job page: poll the progress JSON while the job is queued or running, reload when it ends.
(function () {
  const card = document.getElementById("progress-card");
  const active = s => s === "pending" || s === "running";
  if (!card || !active(card.dataset.status)) return;
  const set = (id, text) => { document.getElementById(id).textContent = text; };
  const timer = setInterval(async () => {
    const r = await fetch(card.dataset.url, {credentials: "same-origin"});
    if (!r.ok) return;
    const p = await r.json();
    document.getElementById("bar").style.width = p.percent + "%";
    set("job-status", p.status);
    set("counts", `${p.done} / ${p.total} pairs labelled`);
    set("rate", p.pairs_per_second === null ? "–" : p.pairs_per_second);
    set("eta", p.eta_seconds === null ? "–" : p.eta_seconds + " s");
    if (window.ecastJobHealth) window.ecastJobHealth(p);
    if (!active(p.status)) { clearInterval(timer); location.reload(); }
  }, 2000);
})();
