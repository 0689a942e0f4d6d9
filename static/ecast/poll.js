/* The one poller of every page that follows work on the server (loaded by base.html).

   ecast.poll(url, onData, opts) fetches url as JSON and calls onData(data); onData returns true to stop.
   - opts.every (ms, default 2000): the pace while the data changes; while it stays the same the pace slows by half
     again each time, up to opts.slowest (default 3 × every), and is back to every at the first change.
   - A network error or a 5xx answer backs off (doubling, up to 30 s) and tries again; a 4xx answer (logged out, job
     deleted) stops: asking again would get the same answer.
   - opts.events: the URL of a server-sent event stream; an event named opts.eventName (default "message") polls at
     once, and while the stream is open the pace is opts.pushedEvery (default 3 × every). Where streams cannot pass
     the poll alone keeps the page fresh.
   - Nothing is fetched while the tab is hidden; the poll resumes when it is shown again.
   Returns {now(), stop(), pushed()}.

   Job pages need no code of their own: an element with data-job-progress="<the job's /jobs/<kind>/<id>/progress/
   URL>" and data-status="<its status>" is followed while the job is queued or running. Inside it, poll.js keeps
   [data-job-bar] (width = percent), [data-job-field="status_label" | "detail.eta_seconds" | …] (text of that
   field; when empty "–", or data-job-empty's text) and [data-job-text="{done} / {total} pairs labelled"] (the
   template filled in; "–" when a field is empty) up to date, refreshes the worker-loss box
   (templates/includes/job_health.html) and, when the progress moves from data-done, the page's [data-job-refresh]
   sections, dispatches an "ecast:job" event with the JSON for what only one page shows, and reloads the page when
   the job ends (data-reload="no" keeps it). */
(function () {
  "use strict";

  var ACTIVE = ["queued", "running"];

  function poll(url, onData, opts) {
    opts = opts || {};
    var every = opts.every || 2000;
    var slowest = opts.slowest || 3 * every;
    var pushedEvery = opts.pushedEvery || 3 * every;
    var wait = every, timer = null, stopped = false, busy = false, last = null, stream = null, open = false;

    function schedule(ms) {
      clearTimeout(timer);
      if (!stopped) timer = setTimeout(tick, ms);
    }
    function finish() {
      stopped = true;
      clearTimeout(timer);
      if (stream) stream.close();
    }
    function tick() {
      if (stopped) return;
      if (document.hidden) return;  // visibilitychange polls again
      if (busy) { schedule(wait); return; }
      busy = true;
      fetch(url, {credentials: "same-origin", headers: {Accept: "application/json"}}).then(function (r) {
        if (r.status >= 400 && r.status < 500) { finish(); return null; }
        if (!r.ok) throw new Error("HTTP " + r.status);
        return r.text();
      }).then(function (text) {
        busy = false;
        if (text === null || stopped) return;
        var base = open ? pushedEvery : every;
        wait = text === last ? Math.min(Math.round(wait * 1.5), Math.max(slowest, base)) : base;
        last = text;
        if (onData(JSON.parse(text)) === true) { finish(); return; }
        schedule(wait);
      }).catch(function () {
        busy = false;
        wait = Math.min(Math.max(wait, every) * 2, 30000);
        schedule(wait);
      });
    }
    document.addEventListener("visibilitychange", function () { if (!document.hidden) schedule(0); });
    if (opts.events && window.EventSource) {
      stream = new EventSource(opts.events);
      stream.addEventListener("open", function () { open = true; });
      stream.addEventListener("error", function () { open = stream.readyState === EventSource.OPEN; });
      stream.addEventListener(opts.eventName || "message", function () { schedule(0); });
    }
    schedule(opts.delay === undefined ? every : opts.delay);
    return {
      now: function () { schedule(0); },
      stop: finish,
      pushed: function () { return open; },
    };
  }

  function field(data, path) {
    return path.split(".").reduce(function (v, key) { return v === null || v === undefined ? v : v[key]; }, data);
  }
  function shown(v) { return v === null || v === undefined || v === "" ? null : String(v); }
  function fill(template, data) {
    var empty = false;
    var text = template.replace(/\{([\w.]+)\}/g, function (_, path) {
      var v = shown(field(data, path));
      if (v === null) empty = true;
      return v === null ? "" : v;
    });
    return empty ? "–" : text;
  }

  function age(at) {
    var s = Math.max(0, Math.round((Date.now() - at.getTime()) / 1000));
    return s < 90 ? s + " s ago" : s < 5400 ? Math.round(s / 60) + " min ago"
      : s < 129600 ? Math.round(s / 3600) + " h ago" : Math.round(s / 86400) + " d ago";
  }

  // The worker-loss box: a new recovery reloads the page (it lists them); else the heartbeat's age is refreshed.
  function health(box, d) {
    if (!box || !("recoveries" in d)) return;
    if (String(d.recoveries.length) !== box.dataset.recoveries) { window.location.reload(); return; }
    if (!d.last_heartbeat) return;
    var at = new Date(d.last_heartbeat);
    box.querySelector(".job-heartbeat").textContent = age(at);
    box.querySelector(".job-heartbeat-time").textContent = "(" + at.toISOString().slice(0, 19).replace("T", " ") + " UTC)";
  }

  // Sections of the page marked data-job-refresh (each with an id) show what the job has made so far: when its
  // progress moves they are fetched again from the page itself and swapped in place, so they never contradict the
  // live counts ("8 / 16 pairs labelled" beside "Nothing labelled yet").
  var refreshing = false;
  function refreshSections() {
    var sections = document.querySelectorAll("[data-job-refresh][id]");
    if (!sections.length || refreshing) return;
    refreshing = true;
    fetch(window.location.href, {credentials: "same-origin"}).then(function (r) {
      return r.ok ? r.text() : null;
    }).then(function (html) {
      refreshing = false;
      if (html === null) return;
      var fresh = new DOMParser().parseFromString(html, "text/html");
      sections.forEach(function (node) {
        var twin = fresh.getElementById(node.id);
        if (twin) node.innerHTML = twin.innerHTML;
      });
    }).catch(function () { refreshing = false; });
  }

  function followJob(el) {
    if (ACTIVE.indexOf(el.dataset.status) < 0) return;
    // The progress the page was rendered at (data-done), so a move before the first answer refreshes too.
    var done = el.dataset.done === undefined ? null : Number(el.dataset.done);
    poll(el.dataset.jobProgress, function (d) {
      // A job that ended: the page as the server renders it now is the truth (filling in the final numbers first
      // would show "Succeeded" beside "computing…" until the reload).
      if (!d.active && el.dataset.reload !== "no") { window.location.reload(); return true; }
      if (done !== null && d.done !== done && d.active) refreshSections();
      done = d.done;
      el.querySelectorAll("[data-job-bar]").forEach(function (bar) { bar.style.width = d.percent + "%"; });
      el.querySelectorAll("[data-job-field]").forEach(function (node) {
        var v = shown(field(d, node.dataset.jobField));
        node.textContent = v === null ? (node.dataset.jobEmpty === undefined ? "–" : node.dataset.jobEmpty) : v;
      });
      el.querySelectorAll("[data-job-text]").forEach(function (node) { node.textContent = fill(node.dataset.jobText, d); });
      el.dataset.status = d.status;
      health(el.querySelector("[data-job-health]"), d);
      el.dispatchEvent(new CustomEvent("ecast:job", {detail: d, bubbles: true}));
      return !d.active;
    }, {every: Number(el.dataset.every) || 1000, slowest: 5000, delay: 500});
  }

  window.ecast = window.ecast || {};
  window.ecast.poll = poll;
  document.querySelectorAll("[data-job-progress]").forEach(followJob);
})();
