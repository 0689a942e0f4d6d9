// What plain forms do on every page, declared in the markup instead of inline handlers:
// - ``data-autosubmit`` on a field: changing it submits its form, after emptying the fields named in
//   ``data-clear`` (space-separated; those the form lacks are skipped), e.g. a version of another collection;
// - ``data-confirm`` on a form or a submit button: asks first, and nothing is sent unless the person agrees;
// - ``data-select-on-click`` on a field: a click selects its text (a token to copy).
(function () {
  "use strict";

  document.addEventListener("change", (ev) => {
    const field = ev.target.closest && ev.target.closest("[data-autosubmit]");
    if (!field || !field.form) return;
    for (const name of (field.dataset.clear || "").split(/\s+/).filter(Boolean)) {
      const other = field.form.elements[name];
      if (other) other.value = "";
    }
    field.form.submit();
  });

  document.addEventListener("click", (ev) => {
    const target = ev.target.closest ? ev.target.closest("[data-confirm], [data-select-on-click]") : null;
    if (!target) return;
    if (target.matches("[data-select-on-click]")) target.select();
    else if (target.form !== undefined && target.dataset.confirm && !window.confirm(target.dataset.confirm)) {
      ev.preventDefault(); // a submit button: its form is not sent
    }
  });

  document.addEventListener("submit", (ev) => {
    const form = ev.target;
    if (form.dataset && form.dataset.confirm && !window.confirm(form.dataset.confirm)) ev.preventDefault();
  });
})();
