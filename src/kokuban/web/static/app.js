// The blackboard page: controls → the kokuban API (the use cases) → numbers, charts and the why.
// State lives in the URL query (the API's field names), so a configuration is a link.
"use strict";

(() => {
  const $ = (id) => document.getElementById(id);
  const si = Charts.si;
  const INTS = ["gpus", "batch", "context", "prompt", "output"];
  const FLOATS = ["price_per_hour"];
  const TEXT = ["model", "gpu", "layout", "weights", "experts", "kv", "compute"];
  const DTYPES = ["bf16", "fp16", "fp8", "int8", "int4", "fp4", "fp32"];
  // [request field, key in the estimate's "efficiency", label, min, max, step, shown scale]
  const EFF = [
    ["compute_eff", "compute", "Compute: fraction of peak FLOP/s", 0.05, 1, 0.01, 1],
    ["memory_eff", "memory", "Weight reads: fraction of HBM bandwidth", 0.05, 1, 0.01, 1],
    ["kv_eff", "kv_memory", "KV reads: fraction of HBM bandwidth", 0.05, 1, 0.01, 1],
    ["link_eff", "interconnect", "Links: fraction of interconnect bandwidth", 0.05, 1, 0.01, 1],
    ["overlap", "overlap", "Overlap of compute and memory in a kernel", 0, 1, 0.01, 1],
    ["step_overhead", "step_overhead_s", "Fixed overhead per step, ms", 0, 0.02, 0.0001, 1000],
  ];
  const state = {};          // field → string value as typed (absent: the use case's default)
  let config = null;         // an uploaded config.json (object), sent as `model`
  let limits = { max_body_bytes: 524288 };
  let seq = 0, pendingStart = 0;
  const cache = new Map();   // body JSON → response, for the curves (they do not depend on every control)
  const K = (window.kokuban = { draws: 0, lastMs: null, ready: false, errors: 0 });
  K.deployment = () => pick(body(), DEPLOY);  // the blackboard's deployment, for the agent tab

  // ---- URL state ---------------------------------------------------------------------------------
  function b64url(text) { return btoa(String.fromCharCode(...new TextEncoder().encode(text))).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, ""); }
  function unb64url(s) { const bin = atob(s.replace(/-/g, "+").replace(/_/g, "/")); return new TextDecoder().decode(Uint8Array.from(bin, (c) => c.charCodeAt(0))); }

  const OTHER_TAB = (k) => k === "tab" || k.startsWith("sim_");  // the simulator tab's own parameters (sim.js)

  function readURL() {
    const q = new URLSearchParams(location.search);
    for (const [k, v] of q) if (k !== "config" && !OTHER_TAB(k)) state[k] = v;
    if (q.has("config")) { try { config = JSON.parse(unb64url(q.get("config"))); } catch { config = null; } }
    if (!q.has("model") && !config) state.model = "llama-3.1-8b";
    if (!q.has("gpu")) state.gpu = "h100-sxm";
    if (!q.has("batch")) state.batch = "8";
  }

  function writeURL() {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(state)) if (v !== "" && v !== undefined && !(config && k === "model")) q.set(k, v);
    if (config) q.set("config", b64url(JSON.stringify(config)));
    for (const [k, v] of new URLSearchParams(location.search)) if (OTHER_TAB(k)) q.set(k, v);
    const url = `${location.pathname}?${q}`;
    history.replaceState(null, "", url);
    $("share").href = url;
  }

  // ---- controls ----------------------------------------------------------------------------------
  function fillForm() {
    for (const k of [...TEXT, ...INTS, ...FLOATS]) {
      const e = $(k);
      if (!e) continue;
      e.value = k === "batch" && state.batch === "max" ? "" : state[k] ?? (e.tagName === "SELECT" ? e.options[0]?.value ?? "" : e.defaultValue);
    }
    $("batch_max").checked = state.batch === "max";
    $("batch").disabled = state.batch === "max";
    $("model").disabled = !!config;
    $("config-clear").hidden = !config;
    $("config-hint").textContent = config ? `(using ${config._name_or_path || "the uploaded config.json"})` : "";
    for (const [f] of EFF) if (state[f] !== undefined) { $(f).value = state[f]; showEff(f); }
  }

  function showEff(f) {
    const spec = EFF.find((e) => e[0] === f), v = Number($(f).value) * spec[6];
    $(`${f}-out`).textContent = `${+v.toPrecision(3)}${state[f] === undefined ? " (default)" : ""}`;
  }

  function buildEff() {
    const fs = $("efficiency"), reset = $("eff-reset");
    for (const [f, , label, min, max, step] of EFF) {
      const wrap = document.createElement("div");
      wrap.className = "slider";
      const lab = document.createElement("label");
      lab.htmlFor = f;
      lab.textContent = label + " ";
      const out = document.createElement("output");
      out.id = `${f}-out`;
      out.htmlFor = f;
      lab.appendChild(out);
      const inp = document.createElement("input");
      Object.assign(inp, { id: f, name: f, type: "range", min, max, step });
      wrap.append(lab, inp);
      fs.insertBefore(wrap, reset);
    }
  }

  function body() {
    const b = {};
    for (const k of TEXT) if (state[k]) b[k] = state[k];
    if (config) b.model = config;
    for (const k of INTS) if (state[k] !== undefined && state[k] !== "") b[k] = state[k] === "max" ? "max" : Number(state[k]);
    for (const k of FLOATS) if (state[k] !== undefined && state[k] !== "") b[k] = Number(state[k]);
    for (const [f] of EFF) if (state[f] !== undefined) b[f] = Number(state[f]);
    return b;
  }

  function pick(b, keys) { const o = {}; for (const k of keys) if (b[k] !== undefined) o[k] = b[k]; return o; }
  const DEPLOY = ["model", "gpu", "gpus", "layout", "weights", "experts", "kv", "compute", "price_per_hour", ...EFF.map((e) => e[0])];

  // ---- API ---------------------------------------------------------------------------------------
  async function post(path, b, useCache) {
    const key = path + JSON.stringify(b);
    if (useCache && cache.has(key)) return cache.get(key);
    const r = await fetch(path, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(b) });
    const data = await r.json();
    const out = { ok: r.ok, data };
    if (useCache && r.ok) { if (cache.size > 64) cache.clear(); cache.set(key, out); }
    return out;
  }

  async function update() {
    const my = ++seq, t0 = pendingStart || performance.now();
    pendingStart = 0;
    writeURL();
    const b = body();
    const ctx = b.context ?? (b.prompt && b.output ? b.prompt + b.output : undefined);
    const [board, curve, wall] = await Promise.all([
      post("/api/blackboard", b, false),
      post("/api/batch-curve", { ...pick(b, DEPLOY), ...(ctx ? { context: ctx } : {}) }, true),
      post("/api/context-wall", pick(b, DEPLOY), true),
    ]);
    if (my !== seq) return;  // a newer change is on its way
    showError(board.ok ? null : board.data.error);
    if (board.ok) {
      render(board.data);
      renderCurve(curve.ok ? curve.data : null, board.data, curve.ok ? null : curve.data.error);
      renderWall(wall.ok ? wall.data : null, board.data, wall.ok ? null : wall.data.error);
    }
    K.draws += 1;
    K.lastMs = performance.now() - t0;
    K.ready = true;
    document.dispatchEvent(new CustomEvent("kokuban:drawn", { detail: { ms: K.lastMs, ok: board.ok } }));
  }

  function showError(err) {
    const box = $("error");
    for (const e of document.querySelectorAll("[aria-invalid]")) e.removeAttribute("aria-invalid");
    $("results").classList.toggle("stale", !!err);
    if (!err) { box.hidden = true; return; }
    K.errors += 1;
    box.hidden = false;
    box.textContent = err.message;
    box.dataset.field = err.field || "";
    const target = err.field && $(err.field === "batch" && state.batch === "max" ? "batch_max" : err.field);
    if (target) target.setAttribute("aria-invalid", "true");
  }

  // ---- rendering ---------------------------------------------------------------------------------
  function setK(k, value, text) {
    for (const e of document.querySelectorAll(`[data-k="${k}"]`)) {
      e.dataset.value = typeof value === "number" ? String(value) : value;
      e.textContent = text ?? (typeof value === "number" ? si(value) : value);
    }
  }

  const secs = (s) => (s < 1e-3 ? `${+(s * 1e6).toPrecision(3)} µs` : s < 1 ? `${+(s * 1e3).toPrecision(3)} ms` : `${+s.toPrecision(3)} s`);
  const usd = (v) => (v >= 1000 ? si(v) : `${+v.toPrecision(3)}`);

  function render(d) {
    const e = d.estimate, dec = e.decode, c = e.cost, hw = e.hardware;
    $("title").textContent = `${e.model.name} on ${hw.gpus}× ${hw.name} (${hw.layout.toUpperCase()}), ` +
      `weights ${e.precision.weights}` +
      (e.precision.experts !== e.precision.weights ? `, experts ${e.precision.experts}` : "") +
      `, KV ${e.precision.kv}, compute ${e.precision.compute}`;
    setK("usd_per_m_output", c.usd_per_m_output, usd(c.usd_per_m_output));
    setK("usd_per_m_input", c.usd_per_m_input, usd(c.usd_per_m_input));
    setK("ratio", d.output_to_input_ratio, `${+d.output_to_input_ratio.toPrecision(3)}`);
    setK("tokens_per_s_per_user", dec.tokens_per_s_per_user);
    setK("tokens_per_s", dec.tokens_per_s);
    setK("step_time_s", dec.step_time_s, secs(dec.step_time_s));
    setK("bound", dec.bound, `${dec.bound}-bound`);
    setK("batch", dec.batch, String(dec.batch));
    setK("context", dec.context, dec.context.toLocaleString("en"));
    setK("gpus", hw.gpus, String(hw.gpus));
    setK("usd_per_hour", c.usd_per_hour, `USD ${+c.usd_per_hour.toPrecision(4)} / h in all`);
    $("controls-summary").textContent = `${e.model.name} · ${hw.gpus}× ${state.gpu || hw.name} · batch ${dec.batch} · ` +
      `context ${dec.context.toLocaleString("en")}`;
    $("why").replaceChildren(...d.why.map((s) => { const p = document.createElement("p"); p.textContent = s; return p; }));
    for (const [f, key] of EFF) if (state[f] === undefined) { $(f).value = e.efficiency[key]; showEff(f); }
    const sp = c.decode_split_usd_per_m;
    Charts.stacked($("chart-split"), {
      xlabel: "USD per million output tokens", unit: "USD/M",
      rows: [{ label: "output", parts: [
        { name: "weight read (shared)", value: sp.weights, cls: "c-weights" },
        { name: "KV read (per request)", value: sp.kv, cls: "c-kv" },
        { name: "compute", value: sp.compute, cls: "c-compute" },
        { name: "communication", value: sp.comm, cls: "c-comm" },
        { name: "fixed overhead", value: sp.overhead, cls: "c-overhead" }] },
        { label: "input", parts: [{ name: "input token (prefill)", value: c.usd_per_m_input, cls: "c-input" }] }],
    });
    const r = d.roofline;  // the roof's points come from the API (core.intensity), the page only draws them
    Charts.lines($("chart-roofline"), {
      xlog: true, ylog: true, xlabel: "arithmetic intensity, FLOP per byte of HBM traffic", ylabel: "FLOP/s",
      series: [{ name: "roof: min(F, I × BW)", xs: r.roof.intensity_flop_per_byte, ys: r.roof.attainable_flops_per_s, cls: "c-roof" }],
      marks: [{ x: r.ridge_flop_per_byte, name: `ridge ${si(r.ridge_flop_per_byte)} FLOP/B`, cls: "c-ridge", at: "bottom" }],
      dots: [
        { x: r.decode.intensity_flop_per_byte, y: r.decode.achieved_flops_per_s, name: "decode", cls: "c-decode",
          title: `decode: ${si(r.decode.intensity_flop_per_byte)} FLOP/B, ${si(r.decode.achieved_flops_per_s, "FLOP/s")}` },
        { x: r.prefill.intensity_flop_per_byte, y: r.prefill.achieved_flops_per_s, name: "prefill", cls: "c-prefill",
          title: `prefill: ${si(r.prefill.intensity_flop_per_byte)} FLOP/B, ${si(r.prefill.achieved_flops_per_s, "FLOP/s")}` }],
    });
    const m = e.memory;
    Charts.stacked($("chart-memory"), {
      xlabel: `GB per accelerator (usable ${+(m.usable_bytes / 1e9).toPrecision(3)} of ${+(m.capacity_bytes / 1e9).toPrecision(3)} GB)`, unit: "GB",
      rows: [{ label: "used", limit: m.usable_bytes / 1e9, limitLabel: "usable", parts: [
        { name: "weights", value: m.weights_bytes / 1e9, cls: "c-weights" },
        { name: "KV cache", value: m.kv_bytes_per_gpu / 1e9, cls: "c-kv" },
        { name: "activations", value: m.activation_bytes / 1e9, cls: "c-compute" }] },
        { label: "capacity", parts: [{ name: "HBM capacity", value: m.capacity_bytes / 1e9, cls: "c-capacity" }] }],
    });
  }

  function renderCurve(cv, d, err) {
    if (!cv) { Charts.note($("chart-batch"), err ? err.message : "no curve"); $("batch-note").textContent = ""; return; }
    const rows = cv.rows, xs = rows.map((r) => r.batch), s = cv.summary, dec = d.estimate.decode;
    const marks = [{ x: s.max_batch_fits, name: `fits: ${s.max_batch_fits.toLocaleString("en")}`, cls: "c-fit" }];
    if (s.crossover_batch && s.crossover_batch <= cv.max_batch) marks.push({ x: s.crossover_batch, name: `compute-bound from ${s.crossover_batch}`, cls: "c-cross" });
    Charts.lines($("chart-batch"), {
      xlog: true, ylog: true, xlabel: `batch (requests), context ${cv.context.toLocaleString("en")} tokens`, ylabel: "USD per million output tokens",
      series: [
        { name: "total", xs, ys: rows.map((r) => r.usd_per_m_output), cls: "c-total" },
        { name: "shared (weight read, latency, overhead)", xs, ys: rows.map((r) => r.usd_per_m_output_shared), cls: "c-weights" },
        { name: "per request (KV, compute past the read, bytes)", xs, ys: rows.map((r) => r.usd_per_m_output_per_request), cls: "c-kv" }],
      marks,
      dots: dec.context === cv.context ? [{ x: dec.batch, y: d.estimate.cost.usd_per_m_output, name: "this batch", cls: "c-decode" }] : [],
    });
    $("batch-note").textContent = `Cheapest at batch ${s.cheapest_batch.toLocaleString("en")}: USD ${+s.usd_per_m_output_cheapest.toPrecision(3)} / M` +
      ` (batch 1: ${+s.usd_per_m_output_batch_1.toPrecision(3)}); ${s.reason}${cv.capped ? `; drawn to batch ${cv.max_batch.toLocaleString("en")}` : ""}.`;
  }

  function renderWall(w, d, err) {
    if (!w) { Charts.note($("chart-context"), err ? err.message : "no wall"); $("context-note").textContent = ""; return; }
    const rows = w.rows, xs = rows.map((r) => r.context), s = w.summary, marks = [];
    if (s.capacity_wall_context) marks.push({ x: s.capacity_wall_context, name: "capacity wall", cls: "c-fit" });
    if (s.bandwidth_wall_context) marks.push({ x: s.bandwidth_wall_context, name: "bandwidth wall", cls: "c-cross" });
    Charts.lines($("chart-context"), {
      xlog: true, ylog: true, xlabel: "context per request, tokens", ylabel: "USD per million tokens",
      series: [
        { name: "output token", xs, ys: rows.map((r) => r.usd_per_m_output), cls: "c-total" },
        { name: "input token", xs, ys: rows.map((r) => r.usd_per_m_input), cls: "c-input" }],
      marks,
    });
    $("context-note").textContent = `${s.note}.`;
    void d;
  }

  // ---- wiring ------------------------------------------------------------------------------------
  function onChange(ev) {
    const t = ev.target;
    if (!t.id || t.type === "file") return;
    pendingStart = performance.now();
    if (t.id === "batch_max") {
      state.batch = t.checked ? "max" : ($("batch").value || "8");
      $("batch").disabled = t.checked;
    } else if (EFF.some((e) => e[0] === t.id)) {
      state[t.id] = t.value;
      showEff(t.id);
    } else {
      state[t.id] = t.value;
    }
    update();
  }

  async function onUpload(ev) {
    const file = ev.target.files[0];
    if (!file) return;
    const cap = Math.floor(limits.max_body_bytes / 2);
    if (file.size > cap) { showError({ field: "model", message: `model: config.json is ${file.size.toLocaleString("en")} bytes; at most ${cap.toLocaleString("en")} are accepted` }); return; }
    try {
      const obj = JSON.parse(await file.text());
      if (!obj || typeof obj !== "object" || Array.isArray(obj)) throw new Error("not a JSON object");
      obj._name_or_path = obj._name_or_path || file.name.replace(/\.json$/, "");
      config = obj;
    } catch (e) {
      showError({ field: "model", message: `model: ${file.name} is not a config.json: ${e.message}` });
      return;
    }
    fillForm();
    pendingStart = performance.now();
    update();
  }

  // the tabs: `?tab=NAME` opens tab-NAME (board, prices, sim, agent; none: the board), and choosing a tab puts
  // its name in the URL (history.replaceState), so a link opens the tab it was copied from
  const tabName = (t) => t.id.replace(/^tab-/, "");

  function tabs() {
    const list = [...document.querySelectorAll('[role="tab"]')];
    const select = (tab, focus = true) => {
      for (const t of list) {
        const on = t === tab;
        t.setAttribute("aria-selected", String(on));
        t.tabIndex = on ? 0 : -1;
        $(t.getAttribute("aria-controls")).hidden = !on;
      }
      const q = new URLSearchParams(location.search);
      if (tab === list[0]) q.delete("tab"); else q.set("tab", tabName(tab));
      const query = String(q), url = `${location.pathname}${query ? `?${query}` : ""}`;
      history.replaceState(null, "", url);
      $("share").href = url;
      if (focus) tab.focus();
    };
    for (const t of list) {
      t.addEventListener("click", () => select(t));
      t.addEventListener("keydown", (ev) => {
        const i = list.indexOf(t);
        if (ev.key === "ArrowRight") select(list[(i + 1) % list.length]);
        else if (ev.key === "ArrowLeft") select(list[(i - 1 + list.length) % list.length]);
        else if (ev.key === "Home") select(list[0]);
        else if (ev.key === "End") select(list[list.length - 1]);
      });
    }
    const wanted = list.find((t) => tabName(t) === new URLSearchParams(location.search).get("tab"));
    select(wanted || list[0], false);  // an unknown name: the board, and out of the URL
  }

  // on a narrow screen the controls start folded under their summary, so the numbers come first
  function fold() {
    const box = $("controls-box"), narrow = matchMedia("(max-width: 760px)");
    box.open = !narrow.matches;
    narrow.addEventListener("change", () => { if (!narrow.matches) box.open = true; });
  }

  async function start() {
    buildEff();
    fold();
    tabs();
    readURL();
    const [models, gpus, lim] = await Promise.all(["/api/models", "/api/gpus", "/api/limits"].map((p) => fetch(p).then((r) => r.json())));
    limits = lim;
    $("model-list").replaceChildren(...models.flatMap((m) => [m.id, m.hf_repo].filter(Boolean).map((v) => {
      const o = document.createElement("option");
      o.value = v;
      o.label = `${m.id}: ${si(m.params_total)} params${m.experts ? `, ${m.top_k}/${m.experts} experts` : ""}, ${m.max_context.toLocaleString("en")} context`;
      return o;
    })));
    $("gpu").replaceChildren(...gpus.map((g) => {
      const o = document.createElement("option");
      o.value = g.id;
      o.textContent = `${g.id} · ${si(g.memory_bytes, "B")} · ${si(g.memory_bandwidth_bytes_per_s, "B/s")}`;
      return o;
    }));
    for (const sel of document.querySelectorAll("select.dtype")) {
      for (const dt of DTYPES) { const o = document.createElement("option"); o.value = o.textContent = dt; sel.appendChild(o); }
    }
    fillForm();
    const form = $("controls");
    form.addEventListener("input", onChange);
    form.addEventListener("submit", (ev) => ev.preventDefault());
    $("config").addEventListener("change", onUpload);
    $("config-clear").addEventListener("click", () => { config = null; $("config").value = ""; if (!state.model) state.model = "llama-3.1-8b"; fillForm(); update(); });
    $("eff-reset").addEventListener("click", () => { for (const [f] of EFF) delete state[f]; pendingStart = performance.now(); update(); });
    update();
  }

  start();
})();
