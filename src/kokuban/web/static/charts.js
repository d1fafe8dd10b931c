// kokuban's charts: a few SVG line/point charts and stacked bars drawn by hand (no library, no CDN).
// Each draw function clears its <svg> and redraws it from plain numbers; axes carry units, charts a legend.
// A chart is drawn at the pixel width its <svg> has on the page (one unit of the viewBox is one CSS pixel), so
// its text is the size the style sheet says on a phone as on a desktop; it is drawn again when that width changes.
"use strict";

const Charts = (() => {
  const NS = "http://www.w3.org/2000/svg";
  const M = { l: 62, r: 14, t: 12, b: 44 };
  const MIN_W = 280, FALLBACK_W = 560;  // the narrowest drawing; the width of a chart drawn while it is hidden
  const CHAR = 6.6;                     // the width of an average character of 11–12 px text, for layout

  function el(name, attrs, parent, text) {
    const e = document.createElementNS(NS, name);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
    if (text !== undefined) e.textContent = text;
    if (parent) parent.appendChild(e);
    return e;
  }

  // ---- drawing at the svg's own width, and again when it changes ---------------------------------
  const drawn = new WeakMap();  // svg → { width, redraw }
  const resized = typeof ResizeObserver === "function" ? new ResizeObserver((entries) => {
    for (const e of entries) {
      const d = drawn.get(e.target);
      if (d && pixelWidth(e.target) !== d.width) d.redraw();
    }
  }) : null;

  function pixelWidth(svg) {
    const w = Math.floor(svg.getBoundingClientRect().width);
    return w > 0 ? Math.max(w, MIN_W) : 0;
  }

  // the width to draw `svg` at (its own, or FALLBACK_W while hidden); `redraw` runs again when the width changes
  function sized(svg, redraw) {
    const w = pixelWidth(svg);
    drawn.set(svg, { width: w, redraw });
    if (resized) resized.observe(svg);
    return w || FALLBACK_W;
  }

  // the width of `t`'s text: measured where the chart is shown, estimated where it is not
  function textWidth(t) {
    const measured = t.getComputedTextLength ? t.getComputedTextLength() : 0;
    return measured > 0 ? measured : CHAR * t.textContent.length;
  }

  // 1.23e12 → "1.23 T" (SI prefixes, 3 significant digits)
  function si(v, unit = "") {
    if (!isFinite(v)) return "–";
    const a = Math.abs(v);
    const p = [[1e15, "P"], [1e12, "T"], [1e9, "G"], [1e6, "M"], [1e3, "k"]];
    for (const [f, s] of p) if (a >= f) return `${+(v / f).toPrecision(3)} ${s}${unit}`;
    if (a > 0 && a < 1e-3 && unit === "") return v.toExponential(2);
    return `${+v.toPrecision(3)}${unit ? " " + unit : ""}`;
  }

  function scale(lo, hi, a, b, log) {
    if (log) { lo = Math.log10(lo); hi = Math.log10(hi); }
    if (hi === lo) { hi = lo + 1; lo -= log ? 1 : 0; }
    const f = (v) => a + ((log ? Math.log10(v) : v) - lo) / (hi - lo) * (b - a);
    f.lo = lo; f.hi = hi; f.log = log;
    return f;
  }

  // ticks of an axis `s`; at most about one per `room` pixels of its `span` (linear axes)
  function ticks(s, span = 500, room = 60) {
    const out = [];
    if (s.log) {
      const every = Math.max(1, Math.ceil((s.hi - s.lo) / Math.max(1, Math.floor(span / room))));
      for (let e = Math.ceil(s.lo - 1e-9); e <= Math.floor(s.hi + 1e-9); e++) if (e % every === 0) out.push(10 ** e);
      if (out.length < 2) for (const m of [2, 5]) {
        for (let e = Math.floor(s.lo); e <= Math.ceil(s.hi); e++) {
          const v = m * 10 ** e; if (Math.log10(v) >= s.lo && Math.log10(v) <= s.hi) out.push(v);
        }
      }
      return out.sort((a, b) => a - b);
    }
    const most = Math.max(2, Math.floor(span / room));
    const range = s.hi - s.lo, step = 10 ** Math.floor(Math.log10(range / most));
    const k = [1, 2, 5, 10].find((m) => range / (step * m) <= most) || 10;
    for (let v = Math.ceil(s.lo / (step * k)) * step * k; v <= s.hi + 1e-12; v += step * k) out.push(v);
    return out;
  }

  function extent(values, log) {
    const v = values.filter((x) => isFinite(x) && (!log || x > 0));
    if (!v.length) return [1, 10];
    let lo = Math.min(...v), hi = Math.max(...v);
    if (log) { lo /= 1.5; hi *= 1.5; } else { const pad = (hi - lo) * 0.05 || Math.abs(hi) * 0.1 || 1; lo = Math.min(0, lo); hi += pad; }
    return [lo, hi];
  }

  function frame(svg, W, H, x, y, xl, yl) {
    svg.replaceChildren();
    svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
    const g = el("g", { class: "axes" }, svg);
    el("line", { x1: M.l, y1: H - M.b, x2: W - M.r, y2: H - M.b }, g);
    el("line", { x1: M.l, y1: M.t, x2: M.l, y2: H - M.b }, g);
    for (const t of ticks(x, W - M.l - M.r, 56)) {
      const px = x(t);
      el("line", { x1: px, y1: M.t, x2: px, y2: H - M.b, class: "grid" }, g);
      el("text", { x: px, y: H - M.b + 15, "text-anchor": "middle" }, g, si(t));
    }
    for (const t of ticks(y, H - M.t - M.b, 28)) {
      const py = y(t);
      el("line", { x1: M.l, y1: py, x2: W - M.r, y2: py, class: "grid" }, g);
      el("text", { x: M.l - 5, y: py + 4, "text-anchor": "end" }, g, si(t));
    }
    el("text", { x: (M.l + W - M.r) / 2, y: H - 7, "text-anchor": "middle", class: "label" }, g, xl);
    el("text", { x: 14, y: (M.t + H - M.b) / 2, "text-anchor": "middle", class: "label",
                 transform: `rotate(-90 14 ${(M.t + H - M.b) / 2})` }, g, yl);
    return g;
  }

  // where legend items go: left to right, wrapping at the chart's width; [{x, row}] and the rows used. Each name is
  // measured in `svg` (set in the legend's own font), or estimated while the chart is hidden.
  const ROW = 15;
  function legendLayout(svg, W, items) {
    const g = el("g", { class: "legend" }, svg);
    const widths = items.map((it) => 24 + textWidth(el("text", {}, g, it.name)));
    g.remove();
    const at = [];
    let px = M.l + 8, row = 0;
    items.forEach((it, i) => {
      if (px + widths[i] - 10 > W - 4 && px > M.l + 8) { px = M.l + 8; row += 1; }
      at.push({ x: px, row });
      px += widths[i];
    });
    return { at, rows: row + 1 };
  }

  function legend(svg, items, layout, y0) {
    const g = el("g", { class: "legend" }, svg);
    items.forEach((it, i) => {
      const px = layout.at[i].x, py = y0 + ROW * layout.at[i].row;
      el(it.point ? "circle" : "rect", it.point ? { cx: px + 5, cy: py - 4, r: 4, class: it.cls } :
        { x: px, y: py - 9, width: 10, height: 9, class: it.cls }, g);
      el("text", { x: px + 14, y: py }, g, it.name);
    });
  }

  // a chart's message instead of its drawing (an error, or nothing to draw), wrapped to the chart's width
  function note(svg, text) {
    const W = sized(svg, () => note(svg, text));
    svg.replaceChildren();
    const per = Math.max(20, Math.floor((W - 20) / 7));  // characters of 12 px text per line
    const lines = [];
    for (const word of String(text).split(/\s+/)) {
      const last = lines[lines.length - 1];
      if (last !== undefined && (last + " " + word).length <= per) lines[lines.length - 1] = last + " " + word;
      else lines.push(word);
    }
    svg.setAttribute("viewBox", `0 0 ${W} ${24 + 16 * lines.length}`);
    lines.forEach((line, i) => el("text", { x: 10, y: 28 + 16 * i, class: "note" }, svg, line));
  }

  // lines: {xs, ys, cls, name, points?}; marks: {x, cls, name, at?: "bottom"} vertical lines; dots: {x, y, cls, name}
  function lines(svg, opt) {
    const W = sized(svg, () => lines(svg, opt));
    svg.replaceChildren();
    const allX = [], allY = [];
    for (const s of opt.series) { allX.push(...s.xs); allY.push(...s.ys); }
    for (const d of opt.dots || []) { allX.push(d.x); allY.push(d.y); }
    const [x0, x1] = opt.xrange || extent(allX, opt.xlog);
    const [y0, y1] = opt.yrange || extent(allY, opt.ylog);
    const items = [...opt.series.filter((s) => s.name).map((s) => ({ name: s.name, cls: `key ${s.cls}` })),
                   ...(opt.dots || []).map((d) => ({ name: d.name, cls: `dot ${d.cls}`, point: true }))];
    const layout = legendLayout(svg, W, items);
    const top = M.t + 18 + ROW * (layout.rows - 1);
    const H = Math.round(Math.min(320, Math.max(240, W * 0.56))) + ROW * (layout.rows - 1);
    const x = scale(x0, x1, M.l, W - M.r, opt.xlog), y = scale(y0, y1, H - M.b, top, opt.ylog);
    frame(svg, W, H, x, y, opt.xlabel, opt.ylabel);
    const clipX = (v) => Math.max(M.l, Math.min(W - M.r, v)), clipY = (v) => Math.max(M.t, Math.min(H - M.b, v));
    const taken = [];  // the mark labels placed so far: [left, right, baseline]
    for (const m of opt.marks || []) {
      if (!(m.x > 0) && opt.xlog) continue;
      const px = x(m.x);
      if (px < M.l || px > W - M.r) continue;
      el("line", { x1: px, y1: top, x2: px, y2: H - M.b, class: `mark ${m.cls}` }, svg);
      let py = m.at === "bottom" ? H - M.b - 6 : top + 12;
      const t = el("text", { x: px + 3, y: py, class: `mark-label ${m.cls}` }, svg, m.name);
      const w = textWidth(t);
      const left = px + 3 + w <= W - 2 ? px + 3 : Math.max(2, px - 3 - w);  // right of the line, else left of it
      while (taken.some(([l, r, b]) => b === py && left < r + 4 && left + w > l - 4)) py += m.at === "bottom" ? -13 : 13;
      t.setAttribute("x", left);
      t.setAttribute("y", py);
      taken.push([left, left + w, py]);
    }
    for (const s of opt.series) {
      const pts = [];
      s.xs.forEach((xv, i) => {
        const yv = s.ys[i];
        if (isFinite(xv) && isFinite(yv) && (!opt.xlog || xv > 0) && (!opt.ylog || yv > 0)) pts.push(`${clipX(x(xv)).toFixed(1)},${clipY(y(yv)).toFixed(1)}`);
      });
      if (pts.length) el("polyline", { points: pts.join(" "), class: `line ${s.cls}` }, svg);
    }
    for (const d of opt.dots || []) {
      if (!(isFinite(d.x) && isFinite(d.y))) continue;
      const c = el("circle", { cx: clipX(x(d.x)), cy: clipY(y(d.y)), r: 5, class: `dot ${d.cls}` }, svg);
      el("title", {}, c, d.title || d.name);
    }
    legend(svg, items, layout, M.t + 10);
  }

  // one horizontal stacked bar per row: rows [{label, parts: [{name, value, cls}]}], a limit mark per row (`limit`)
  function stacked(svg, opt) {
    const W = sized(svg, () => stacked(svg, opt));
    svg.replaceChildren();
    const items = [];
    for (const r of opt.rows) for (const p of r.parts) if (!items.some((it) => it.name === p.name)) items.push({ name: p.name, cls: `key ${p.cls}` });
    const layout = legendLayout(svg, W, items);
    const rowH = 36, top = 22 + ROW * layout.rows, h = top + rowH * opt.rows.length + 46;
    svg.setAttribute("viewBox", `0 0 ${W} ${h}`);
    const total = Math.max(...opt.rows.map((r) => Math.max(r.parts.reduce((a, p) => a + p.value, 0), r.limit || 0)), 1e-300);
    const left = Math.max(M.l + 10, 16 + CHAR * Math.max(...opt.rows.map((r) => r.label.length)));
    const x = scale(0, total * 1.04, left, W - M.r, false);
    const g = el("g", { class: "axes" }, svg);
    el("line", { x1: x(0), y1: top - 6, x2: x(0), y2: top + rowH * opt.rows.length }, g);
    for (const t of ticks(x, W - M.r - left, 56)) {
      el("line", { x1: x(t), y1: top - 6, x2: x(t), y2: top + rowH * opt.rows.length, class: "grid" }, g);
      el("text", { x: x(t), y: top + rowH * opt.rows.length + 15, "text-anchor": "middle" }, g, si(t));
    }
    el("text", { x: (x(0) + W - M.r) / 2, y: h - 9, "text-anchor": "middle", class: "label" }, g, opt.xlabel);
    opt.rows.forEach((r, i) => {
      const py = top + i * rowH;
      el("text", { x: x(0) - 6, y: py + rowH / 2 + 3, "text-anchor": "end" }, g, r.label);
      let acc = 0;
      for (const p of r.parts) {
        if (!(p.value > 0)) continue;
        const rect = el("rect", { x: x(acc), y: py + 5, width: Math.max(x(acc + p.value) - x(acc), 0.5), height: rowH - 12, class: `key ${p.cls}` }, svg);
        el("title", {}, rect, `${p.name}: ${si(p.value)}${opt.unit ? " " + opt.unit : ""}`);
        acc += p.value;
      }
      if (r.limit) {
        el("line", { x1: x(r.limit), y1: py, x2: x(r.limit), y2: py + rowH - 2, class: "mark limit" }, svg);
        el("text", { x: x(r.limit) - 3, y: py + 2, "text-anchor": "end", class: "mark-label" }, svg, r.limitLabel || "");
      }
    });
    legend(svg, items, layout, 15);
  }

  return { lines, stacked, note, si };
})();
