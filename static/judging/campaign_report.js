/* A rating campaign's report: kappa and the progress counts update as ratings arrive, from the agreement API
   (the server caches it on the ratings' state), followed with static/ecast/poll.js. */
(function () {
  var table = document.getElementById("kappa-table");
  if (!table || !table.dataset.agreement) return;
  // toFixed writes a tiny negative as "-0.000": show it as 0.000, as the server-side floatformat does.
  function fmt(v) { return v === null || v === undefined ? "—" : v.toFixed(3).replace(/^-(0\.0+)$/, "$1"); }
  window.ecast.poll(table.dataset.agreement, function (data) {
    data.measures.forEach(function (m) {
      var row = table.querySelector('tr[data-measure="' + m.key + '"]');
      if (!row) return;
      row.querySelector('[data-f="n_items"]').textContent = m.n_items;
      row.querySelector('[data-f="kappa_raw"]').textContent = fmt(m.kappa_raw);
      row.querySelector('[data-f="n_kept"]').textContent = m.n_kept;
      row.querySelector('[data-f="kappa_grouped"]').textContent = fmt(m.kappa_grouped);
      row.querySelector('[data-f="n_labelled"]').textContent = m.n_labelled;
      var a = m.alpha || {};
      row.querySelector('[data-f="alpha"]').textContent = a.alpha == null ? "—" : fmt(a.alpha) + " [" + fmt(a.low) + ", " + fmt(a.high) + "]";
    });
    var p = data.progress;
    document.getElementById("prog-finished").textContent = p.finished;
    document.getElementById("prog-counted").textContent = p.counted;
    document.getElementById("prog-leases").textContent = p.live_leases;
    document.getElementById("prog-bar").style.width = (p.target ? Math.round(100 * p.counted / p.target) : 0) + "%";
    document.getElementById("agreement-updated").textContent = "(updated " + new Date().toLocaleTimeString() + ")";
  }, {every: 5000, slowest: 15000});
})();
