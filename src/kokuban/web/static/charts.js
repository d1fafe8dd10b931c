// kokuban's charts: a few SVG line/point charts and stacked bars drawn by hand (no library, no CDN).
// Each draw function clears its <svg> and redraws it from plain numbers; axes carry units, charts a legend.
"use strict";

const Charts = (() => {
  const NS = "http://www.w3.org/2000/svg";
  const W = 560, H = 300, M = { l: 62, r: 14, t: 12, b: 44 };

  function el(name, attrs, parent, text) {
    const e = document.createElementNS(NS, name);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
    if (text !== undefined) e.textContent = text;
    if (parent) parent.appendChild(e);
    return e;
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

  function ticks(s) {
    const out = [];
    if (s.log) {
      for (let e = Math.ceil(s.lo - 1e-9); e <= Math.floor(s.hi + 1e-9); e++) out.push(10 ** e);
      if (out.length < 2) for (const m of [2, 5]) {
        for (let e = Math.floor(s.lo); e <= Math.ceil(s.hi); e++) {
          const v = m * 10 ** e; if (Math.log10(v) >= s.lo && Math.log10(v) <= s.hi) out.push(v);
        }
      }
      return out.sort((a, b) => a - b);
    }
    const span = s.hi - s.lo, step = 10 ** Math.floor(Math.log10(span / 4));
    const k = span / step > 20 ? 5 : span / step > 8 ? 2 : 1;
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

  function frame(svg, x, y, xl, yl) {
    svg.replaceChildren();
    svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
    const g = el("g", { class: "axes" }, svg);
    el("line", { x1: M.l, y1: H - M.b, x2: W - M.r, y2: H - M.b }, g);
    el("line", { x1: M.l, y1: M.t, x2: M.l, y2: H - M.b }, g);
    for (const t of ticks(x)) {
      const px = x(t);
      el("line", { x1: px, y1: M.t, x2: px, y2: H - M.b, class: "grid" }, g);
      el("text", { x: px, y: H - M.b + 14, "text-anchor": "middle" }, g, si(t));
    }
    for (const t of ticks(y)) {
      const py = y(t);
      el("line", { x1: M.l, y1: py, x2: W - M.r, y2: py, class: "grid" }, g);
      el("text", { x: M.l - 5, y: py + 4, "text-anchor": "end" }, g, si(t));
    }
    el("text", { x: (M.l + W - M.r) / 2, y: H - 6, "text-anchor": "middle", class: "label" }, g, xl);
    el("text", { x: 12, y: (M.t + H - M.b) / 2, "text-anchor": "middle", class: "label",
                 transform: `rotate(-90 12 ${(M.t + H - M.b) / 2})` }, g, yl);
    return g;
  }

  // lay legend items out left to right, wrapping at the chart's width; returns the rows used
  function legend(svg, items, y0) {
    const g = el("g", { class: "legend" }, svg);
    let px = M.l + 8, py = y0 ?? M.t + 10, rows = 1;
    for (const it of items) {
      const w = 22 + 6.2 * it.name.length;
      if (px + w > W - 4 && px > M.l + 8) { px = M.l + 8; py += 14; rows += 1; }
      el(it.point ? "circle" : "rect", it.point ? { cx: px + 5, cy: py - 4, r: 4, class: it.cls } :
        { x: px, y: py - 8, width: 10, height: 8, class: it.cls }, g);
      el("text", { x: px + 14, y: py }, g, it.name);
      px += w;
    }
    return rows;
  }

  function legendRows(items) {
    let px = M.l + 8, rows = 1;
    for (const it of items) {
      const w = 22 + 6.2 * it.name.length;
      if (px + w > W - 4 && px > M.l + 8) { px = M.l + 8; rows += 1; }
      px += w;
    }
    return rows;
  }

  // lines: {xs, ys, cls, name, points?}; marks: {x, cls, name} vertical lines; dots: {x, y, cls, name}
  function lines(svg, opt) {
    const allX = [], allY = [];
    for (const s of opt.series) { allX.push(...s.xs); allY.push(...s.ys); }
    for (const d of opt.dots || []) { allX.push(d.x); allY.push(d.y); }
    const [x0, x1] = opt.xrange || extent(allX, opt.xlog);
    const [y0, y1] = opt.yrange || extent(allY, opt.ylog);
    const items = [...opt.series.filter((s) => s.name).map((s) => ({ name: s.name, cls: `key ${s.cls}` })),
                   ...(opt.dots || []).map((d) => ({ name: d.name, cls: `dot ${d.cls}`, point: true }))];
    const top = M.t + 16 + 14 * (legendRows(items) - 1);
    const x = scale(x0, x1, M.l, W - M.r, opt.xlog), y = scale(y0, y1, H - M.b, top, opt.ylog);
    frame(svg, x, y, opt.xlabel, opt.ylabel);
    const clipX = (v) => Math.max(M.l, Math.min(W - M.r, v)), clipY = (v) => Math.max(M.t, Math.min(H - M.b, v));
    for (const m of opt.marks || []) {
      if (!(m.x > 0) && opt.xlog) continue;
      const px = x(m.x);
      if (px < M.l || px > W - M.r) continue;
      el("line", { x1: px, y1: top, x2: px, y2: H - M.b, class: `mark ${m.cls}` }, svg);
      el("text", { x: px + 3, y: top + 12, class: `mark-label ${m.cls}` }, svg, m.name);
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
    legend(svg, items);
  }

  // one horizontal stacked bar per row: rows [{label, parts: [{name, value, cls}]}], a limit mark per row (`limit`)
  function stacked(svg, opt) {
    svg.replaceChildren();
    const items = [];
    for (const r of opt.rows) for (const p of r.parts) if (!items.some((it) => it.name === p.name)) items.push({ name: p.name, cls: `key ${p.cls}` });
    const rowH = 30, top = 18 + 14 * legendRows(items), h = top + rowH * opt.rows.length + 42;
    svg.setAttribute("viewBox", `0 0 ${W} ${h}`);
    const total = Math.max(...opt.rows.map((r) => Math.max(r.parts.reduce((a, p) => a + p.value, 0), r.limit || 0)), 1e-300);
    const left = Math.max(M.l + 10, 16 + 6.2 * Math.max(...opt.rows.map((r) => r.label.length)));
    const x = scale(0, total * 1.04, left, W - M.r, false);
    const g = el("g", { class: "axes" }, svg);
    el("line", { x1: x(0), y1: top - 6, x2: x(0), y2: top + rowH * opt.rows.length }, g);
    for (const t of ticks(x)) {
      el("line", { x1: x(t), y1: top - 6, x2: x(t), y2: top + rowH * opt.rows.length, class: "grid" }, g);
      el("text", { x: x(t), y: top + rowH * opt.rows.length + 14, "text-anchor": "middle" }, g, si(t));
    }
    el("text", { x: (x(0) + W - M.r) / 2, y: h - 8, "text-anchor": "middle", class: "label" }, g, opt.xlabel);
    opt.rows.forEach((r, i) => {
      const py = top + i * rowH;
      el("text", { x: x(0) - 6, y: py + rowH / 2 + 2, "text-anchor": "end" }, g, r.label);
      let acc = 0;
      for (const p of r.parts) {
        if (!(p.value > 0)) continue;
        const rect = el("rect", { x: x(acc), y: py + 4, width: Math.max(x(acc + p.value) - x(acc), 0.5), height: rowH - 10, class: `key ${p.cls}` }, svg);
        el("title", {}, rect, `${p.name}: ${si(p.value)}${opt.unit ? " " + opt.unit : ""}`);
        acc += p.value;
      }
      if (r.limit) {
        el("line", { x1: x(r.limit), y1: py, x2: x(r.limit), y2: py + rowH - 2, class: "mark limit" }, svg);
        el("text", { x: x(r.limit) - 3, y: py + 2, "text-anchor": "end", class: "mark-label" }, svg, r.limitLabel || "");
      }
    });
    legend(svg, items, 14);
  }

  return { lines, stacked, si };
})();
