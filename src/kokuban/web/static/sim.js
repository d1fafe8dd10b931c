// The simulator tab: a short serving simulation on the blackboard's deployment through POST /api/simulate (the
// simulate use case, capped), its latency CDFs and percentiles. Runs on "Run", not on every keystroke. Its
// controls live in the URL as sim_* parameters (tab=sim, which app.js opens, also runs it).
"use strict";

(() => {
  const $ = (id) => document.getElementById(id);
  const si = Charts.si;
  const S = (window.kokubanSim = { runs: 0, last: null });
  const FIELDS = ["rate", "requests", "prompt", "output", "scheduler", "seed"];  // sim-X control → body field X
  const secs = (s) => (s < 1e-3 ? `${+(s * 1e6).toPrecision(3)} µs` : s < 1 ? `${+(s * 1e3).toPrecision(3)} ms` : `${+s.toPrecision(3)} s`);
  const usd = (v) => (v >= 1000 ? si(v) : `${+v.toPrecision(3)}`);

  function setK(k, value, text) {
    for (const e of document.querySelectorAll(`[data-k="${k}"]`)) { e.dataset.value = String(value); e.textContent = text; }
  }

  function body() {
    const b = { ...window.kokuban.deployment() };
    for (const f of FIELDS) {
      const v = $(`sim-${f}`).value.trim();
      if (v === "") continue;
      b[f] = f === "requests" || f === "seed" ? Number(v) : f === "rate" && v !== "inf" ? Number(v) : v;
    }
    return b;
  }

  function writeURL() {
    const q = new URLSearchParams(location.search);
    for (const f of FIELDS) { const v = $(`sim-${f}`).value.trim(); if (v === "") q.delete(`sim_${f}`); else q.set(`sim_${f}`, v); }
    q.set("tab", "sim");
    history.replaceState(null, "", `${location.pathname}?${q}`);
  }

  function showError(err) {
    const box = $("sim-error");
    for (const e of document.querySelectorAll("#sim-form [aria-invalid]")) e.removeAttribute("aria-invalid");
    $("sim-results").classList.toggle("stale", !!err);
    box.hidden = !err;
    box.textContent = err ? err.message : "";
    const target = err && err.field && $(`sim-${err.field}`);
    if (target) target.setAttribute("aria-invalid", "true");
  }

  // a CDF: the sorted samples against i/n, with the run's p50/p90/p99 marked
  function cdf(svg, samples, stats, scale, unit, name) {
    const n = samples.length;
    if (!n) {
      Charts.note(svg, `no ${name} samples (one-token outputs have none)`);
      return;
    }
    const xs = [], ys = [];
    samples.forEach((v, i) => { xs.push(v * scale, v * scale); ys.push(i / n, (i + 1) / n); });
    Charts.lines(svg, {
      xlabel: `${name}, ${unit}`, ylabel: "fraction of requests ≤ x", yrange: [0, 1.05],
      series: [{ name: `${name} CDF (${n} requests)`, xs, ys, cls: "c-total" }],
      marks: [["p50", "c-fit"], ["p90", "c-cross"], ["p99", "c-ridge"]].filter(([p]) => stats[p] !== null)
        .map(([p, cls]) => ({ x: stats[p] * scale, name: p, cls })),
    });
  }

  function render(d) {
    const L = d.latency_s, t = d.throughput, c = d.cost;
    $("sim-title").textContent = `${d.deployment}: ${d.requests} requests in ${secs(d.duration_s)} simulated, ` +
      `${d.steps.toLocaleString("en")} steps, scheduler ${d.scheduler.policy}`;
    for (const k of ["ttft", "tpot", "e2e"]) {
      const v = L[k].p50;
      setK(`sim_${k}_p50`, v ?? "", v === null ? "–" : secs(v));
    }
    setK("sim_output_tokens_per_s", t.output_tokens_per_s, si(t.output_tokens_per_s));
    setK("sim_requests_per_s", t.requests_per_s, si(t.requests_per_s));
    setK("sim_usd_per_m_output", c.usd_per_m_output, usd(c.usd_per_m_output));
    $("sim-table").replaceChildren(...[["ttft", "time to first token"], ["tpot", "time per output token"],
      ["e2e", "end to end"], ["queue", "queueing"]].map(([k, label]) => {
      const tr = document.createElement("tr");
      const th = document.createElement("th");
      th.scope = "row";
      th.textContent = label;
      tr.appendChild(th);
      for (const p of ["p50", "p90", "p99"]) {
        const td = document.createElement("td");
        const v = L[k][p];
        td.dataset.k = `sim_${k}_${p}`;
        td.dataset.value = v === null ? "" : String(v);
        td.textContent = v === null ? "–" : secs(v);
        tr.appendChild(td);
      }
      return tr;
    }));
    cdf($("chart-sim-ttft"), d.samples_s.ttft, L.ttft, 1e3, "ms", "TTFT");
    cdf($("chart-sim-tpot"), d.samples_s.tpot, L.tpot, 1e3, "ms", "TPOT");
    cdf($("chart-sim-e2e"), d.samples_s.e2e, L.e2e, 1, "s", "E2E");
    $("sim-note").textContent = `Busy ${Math.round(d.busy_fraction * 100)}% of the run; mean batch ${+d.batch.mean.toPrecision(3)} ` +
      `(max ${d.batch.max}); ${d.preemptions} preemptions; KV cache peak ${Math.round(d.kv_cache.peak_occupancy * 100)}% of ` +
      `${d.kv_cache.capacity_tokens.toLocaleString("en")} tokens; USD ${+c.usd_per_hour.toPrecision(4)} / h.`;
  }

  async function run(ev) {
    if (ev) ev.preventDefault();
    const t0 = performance.now();
    writeURL();
    $("sim-run").disabled = true;
    try {
      const r = await fetch("/api/simulate", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body()) });
      const d = await r.json();
      showError(r.ok ? null : d.error);
      if (r.ok) render(d);
      S.runs += 1;
      S.last = { ok: r.ok, ms: performance.now() - t0 };
      document.dispatchEvent(new CustomEvent("kokuban:sim", { detail: S.last }));
    } finally {
      $("sim-run").disabled = false;
    }
  }

  function start() {
    const q = new URLSearchParams(location.search);
    for (const f of FIELDS) if (q.has(`sim_${f}`)) $(`sim-${f}`).value = q.get(`sim_${f}`);
    $("sim-form").addEventListener("submit", run);
    if (q.get("tab") === "sim") {  // app.js has opened the tab; the deployment comes from the blackboard's controls,
      // so run once it has read them
      const go = () => (window.kokuban && window.kokuban.ready ? run() : setTimeout(go, 50));
      go();
    }
  }

  start();
})();
