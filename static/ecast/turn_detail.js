// Turn page, keyboard first: j/k select a manual/raw pair, a/r approve/reject it, e/E edit, n/p change turn, ? help.
(function () {
  "use strict";
  // The unit of curation is the manual/raw pair (one table row); a cell anchor (#p<id>) selects its row.
  const items = Array.from(document.querySelectorAll("tr.pair-row"));
  // Without an anchor the selection starts on the first pair still to decide (the first pair when all are decided).
  let index = Math.max(0, items.findIndex((row) => row.hasAttribute("data-undecided")));
  const anchored = location.hash.startsWith("#p") ? document.getElementById(location.hash.slice(1)) : null;
  const fromHash = anchored ? items.findIndex((row) => row.contains(anchored)) : -1;
  if (fromHash >= 0) index = fromHash;
  function select(i) {
    if (!items.length) return;
    index = Math.max(0, Math.min(items.length - 1, i));
    items.forEach((el, j) => el.classList.toggle("selected", j === index));
    items[index].scrollIntoView({block: "nearest"});
  }
  function submit(cls) {
    const form = items[index] && items[index].querySelector("form." + cls);
    if (form) form.submit();
  }
  function edit(cell) {
    if (!cell) return;
    const form = cell.querySelector(".edit-form");
    form.hidden = false;
    const ta = form.querySelector("textarea");
    ta.focus();
    ta.setSelectionRange(ta.value.length, ta.value.length);
  }
  items.forEach((row, j) => row.addEventListener("click", () => select(j)));
  document.querySelectorAll(".para").forEach((cell) => {
    cell.querySelector(".act-edit").addEventListener("click", () => edit(cell));
    cell.querySelector(".act-cancel").addEventListener("click", () => { cell.querySelector(".edit-form").hidden = true; });
    cell.querySelector(".edit-form textarea").addEventListener("keydown", (ev) => {
      if (ev.key === "Enter" && (ev.ctrlKey || ev.metaKey)) { ev.preventDefault(); ev.target.form.submit(); }
    });
  });
  const help = document.getElementById("help");
  document.getElementById("help-toggle").addEventListener("click", () => { help.hidden = !help.hidden; });
  document.addEventListener("keydown", (ev) => {
    const t = ev.target;
    if (ev.key === "Escape") {
      help.hidden = true;
      document.querySelectorAll(".edit-form").forEach((f) => { f.hidden = true; });
      if (t && t.blur) t.blur();
      return;
    }
    if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
    if (t && (t.tagName === "INPUT" || t.tagName === "TEXTAREA" || t.tagName === "SELECT" || t.isContentEditable)) return;
    const go = (id) => { const a = document.getElementById(id); if (a) location.href = a.href; };
    const cells = items[index] ? items[index].querySelectorAll(".para") : [];
    switch (ev.key) {
      case "j": select(index + 1); break;
      case "k": select(index - 1); break;
      case "a": submit("act-approve"); break;
      case "r": submit("act-reject"); break;
      case "e": edit(cells[0]); break;
      case "E": edit(cells[1]); break;
      case "n": go("next-turn"); break;
      case "p": go("prev-turn"); break;
      case "?": help.hidden = !help.hidden; break;
      default: return;
    }
    ev.preventDefault();
  });
  select(index);
  // Opening on a pair far down the table scrolls the page's message ("… on to turn 81_3") out of sight: show it
  // over the page for a few seconds instead.
  const flash = document.querySelector(".messages");
  if (flash && flash.getBoundingClientRect().bottom < 0) {
    flash.classList.add("toast");
    setTimeout(() => flash.classList.remove("toast"), 8000);
  }
})();
