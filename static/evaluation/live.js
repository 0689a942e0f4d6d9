/* Live reports: follow the score-status endpoints named in data-live-status (space separated) with
   static/ecast/poll.js; when one's fingerprint changes, fetch this page again and swap the report's content in
   place (no reload, scroll kept). */
(function () {
  var box = document.querySelector("[data-live-status]");
  if (!box) return;
  var note = document.getElementById("live-note");
  var last = {}, pending = {};
  function refresh() {
    return fetch(window.location.href, {credentials: "same-origin"}).then(function (r) { return r.text(); }).then(function (html) {
      var doc = new DOMParser().parseFromString(html, "text/html");
      var fresh = doc.getElementById(box.id);
      if (fresh) box.innerHTML = fresh.innerHTML;
      if (note) note.textContent = "Updated " + new Date().toLocaleTimeString() + " after new judgments or runs.";
    });
  }
  box.dataset.liveStatus.split(" ").filter(Boolean).forEach(function (url) {
    window.ecast.poll(url, function (s) {
      var fp = s.snapshot + "-" + s.scores + "-" + s.last_computed;
      pending[url] = s.pending_turns + s.jobs.length;
      var waiting = Object.keys(pending).reduce(function (n, u) { return n + pending[u]; }, 0);
      if (note && waiting) note.textContent = "Recomputing: " + waiting + " pending turn(s)/job(s)…";
      var changed = url in last && last[url] !== fp;
      last[url] = fp;
      if (changed) refresh();
    }, {every: 3000, delay: 0});
  });
})();
