"""Serving accuracy (`validation.serving`, `kokuban serving-accuracy`): the bundled rows are sourced and sane,
one replay's TTFT matches the arithmetic by hand, the split is deterministic and the fit never sees a held-out
row, a user's `vllm bench serve --save-result` file is read (or refused in one line)."""

from __future__ import annotations

import json
import math
import random
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from kokuban.cli import main
from kokuban.errors import KokubanError
from kokuban.present.jsonout import read_result
from kokuban.sim.profiles import load_profile
from kokuban.specs.catalog import load_accelerator, load_model
from kokuban.specs.hardware import Efficiency
from kokuban.validation import serving
from kokuban.validation.serving import (
    METRICS,
    ServingRow,
    fit_overheads,
    load_serving_results,
    read_vllm_bench,
    replay,
    split,
    summarize,
)

FIXTURE = Path(__file__).parent / "fixtures" / "vllm_bench_small.json"


def test_every_row_is_sourced_positive_and_replayable():
    rows = load_serving_results()
    assert len(rows) >= 165 and len({r.id for r in rows}) == len(rows)
    # at least ten rows per engine scored (issue 12's aim for SGLang and TensorRT-LLM)
    assert all(sum(r.engine == e for r in rows) >= 10 for e in ("vllm-v1", "sglang", "trtllm"))
    for r in rows:
        assert r.source["url"].startswith("https://") and r.source["read"] == "2026-12-03" and r.source["title"]
        assert r.quote and r.source.get("setup_quote")
        assert r.measured and set(r.measured) <= set(METRICS)
        assert all(np.isfinite(v) and v > 0 for v in r.measured.values())
        # a load: clients, or a run of num_prompts requests (at a rate, or every one at t = 0 when none is stated)
        assert r.gpus >= 1 and ((r.concurrency or 0) >= 1 or (r.load == "run" and (r.num_prompts or 0) >= 1))
        for lengths in (r.input_tokens, r.output_tokens):  # fixed tokens, or a spec (SGLang's uniform lengths)
            assert lengths > 0 if isinstance(lengths, int) else lengths.startswith("uniform:")
        load_profile(r.engine), load_model(r.model), load_accelerator(r.gpu)  # every name is known


def test_a_source_table_sets_the_token_budget_of_its_rows():
    """The older NIM's rows replay at their source table's max_num_batched_tokens (assumed there, chosen on the
    training rows); NIM 1.8.0's at the trtllm profile's (trtllm-serve's default 8192); both with its policy."""
    rows = {r.id: r for r in load_serving_results()}
    dli, nim = rows["nimdli-l3-8b-h100x1-fp16-2000-200-c25"], rows["nim180-l33-70b-h100x2-fp8-5000-500-c25"]
    assert dli.max_num_batched_tokens == dli.source["max_num_batched_tokens"] == 32768
    assert "max_num_batched_tokens" in dli.source["assumed"] and nim.max_num_batched_tokens is None
    dli_cfg, nim_cfg = serving._setup(dli, None)[1], serving._setup(nim, None)[1]
    assert (dli_cfg.policy, dli_cfg.max_num_batched_tokens) == ("inflight", 32768)
    assert (nim_cfg.policy, nim_cfg.max_num_batched_tokens) == ("inflight", 8192)


@pytest.mark.parametrize("budget", [0, -8192, 2.5])
def test_a_bad_token_budget_is_refused_naming_the_field(budget):
    row = next(r for r in load_serving_results() if r.id == "nim180-l33-70b-h100x2-fp8-5000-500-c25")
    with pytest.raises(KokubanError, match="max_num_batched_tokens must be a whole number ≥ 1") as err:
        serving._check_row(replace(row, max_num_batched_tokens=budget), "row x")
    assert err.value.field == "max_num_batched_tokens"


def test_the_older_nims_rows_are_scored_over_genai_perfs_time_windows():
    """The DLI runs' source table states perf_analyzer's 72-s windows (1.2 × a 60 s --measurement-interval);
    NIM 1.8.0's states none (steady rounds)."""
    rows = {r.id: r for r in load_serving_results()}
    dli, nim = rows["nimdli-l3-8b-h100x1-fp16-2000-200-c25"], rows["nim180-l33-70b-h100x2-fp8-5000-500-c25"]
    assert dli.measurement_window_s == dli.source["measurement_window_s"] == 72.0
    assert "ASSUMPTION: 60000 ms" in dli.source["measurement_source"] and nim.measurement_window_s is None
    # and behind a one-at-a-time front end of 1 ms per request (an assumption chosen on the training rows)
    assert dli.intake_s == 0.001 and "ASSUMPTION" in dli.source["intake_source"] and nim.intake_s is None


def test_the_sglang_runs_replay_at_their_versions_memory_fraction_and_the_profiles_scheduler():
    """SGLang 0.4.0.post1's mem_fraction_static by TP size (0.85 at TP4, 0.81 at TP8; assumed in the source tables,
    the 405B's chosen on training rows), not the profile's later GPU-tier rule; the sglang policy and the eager
    launch floor of the profile. vLLM rows state none (the profile's 0.9)."""
    rows = {r.id: r for r in load_serving_results()}
    r70 = rows["dc-sglang-l33-70b-h200x4-bf16-rand1024-rate4"]
    r405 = rows["dc-sglang-l31-405b-h200x8-bf16-rand1024-1024-rate4"]
    off = rows["dc-sglang-l33-70b-h200x4-bf16-rand256-512-offline-n6000"]
    assert (r70.memory_fraction, off.memory_fraction, r405.memory_fraction) == (0.85, 0.85, 0.81)
    assert all("ASSUMPTION" in r.source["memory_fraction_source"] for r in (r70, r405, off))
    dep, cfg = serving._setup(r70, None)
    assert dep.memory_utilization == 0.85 and cfg.policy == "sglang"
    assert (cfg.overheads.graph_max_batch, cfg.overheads.eager_per_layer_s) == (160, 1.05e-3)
    assert serving._setup(r405, None)[0].memory_utilization == 0.81
    vllm = next(r for r in rows.values() if r.engine == "vllm-v1")
    assert vllm.memory_fraction is None and serving._setup(vllm, None)[0].memory_utilization == 0.9


@pytest.mark.parametrize("fraction", [0, 1.2, -0.5, "0.85", True])
def test_a_bad_memory_fraction_is_refused_naming_the_field(fraction):
    row = next(r for r in load_serving_results() if r.engine == "sglang")
    with pytest.raises(KokubanError, match=r"memory_fraction must be a number in \(0, 1\]") as err:
        serving._check_row(replace(row, memory_fraction=fraction), "row x")
    assert err.value.field == "memory_fraction"


@pytest.mark.parametrize("intake", [-0.001, math.inf, "1ms"])
def test_a_bad_intake_is_refused_naming_the_field(intake):
    row = next(r for r in load_serving_results() if r.id == "nim180-l33-70b-h100x2-fp8-5000-500-c25")
    with pytest.raises(KokubanError, match="intake_s must be a finite number ≥ 0") as err:
        serving._check_row(replace(row, intake_s=intake), "row x")
    assert err.value.field == "intake_s"


@pytest.mark.parametrize("window", [0, -72.0, "72"])
def test_a_bad_measurement_window_is_refused_naming_the_field(window):
    row = next(r for r in load_serving_results() if r.id == "nim180-l33-70b-h100x2-fp8-5000-500-c25")
    with pytest.raises(KokubanError, match="measurement_window_s must be > 0") as err:
        serving._check_row(replace(row, measurement_window_s=window), "row x")
    assert err.value.field == "measurement_window_s"


@pytest.mark.parametrize(("finish", "latency", "end"), [
    # one request finishes in each of the first three 10-s windows, each after 1 s: stable after 3 windows (30 s)
    ([5.0, 15.0, 25.0], [1.0] * 3, 30.0),
    # window 2 (10 … 20 s) counts none: windows 1-3 and 2-4 are not stable, 3-5 are (25, 35, 45 s): 5 windows
    ([5.0, 25.0, 35.0, 45.0], [1.0] * 4, 50.0),
    # window 1 counts 12 requests, windows 2 and 3 one each: 1.2 / 0.1 per s = 12 > 1 + 9.99, unstable; 2-4 are
    ([1.0] * 12 + [15.0, 25.0, 35.0], [1.0] * 15, 40.0),
    # one request per window, latencies 1, 1, 12, 1, 1, 1 s: any three windows holding the 12-s one are 12 > 10.99
    # apart, so windows 4-6 are the first stable three (60 s)
    ([5.0, 15.0, 25.0, 35.0, 45.0, 55.0], [1.0, 1.0, 12.0, 1.0, 1.0, 1.0], 60.0),
    # only window 1 ever counts a request: perf_analyzer gives up after its 10 windows (100 s)
    ([5.0], [1.0], 100.0),
])
def test_perf_analyzer_window_end_by_hand(finish, latency, end):
    finish_s = np.asarray(finish)
    assert serving.perf_analyzer_end(finish_s - np.asarray(latency), finish_s, 10.0) == end


def test_a_windowed_replay_scores_the_first_round_and_what_finished_in_the_windows():
    # 4 clients, every first request sent at t = 0 (the load starts with the first window); perf_analyzer counts
    # every request that finished by the end of its stable windows, the first round included, none after
    row = ServingRow(id="windows", engine="vllm-v1", model="llama-3.2-1b", gpu="h100-sxm", gpus=1, input_tokens=512,
                     output_tokens=64, load="concurrency", concurrency=4, measured={"ttft_s": 1.0},
                     measurement_window_s=2.0)
    dep, sched = serving._setup(row, None)
    res, keep = serving._windowed_run(row, dep, sched)
    end = serving.perf_analyzer_end(res.arrival_s, res.finish_s, 2.0)
    assert end >= 3 * 2.0 and keep[:4].all() and (res.arrival_s[:4] == 0).all()
    assert (keep == (res.finish_s <= end)).all() and res.arrival_s.max() >= end  # the loop outlasted the windows
    # throughput: the counted requests' output tokens over first send (t = 0) to last finish, as GenAI-Perf's
    # benchmark_duration; TTFT the mean over the same requests
    got = replay(replace(row, measured={"ttft_s": 1.0, "output_tokens_per_s": 1.0}))
    assert got["output_tokens_per_s"] == pytest.approx(64 * keep.sum() / res.finish_s[keep].max(), rel=1e-12)
    assert got["ttft_s"] == pytest.approx(res.ttft_s[keep].mean(), rel=1e-12)


def test_ttft_at_concurrency_one_by_hand():
    # Llama-3.1-8B, bf16, one H100 SXM, 2,048-token prompt, alone (concurrency 1): one prefill step, compute-bound,
    # priced with the scalar set (`Efficiency.scalar()`: one compute fraction, 0.74, at every token count).
    #   matmul FLOPs: 2 × (params_matmul − params_lm_head) × 2048 + 2 × params_lm_head (logits of the last token
    #   only) = 2 × 6,979,588,096 × 2048 + 2 × 525,336,576 = 28,588,392,841,216 + 1,050,673,152
    #   attention: 4 × hidden = 16,384 FLOPs per (query, key) pair per layer × 2048·2049/2 pairs × 32 layers
    #   = 16,384 × 2,098,176 × 32 = 1,100,048,498,688
    #   total 29,689,492,013,056 FLOPs at 0.74 × 989.4 TFLOP/s = 732.156 TFLOP/s → 40.5507 ms (the weights'
    #   16.06 GB at 0.84 × 3.35 TB/s take 5.7 ms, hidden under the compute)
    #   TTFT = prefill + step overhead 2 ms + front end 10 ms = 52.5507 ms
    row = ServingRow(id="by-hand", engine="kokuban", model="llama-3.1-8b", gpu="h100-sxm", gpus=1, input_tokens=2048,
                     output_tokens=2, load="concurrency", concurrency=1, measured={"ttft_s": 1.0}, weights="bf16",
                     kv="bf16")
    flops = 2 * 6_979_588_096 * 2048 + 2 * 525_336_576 + 16_384 * (2048 * 2049 // 2) * 32
    prefill_s = flops / (0.74 * 989.4e12)
    assert prefill_s == pytest.approx(0.0405507, rel=1e-5)
    got = replay(row, {"step_overhead_s": 0.002, "front_end_s": 0.010}, Efficiency.scalar())["ttft_s"]
    assert got == pytest.approx(prefill_s + 0.002 + 0.010, rel=1e-3)


def test_batch_load_is_the_whole_batch_without_a_front_end():
    # offline `vllm bench latency`: 8 requests together; E2E is the last finish, and no front end is added
    row = ServingRow(id="batch", engine="vllm-v1", model="llama-3.2-1b", gpu="h100-sxm", gpus=1, input_tokens=32,
                     output_tokens=16, load="batch", concurrency=8, measured={"e2e_s": 1.0})
    base = replay(row, {"front_end_s": 0.0})["e2e_s"]
    assert replay(row, {"front_end_s": 5.0})["e2e_s"] == pytest.approx(base, rel=1e-12)
    # 16 steps at least (one token each per request), each at least the profile's fixed terms: 2.068 ms per step
    # (no per-layer term)
    assert base >= 16 * 2.068e-3


def test_split_is_deterministic_and_order_free():
    rows = load_serving_results()
    mask = split(rows)
    assert 0 < mask.sum() < len(rows)
    shuffled = rows[:]
    random.Random(3).shuffle(shuffled)
    again = dict(zip([r.id for r in shuffled], split(shuffled), strict=True))
    assert all(again[r.id] == m for r, m in zip(rows, mask, strict=True))


def test_fit_never_sees_a_held_out_row(monkeypatch):
    rows = load_serving_results()
    held = {r.id for r, h in zip(rows, split(rows), strict=True) if h}
    seen: list[str] = []

    def fake_replay(row, overrides=None, efficiency=None):  # records every row the fit replays; predicts 1.1 × measured
        seen.append(row.id)
        return {k: 1.1 * v for k, v in row.measured.items()}

    monkeypatch.setattr(serving, "replay", fake_replay)
    fit = fit_overheads([r for r in rows if r.id not in held])
    assert seen and not (set(seen) & held)
    assert set(fit.values) == {r.engine for r in rows if r.id not in held}


def test_per_layer_term_is_fitted_only_across_layer_counts(monkeypatch):
    def fake_replay(row, overrides=None, efficiency=None):
        # log errors: TPOT by the fixed term (best at 2 ms), throughput by the per-layer term (best at 20 µs)
        o = overrides or {}
        return {"tpot_s": row.measured["tpot_s"] * math.exp(math.log(o["step_overhead_s"] / 2e-3)),
                "output_tokens_per_s": row.measured["output_tokens_per_s"] * math.exp(1e4 * (o["per_layer_s"] - 20e-6))}

    monkeypatch.setattr(serving, "replay", fake_replay)

    def row(model):
        return ServingRow(id=model, engine="trtllm", model=model, gpu="h100-sxm", gpus=1, input_tokens=100,
                          output_tokens=10, load="concurrency", concurrency=2,
                          measured={"tpot_s": 0.01, "output_tokens_per_s": 100.0})

    # Llama-3.1-8B (32 layers) and -70B (80 layers): the grid's 20 µs; the fixed term the grid point nearest 2 ms
    # in log: the grid is 0.5 ms × 12^(k/7), k = 4 gives 0.5 × 4.137 = 2.068 ms (log ratio 0.034, against 0.322
    # for k = 3, 1.450 ms)
    fit = fit_overheads([row("llama-3.1-8b"), row("llama-3.1-70b")])
    assert fit.values["trtllm"]["per_layer_s"] == 20e-6 and "per_layer_s" in fit.pinned["trtllm"]
    assert fit.values["trtllm"]["step_overhead_s"] == pytest.approx(2.068e-3, rel=1e-3)
    # one layer count: a per-layer term cannot be told from the fixed one, so it is not fitted
    one = fit_overheads([row("llama-3.1-8b"), row("llama-3.1-8b")])
    assert "per_layer_s" not in one.pinned["trtllm"] and one.values["trtllm"]["per_layer_s"] == 0.0


def _trtllm_row(model, concurrency=2):
    return ServingRow(id=model, engine="trtllm", model=model, gpu="h100-sxm", gpus=1, input_tokens=100,
                      output_tokens=10, load="concurrency", concurrency=concurrency,
                      measured={"tpot_s": 0.01, "output_tokens_per_s": 100.0})


def test_fit_does_not_depend_on_the_profiles_shipped_values(monkeypatch):
    import dataclasses

    import kokuban.sim.profiles as profiles

    real = profiles.load_profile

    def fake_replay(row, overrides=None, efficiency=None):
        # log errors: TPOT by the fixed term (best at 8 ms, above the grid's 6 ms top), throughput by the
        # per-layer term (best at 140 µs, above the grid's 100 µs top)
        o = overrides or {}
        throughput = row.measured["output_tokens_per_s"] * math.exp(1e4 * (o["per_layer_s"] - 140e-6))
        return {"tpot_s": row.measured["tpot_s"] * o["step_overhead_s"] / 8e-3, "output_tokens_per_s": throughput}

    monkeypatch.setattr(serving, "replay", fake_replay)
    rows = [_trtllm_row("llama-3.1-8b"), _trtllm_row("llama-3.1-70b")]
    fits = []
    for step_s, layer_s in ((2.95e-3, 75e-6), (4.207e-3, 35e-6)):  # two shipped starts
        def profile(name, step_s=step_s, layer_s=layer_s):
            p = real(name)
            return dataclasses.replace(p, step_overhead_s=step_s,
                                       overheads=dataclasses.replace(p.overheads, per_layer_s=layer_s))

        monkeypatch.setattr(profiles, "load_profile", profile)
        fits.append(fit_overheads(rows))
    first, second = (f.values["trtllm"] for f in fits)
    assert first == second
    # the grids extend past their tops by × 1.5: fixed term 6 → 9 → 13.5 ms, |log(9/8)| = 0.118 beats
    # |log(6/8)| = 0.288 and |log(13.5/8)| = 0.523; per layer 100 → 150 → 225 µs, 150 is 10 µs off 140 (100: 40,
    # 225: 85); the per-sequence term changes nothing, so the lowest value, 0
    assert first["step_overhead_s"] == pytest.approx(9e-3) and first["per_layer_s"] == pytest.approx(150e-6)
    assert first["per_seq_s"] == 0.0
    assert set(fits[0].pinned["trtllm"]) >= {"step_overhead_s", "per_layer_s"} and fits[0].at_bound["trtllm"] == ()


@pytest.mark.parametrize("target, bound", [(50e-3, 20e-3), (0.05e-3, 0.1e-3)])
def test_a_step_term_beyond_its_bound_is_kept_at_the_bound_and_said(monkeypatch, target, bound):
    def fake_replay(row, overrides=None, efficiency=None):  # TPOT best at `target`, outside FIT_BOUNDS
        o = overrides or {}
        return {"tpot_s": row.measured["tpot_s"] * o["step_overhead_s"] / target,
                "output_tokens_per_s": row.measured["output_tokens_per_s"]}

    monkeypatch.setattr(serving, "replay", fake_replay)
    # up: 6 → 9 → 13.5 → 20.25 clipped to 20 ms; down: 0.5 → 0.333 → 0.222 → 0.148 → 0.099 clipped to 0.1 ms
    fit = fit_overheads([_trtllm_row("llama-3.1-8b"), _trtllm_row("llama-3.1-8b")])
    assert fit.values["trtllm"]["step_overhead_s"] == bound
    assert fit.at_bound["trtllm"] == ("step_overhead_s",) and "step_overhead_s" not in fit.pinned["trtllm"]


def test_step_fit_follows_a_diagonal_valley_to_the_joint_best(monkeypatch):
    def fake_replay(row, overrides=None, efficiency=None):  # TPOT = fixed + layers × per-layer term
        o = overrides or {}
        layers = load_model(row.model).num_layers
        return {"tpot_s": o["step_overhead_s"] + layers * o["per_layer_s"],
                "output_tokens_per_s": row.measured["output_tokens_per_s"]}

    monkeypatch.setattr(serving, "replay", fake_replay)
    # measured TPOT = 2.068 ms + L × 20 µs: 2.708 ms for 32 layers, 3.668 ms for 80 (a zero loss there).
    # One term at a time stalls: with no per-layer term the best fixed one is 2.95 ms (log errors +0.086, −0.218,
    # mean square 0.027; 4.207 ms: 0.106), then 10 µs per layer (3.27 / 3.75 ms: 0.018; 20 µs: 3.59 / 4.55 ms,
    # 0.063), and from there neither 2.068 ms (0.038) nor 20 µs alone is better; the diagonal step to
    # (2.068 ms, 20 µs) is
    rows = []
    for model, tpot in (("llama-3.1-8b", 2.068e-3 + 32 * 20e-6), ("llama-3.1-70b", 2.068e-3 + 80 * 20e-6)):
        rows.append(ServingRow(id=model, engine="trtllm", model=model, gpu="h100-sxm", gpus=1, input_tokens=100,
                               output_tokens=10, load="concurrency", concurrency=2,
                               measured={"tpot_s": tpot, "output_tokens_per_s": 100.0}))
    calls = []
    fit = fit_overheads(rows, progress=lambda done, total: calls.append((done, total)))
    assert fit.values["trtllm"]["step_overhead_s"] == 2.068e-3 and fit.values["trtllm"]["per_layer_s"] == 20e-6
    assert fit.converged["trtllm"]
    # the search reports each newly replayed point: counts 1, 2, 3, … (a point met again is not replayed), each
    # against at least itself; a scan's last new point closes its stage (done == total)
    assert [d for d, _ in calls] == list(range(1, len(calls) + 1)) and all(d <= t for d, t in calls)
    assert calls[-1][0] == calls[-1][1]


def test_scoring_reports_each_row_replayed(monkeypatch):
    """serving_accuracy's progress: (rows replayed, rows) after each row, ending at (n, n)."""
    monkeypatch.setattr(serving, "replay", lambda row, overrides=None, efficiency=None: dict(row.measured))
    rows = load_serving_results()[:3]
    calls = []
    serving.serving_accuracy(rows, split_rows=False, progress=lambda done, total: calls.append((done, total)))
    assert calls == [(1, 3), (2, 3), (3, 3)]


def test_summary_medians_by_hand():
    row = ServingRow(id="x", engine="vllm-v1", model="qwen3-8b", gpu="h100-sxm", gpus=1, input_tokens=1,
                     output_tokens=2, load="run", concurrency=1, num_prompts=1,
                     measured={"ttft_s": 1.0, "tpot_s": 1.0, "itl_median_s": 2.0})
    results = [serving.RowResult(row, {"ttft_s": p, "tpot_s": 1.1, "itl_median_s": 1.0}, True)
               for p in (1.1, 0.8, 1.3)]
    s = summarize(results)
    # TTFT errors +10 %, −20 %, +30 % → |error| median 20 %; TPOT/ITL family: 3 × 10 % and 3 × 50 % → median 30 %
    assert s["by_family"]["ttft"]["median_abs_error"] == pytest.approx(0.2)
    assert s["by_family"]["tpot_itl"]["points"] == 6
    assert s["by_family"]["tpot_itl"]["median_abs_error"] == pytest.approx(0.3)
    lo, hi = s["by_family"]["ttft"]["median_abs_error_ci"]
    assert 0.1 - 1e-12 <= lo <= 0.2 <= hi <= 0.3 + 1e-12


def test_vllm_bench_file_is_read_with_its_setup():
    row = read_vllm_bench(str(FIXTURE))
    assert (row.model, row.gpu, row.engine, row.weights, row.gpus) == ("qwen3-8b", "h100-sxm", "vllm-v1", "bf16", 1)
    # 1,024 input and 512 output tokens over 8 completed requests: 128 and 64 each
    assert (row.load, row.concurrency, row.num_prompts, row.input_tokens, row.output_tokens) == ("run", 4, 8, 128, 64)
    assert row.rate_per_s == float("inf")
    assert row.measured == pytest.approx({"ttft_s": 0.0305, "tpot_s": 0.0071, "e2e_s": 0.480,
                                          "output_tokens_per_s": 533.3})


def test_cli_file_json_shape(capsys):
    assert main(["serving-accuracy", "--measurements-file", str(FIXTURE), "--json"]) == 0
    data = read_result(capsys.readouterr().out, command="serving-accuracy")
    assert set(data) == {"split", "held_out", "train", "all", "fit", "knees", "rows"}
    # one file is no load sweep: no knee, and a summary that says so
    assert data["knees"] == {"factor": 2.0, "families": [],
                             "summary": {"families": 0, "both_reached": 0, "same_interval": 0, "median_ratio": None}}
    assert set(data["held_out"]) == {"by_family", "by_metric", "by_engine"}
    assert set(data["held_out"]["by_family"]) == {"ttft", "tpot_itl", "e2e", "throughput"}
    stats = data["held_out"]["by_family"]["ttft"]
    assert set(stats) == {"points", "median_abs_error", "p90_abs_error", "median_abs_error_ci"}
    (row,) = data["rows"]
    assert row["held_out"] is True and set(row["error"]) == set(row["measured"]) == set(row["predicted"])
    assert all(np.isfinite(v) for v in row["error"].values())


@pytest.mark.parametrize("content, field", [
    ({"completed": 8, "model": "qwen3-8b", "engine": "vllm-v1"}, "gpu"),
    ({"completed": 8, "model": "qwen3-8b", "gpu": "h100-sxm"}, "engine"),
    ({"model": "qwen3-8b", "gpu": "h100-sxm", "engine": "vllm-v1", "total_input_tokens": 8}, "completed"),
    ({"completed": 2, "model": "qwen3-8b", "gpu": "h100-sxm", "engine": "vllm-v1", "total_input_tokens": 8,
      "total_output_tokens": 8}, "measured"),
    ({"completed": 2, "model": "qwen3-8b", "gpu": "no-such-gpu", "engine": "vllm-v1", "total_input_tokens": 8,
      "total_output_tokens": 8, "mean_ttft_ms": 10}, "no-such-gpu"),
])
def test_bad_file_refused_in_one_line(tmp_path, capsys, content, field):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(content))
    assert main(["serving-accuracy", "--measurements-file", str(path)]) == 2
    out = capsys.readouterr()
    lines = [line for line in (out.out + out.err).splitlines() if line.strip()]
    assert len(lines) == 1 and str(path) in lines[0] and field in lines[0] and "Traceback" not in lines[0]


def test_not_json_refused_in_one_line(tmp_path, capsys):
    path = tmp_path / "bad.json"
    path.write_text("{not json")
    assert main(["serving-accuracy", "--measurements-file", str(path)]) == 2
    out = capsys.readouterr()
    lines = [line for line in (out.out + out.err).splitlines() if line.strip()]
    assert len(lines) == 1 and "not a readable JSON" in lines[0]


@pytest.fixture(scope="module")
def bundled():
    """`kokuban serving-accuracy` on the bundled rows (every row replayed once: under a minute, the older NIM's
    windowed rows most of it)."""
    from kokuban.validation.serving import serving_accuracy

    return serving_accuracy()



def test_every_load_sweep_has_its_knees(bundled):
    """Every bundled load sweep yields a measured and a predicted TTFT knee: the older NIM's 24 deployments × mixes,
    vLLM 0.30.0's 7, SGLang's 2, NIM 1.8.0's 1 (the guide's knee table is generated from these)."""
    from kokuban.validation.serving import knee_summary

    knees = bundled.knees()
    assert len(knees) == 24 + 7 + 2 + 1
    summary = knee_summary(knees)
    assert summary["median_ratio"] is None or summary["median_ratio"] > 0


def test_fit_printout_says_which_terms_sit_at_their_bound():
    from rich.console import Console

    from kokuban.present.serving import print_serving_accuracy

    fit = serving.OverheadFit(values={"sglang": {"step_overhead_s": 20e-3, "per_layer_s": 10e-6, "front_end_s": 0.011}},
                              pinned={"sglang": ("per_layer_s",)}, train_rows={"sglang": 9},
                              at_bound={"sglang": ("step_overhead_s",)}, passes={"sglang": 2},
                              converged={"sglang": True})
    console = Console(record=True, width=200)
    print_serving_accuracy(console, serving.ServingAccuracy((), fit))
    text = console.export_text()
    assert "step_overhead_s=0.02 s (at bound)" in text and "per_layer_s=1e-05 s," in text
    assert "front_end_s=0.011 s (not pinned)" in text and "(2 coordinate passes)" in text
