// Import page: the chosen kind's options are explained under the Options field.
(function () {
  "use strict";
  const help = JSON.parse(document.getElementById("option-help-data").textContent);
  const kind = document.getElementById("id_kind");
  const out = document.getElementById("option-help");
  function show() { out.textContent = "Options for " + kind.value + ": " + (help[kind.value] || "none"); }
  kind.addEventListener("change", show);
  show();
})();
