"""Serving accuracy: replay public serving benchmarks (data/serving_results.toml) or a user's `vllm bench serve
--save-result` files through the simulator, with the row's engine profile and setup, and score TTFT, TPOT, E2E
and throughput.

Replay of one row (`replay`):
    concurrency   a closed loop of C clients (`ConcurrencyCap`, every request sent at t = 0 and then as slots
                  free): `STEADY_ROUNDS`·C requests; the metrics are over requests C … N − C − 1 (the first round,
                  whose prefills all queue at t = 0, and the last, which runs with ever fewer clients, left out),
                  as a benchmark that measures a stable window sees them (genai-perf, AIPerf). Throughput is
                  Little's law for a closed loop: C · mean output tokens / mean E2E of those requests.
                  A row whose source states perf_analyzer's time windows (`measurement_window_s`: GenAI-Perf
                  before AIPerf) is scored as perf_analyzer scores it instead (`perf_analyzer_end`): every
                  request that finished between the start of the load and the end of the last window, the
                  first round included; throughput = their output tokens / (last finish − first send).
    batch         C requests submitted together offline (`vllm bench latency`): no HTTP front end (front_end_s
                  = 0); E2E is the whole batch's, the last finish.
    run           a whole run as measured (`vllm bench serve`, `sglang.bench_serving`: num_prompts at
                  request_rate, capped at max_concurrency): metrics over every request, throughput = output
                  tokens / duration. Poisson arrivals at a finite rate are scaled so that the last is at
                  num_prompts / rate: one seeded draw of 300 arrivals can span 16 % more than the rate asks,
                  which is the arrival process's noise, not the simulator's error.
The engine's token budget is the profile's unless the row (or its source table) states `max_num_batched_tokens`
(the activation workspace is then sized for it); a row (or its source table) may state `intake_s`, a front end that
hands the engine one request at a time (`sim.clients.SerialIntake`), and `memory_fraction`, the engine's memory
fraction where it is not the profile's default (the KV pool is sized with it by the profile's memory rule).
Per-row error = predicted / measured − 1 (`accuracy.relative_error`).
TTFT knee (`knee_comparisons`): rows of one setup that differ only in the load (`sweep_load`), at least
`MIN_KNEE_LOADS` loads, form a sweep; its measured and predicted knees are `knee.ttft_knee` of the measured and
the predicted TTFT at the same loads (the replays above, none added); a sweep mixes both sides of the split.

Fit (`fit_overheads`, `kokuban serving-accuracy --refit`): per engine, on the training rows only (the split is
`calibrate.holdout_mask` on the row id: crc32 of "seed:id", `HOLDOUT_FRACTION` held out); a term group is fitted
only from at least `MIN_FIT_ROWS` rows:
    step_overhead_s, per_layer_s, per_seq_s
                     coordinate grid search (`STEP_GRID_S`, `PER_LAYER_GRID_S`, `PER_SEQ_GRID_S`, in that
                     order) for the least mean squared log error on the engine's TPOT, ITL, throughput and offline
                     (batch) E2E rows, replayed with front_end_s = 0; passes repeat until neither a pass nor a
                     move to a diagonal neighbour (two terms one grid step each) lowers the loss (`FIT_PASSES`
                     passes at most). The search starts from `FIT_START`, never from the profile's values,
                     so the fit does not depend on what the profile ships. A best value at a grid edge extends
                     that grid geometrically (`EXTEND_FACTOR`) towards `FIT_BOUNDS`; a best value at the bound is
                     kept and reported `at_bound` (not pinned: the data wants more than an overhead, see
                     `fit_overheads`); each point's loss is replayed once per fit. per_layer_s only when the rows
                     span models of at least two layer counts (else it cannot be told from the fixed term),
                     per_seq_s only when some row has a concurrency above 1; a term not searched stays 0 (none)
    front_end_s, per_token_s     from the concurrency-1 TTFT rows (mean or p95: nothing queues there):
                     nonnegative least squares of measured − predicted TTFT (both terms 0) on 1 and the prompt
                     length; one prompt length: front_end_s alone, the median gap. A per-token term found here
                     (prefill slower than the step model says) lengthens decode steps too, so the step terms and
                     the line are fitted again until the step terms stop moving (`FIT_ROUNDS` at most)
An engine with too few rows for a term group keeps the profile's values for it, and the fit says so (`pinned`).
"""

from __future__ import annotations

import json
import math
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from kokuban.errors import KokubanError
from kokuban.progress import Progress, tick
from kokuban.specs.hardware import Efficiency
from kokuban.validation.knee import KNEE_FACTOR, Knee, ttft_knee

BUNDLED = "serving_results.toml"
METRICS = ("ttft_s", "ttft_median_s", "ttft_p95_s", "tpot_s", "tpot_p95_s", "itl_median_s", "e2e_s",
           "e2e_median_s", "e2e_p95_s", "output_tokens_per_s")
#: What the error is published by: each metric's family (the judged TTFT, TPOT/ITL, E2E and throughput).
FAMILY = {"ttft_s": "ttft", "ttft_median_s": "ttft", "ttft_p95_s": "ttft", "tpot_s": "tpot_itl",
          "tpot_p95_s": "tpot_itl", "itl_median_s": "tpot_itl", "e2e_s": "e2e", "e2e_median_s": "e2e",
          "e2e_p95_s": "e2e", "output_tokens_per_s": "throughput"}
FAMILIES = ("ttft", "tpot_itl", "e2e", "throughput")
LOADS = ("concurrency", "batch", "run")
STEADY_ROUNDS = 6  # closed-loop replay: this many rounds of C requests, the first and last left out
#: perf_analyzer's time-window measurement as GenAI-Perf (before AIPerf) ran it (`perf_analyzer_end`): a result is
#: stable when the last `PA_STABILITY_WINDOWS` windows all completed requests and their throughputs and mean
#: latencies are within a factor 1 + `GENAI_PERF_STABILITY` (GenAI-Perf's default --stability-percentage 999);
#: perf_analyzer gives up after `PA_MAX_TRIALS` windows (its default --max-trials)
PA_STABILITY_WINDOWS = 3
GENAI_PERF_STABILITY = 9.99
PA_MAX_TRIALS = 10
HOLDOUT_FRACTION = 1 / 3
SPLIT_SEED = 0
STEP_GRID_S = tuple(float(x) for x in np.round(np.geomspace(0.5e-3, 6e-3, 8), 6))
PER_SEQ_GRID_S = (0.0, 4e-6, 8e-6, 12e-6, 18e-6, 27e-6)
PER_LAYER_GRID_S = (0.0, 10e-6, 20e-6, 35e-6, 50e-6, 75e-6, 100e-6)
MIN_FIT_ROWS = 2  # a term is fitted only from at least this many training rows, else the profile's value stays
#: Where the step-term search starts (not the profile's values: the fit must not depend on what it ships). The
#: fixed term is searched first over its whole grid, so its start only matters where it is not searched.
FIT_START = {"step_overhead_s": STEP_GRID_S[0], "per_layer_s": 0.0, "per_seq_s": 0.0}
#: How far a grid is extended when its best value sits at an edge: (lowest, highest) value of each term.
FIT_BOUNDS = {"step_overhead_s": (0.1e-3, 20e-3), "per_layer_s": (0.0, 300e-6), "per_seq_s": (0.0, 100e-6)}
EXTEND_FACTOR = 1.5  # each extension point is the edge value × (or ÷) this, clipped to the bound
FIT_PASSES = 10  # coordinate passes at most per step fit
FIT_ROUNDS = 3  # step-term fit + TTFT line rounds at most


@dataclass(frozen=True)
class ServingRow:
    """One load point of one published (or user's) setup; `measured` holds METRICS in SI units."""

    id: str
    engine: str
    model: str
    gpu: str
    gpus: int
    input_tokens: int | str  # fixed tokens, or a length spec (`sim.workload.lengths`) for a user's run
    output_tokens: int | str
    load: str
    measured: Mapping[str, float]
    concurrency: int | None = None
    layout: str = "tp"
    weights: str | None = None
    kv: str | None = None
    rate_per_s: float = float("inf")
    num_prompts: int | None = None
    kv_blocks: int | None = None  # the engine's KV pool as its log states it (blocks of the profile's size)
    # the engine's token budget per step where the setup is not the profile's default (a row's, or its source
    # table's `max_num_batched_tokens`, with why in the source's `assumed`); None: the profile's
    max_num_batched_tokens: int | None = None
    # perf_analyzer's measurement window (1.2 × --measurement-interval) where the source's benchmark ran it
    # (GenAI-Perf before AIPerf; a row's, or its source table's): scored by `perf_analyzer_end`; None: steady rounds
    measurement_window_s: float | None = None
    # the engine's memory fraction where the setup is not the profile's default (a row's, or its source table's
    # `memory_fraction`, e.g. the launch command's --mem-fraction-static, with why stated there); None: the profile's
    memory_fraction: float | None = None
    # seconds a front end that takes one request at a time spends on each before the engine sees it (a row's, or
    # its source table's, with why stated there; `sim.clients.SerialIntake`); None: requests reach it at once
    intake_s: float | None = None
    engine_version: str = ""
    source: Mapping[str, Any] = field(default_factory=dict)
    quote: str = ""
    assumed: str = ""

    def as_dict(self) -> dict[str, Any]:
        """The row's JSON; `rate_per_s` null when every request arrives at once (JSON has no infinity)."""
        rate = self.rate_per_s if math.isfinite(self.rate_per_s) else None
        return {"id": self.id, "engine": self.engine, "engine_version": self.engine_version, "model": self.model,
                "gpu": self.gpu, "gpus": self.gpus, "layout": self.layout, "weights": self.weights, "kv": self.kv,
                "input_tokens": self.input_tokens, "output_tokens": self.output_tokens, "load": self.load,
                "concurrency": self.concurrency, "rate_per_s": rate, "prompts": self.num_prompts,
                "measured": dict(self.measured), "source_url": self.source.get("url", "")}


def _check_row(row: ServingRow, where: str) -> None:
    """A row's numbers are finite and positive and its load is known; KokubanError naming the row otherwise."""
    if row.load not in LOADS:
        raise KokubanError(f"{where}: load '{row.load}' is not one of {', '.join(LOADS)}", field="load", value=row.load)
    if row.load != "run" and not (isinstance(row.concurrency, int) and row.concurrency > 0):
        raise KokubanError(f"{where}: needs a concurrency ≥ 1", field="concurrency", value=row.concurrency)
    budget = row.max_num_batched_tokens
    if budget is not None and not (isinstance(budget, int) and budget >= 1):
        raise KokubanError(f"{where}: max_num_batched_tokens must be a whole number ≥ 1, got {budget!r}",
                           field="max_num_batched_tokens", value=budget)
    window = row.measurement_window_s
    if window is not None and not (isinstance(window, int | float) and window > 0 and row.load == "concurrency"):
        raise KokubanError(f"{where}: measurement_window_s must be > 0 seconds, on a concurrency row, got {window!r}",
                           field="measurement_window_s", value=window)
    intake = row.intake_s
    if intake is not None and not (isinstance(intake, int | float) and 0 <= intake < math.inf):
        raise KokubanError(f"{where}: intake_s must be a finite number ≥ 0 seconds, got {intake!r}", field="intake_s",
                           value=intake)
    frac = row.memory_fraction
    if frac is not None and not (isinstance(frac, int | float) and not isinstance(frac, bool) and 0 < frac <= 1):
        raise KokubanError(f"{where}: memory_fraction must be a number in (0, 1], got {frac!r}",
                           field="memory_fraction", value=frac)
    if not row.measured:
        raise KokubanError(f"{where}: no measured metric (one of {', '.join(METRICS)})", field="measured")
    for name, value in row.measured.items():
        if name not in METRICS:
            raise KokubanError(f"{where}: '{name}' is not one of {', '.join(METRICS)}", field="measured", value=name)
        if not (isinstance(value, int | float) and np.isfinite(value) and value > 0):
            raise KokubanError(f"{where}: {name} must be a finite number > 0, got {value!r}", field=name, value=value)


def load_serving_results(path: str | None = None) -> list[ServingRow]:
    """Every row of the bundled serving_results.toml (or `path`), each with its source table entry."""
    if path is None:
        with (resources.files("kokuban") / "data" / BUNDLED).open("rb") as fh:
            data = tomllib.load(fh)
    else:
        data = tomllib.loads(Path(path).read_text())
    sources = data.get("source", {})
    rows = []
    for raw in data["row"]:
        raw = dict(raw)
        src = raw.pop("source")
        if src not in sources:
            raise KokubanError(f"row {raw.get('id')}: source '{src}' is not in [source.*]", field="source", value=src)
        for key in ("max_num_batched_tokens", "measurement_window_s", "intake_s", "memory_fraction"):  # every row
            if key in sources[src]:
                raw.setdefault(key, sources[src][key])
        row = ServingRow(source={"key": src, **sources[src]}, **raw)
        _check_row(row, f"row {row.id}")
        rows.append(row)
    return rows


# ---- replay -----------------------------------------------------------------------------------------------
def _setup(row: ServingRow, overrides: Mapping[str, float] | None, efficiency: Efficiency | None = None):
    """The deployment and scheduler configuration `row` names: its engine profile's scheduler defaults and
    overheads, with `overrides` (step_overhead_s, per_seq_s, per_token_s, front_end_s) replacing the
    profile's values; `efficiency` the step model's fractions (default: the engine's own,
    `EngineProfile.base_efficiency`), the profile's (or the override's) step overhead on top."""
    from kokuban.sim.profiles import Overheads, load_profile
    from kokuban.sim.scheduler import SchedulerConfig
    from kokuban.specs.catalog import load_accelerator, load_model
    from kokuban.specs.deployment import Deployment

    over = dict(overrides or {})
    prof = load_profile(row.engine)
    step_s = over.pop("step_overhead_s", prof.step_overhead_s)
    base = efficiency or prof.base_efficiency()
    eff = base if step_s is None else base.updated(step_overhead_s=step_s)
    model, acc = load_model(row.model), load_accelerator(row.gpu)
    budget = row.max_num_batched_tokens or prof.batched_tokens(min(model.max_context, 2**20))
    # the KV pool by the engine's own memory rule (`sim.profiles`), as `simulate --engine` sizes it, with the
    # activation workspace of the row's stated budget (the tokens one step may hold) where it states one
    fraction = row.memory_fraction or prof.fraction(acc.memory_bytes, budget or 0, row.gpus) or 0.9
    chunk = {"prefill_chunk_tokens": row.max_num_batched_tokens} if row.max_num_batched_tokens else {}
    dep = Deployment.make(model, acc, row.gpus, layout=row.layout, weights_dtype=row.weights, kv_dtype=row.kv,
                          efficiency=eff, memory_utilization=fraction, memory_rule=prof.memory_rule, **chunk)
    terms = (prof.overheads or Overheads()).as_dict() | over
    if row.load == "batch":
        terms["front_end_s"] = 0.0  # offline: no HTTP server, no streaming
    sched = SchedulerConfig.for_engine(prof, min(model.max_context, 2**20), max_concurrency=row.concurrency,
                                       overheads=Overheads(**terms), kv_blocks=row.kv_blocks,
                                       max_num_batched_tokens=row.max_num_batched_tokens)
    return dep, sched


def _requests(row: ServingRow) -> int:
    if row.load == "concurrency":
        return STEADY_ROUNDS * int(row.concurrency)  # type: ignore[arg-type]
    if row.load == "batch":
        return int(row.concurrency)  # type: ignore[arg-type]
    return int(row.num_prompts)  # type: ignore[arg-type]


def perf_analyzer_end(arrival_s: np.ndarray, finish_s: np.ndarray, window_s: float) -> float:
    """When perf_analyzer's time-window measurement of a run whose load started at t = 0 ends, in seconds.

    perf_analyzer (`inference_profiler.cc`, `ProfileHelper` / `Measure` / `ValidLatencyMeasurement`,
    triton-inference-server/client at 25185bf5, 2024-06-12) measures back-to-back windows of `window_s` (1.2 ×
    --measurement-interval) from the start of the load; a window counts the requests that finished in it, its
    throughput is their number / `window_s` and its latency their mean E2E. It stops after window k ≥
    `PA_STABILITY_WINDOWS` when the last `PA_STABILITY_WINDOWS` windows each counted a request and their
    throughputs and latencies are each within max / min ≤ 1 + `GENAI_PERF_STABILITY`, else after
    `PA_MAX_TRIALS` windows. The result is then k · `window_s`; GenAI-Perf's metrics are over every request
    that finished by then (every window's requests are exported, `ProfileDataCollector::AddData`).
    Assumes requests finishing exactly on a boundary count in the earlier window (perf_analyzer's check is
    inclusive at both ends; the first match wins)."""
    latency = finish_s - arrival_s
    per_s: list[float] = []
    mean_latency: list[float] = []
    for k in range(PA_MAX_TRIALS):
        done = (finish_s > k * window_s) & (finish_s <= (k + 1) * window_s)
        per_s.append(float(done.sum()) / window_s)
        mean_latency.append(float(latency[done].mean()) if done.any() else math.inf)
        if k + 1 >= PA_STABILITY_WINDOWS:
            ips, lat = per_s[-PA_STABILITY_WINDOWS:], mean_latency[-PA_STABILITY_WINDOWS:]
            if (min(ips) > 0 and max(ips) / min(ips) <= 1 + GENAI_PERF_STABILITY
                    and max(lat) / min(lat) <= 1 + GENAI_PERF_STABILITY):
                return (k + 1) * window_s
    return PA_MAX_TRIALS * window_s


def _client(row: ServingRow, arrival_s: np.ndarray):
    """Who sends `row`'s requests: the load's own client (`clients.client_for`), behind a one-at-a-time front end
    when the row states an `intake_s` (`clients.SerialIntake`); None (the engine's default) otherwise."""
    from kokuban.sim.clients import SerialIntake, client_for

    if not row.intake_s:
        return None
    return SerialIntake(client_for(arrival_s, row.concurrency), row.intake_s)


def _windowed_run(row: ServingRow, dep, sched):
    """The closed loop of `row` (every client's first request at t = 0) run past the end of perf_analyzer's
    measurement (`perf_analyzer_end`), and which requests it scores (finished by then). Starts with
    `STEADY_ROUNDS` rounds and runs longer while the last request was sent before the measurement's end (the
    loop would have run out of requests)."""
    from kokuban.sim import simulate
    from kokuban.sim.workload import synthetic

    c = int(row.concurrency)  # type: ignore[arg-type]
    n = STEADY_ROUNDS * c
    while True:
        wl = synthetic(n, float("inf"), row.input_tokens, row.output_tokens, arrival="poisson", seed=0)
        res = simulate(dep, wl, sched, client=_client(row, wl.arrival_s))
        end = perf_analyzer_end(res.arrival_s, res.finish_s, float(row.measurement_window_s))  # type: ignore[arg-type]
        if res.arrival_s.max() >= end:
            return res, res.finish_s <= end
        n = c + math.ceil(1.25 * n * end / float(res.finish_s.max()))


def replay(row: ServingRow, overrides: Mapping[str, float] | None = None,
           efficiency: Efficiency | None = None) -> dict[str, float]:
    """kokuban's prediction of every metric `row` measured (see the module docstring for each load). TPOT is
    undefined for a one-token output and left out of its means and percentiles, as `vllm bench serve` does."""
    from kokuban.sim import simulate
    from kokuban.sim.metrics import weighted_percentile
    from kokuban.sim.workload import synthetic

    dep, sched = _setup(row, overrides, efficiency)
    c = int(row.concurrency or 0)
    if row.measurement_window_s is not None:  # perf_analyzer's windows: as long a run as they measured
        res, keep = _windowed_run(row, dep, sched)
    else:
        n = _requests(row)
        wl = synthetic(n, row.rate_per_s, row.input_tokens, row.output_tokens, arrival="poisson", seed=0)
        if np.isfinite(row.rate_per_s) and wl.arrival_s[-1] > 0:  # the rate asked for, not one draw's (module doc)
            wl = replace(wl, arrival_s=wl.arrival_s * (n / row.rate_per_s / wl.arrival_s[-1]))
        res = simulate(dep, wl, sched, client=_client(row, wl.arrival_s))
        keep = np.zeros(n, bool)
        keep[c:n - c] = row.load == "concurrency"
    ttft, e2e, out = res.ttft_s, res.e2e_s, res.output_tokens.astype(float)
    tpot = res.tpot_s
    if row.load == "concurrency":
        pred = {"ttft_s": float(ttft[keep].mean()), "tpot_s": float(np.nanmean(tpot[keep])),
                "e2e_s": float(e2e[keep].mean())}
        if row.measurement_window_s is not None:  # GenAI-Perf: tokens over the span of the requests it counted
            span = float(res.finish_s[keep].max() - res.arrival_s[keep].min())
            pred["output_tokens_per_s"] = float(out[keep].sum()) / span
        else:
            pred["output_tokens_per_s"] = c * float(out[keep].mean()) / pred["e2e_s"]
    elif row.load == "batch":
        pred = {"ttft_s": float(ttft.mean()), "tpot_s": float(np.nanmean(tpot)), "e2e_s": float(res.finish_s.max()),
                "output_tokens_per_s": float(out.sum() / res.finish_s.max())}
    else:
        pred = {"ttft_s": float(ttft.mean()), "tpot_s": float(np.nanmean(tpot)), "e2e_s": float(e2e.mean()),
                "output_tokens_per_s": float(out.sum() / res.duration_s)}
    # percentiles over every request scored (`vllm bench serve` takes them over its requests, linear interpolation)
    scored = keep if row.load == "concurrency" else slice(None)
    for name, values in (("ttft", ttft), ("tpot", tpot), ("e2e", e2e)):
        pred[f"{name}_median_s"] = float(np.nanmedian(values[scored]))
        pred[f"{name}_p95_s"] = float(np.nanpercentile(values[scored], 95))
    if "itl_median_s" in row.measured:
        pred["itl_median_s"] = weighted_percentile(res.itl_values_s, res.itl_weights, 50)
    for k in row.measured:
        if not (np.isfinite(pred[k]) and pred[k] > 0):  # e.g. TPOT of a run whose every output is one token
            raise KokubanError(f"{row.id}: the replay has no {k} (got {pred[k]!r})", field="measured", value=k)
    return {k: pred[k] for k in row.measured}


# ---- errors -----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class RowResult:
    """One row's measured and predicted metrics and their relative errors; `held_out` its side of the split."""

    row: ServingRow
    predicted: Mapping[str, float]
    held_out: bool

    @property
    def errors(self) -> dict[str, float]:
        return {k: self.predicted[k] / self.row.measured[k] - 1 for k in self.row.measured}

    def as_dict(self) -> dict[str, Any]:
        return self.row.as_dict() | {"predicted": dict(self.predicted), "error": self.errors,
                                     "held_out": self.held_out}


def split(rows: Sequence[ServingRow], fraction: float = HOLDOUT_FRACTION, seed: int = SPLIT_SEED) -> np.ndarray:
    """True for held-out rows: `calibrate.holdout_mask` on the row ids (crc32 of "seed:id", order-free)."""
    from kokuban.validation.calibrate import holdout_mask

    return holdout_mask([r.id for r in rows], fraction, seed)


def summarize(results: Sequence[RowResult]) -> dict[str, Any]:
    """Median and p90 |error| with a bootstrap 95 % interval of the median (`accuracy.bootstrap_median_ci`,
    seeded) by metric family (`FAMILY`: TTFT, TPOT/ITL, E2E, throughput), by metric, and by engine × family, over
    the (row, metric) pairs of `results`."""
    from kokuban.validation.accuracy import bootstrap_median_ci

    def stats(errs: list[float]) -> dict[str, Any]:
        a = np.abs(np.asarray(errs))
        lo, hi = bootstrap_median_ci(a)
        return {"points": int(a.size), "median_abs_error": float(np.median(a)),
                "p90_abs_error": float(np.percentile(a, 90)), "median_abs_error_ci": [lo, hi]}

    by_metric: dict[str, list[float]] = {}
    by_family: dict[str, list[float]] = {}
    by_engine: dict[str, dict[str, list[float]]] = {}
    for res in results:
        for metric, err in res.errors.items():
            by_metric.setdefault(metric, []).append(err)
            by_family.setdefault(FAMILY[metric], []).append(err)
            by_engine.setdefault(res.row.engine, {}).setdefault(FAMILY[metric], []).append(err)
    return {"by_family": {f: stats(by_family[f]) for f in FAMILIES if f in by_family},
            "by_metric": {m: stats(by_metric[m]) for m in METRICS if m in by_metric},
            "by_engine": {e: {f: stats(v[f]) for f in FAMILIES if f in v} for e, v in sorted(by_engine.items())}}


# ---- fit --------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class OverheadFit:
    """Fitted overhead terms per engine, which of them the training rows pinned, which sit at their search bound
    (`FIT_BOUNDS`: the data wants a value beyond it), the coordinate passes the step fit took and whether the fit
    converged (no single-term or diagonal move improved within `FIT_PASSES`, the TTFT line within `FIT_ROUNDS`)."""

    values: Mapping[str, Mapping[str, float]]
    pinned: Mapping[str, tuple[str, ...]]
    train_rows: Mapping[str, int]
    at_bound: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    passes: Mapping[str, int] = field(default_factory=dict)
    converged: Mapping[str, bool] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {e: {"values": dict(v), "pinned": list(self.pinned[e]), "at_bound": list(self.at_bound.get(e, ())),
                    "passes": self.passes.get(e, 0), "converged": self.converged.get(e, True),
                    "train_rows": self.train_rows[e]}
                for e, v in self.values.items()}


#: Metrics the step terms are fitted on (TTFT and E2E carry the front end; a batch row's E2E does not).
STEP_METRICS = ("tpot_s", "tpot_p95_s", "itl_median_s", "output_tokens_per_s")
TTFT_METRICS = ("ttft_s", "ttft_median_s", "ttft_p95_s")
STEP_TERMS = ("step_overhead_s", "per_layer_s", "per_seq_s")


def _step_loss(rows: Sequence[ServingRow], overrides: Mapping[str, float], efficiency: Efficiency | None) -> float:
    """Mean squared log error of the step metrics of `rows` replayed with `overrides` (front_end_s = 0)."""
    errs = []
    for row in rows:
        pred = replay(row, dict(overrides) | {"front_end_s": 0.0}, efficiency)
        metrics = STEP_METRICS + (("e2e_s",) if row.load == "batch" else ())
        errs += [np.log(pred[m] / row.measured[m]) for m in metrics if m in row.measured]
    return float(np.mean(np.square(errs)))


def _extended(grid: tuple[float, ...], best: int, bounds: tuple[float, float]) -> tuple[float, ...]:
    """`grid` with one more point beyond its edge where `best` sits: the edge × `EXTEND_FACTOR` at the top, ÷ it
    at the bottom, clipped to `bounds`; `grid` unchanged when the best is inside it or its edge is the bound (a
    bottom edge of 0 is one: the terms are nonnegative)."""
    lo, hi = bounds
    if best == len(grid) - 1 and grid[-1] < hi:
        return grid + (min(hi, grid[-1] * EXTEND_FACTOR),)
    if best == 0 and grid[0] > lo:
        return (max(lo, grid[0] / EXTEND_FACTOR),) + grid
    return grid


@dataclass
class _StepSearch:
    """The step-term search state of one engine: its rows, step model, current grids and every loss computed so
    far (a point is replayed once however often the passes come back to it)."""

    rows: Sequence[ServingRow]
    efficiency: Efficiency | None
    grids: dict[str, tuple[float, ...]]
    losses: dict[tuple[tuple[str, float], ...], float] = field(default_factory=dict)
    passes: int = 0
    progress: Progress | None = None  # (points replayed, those + the ones the current scan still needs)

    @staticmethod
    def key(point: Mapping[str, float]) -> tuple[tuple[str, float], ...]:
        """A point's cache key: its step terms (the step rows are replayed without front_end_s)."""
        return tuple(sorted((k, v) for k, v in point.items() if k != "front_end_s"))

    def loss(self, point: Mapping[str, float]) -> float:
        key = self.key(point)
        if key not in self.losses:
            self.losses[key] = _step_loss(self.rows, point, self.efficiency)
        return self.losses[key]

    def scan(self, points: Sequence[Mapping[str, float]]) -> list[float]:
        """`loss` of each point, reporting to `progress` after each new one: replayed so far, of so far + the
        scan's points still to replay (a grid search has no total known in advance: each scan is a stage)."""
        todo = len({self.key(pt) for pt in points} - self.losses.keys())
        out = []
        for pt in points:
            before = len(self.losses)
            out.append(self.loss(pt))
            if len(self.losses) > before:
                todo -= 1
                tick(self.progress, len(self.losses), len(self.losses) + todo)
        return out

    def best(self, got: Mapping[str, float], name: str) -> float:
        """The grid value of `name` with the least loss, the others at `got`; the grid extended (and kept so
        for the next passes) while the best sits at an edge short of its bound. Ties: the lowest value."""
        while True:
            grid = self.grids[name]
            losses = self.scan([dict(got) | {name: v} for v in grid])
            best = int(np.argmin(losses))
            wider = _extended(grid, best, FIT_BOUNDS[name])
            if wider == grid:
                return grid[best]
            self.grids[name] = wider

    def diagonal(self, got: Mapping[str, float]) -> dict[str, float] | None:
        """The best of `got`'s diagonal grid neighbours (two terms one grid step each, the others kept) when it
        has a lower loss than `got`, else None: two terms that trade (the fixed and the per-layer one) can
        stall one-term-at-a-time moves in a valley that runs diagonally across the grid."""
        names = [n for n in STEP_TERMS if n in self.grids]
        where = {n: self.grids[n].index(got[n]) for n in names}
        points = []
        for i, a in enumerate(names):
            for b in names[i + 1:]:
                for da in (-1, 1):
                    for db in (-1, 1):
                        ia, ib = where[a] + da, where[b] + db
                        if 0 <= ia < len(self.grids[a]) and 0 <= ib < len(self.grids[b]):
                            points.append(dict(got) | {a: self.grids[a][ia], b: self.grids[b][ib]})
        if not points:
            return None
        losses = self.scan(points)
        best = int(np.argmin(losses))
        return points[best] if losses[best] < self.loss(got) else None


def _fit_step_terms(search: _StepSearch, got: dict[str, float]) -> bool:
    """Coordinate passes of grid search over the terms with a grid in `search` (step_overhead_s, then per_layer_s,
    then per_seq_s), in place in `got`; when a pass changes nothing, a move to a better diagonal neighbour
    (`_StepSearch.diagonal`) if there is one, and the passes go on; True when they stopped at a point no single-
    term and no diagonal move improves, False after `FIT_PASSES` passes (see the module docstring)."""
    for _ in range(FIT_PASSES):
        search.passes += 1
        moved = False
        for name in STEP_TERMS:
            if name in search.grids:
                value = search.best(got, name)
                moved |= value != got[name]
                got[name] = value
        if not moved:
            step = search.diagonal(got)
            if step is None:
                return True
            got |= step
    return False


def _step_grids(rows: Sequence[ServingRow]) -> dict[str, tuple[float, ...]]:
    """The step terms `rows` can tell apart, with their starting grids: step_overhead_s always, per_layer_s when
    the rows' models have at least two layer counts, per_seq_s when some row has a concurrency above 1."""
    from kokuban.specs.catalog import load_model

    grids = {"step_overhead_s": STEP_GRID_S}
    if len({load_model(r.model).num_layers for r in rows}) >= 2:
        grids["per_layer_s"] = PER_LAYER_GRID_S
    if any((r.concurrency or 0) > 1 for r in rows):
        grids["per_seq_s"] = PER_SEQ_GRID_S
    return grids


def _fit_ttft_line(rows: Sequence[ServingRow], got: dict[str, float], pins: list[str],
                   efficiency: Efficiency | None) -> None:
    """front_end_s and per_token_s from concurrency-1 TTFT rows, in place in `got`: nonnegative least squares
    of measured − predicted TTFT (predicted with both 0) = front_end_s + per_token_s · input tokens; with a
    single prompt length, front_end_s alone (the median gap)."""
    from scipy.optimize import nnls

    base = got | {"front_end_s": 0.0, "per_token_s": 0.0}
    x, gap = [], []
    for r in rows:
        pred = replay(r, base, efficiency)
        for m in TTFT_METRICS:
            if m in r.measured:
                x.append(float(r.input_tokens))
                gap.append(r.measured[m] - pred[m])
    if len(set(x)) >= 2:
        (got["front_end_s"], got["per_token_s"]), _ = nnls(np.column_stack([np.ones(len(x)), x]), np.asarray(gap))
        pins += ["front_end_s", "per_token_s"]
    else:
        got["front_end_s"] = max(0.0, float(np.median(gap)))
        pins.append("front_end_s")


def fit_overheads(train: Sequence[ServingRow], efficiency: Efficiency | None = None, *,
                  progress: Progress | None = None) -> OverheadFit:
    """Fit the overhead terms per engine on `train` only (see the module docstring), the step model at
    `efficiency`: the step terms from `FIT_START` to convergence, then the TTFT line, then both again while the
    line's per-token term moves the step terms. The result does not depend on the profile's shipped overheads
    (only an engine with too few rows for a term group keeps the profile's values for it). A step term whose
    best value is its `FIT_BOUNDS` bound keeps the bound value, reported in `at_bound` and not pinned: keeping
    the profile's value instead would make the fit depend on what the profile ships again, and the bound is the
    best the search range offers; the term then stands for more than an overhead (a missing effect).
    `progress(points replayed, those + the current scan's rest)` follows the grid search (`_StepSearch.scan`)."""
    from kokuban.sim.profiles import Overheads, load_profile

    values: dict[str, dict[str, float]] = {}
    pinned: dict[str, tuple[str, ...]] = {}
    at_bound: dict[str, tuple[str, ...]] = {}
    passes: dict[str, int] = {}
    converged: dict[str, bool] = {}
    counts: dict[str, int] = {}
    for engine in sorted({r.engine for r in train}):
        rows = [r for r in train if r.engine == engine]
        prof = load_profile(engine)
        over = prof.overheads or Overheads()
        step_rows = [r for r in rows if set(STEP_METRICS) & set(r.measured) or r.load == "batch"]
        ttft_rows = [r for r in rows if r.concurrency == 1 and isinstance(r.input_tokens, int)
                     and set(TTFT_METRICS) & set(r.measured)]
        fit_steps = len(step_rows) >= MIN_FIT_ROWS
        got = dict(FIT_START) if fit_steps else {"step_overhead_s": float(prof.step_overhead_s or 0.0),
                                                 "per_layer_s": over.per_layer_s, "per_seq_s": over.per_seq_s}
        got |= {"per_token_s": 0.0 if len(ttft_rows) >= MIN_FIT_ROWS else over.per_token_s,
                "front_end_s": float(over.front_end_s)}
        pins: list[str] = []
        search = _StepSearch(step_rows, efficiency, _step_grids(step_rows), progress=progress)
        converged[engine] = True
        for round_ in range(FIT_ROUNDS):
            before = {k: got[k] for k in STEP_TERMS}
            if fit_steps:
                converged[engine] = _fit_step_terms(search, got)
            if round_ > 0 and {k: got[k] for k in STEP_TERMS} == before:
                break  # the last round's TTFT line was fitted with these very step terms
            if len(ttft_rows) < MIN_FIT_ROWS:
                break
            per_token = got["per_token_s"]
            _fit_ttft_line(ttft_rows, got, pins, efficiency)
            if not fit_steps or got["per_token_s"] == per_token:
                break  # the step terms were fitted with this per-token term
        else:
            converged[engine] = False  # the last line's per-token term was not fitted against
        if fit_steps:
            bound = tuple(k for k in search.grids if got[k] in FIT_BOUNDS[k] and got[k] > 0)
            pins += [k for k in search.grids if k not in bound]
            at_bound[engine] = bound
        values[engine], pinned[engine], counts[engine] = got, tuple(dict.fromkeys(pins)), len(rows)
        passes[engine] = search.passes
    return OverheadFit(values, pinned, counts, at_bound, passes, converged)


# ---- the TTFT knee of a load sweep (`validation.knee`) ------------------------------------------------------
#: Fewest loads a family needs for a knee comparison (with two, the crossing has one place to land).
MIN_KNEE_LOADS = 3
#: What each kind of load counts (`sweep_load`), for JSON and tables.
LOAD_UNITS = {"concurrency": "clients", "rate": "requests/s", "batch": "requests", "burst": "requests"}


def sweep_load(row: ServingRow) -> tuple[str, float]:
    """The load a sweep varies, as (kind, value): "concurrency" (closed-loop clients, or `vllm bench serve`'s
    max concurrency with every request sent at once), "rate" (Poisson requests per second, the cap, if any,
    then part of the setup), "batch" (an offline batch's requests), "burst" (a run's requests all sent at t = 0
    with no cap)."""
    if row.load == "concurrency":
        return "concurrency", float(row.concurrency)  # type: ignore[arg-type]
    if row.load == "batch":
        return "batch", float(row.concurrency)  # type: ignore[arg-type]
    if math.isfinite(row.rate_per_s):
        return "rate", row.rate_per_s
    if row.concurrency:
        return "concurrency", float(row.concurrency)
    return "burst", float(row.num_prompts)  # type: ignore[arg-type]


def _sweep_key(row: ServingRow) -> tuple:
    """What every row of one sweep shares: source, engine (+ version), model, GPU and count, layout, dtypes,
    lengths, load kind and the engine settings the row states; not the load, nor `num_prompts` (the sources
    scale it with the load). A user's files have no source key: their runs of one setup form a sweep."""
    kind, _ = sweep_load(row)
    return (row.source.get("key"), row.engine, row.engine_version, row.model, row.gpu, row.gpus, row.layout,
            row.weights, row.kv, str(row.input_tokens), str(row.output_tokens), row.load, kind,
            row.concurrency if kind == "rate" else None, row.kv_blocks, row.max_num_batched_tokens,
            row.measurement_window_s, row.intake_s, row.memory_fraction)


def _family_name(ids: Sequence[str]) -> str:
    """The rows' common id prefix up to its last '-' (ids "x-c1", "x-c25" → "x"); the first id when none."""
    prefix = ids[0]
    for other in ids[1:]:
        while not other.startswith(prefix):
            prefix = prefix[:-1]
    return prefix.rsplit("-", 1)[0] if "-" in prefix else ids[0]


@dataclass(frozen=True)
class KneeComparison:
    """One sweep's TTFT knee, measured and predicted (`knee.ttft_knee` on `metric` at the same loads): the rows
    by load, which of them are held out (a family mixes both sides of the per-row split: not a held-out figure)."""

    family: str
    engine: str
    load_kind: str
    metric: str
    loads: tuple[float, ...]
    row_ids: tuple[str, ...]
    measured_s: tuple[float, ...]
    predicted_s: tuple[float, ...]
    held_out: tuple[bool, ...]

    @property
    def measured(self) -> Knee:
        return ttft_knee(self.loads, self.measured_s)

    @property
    def predicted(self) -> Knee:
        return ttft_knee(self.loads, self.predicted_s)

    @property
    def ratio(self) -> float | None:
        """Predicted / measured knee load; None unless both are reached."""
        m, p = self.measured.load, self.predicted.load
        return None if m is None or p is None else p / m

    @property
    def same_interval(self) -> bool:
        """Both knees between the same two measured loads (or both not reached within the sweep)."""
        return self.measured.bracket == self.predicted.bracket

    @property
    def held_out_share(self) -> float:
        return sum(self.held_out) / len(self.held_out)

    def _interval(self, knee: Knee) -> list[float] | None:
        return None if knee.bracket is None else [self.loads[knee.bracket - 1], self.loads[knee.bracket]]

    def as_dict(self) -> dict[str, Any]:
        """Stable keys; loads and knees in `load_unit`, TTFTs in seconds; a knee not reached is null."""
        return {"family": self.family, "engine": self.engine, "load_kind": self.load_kind,
                "load_unit": LOAD_UNITS[self.load_kind], "metric": self.metric, "loads": list(self.loads),
                "rows": list(self.row_ids), "measured_ttft_s": list(self.measured_s),
                "predicted_ttft_s": list(self.predicted_s), "measured_knee": self.measured.load,
                "predicted_knee": self.predicted.load, "measured_interval": self._interval(self.measured),
                "predicted_interval": self._interval(self.predicted), "knee_ratio": self.ratio,
                "same_interval": self.same_interval, "held_out_rows": sum(self.held_out),
                "held_out_share": self.held_out_share}


def knee_comparisons(results: Sequence[RowResult]) -> tuple[KneeComparison, ...]:
    """Every sweep among `results` (rows sharing `_sweep_key`, differing only in the load) with at least
    `MIN_KNEE_LOADS` distinct loads and a TTFT metric every row measured (the first of mean, median, p95 that
    all have: the same one measured and predicted), in the order of their first row; a family with two rows at
    one load is not a sweep and is left out."""
    groups: dict[tuple, list[RowResult]] = {}
    for res in results:
        groups.setdefault(_sweep_key(res.row), []).append(res)
    out = []
    for members in groups.values():
        members = sorted(members, key=lambda r: sweep_load(r.row)[1])
        loads = tuple(sweep_load(r.row)[1] for r in members)
        metric = next((m for m in TTFT_METRICS if all(m in r.row.measured for r in members)), None)
        if len(set(loads)) < max(len(loads), MIN_KNEE_LOADS) or metric is None:
            continue
        out.append(KneeComparison(
            family=_family_name([r.row.id for r in members]), engine=members[0].row.engine,
            load_kind=sweep_load(members[0].row)[0], metric=metric, loads=loads,
            row_ids=tuple(r.row.id for r in members), measured_s=tuple(r.row.measured[metric] for r in members),
            predicted_s=tuple(r.predicted[metric] for r in members), held_out=tuple(r.held_out for r in members)))
    return tuple(out)


def knee_summary(knees: Sequence[KneeComparison]) -> dict[str, Any]:
    """How many families, how many have both knees reached, how many of those put both in the same interval of
    measured loads (two knees not reached are not counted as agreeing), and the median predicted / measured knee
    ratio over those with both (None when none has)."""
    ratios = [k.ratio for k in knees if k.ratio is not None]
    return {"families": len(knees), "both_reached": len(ratios),
            "same_interval": sum(k.same_interval for k in knees if k.ratio is not None),
            "median_ratio": float(np.median(ratios)) if ratios else None}


@dataclass(frozen=True)
class ServingAccuracy:
    """Every scored row and the summaries: held-out rows (what is published), training rows, all rows."""

    results: tuple[RowResult, ...]
    fit: OverheadFit | None = None

    def summary(self, which: str = "held_out") -> dict[str, Any]:
        pick = {"held_out": lambda r: r.held_out, "train": lambda r: not r.held_out, "all": lambda r: True}[which]
        chosen = [r for r in self.results if pick(r)]
        return summarize(chosen) if chosen else {"by_family": {}, "by_metric": {}, "by_engine": {}}

    def knees(self) -> tuple[KneeComparison, ...]:
        """The TTFT knee of every load sweep among the rows, measured vs predicted (`knee_comparisons`; the
        predictions already made, no further replay)."""
        return knee_comparisons(self.results)

    def as_dict(self) -> dict[str, Any]:
        knees = self.knees()
        return {"split": {"method": "crc32 of 'seed:id' (calibrate.holdout_mask)", "holdout_fraction": HOLDOUT_FRACTION,
                          "seed": SPLIT_SEED},
                "held_out": self.summary("held_out"), "train": self.summary("train"), "all": self.summary("all"),
                "fit": self.fit.as_dict() if self.fit else None,
                "knees": {"factor": KNEE_FACTOR, "families": [k.as_dict() for k in knees],
                          "summary": knee_summary(knees)},
                "rows": [r.as_dict() for r in self.results]}


def serving_accuracy(rows: Sequence[ServingRow] | None = None, *, refit: bool = False, split_rows: bool = True,
                     fit: OverheadFit | None = None, efficiency: Efficiency | None = None,
                     progress: Progress | None = None) -> ServingAccuracy:
    """Score `rows` (default: the bundled set). `split_rows`: the hash split decides held_out (else every row
    is held out, as for a user's own files, which the fit never sees). `refit`: fit the overheads on the
    training rows first (`fit_overheads`) and score every row with the fitted values; `fit`: score with these
    fitted values (fitted elsewhere, e.g. on the bundled rows for a user's files); `efficiency`: the step model's
    fractions for every row (default: each engine's own, `EngineProfile.base_efficiency`); `progress(done,
    total)`: the fit's search (`fit_overheads`), then the rows scored."""
    rows = list(load_serving_results() if rows is None else rows)
    held = split(rows) if split_rows else np.ones(len(rows), bool)
    if refit:
        fit = fit_overheads([r for r, h in zip(rows, held, strict=True) if not h], efficiency, progress=progress)
    results = []
    for i, (row, h) in enumerate(zip(rows, held, strict=True)):
        over = dict(fit.values.get(row.engine, {})) if fit else None
        results.append(RowResult(row, replay(row, over, efficiency), bool(h)))
        tick(progress, i + 1, len(rows))
    return ServingAccuracy(tuple(results), fit)


# ---- a user's `vllm bench serve --save-result` file --------------------------------------------------------
#: Setup keys a run's file may carry (`vllm bench serve --metadata gpu=h100-sxm gpus=1 engine=vllm-v1`).
SETUP_KEYS = ("model", "gpu", "gpus", "engine", "weights", "kv")


def _length_spec(lengths: Any, total: Any, completed: int, name: str, path: str) -> int | str:
    """The run's lengths: the per-request list as a histogram spec, else the mean of the total."""
    if isinstance(lengths, list) and lengths and all(isinstance(v, int) and v > 0 for v in lengths):
        values, counts = np.unique(np.asarray(lengths), return_counts=True)
        return int(values[0]) if values.size == 1 else "hist:" + ",".join(
            f"{v}={c}" for v, c in zip(values.tolist(), counts.tolist(), strict=True))
    if isinstance(total, int | float) and total > 0 and completed > 0:
        return max(1, round(total / completed))
    raise KokubanError(f"{path}: no {name} lengths (neither {name}_lens nor total_{name}_tokens)", field="file",
                       value=path)


def read_vllm_bench(path: str, defaults: Mapping[str, Any] | None = None) -> ServingRow:
    """One `vllm bench serve --save-result` JSON as a row of load "run". The setup it lacks (gpu, gpus, engine,
    model as a catalog id) comes from its metadata keys, else from `defaults`; anything still missing, or a
    metric that is not a finite positive number, is a one-line KokubanError(field="file")."""
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise KokubanError(f"{path}: not a readable JSON file ({type(exc).__name__})", field="file",
                           value=path) from None
    if not isinstance(data, dict):
        raise KokubanError(f"{path}: not a vllm bench serve result (a JSON object)", field="file", value=path)
    setup = {k: v for k, v in (defaults or {}).items() if v is not None}
    setup |= {k: data[k] for k in SETUP_KEYS if data.get(k) not in (None, "")}
    setup.setdefault("model", data.get("model_id"))
    for key in ("model", "gpu", "engine"):
        if not setup.get(key):
            raise KokubanError(f"{path}: the file does not say its {key} (add {key}=… to the benchmark's metadata, "
                               f"or give {key})", field="file", value=path)
    completed = data.get("completed")
    if not (isinstance(completed, int) and completed > 0):
        raise KokubanError(f"{path}: no completed requests", field="file", value=path)
    measured: dict[str, float] = {}
    for key, metric, scale in (("mean_ttft_ms", "ttft_s", 1e-3), ("mean_tpot_ms", "tpot_s", 1e-3),
                               ("mean_e2el_ms", "e2e_s", 1e-3), ("output_throughput", "output_tokens_per_s", 1.0)):
        value = data.get(key)
        if isinstance(value, int | float) and np.isfinite(value) and value > 0:
            measured[metric] = float(value) * scale
    rate = data.get("request_rate", "inf")
    try:
        rate_per_s = float(rate)
    except (TypeError, ValueError):
        raise KokubanError(f"{path}: request_rate {rate!r} is not a number or 'inf'", field="file",
                           value=path) from None
    conc = data.get("max_concurrency")
    try:
        gpus = int(setup.get("gpus", 1))
    except (TypeError, ValueError):
        raise KokubanError(f"{path}: gpus {setup.get('gpus')!r} is not an integer", field="file", value=path) from None
    row = ServingRow(
        id=Path(path).name, engine=str(setup["engine"]), model=str(setup["model"]), gpu=str(setup["gpu"]), gpus=gpus,
        input_tokens=_length_spec(data.get("input_lens"), data.get("total_input_tokens"), completed, "input", path),
        output_tokens=_length_spec(data.get("output_lens"), data.get("total_output_tokens"), completed, "output",
                                   path),
        load="run", concurrency=int(conc) if isinstance(conc, int) and conc > 0 else None, measured=measured,
        weights=setup.get("weights"), kv=setup.get("kv"), rate_per_s=rate_per_s, num_prompts=completed,
        engine_version=str(data.get("backend", "")), source={"url": str(path)})
    if not (rate_per_s > 0):
        raise KokubanError(f"{path}: request_rate must be > 0 or 'inf', got {rate!r}", field="file", value=path)
    try:
        _check_row(row, path)
    except KokubanError as exc:
        raise KokubanError(exc.reason, field="file", value=path) from None
    return row
