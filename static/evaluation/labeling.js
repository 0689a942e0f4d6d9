// Keyboard-first SE/FT/PT labelling: j/k move, s/f/p set the focused turn's class (saved at once through the one
// send queue, static/ecast/send.js: in order, retried until the server answers, a refusal shown on the turn), n/b
// change topic. The dependency forest and the number of valid orders follow the labels.
(function () {
  "use strict";
  const list = document.getElementById("turns");
  if (!list) return;
  const items = Array.from(list.querySelectorAll(".label-turn"));
  const byTurn = new Map(items.map((li) => [li.dataset.turn, li]));
  // Classes not yet confirmed, per turn id.
  const pending = window.EcastSend.queue({
    url: list.dataset.api,
    payload: (id, cls) => ({ turn: Number(id), utterance_class: cls }),
    onAnswer: (id, cls, result) => {
      const li = byTurn.get(id);
      if (result.ok) delete li.dataset.error;
      else li.dataset.error = "not saved: " + result.detail;
    },
    onChange: () => render(),
  });
  // Start at the first unlabelled turn after turn 1 (turn 1 never moves, so its class does not matter).
  let focus = items.findIndex((li, i) => i > 0 && !li.dataset.cls);
  if (focus < 0) focus = Math.min(1, items.length - 1);
  const COLORS = { SE: "#2457c5", FT: "#1d7a46", PT: "#b36b00", "": "#9aa3b2" };

  function render() {
    items.forEach((li, i) => {
      li.classList.toggle("focused", i === focus);
      li.classList.toggle("future", i > focus); // the focused turn is read with its history above it
      li.querySelectorAll(".cls-btn").forEach((b) => b.classList.toggle("on", b.dataset.set === li.dataset.cls));
      const st = li.querySelector(".save-state");
      st.textContent = pending.has(li.dataset.turn) ? "saving…" : li.dataset.error ? li.dataset.error : "";
      st.classList.toggle("error", !pending.has(li.dataset.turn) && !!li.dataset.error);
    });
    items[focus].scrollIntoView({ block: "nearest" });
    drawForest();
    const s = document.getElementById("save-summary");
    const state = pending.state();
    s.textContent = state.pending
      ? state.pending + " label(s) not yet saved" + (state.retrying ? " (connection problem, retrying)" : "") +
        " — keep this page open"
      : state.refused
        ? state.refused + " label(s) not saved: the server refused them (see the turn)."
        : "All labels saved.";
  }

  // Same rule as the server: turn 1 is the root; FT -> turn 1; PT -> nearest preceding SE (or turn 1).
  function dependencies() {
    const deps = {};
    let head = null;
    items.forEach((li, i) => {
      const n = li.dataset.number, c = li.dataset.cls;
      if (i === 0) { deps[n] = null; head = n; return; }
      if (c === "SE") { deps[n] = null; head = n; }
      else if (c === "FT") deps[n] = items[0].dataset.number;
      else if (c === "PT") deps[n] = head;
      else deps[n] = undefined;
    });
    return deps;
  }

  function factorial(n) { let r = 1; for (let i = 2; i <= n; i++) r *= i; return r; }

  function blockCount() {
    // exact closed form: (#units)! x prod(#PT in block)!, PT blocks keyed by their head
    if (items.slice(1).some((li) => !li.dataset.cls)) return null;
    const deps = dependencies();
    const sizes = {};
    let units = 0;
    items.slice(1).forEach((li) => {
      const c = li.dataset.cls, n = li.dataset.number;
      if (c === "PT") sizes[deps[n]] = (sizes[deps[n]] || 0) + 1;
      else units += 1;
    });
    return Object.values(sizes).reduce((acc, k) => acc * factorial(k), factorial(units));
  }

  function drawForest() {
    const svg = document.getElementById("forest");
    const ns = "http://www.w3.org/2000/svg";
    while (svg.firstChild) svg.removeChild(svg.firstChild);
    const w = Math.max(svg.clientWidth || 400, 200), n = items.length;
    const x = (i) => 20 + (i * (w - 40)) / Math.max(1, n - 1);
    const y = 130;
    const deps = dependencies();
    const index = {};
    items.forEach((li, i) => (index[li.dataset.number] = i));
    items.forEach((li, i) => {
      const d = deps[li.dataset.number];
      if (d === null || d === undefined) return;
      const j = index[d];
      const path = document.createElementNS(ns, "path");
      const h = Math.min(110, 18 + 12 * Math.abs(i - j));
      path.setAttribute("d", `M${x(i)},${y - 10} C${x(i)},${y - h} ${x(j)},${y - h} ${x(j)},${y - 10}`);
      path.setAttribute("fill", "none");
      path.setAttribute("stroke", COLORS[li.dataset.cls]);
      path.setAttribute("stroke-width", "2");
      path.setAttribute("class", "edge");
      path.setAttribute("data-from", li.dataset.number);
      path.setAttribute("data-to", d);
      svg.appendChild(path);
    });
    items.forEach((li, i) => {
      const c = document.createElementNS(ns, "circle");
      c.setAttribute("cx", x(i)); c.setAttribute("cy", y); c.setAttribute("r", i === focus ? 11 : 9);
      c.setAttribute("fill", COLORS[li.dataset.cls || ""]);
      svg.appendChild(c);
      const t = document.createElementNS(ns, "text");
      t.setAttribute("x", x(i)); t.setAttribute("y", y + 4); t.setAttribute("text-anchor", "middle");
      t.setAttribute("font-size", "10"); t.setAttribute("fill", "#fff");
      t.textContent = li.dataset.label || li.dataset.number; // a tree's branch-aware number ("2-3")
      svg.appendChild(t);
      const lab = document.createElementNS(ns, "text");
      lab.setAttribute("x", x(i)); lab.setAttribute("y", y + 26); lab.setAttribute("text-anchor", "middle");
      lab.setAttribute("font-size", "10");
      lab.textContent = i === 0 ? "first" : li.dataset.cls || "?";
      svg.appendChild(lab);
    });
    const count = blockCount();
    document.getElementById("order-count").textContent =
      count === null ? "Label every turn to see how many orders are valid." : `Valid orders: ${count.toLocaleString()}`;
  }

  function setClass(i, cls) {
    const li = items[i];
    li.dataset.cls = cls;
    pending.send(li.dataset.turn, cls);
  }

  document.addEventListener("keydown", (ev) => {
    if (ev.ctrlKey || ev.metaKey || ev.altKey || /input|textarea|select/i.test(ev.target.tagName)) return;
    const k = ev.key.toLowerCase();
    if (k === "j" || ev.key === "ArrowDown") { focus = Math.min(items.length - 1, focus + 1); render(); ev.preventDefault(); }
    else if (k === "k" || ev.key === "ArrowUp") { focus = Math.max(0, focus - 1); render(); ev.preventDefault(); }
    else if (k === "s" || k === "f" || k === "p") {
      setClass(focus, { s: "SE", f: "FT", p: "PT" }[k]);
      if (focus < items.length - 1) focus += 1;
      render();
      ev.preventDefault();
    } else if (k === "n" || k === "b") {
      const a = document.getElementById(k === "n" ? "next-conv" : "prev-conv");
      if (a && !pending.size()) window.location = a.href;
    }
  });
  items.forEach((li, i) => {
    li.addEventListener("click", () => { focus = i; render(); });
    li.querySelectorAll(".cls-btn").forEach((b) => b.addEventListener("click", (ev) => {
      ev.stopPropagation(); focus = i; setClass(i, b.dataset.set); render();
    }));
  });
  window.addEventListener("resize", drawForest);
  render();
})();
