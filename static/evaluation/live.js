/* Live reports: poll the score-status endpoints named in data-live-status (space separated) every 3 s; when a
   fingerprint changes, fetch this page again and swap the report's content in place (no reload, scroll kept). */
(function () {
  var box = document.querySelector("[data-live-status]");
  if (!box) return;
  var urls = box.dataset.liveStatus.split(" ").filter(Boolean);
  var last = null;
  var note = document.getElementById("live-note");
  function fingerprint(list) {
    return list.map(function (s) { return s.snapshot + "-" + s.scores + "-" + s.last_computed; }).join("|");
  }
  function refresh() {
    return fetch(window.location.href, {credentials: "same-origin"}).then(function (r) { return r.text(); }).then(function (html) {
      var doc = new DOMParser().parseFromString(html, "text/html");
      var fresh = doc.getElementById(box.id);
      if (fresh) box.innerHTML = fresh.innerHTML;
      if (note) note.textContent = "Updated " + new Date().toLocaleTimeString() + " after new judgments or runs.";
    });
  }
  function poll() {
    Promise.all(urls.map(function (u) {
      return fetch(u, {credentials: "same-origin"}).then(function (r) { return r.json(); });
    })).then(function (list) {
      var fp = fingerprint(list);
      var pending = list.reduce(function (n, s) { return n + s.pending_turns + s.jobs.length; }, 0);
      if (note && pending) note.textContent = "Recomputing: " + pending + " pending turn(s)/job(s)…";
      if (last !== null && fp !== last) { last = fp; return refresh(); }
      last = fp;
    }).catch(function () {}).then(function () { setTimeout(poll, 3000); });
  }
  poll();
})();
