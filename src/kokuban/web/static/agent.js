// The agent-run tab: a bundled scenario priced on the blackboard's deployment or on an API price row, through
// POST /api/agent (the agent use case, bounded). Runs on "Run", not on every keystroke: a run takes a while.
"use strict";

(() => {
  const $ = (id) => document.getElementById(id);
  const si = Charts.si;
  const A = (window.kokubanAgent = { runs: 0, last: null });
  const TERMS = {
    api: [["input_written_usd", "input written", "c-weights"], ["input_read_usd", "input read (cache)", "c-kv"],
          ["output_usd", "output", "c-compute"]],
    "self-hosted": [["prefill_usd", "prefill", "c-weights"], ["decode_usd", "decode", "c-kv"], ["hold_usd", "holding the KV", "c-overhead"]],
  };
  const usd = (v) => (v >= 1000 ? si(v) : `${+v.toPrecision(3)}`);

  function setK(k, value, text) {
    for (const e of document.querySelectorAll(`[data-k="${k}"]`)) { e.dataset.value = String(value); e.textContent = text; }
  }

  function body() {
    const b = { preset: $("agent-preset").value, compaction: [$("agent-compaction").value] };
    if ($("agent-runs").value) b.runs = Number($("agent-runs").value);
    if ($("agent-mode-api").checked) b.price = $("agent-price").value || $("agent-price").placeholder;
    else Object.assign(b, window.kokuban.deployment());
    return b;
  }

  function showError(err) {
    const box = $("agent-error");
    $("agent-results").classList.toggle("stale", !!err);
    box.hidden = !err;
    box.textContent = err ? err.message : "";
  }

  function render(d) {
    const first = d.run.filter((r) => r.run === 0 && r.child === 0);
    $("agent-title").textContent = `${d.source}, ${d.mode === "api" ? d.terms.price.key : d.terms.deployment}: ` +
      `${d.runs} run${d.runs === 1 ? "" : "s"}, seed ${d.seed}`;
    setK("agent_usd_mean", d.usd.mean, usd(d.usd.mean));
    setK("agent_usd_p50", d.usd.p50, usd(d.usd.p50));
    setK("agent_usd_p90", d.usd.p90, usd(d.usd.p90));
    setK("agent_cheapest", d.cheapest_policy, d.cheapest_policy);
    Charts.stacked($("chart-agent-policies"), {
      xlabel: "USD per run (mean over the sampled runs)", unit: "USD",
      rows: d.policies.map((p) => ({ label: p.policy,
        parts: TERMS[d.mode].map(([k, name, cls]) => ({ name, value: p.mean_per_run[k], cls })) })),
    });
    const steps = first.map((_, i) => i + 1);
    Charts.lines($("chart-agent-cost"), {
      xlabel: "call of the first run", ylabel: "USD so far",
      series: [{ name: `cumulative cost (${d.policies[0].policy})`, xs: steps, ys: first.map((r) => r.cumulative_usd), cls: "c-total" }],
    });
    Charts.lines($("chart-agent-context"), {
      xlabel: "call of the first run", ylabel: "tokens",
      series: [{ name: "prompt tokens", xs: steps, ys: first.map((r) => r.prompt_tokens), cls: "c-kv" }],
    });
    $("agent-notes").replaceChildren(...d.notes.map((n) => { const li = document.createElement("li"); li.textContent = n; return li; }));
  }

  async function run(ev) {
    ev.preventDefault();
    const t0 = performance.now();
    $("agent-run").disabled = true;
    try {
      const r = await fetch("/api/agent", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body()) });
      const d = await r.json();
      showError(r.ok ? null : d.error);
      if (r.ok) render(d);
      A.runs += 1;
      A.last = { ok: r.ok, ms: performance.now() - t0 };
      document.dispatchEvent(new CustomEvent("kokuban:agent", { detail: A.last }));
    } finally {
      $("agent-run").disabled = false;
    }
  }

  async function start() {
    const presets = await fetch("/api/agent/presets").then((r) => r.json());
    $("agent-preset").replaceChildren(...presets.map((p) => {
      const o = document.createElement("option");
      o.value = p.name;
      o.textContent = p.name;
      return o;
    }));
    const note = () => {
      const p = presets.find((x) => x.name === $("agent-preset").value);
      $("agent-preset-note").textContent = p ? `${p.steps} steps. Source: ${p.source}. Assumed: ${p.assumptions}.` : "";
    };
    note();
    $("agent-preset").addEventListener("input", note);
    for (const id of ["agent-mode-hosted", "agent-mode-api"]) {
      $(id).addEventListener("input", () => { $("agent-price").disabled = !$("agent-mode-api").checked; });
    }
    $("agent-form").addEventListener("submit", run);
  }

  start();
})();
