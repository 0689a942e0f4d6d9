// Import page: the chosen kind's options are explained under the Options field.
(function () {
  "use strict";
  const help = JSON.parse(document.getElementById("option-help-data").textContent);
  const kind = document.getElementById("id_kind");
  const out = document.getElementById("option-help");
  function show() { out.textContent = "Options for " + kind.value + ": " + (help[kind.value] || "none"); }
  // The "new collection" link brings the admin back with the kind chosen so far.
  const link = document.getElementById("new-collection-link");
  function relink() {
    if (!link) { return; }
    const back = link.dataset.back + "?kind=" + encodeURIComponent(kind.value);
    link.href = link.pathname + "?next=" + encodeURIComponent(back) + "#new-collection";
  }
  kind.addEventListener("change", function () { show(); relink(); });
  show();
  relink();
})();
