// Paraphrase search: the header box ticks every row of the page; a bulk action on all matching pairs asks first.
(function () {
  "use strict";
  const all = document.getElementById("tick-page");
  const ticks = Array.from(document.querySelectorAll("input.tick"));
  if (all) all.addEventListener("change", () => ticks.forEach((t) => { t.checked = all.checked; }));
  const bulkAll = document.getElementById("bulk-all");
  if (bulkAll) bulkAll.addEventListener("submit", (ev) => {
    const verb = ev.submitter && ev.submitter.value === "reject" ? "Reject" : "Approve";
    if (!confirm(verb + " every pair matching these filters (" + bulkAll.dataset.matching + " and their partners)?")) ev.preventDefault();
  });
})();
