// The price-sheet tab: a provider's row read backwards through POST /api/prices/explain and /api/prices/infer
// (the prices use cases), against the blackboard's accelerator and efficiency fractions.
"use strict";

(() => {
  const $ = (id) => document.getElementById(id);
  const si = Charts.si;
  const P = (window.kokubanPrices = { runs: 0, last: null });
  const EFF = ["compute_eff", "memory_eff", "kv_eff", "link_eff", "overlap", "step_overhead"];
  let rows = [];

  function el(tag, text, cls) {
    const e = document.createElement(tag);
    if (text !== undefined) e.textContent = text;
    if (cls) e.className = cls;
    return e;
  }
  const num = (v) => (typeof v === "number" ? (Math.abs(v) >= 1000 ? si(v) : `${+v.toPrecision(3)}`) : v === null ? "–" : String(v));

  function body() {
    const b = { name: $("prices-name").value };
    const dep = window.kokuban.deployment();
    if (dep.gpu) b.gpu = dep.gpu;
    for (const k of EFF) if (dep[k] !== undefined) b[k] = dep[k];
    if ($("prices-speed").value) b.speed = Number($("prices-speed").value);
    return b;
  }

  function list(items) {
    const ul = el("ul", undefined, "note");
    for (const a of items || []) ul.appendChild(el("li", a));
    return ul;
  }

  // a table of objects (rows) with their scalar fields as columns; nested objects flattened one level
  function table(named) {
    const flat = Object.entries(named).map(([name, obj]) => {
      const out = { "": name };
      for (const [k, v] of Object.entries(obj || {})) {
        if (v && typeof v === "object" && !Array.isArray(v)) for (const [k2, v2] of Object.entries(v)) out[`${k} ${k2}`] = v2;
        else out[k] = v;
      }
      return out;
    });
    const cols = [...new Set(flat.flatMap((r) => Object.keys(r)))];
    const t = el("table", undefined, "data");
    const head = t.createTHead().insertRow();
    for (const c of cols) head.appendChild(el("th", c.replace(/_/g, " ")));
    const tb = t.createTBody();
    for (const r of flat) {
      const tr = tb.insertRow();
      for (const c of cols) { const td = tr.insertCell(); td.textContent = num(r[c]); if (typeof r[c] === "number") td.dataset.value = String(r[c]); }
    }
    const wrap = el("div", undefined, "table-wrap");
    wrap.appendChild(t);
    return wrap;
  }

  function renderExplain(d) {
    $("prices-title").textContent = `${d.price.key}: read backwards on ${d.deployment}`;
    const out = [];
    if (d.stand_in) out.push(el("p", d.stand_in, "note"));
    for (const f of d.features) {
      const sec = el("section");
      sec.appendChild(el("h3", f.feature.replace(/_/g, " ")));
      const p = el("p", f.sentence);
      p.dataset.feature = f.feature;
      sec.appendChild(p);
      if (f.assumptions && f.assumptions.length) sec.appendChild(list(f.assumptions));
      out.push(sec);
    }
    $("prices-body").replaceChildren(...out);
  }

  function renderInfer(d) {
    const key = d.price.key;
    const out = [];
    if (d.range) {
      $("prices-title").textContent = `${key}: what ${d.deployment} would need to sell at this price`;
      out.push(table(d.range));
      if (d.by_gpu_count) out.push(el("h3", "by accelerator count"), table(Object.fromEntries(d.by_gpu_count.map((r, i) => [String(r.gpus ?? i), r]))));
    } else {
      $("prices-title").textContent = `${key}: the deployments consistent with USD ${num(d.price_usd_per_m_output)} / M output at ${num(d.tokens_per_s_per_user)} tokens/s per user`;
      const dl = el("dl", undefined, "facts");
      for (const k of ["active_params_range", "batch_range", "gpus_range", "best_profit_over_cost", "accelerator", "context"]) {
        if (d[k] === undefined) continue;
        dl.appendChild(el("dt", k.replace(/_/g, " ")));
        dl.appendChild(el("dd", Array.isArray(d[k]) ? d[k].map(num).join(" – ") : num(d[k])));
      }
      out.push(dl);
    }
    out.push(el("h3", "assumptions"), list(d.assumptions));
    $("prices-body").replaceChildren(...out);
  }

  async function call(kind) {
    const t0 = performance.now();
    const r = await fetch(`/api/prices/${kind}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body()) });
    const d = await r.json();
    $("prices-error").hidden = r.ok;
    $("prices-error").textContent = r.ok ? "" : d.error.message;
    if (r.ok) (kind === "explain" ? renderExplain : renderInfer)(d);
    P.runs += 1;
    P.last = { kind, ok: r.ok, ms: performance.now() - t0 };
  }

  function fillRows() {
    const provider = $("prices-provider").value;
    $("prices-name").replaceChildren(...rows.filter((r) => !provider || r.provider === provider).map((r) => {
      const o = el("option", r.key);
      o.value = r.key;
      return o;
    }));
    note();
  }

  function note() {
    const r = rows.find((x) => x.key === $("prices-name").value);
    $("prices-row-note").textContent = r ? `USD ${num(r.input_usd_per_m)} in, ${num(r.output_usd_per_m)} out per million ` +
      `tokens; ${r.open_model ? `open model ${r.open_model}` : "closed model"}; source ${r.source} (${r.retrieved})` : "";
  }

  async function start() {
    const r = await fetch("/api/prices/list", { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
    rows = (await r.json()).map((x) => ({ ...x, key: x.key || `${x.provider}/${x.model}` }));
    const providers = [...new Set(rows.map((x) => x.provider))].sort();
    for (const p of providers) { const o = el("option", p); o.value = p; $("prices-provider").appendChild(o); }
    fillRows();
    $("prices-provider").addEventListener("input", fillRows);
    $("prices-name").addEventListener("input", note);
    $("prices-explain").addEventListener("click", () => call("explain"));
    $("prices-infer").addEventListener("click", () => call("infer"));
  }

  start();
})();
