/* The leaderboard follows the scores live. New scores are pushed (server-sent events) the moment the worker commits
   them; the status poll (static/ecast/poll.js) keeps the "waiting" counts and the job rows fresh and is the fallback
   where event streams cannot pass. When the scores' fingerprint changes, the table and the plot are drawn again. */
(function () {
  var box = document.getElementById("leaderboard");
  if (!box) return;
  var fingerprint = box.dataset.fingerprint;
  function fmt(v) { return (v === null || v === undefined) ? "–" : Number(v).toFixed(4).replace(/^-(0\.0+)$/, "$1"); }
  function esc(s) { var d = document.createElement("div"); d.textContent = s == null ? "" : String(s); return d.innerHTML; }
  function json(url) { return fetch(url, {credentials: "same-origin"}).then(function (r) { return r.json(); }); }
  function render(data) {
    var body = document.querySelector("#lb-table tbody");
    var html = "";
    data.rows.forEach(function (r) {
      html += '<tr data-run="' + r.run_id + '"><td class="num">' + (r.rank || "–") + '</td><td><a href="/evaluation/runs/' + r.run_id + '/?version=' + data.version.id + '">' + esc(r.run) + '</a></td><td>' + esc(r.test_set) + '</td><td class="num">' + (r.headline === null ? "–" : r.turns) + '</td>';
      data.measures.forEach(function (m) { html += '<td class="num">' + fmt(r.means[m]) + '</td>'; });
      var dl = "/evaluation/runs/" + r.run_id + "/download/";
      html += '<td class="num">' + (r.headline === null ? "–" : fmt(r.stderr)) + '</td><td class="downloads"><a href="' + dl + 'trec/">TREC</a> · <a href="' + dl + 'csv/">CSV</a> · <a href="' + dl + 'ranx/">ranx JSON</a></td></tr>';
    });
    body.innerHTML = html;
    fetch(box.dataset.svg, {credentials: "same-origin"}).then(function (r) { return r.text(); }).then(function (svg) {
      document.getElementById("lb-plot").innerHTML = svg;
    });
  }
  var poller = window.ecast.poll(box.dataset.status, function (s) {
    var fp = s.snapshot + "-" + s.scores + "-" + s.last_computed;
    document.getElementById("lb-live").textContent = "Live: " +
      (poller && poller.pushed() ? "new scores appear as soon as they are computed" : "updates every second") +
      (s.pending_turns ? " · " + s.pending_turns + " re-judged turn(s) waiting" : "") +
      (s.jobs.length ? " · " + s.jobs.length + " job(s) running" : "") + ".";
    (s.recent_jobs || []).forEach(function (j) {
      var row = document.querySelector('#lb-jobs tr[data-job="' + j.id + '"]');
      if (!row) return;
      row.querySelector(".job-status").innerHTML = '<span class="badge status-' + esc(j.status) + '">' + esc(j.status) + "</span>" + (j.error ? ' <span class="error">' + esc(j.error) + "</span>" : "");
      row.querySelector(".job-progress").textContent = j.done + "/" + j.total;
      row.querySelector(".job-finished").textContent = j.finished;
    });
    if (fp !== fingerprint) {
      fingerprint = fp;
      json(box.dataset.api).then(render);
    }
  }, {every: 1000, slowest: 1000, pushedEvery: 3000, events: box.dataset.events, eventName: "scores", delay: 1000});
})();
