/* A permutation experiment's page: while its chunks run, fill the "orders used" column as each conversation's
   chunk samples its orders (from the job progress that static/ecast/poll.js polls). */
document.addEventListener("ecast:job", function (event) {
  var sampled = new Map((event.detail.detail.sampled || []).map(function (row) {
    return [row.conversation + ":" + row.path, row.orders];
  }));
  document.querySelectorAll("[data-sampled]").forEach(function (cell) {
    if (sampled.has(cell.dataset.sampled)) cell.textContent = sampled.get(cell.dataset.sampled);
  });
});
