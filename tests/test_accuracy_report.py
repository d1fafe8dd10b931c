"""`kokuban accuracy`'s report: bootstrap intervals, workloads/dtypes/engines, the worst rows, and `--file`."""

from __future__ import annotations

import json
import tomllib
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from json_envelope import result_of
from step_versions import V3_CURVES, V3_FRACTIONS, V3_LOOP_FRACTIONS, V4_NON_TORCH_BYTES, step_v3

from kokuban.cli import main
from kokuban.errors import KokubanError
from kokuban.present.jsonout import to_json
from kokuban.specs.hardware import Efficiency
from kokuban.specs.kernels import KernelCurves
from kokuban.usecases.validation import AccuracyRequest, read_measurements, run_accuracy
from kokuban.validation.accuracy import (
    BOOTSTRAP_LEVEL,
    BOOTSTRAP_RESAMPLES,
    WORST_ROWS,
    accuracy,
    bootstrap_median_ci,
    engine_family,
    load_published,
    predict_row,
)

HEADER = "model,gpu,gpus,layout,weights,batch,prompt,output,metric,value,unit,engine,source"

ROOT = Path(__file__).resolve().parents[1]
#: the commit of TensorRT-LLM's v0.6.1 performance document, in the source of each of the 29 rows added 2026-12-04
TRTLLM_061_DOC = "77d24b5fa178f11ed7fafdd9833b7245e075f721"
#: step-v3 at its first fractions, the step model shipped when those 29 rows were added: what docs/validation.md's
#: "The set grows" section and the GQA diagnosis were measured with (TensorRT-LLM's pool by the engine profile)
STEP_V3_FIRST = Efficiency.kernel_calibrated(V3_FRACTIONS, V3_CURVES)
#: step-v3 at the fractions fitted on 71 of 100 rows: the step model docs/validation.md's "The worst rows" describes
STEP_V3_LOOP = step_v3(V3_LOOP_FRACTIONS)


def _new_rows():
    """The 29 rows added on 2026-12-04 (TensorRT-LLM 0.5/0.6.1's tables), found by their source."""
    return [r for r in load_published() if TRTLLM_061_DOC in r.source]


# ---- the bootstrap, by hand ------------------------------------------------------------------------------
def test_bootstrap_of_three_errors_by_hand():
    """Resampling [0.1, 0.2, 0.3] (n = 3, odd): each resample's median is one of the three values.

    P(median = 0.1) = P(at least two of three draws are 0.1) = 3·(1/3)²·(2/3) + (1/3)³ = 7/27 ≈ 0.259;
    likewise P(0.3) = 7/27, P(0.2) = 13/27 ≈ 0.481. So the 2.5th and 97.5th percentiles of the resampled
    medians fall inside the 0.1 and 0.3 masses: the 95 % interval is (0.1, 0.3). A 40 % interval takes the
    30th and 70th percentiles, both inside the 0.2 mass (7/27 = 0.259 < 0.30 and 0.70 < 20/27 = 0.741): (0.2, 0.2).
    With 10,000 resamples the share of 0.1-medians is 0.259 ± 0.004 (one s.d.), 9 s.d. from 0.30; the seed is
    fixed, so the draw is the same on every run."""
    assert bootstrap_median_ci([0.1, 0.2, 0.3]) == pytest.approx((0.1, 0.3))
    assert bootstrap_median_ci([0.1, 0.2, 0.3], level=0.4) == pytest.approx((0.2, 0.2))
    assert (BOOTSTRAP_RESAMPLES, BOOTSTRAP_LEVEL) == (10_000, 0.95)


def test_bootstrap_degenerate_and_deterministic():
    assert bootstrap_median_ci([0.25]) == (0.25, 0.25)  # one row: every resample is that row
    assert bootstrap_median_ci([0.4] * 7) == pytest.approx((0.4, 0.4))
    errors = [0.05, 0.3, 0.12, 0.7, 0.2, 0.01]
    assert bootstrap_median_ci(errors) == bootstrap_median_ci(list(errors))  # same seed, same interval
    lo, hi = bootstrap_median_ci(errors)
    assert min(errors) <= lo <= np.median(errors) <= hi <= max(errors)
    with pytest.raises(KokubanError, match="errors"):
        bootstrap_median_ci([])
    with pytest.raises(KokubanError, match="level"):
        bootstrap_median_ci(errors, level=1.0)


def test_engine_family():
    assert engine_family("TensorRT-LLM 1.0 (PyTorch backend, trtllm-bench)") == "TensorRT-LLM"
    assert engine_family("vLLM 0.9.0.1 (rocm/vllm:rocm6.4.1_vllm_0.9.0.1_20250605)") == "vLLM"
    assert engine_family("vLLM (ROCm), benchmark_latency.py") == "vLLM"
    assert engine_family("MLC LLM (TVM, Aug 2023)") == "MLC LLM"
    assert engine_family("gpt-fast (PyTorch torch.compile)") == "gpt-fast"
    assert engine_family("") == ""


# ---- the report on the published rows --------------------------------------------------------------------
OLD_ROW_KEYS = {"id", "metric", "measured", "predicted", "error", "regime", "batch_per_replica", "replicas",
                "tp_or_ep", "input_tokens", "output_tokens", "lengths_assumed"}
NEW_ROW_KEYS = {"signed_error", "engine", "weights_dtype", "workloads", "terms", "floor", "beyond_floor", "withdrawn"}


def test_json_keeps_its_keys_and_adds_the_listed_ones():
    """The documented `kokuban accuracy --json` keys stay; new ones are exactly these."""
    data = json.loads(to_json(run_accuracy(AccuracyRequest()).as_dict()))
    assert set(data) == {"rows", "summary", "efficiency", "worst", "source", "beyond_floor"}
    assert all(set(r) == OLD_ROW_KEYS | NEW_ROW_KEYS for r in data["rows"])
    s = data["summary"]
    assert set(s) == {"count", "median_abs_error", "p90_abs_error", "max_abs_error", "median_signed_error",
                      "by_regime", "by_metric", "median_abs_error_ci", "by_workload", "by_weights", "by_engine",
                      "bootstrap", "without_withdrawn"}
    assert set(s["without_withdrawn"]) == {"count", "median_abs_error", "p90_abs_error", "max_abs_error",
                                           "median_signed_error", "median_abs_error_ci", "bootstrap"}
    assert s["bootstrap"] == {"statistic": "median_abs_error", "method": "percentile", "resamples": 10_000,
                              "level": 0.95, "seed": 0}
    assert set(s["by_workload"]) == {"decode_batch_1", "throughput", "prefill", "moe", "multi_gpu"}


def test_groups_are_the_rows_they_name():
    """Each group's count and median are those of the rows carrying its label (computed here from the rows)."""
    acc = accuracy()
    s = acc.summary
    for name, group in s["by_workload"].items():
        err = [p.error for p in acc.predictions if name in p.workloads]
        assert group["count"] == len(err) and group["median_abs_error"] == pytest.approx(np.median(err))
        assert tuple(group["median_abs_error_ci"]) == pytest.approx(bootstrap_median_ci(err))
    # The counts read straight from the data file, by rules written here rather than the code's grouping:
    # per-user speed rows at batch 1 on one replica (every such row in the set is single-stream); throughput
    # rows; fp8 weights; TensorRT-LLM of any version; MoE = the catalog models with routed experts.
    rows = tomllib.loads((ROOT / "src/kokuban/data/published_results.toml").read_text())["result"]
    per_user = [r for r in rows if r["metric"] == "tokens_per_s_per_user" and r["batch"] == 1]
    throughput = [r for r in rows if r["metric"] == "output_tokens_per_s"]
    fp8 = [r for r in rows if r["weights_dtype"] == "fp8"]
    trtllm = [r for r in rows if r["engine"].startswith("TensorRT-LLM")]
    moe = [r for r in rows if r["model"].startswith(("qwen3-30b-a3b", "qwen3-235b", "deepseek", "mixtral", "gpt-oss"))]
    assert s["by_workload"]["decode_batch_1"]["count"] == len(per_user)
    assert s["by_workload"]["throughput"]["count"] == len(throughput)
    assert s["by_weights"]["fp8"]["count"] == len(fp8) and s["by_engine"]["TensorRT-LLM"]["count"] == len(trtllm)
    assert s["by_workload"]["moe"]["count"] == len(moe)


def test_documented_intervals_hold():
    """docs/validation.md, the shipped step model (the kernel profile, session 35's): "all 196 rows 8.9 % median (95 %
    interval 7.7–10.7 %)"; by workload decode batch 1 9.5 % (4.8–12.4 %), throughput 8.4 % (6.6–10.4 %), multi-GPU
    12.8 % (8.1–15.8 %), MoE 21.2 % (12.8–37.1 %); vLLM 5.6 % (5 rows), llama.cpp 10.3 % (6). The scalar set: 24.9 %
    (20.7–28.4 %)."""
    s = accuracy().summary

    def q(g):
        return round(100 * g["median_abs_error"], 1), *(round(100 * x, 1) for x in g["median_abs_error_ci"])

    assert q(s) == (8.9, 7.7, 10.7)
    w = s["by_workload"]
    assert [q(w[k]) for k in ("decode_batch_1", "throughput", "multi_gpu", "moe")] == [
        (9.5, 4.8, 12.4), (8.4, 6.6, 10.4), (12.8, 8.1, 15.8), (21.2, 12.8, 37.1)]
    assert (s["by_engine"]["vLLM"]["count"], q(s["by_engine"]["vLLM"])[0]) == (5, 5.6)
    assert (s["by_engine"]["llama.cpp"]["count"], q(s["by_engine"]["llama.cpp"])[0]) == (6, 10.3)
    assert q(accuracy(Efficiency.scalar()).summary) == (24.9, 20.7, 28.4)
    text = " ".join(_docs().split())
    assert "all 196 rows 8.9 % median (95 % interval 7.7–10.7 %); the scalar set gives 24.9 % (20.7–28.4 %)" in text


def test_docs_worst_rows_paragraph(monkeypatch):
    """docs/validation.md, "The worst rows": the places and signed errors of the rows it names, the terms of the worst
    step, the rule's reads per byte of cache and the L40S all-reduce, each rebuilt from the report of the step model it
    describes (`STEP_V3_LOOP`) and looked up in the text."""
    acc = accuracy(STEP_V3_LOOP)
    text = " ".join(_docs().split())
    worst = {p.id: (i + 1, p) for i, p in enumerate(acc.worst)}
    preds = {p.id: p for p in acc.predictions}

    def signed(row_id):
        return f"{100 * preds[row_id].signed_error:+.1f} %".replace("-", "−")

    mix = "trtllm09-mixtral-8x7b-"
    places = {f"{mix}fp8-tp2-h200-b1024-128-128": 1, "trtllm10-qwen3-235b-h100-fp8-tp8-128-2048": 2,
              f"{mix}fp8-tp2-h100-b512-128-128": 3, f"{mix}fp8-tp2-h200-b64-2048-128": 4,
              "trtllm-noxqa-h200-llama2-70b-fp8-tp1-b192-128-2048": 5, "oracle-llama31-405b-mi300x-fp8-bs1-128-128": 6,
              f"{mix}fp8-tp2-h100-b64-2048-128": 7, f"{mix}fp16-tp2-a100-b32-2048-2048": 8,
              "trtllm09-ttft-mixtral-8x7b-fp8-tp2-h100-2048": 9, "trtllm09-ttft-mixtral-8x7b-fp8-tp2-h200-2048": 10}
    assert {k: worst[k][0] for k in places} == places
    assert sum(k.startswith("trtllm09-") and "mixtral-8x7b" in k for k in worst) == 7
    top = acc.worst[0].terms
    assert (f"predicted {signed(acc.worst[0].id)} too fast: a compute-bound decode step of "
            f"{1e3 * top['step_time_s']:.1f} ms (compute {1e3 * top['compute_s']:.1f} ms, weights "
            f"{1e3 * top['weights_s']:.1f} ms, KV {1e3 * top['kv_s']:.1f} ms, all-reduce {1e3 * top['comm_s']:.1f} ms, "
            f"overhead {1e3 * top['overhead_s']:.1f} ms") in text
    assert f"third ({signed(f'{mix}fp8-tp2-h100-b512-128-128')})" in text
    assert (f"fourth and seventh ({signed(f'{mix}fp8-tp2-h200-b64-2048-128')} on H200, "
            f"{signed(f'{mix}fp8-tp2-h100-b64-2048-128')} on H100)") in text
    assert (f"ninth and tenth ({signed('trtllm09-ttft-mixtral-8x7b-fp8-tp2-h100-2048')} on H100, "
            f"{signed('trtllm09-ttft-mixtral-8x7b-fp8-tp2-h200-2048')} on H200)") in text
    assert f"eighth ({signed(f'{mix}fp16-tp2-a100-b32-2048-2048')})" in text
    assert f"128/2,048 tokens ({signed('trtllm10-qwen3-235b-h100-fp8-tp8-128-2048')}: a compute-bound in-flight" in text
    assert (f"are now {signed('trtllm09-ttft-mixtral-8x7b-fp8-tp4-l40s-128')} and "
            f"{signed('trtllm09-ttft-llama2-70b-fp8-tp4-l40s-2048')}") in text
    from kokuban.validation.accuracy import load_published, predict_row

    rows = {r.id: r for r in load_published()}
    monkeypatch.setattr(KernelCurves, "covers_pcie", lambda self, accelerator: False)  # the flat scalars on PCIe
    mix_l40, l40 = (predict_row(rows[k], STEP_V3_LOOP) for k in ("trtllm09-ttft-mixtral-8x7b-fp8-tp4-l40s-128",
                                                               "trtllm09-ttft-llama2-70b-fp8-tp4-l40s-2048"))
    monkeypatch.undo()
    before = [f"{100 * p.signed_error:+.1f} %".replace("-", "−") for p in (mix_l40, l40)]
    assert (f"(Mixtral at 128 tokens {before[0]}, Llama-2-70B at 2,048 tokens {before[1]}, then "
            f"{1e3 * l40.terms['comm_s']:.0f} ms of all-reduce in a predicted {1e3 * l40.predicted:,.0f} ms)") in text
    noxqa = "trtllm-noxqa-h200-llama2-70b-fp8-tp1-b192-128-2048"
    assert f"without XQA (batch 192 at 128/2,048, {signed(noxqa)})" in text
    r = STEP_V3_LOOP.kv_reread
    assert f"({r:.2f}, so 1 + 7 × {r:.2f} = {1 + 7 * r:.1f} reads per byte of cache)" in text
    h100 = [signed(f"trtllm061-llama2-70b-fp8-{k}-h100-sxm-{b}-2048")
            for k, b in (("tp4", "b480-128"), ("tp2", "b64-2048"))]
    assert f"from +94 / +92 % to {h100[0][:-2]} / {h100[1]}" in text
    assert f"at batch 1 ({signed('oracle-llama31-405b-mi300x-fp8-bs1-128-128')}, vLLM)" in text
    assert f"(−50.0 %), is now {signed('mlc-llama2-7b-int4-rtx4090')}" in text
    assert f"(−35.7 % before) is {signed('gptfast-llama2-7b-bf16-tp8-a100')}" in text
    scalar_worst = accuracy(Efficiency.scalar()).worst[0]
    assert scalar_worst.id == "trtllm-noxqa-h200-llama2-70b-fp8-tp1-b192-128-2048"
    assert f"the worst is the H200 run without XQA, +{100 * scalar_worst.error:.1f} %" in text


def test_documented_held_out_intervals_hold():
    """docs/validation.md: held-out (26 of the 88 rows before session 29; 29 of today's 100) median |error| textbook
    27.4 % (13.7–42.3 %; 33.0 %, 15.5–39.6 %), the shipped fit
    (0.742 / 0.835 / 0.271 / 2.74 ms) 28.0 % (13.1–38.1 %), the fit of 2026-12-03 (0.465 / 0.565 / 0.374 / 0.634 ms)
    17.6 % (13.9–27.6 %): the interval of the held-out rows only, as
    `kokuban calibrate --source published` prints it (the fit itself is too slow for a unit test)."""
    from kokuban.validation.calibrate import holdout_mask

    def held(eff, old_rows=False):  # the rows of session 29's fit: the TensorRT-LLM 0.9 rows came after it
        eff = replace(eff, engine_non_torch_bytes=V4_NON_TORCH_BYTES)  # TensorRT-LLM's pool as those figures had it
        preds = [p for p in accuracy(eff).predictions if not p.id.startswith("trtllm09-")]
        keep = np.array([not (old_rows and p.id.startswith("perfbench-")) for p in preds])
        err = np.array([p.error for p in preds])[holdout_mask([p.id for p in preds]) & keep]
        return len(err), round(100 * np.median(err), 1), *(round(100 * x, 1) for x in bootstrap_median_ci(err))

    fitted = Efficiency().updated(compute=0.742, memory=0.835, interconnect=0.271, step_overhead_s=2.74e-3)
    earlier = Efficiency().updated(compute=0.465, memory=0.565, interconnect=0.374, step_overhead_s=0.634e-3)
    # the 88 rows before session 29 (its 12 llm-perf-bench rows left out), then all 100
    assert held(Efficiency.textbook(), old_rows=True) == (26, 27.4, 13.7, 42.3)
    assert held(fitted, old_rows=True) == (26, 28.0, 13.1, 38.1)
    assert held(earlier, old_rows=True) == (26, 17.6, 13.9, 27.6)
    assert held(Efficiency.textbook()) == (29, 33.0, 15.5, 39.6)
    assert held(fitted) == (29, 26.7, 11.3, 36.3)
    assert held(earlier) == (29, 17.5, 12.7, 27.6)


def test_calibrate_held_out_intervals_are_of_held_out_rows_only():
    """A cheap synthetic fit: predicted = measured·(compute ÷ 0.5). The held-out summaries carry the interval
    of the held-out rows' errors alone; the training summaries carry none."""
    from kokuban.validation.calibrate import calibrate, holdout_mask

    ids = [f"r{i}" for i in range(30)]
    measured = np.linspace(1.0, 3.0, 30) * (1 + 0.1 * np.sin(np.arange(30)))
    skew = 1 + 0.05 * np.cos(np.arange(30))

    def predict(eff):
        return measured * skew * eff.compute / 0.5, np.array(["weights"] * 30)

    cal = calibrate("synthetic", ids, measured, predict, ("compute",), start=Efficiency.textbook())
    held = holdout_mask(ids)
    for summary, eff in ((cal.holdout_before, Efficiency.textbook()), (cal.holdout_after, cal.after)):
        err = np.abs(predict(eff)[0] - measured)[held] / measured[held]
        assert tuple(summary["median_abs_error_ci"]) == pytest.approx(bootstrap_median_ci(err))
        assert tuple(summary["by_regime"]["weights"]["median_abs_error_ci"]) == pytest.approx(bootstrap_median_ci(err))
    assert "median_abs_error_ci" not in cal.train_after


def test_worst_rows_are_the_largest_errors_in_order():
    acc = accuracy()
    worst = acc.worst
    assert len(worst) == WORST_ROWS == 10
    errors = [p.error for p in worst]
    assert errors == sorted(errors, reverse=True)
    assert min(errors) >= max(p.error for p in acc.predictions if p not in worst)
    assert acc.as_dict()["worst"] == [p.as_dict() for p in worst]
    # the worst today (the shipped kernel profile, session 31): NVIDIA's Llama-2-70B fp8 run on one H200 without XQA,
    # predicted 2.15× too fast, compute-bound; then Mixtral 8x7B fp8 on two H200s in TensorRT-LLM 0.9 at batch 1,024
    assert worst[0].id == "trtllm-noxqa-h200-llama2-70b-fp8-tp1-b192-128-2048" and worst[0].terms["bound"] == "compute"
    assert worst[1].id == "trtllm09-mixtral-8x7b-fp8-tp2-h200-b1024-128-128" and worst[1].terms["phase"] == "decode"
    places = {p.id: i + 1 for i, p in enumerate(worst)}
    mix = "trtllm09-mixtral-8x7b-fp8-tp2-"
    assert [places[f"{mix}{k}"] for k in ("h200-b1024-128-128", "h200-b64-2048-128", "h100-b512-128-128",
                                         "h100-b64-2048-128")] == [2, 5, 6, 9]
    # session 35's barrier wait makes the A100 Mixtral fp16 rows too slow: its first token at 128 tokens third
    assert worst[2].id == "trtllm09-ttft-mixtral-8x7b-fp16-tp2-a100-128" and worst[2].signed_error < -0.7
    named = ("trtllm09-ttft-mixtral-8x7b-fp8-tp4-l40s-128", "trtllm10-qwen3-235b-h100-fp8-tp8-128-2048",
             "trtllm05-h200-llama2-70b-fp8-tp2-b512-128-2048", "trtllm09-ttft-mixtral-8x7b-fp16-tp2-a100-128",
             "trtllm09-mixtral-8x7b-fp16-tp2-a100-b32-2048-2048")
    assert [places[k] for k in named] == [8, 4, 10, 3, 7]
    assert "oracle-llama31-405b-mi300x-fp8-bs1-128-128" not in places  # eighth until the MI300X's weight stream
    assert [k for k, i in places.items() if worst[i - 1].withdrawn] == [worst[i].id for i in (1, 4, 5, 7, 8)]
    text = " ".join(_docs().split())
    assert f"without XQA (+{100 * worst[0].signed_error:.1f} %)" in text
    assert f"at 128 tokens third ({100 * worst[2].signed_error:.1f} %".replace("-", "−") in text
    assert f"at 32 × 2,048/2,048 seventh ({100 * worst[6].signed_error:.1f} %)".replace("-", "−") in text
    # session 30's: the Mixtral row first, then Qwen3-235B fp8 on eight H100s in TensorRT-LLM 1.0
    before = accuracy(STEP_V3_LOOP).worst
    assert before[0].id == "trtllm09-mixtral-8x7b-fp8-tp2-h200-b1024-128-128"
    assert before[1].id == "trtllm10-qwen3-235b-h100-fp8-tp8-128-2048" and before[1].terms["phase"] == "inflight"


def test_terms_of_a_row_by_hand():
    """llama-2-7b fp16 on an RTX 4090 at batch 1 (the rule of test_validate_accuracy): the weights term is
    13,214,687,232 B ÷ (bandwidth · 0.8) and the KV term 34,078,720 B ÷ (bandwidth · 0.8), textbook fractions;
    no communication on one GPU, no fixed overhead in the textbook set; the decode step decides.

    Weights read per step (Llama-2-7B: 32 layers, hidden 4096, MLP 11008, vocab 32000; the input embedding is a
    lookup, not a read): per layer 4·4096² + 3·4096·11008 + 2·4096 (norms) = 202,383,360; × 32 = 6,476,267,520;
    + LM head 32000·4096 = 131,072,000 + final norm 4096 → 6,607,343,616 weights × 2 B = 13,214,687,232 B.
    KV read: 2 (K, V) · 32 layers · 4096 · 2 B = 524,288 B per token, at the mid-generation context of tg128,
    which starts from an empty cache (a 1-token prompt in the row), 1 + 128/2 = 65 tokens: 34,078,720 B."""
    from kokuban.specs.catalog import load_accelerator

    row = next(r for r in load_published() if r.id == "llamacpp-llama2-7b-f16-rtx4090-tg128")
    t = predict_row(row, Efficiency.textbook()).terms
    bw = load_accelerator("rtx-4090").memory_bandwidth_bytes_per_s
    assert t["phase"] == "decode" and t["bound"] == "weights"
    assert t["weights_s"] == pytest.approx(13_214_687_232 / (bw * 0.8), rel=1e-6)
    assert t["kv_s"] == pytest.approx(34_078_720 / (bw * 0.8), rel=1e-6)
    assert t["comm_s"] == 0 and t["overhead_s"] == 0
    # overlap 1 and compute below memory in both kernels: step = weights + KV
    assert t["step_time_s"] == pytest.approx(t["weights_s"] + t["kv_s"], rel=1e-9)


def test_time_to_first_token_row_by_hand():
    """TensorRT-LLM 0.5's A100 table: Llama-2-7B fp16, batch 1, 2,048-token prompt, 133 ms to the first token.
    Predicted (textbook fractions: compute 0.6 of 312 TFLOP/s, memory 0.8, no overhead) as one prefill step:

    multiplies: 2 FLOPs × (2,048 tokens × (6,476,267,520 layer weights + 4,096 final norm) + 131,072,000 LM head for
    the last token only) = 26,527,070,683,136; attention: 32 layers × 2,048·2,049/2 causal pairs × 2·32
    heads·(128 + 128) = 1,100,048,498,688. Both compute-bound (the 13.2 GB weight read takes 8.1 ms at 0.8 of
    2.04 TB/s, far under 142 ms of multiplies), so the step is their sum ÷ (312e12 · 0.6) = 0.1476 s: 11 % above
    the measured 0.133 s."""
    row = next(r for r in load_published() if r.id == "trtllm05-ttft-llama2-7b-fp16-tp1-a100-80gb-2048")
    assert (row.metric, row.value, row.batch, row.input_tokens) == ("time_to_first_token_s", 0.133, 1, 2048)
    multiplies = 2 * (2048 * (6_476_267_520 + 4_096) + 131_072_000)
    attention = 32 * (2048 * 2049 // 2) * 2 * 32 * 256
    want = (multiplies + attention) / (312e12 * 0.6)
    p = predict_row(row, Efficiency.textbook())
    assert p.predicted == pytest.approx(want, rel=1e-9) and p.terms["bound"] == "compute"
    assert round(want, 4) == 0.1476 and p.workloads == ("prefill",) and p.error == pytest.approx(want / 0.133 - 1)
    # a longer predicted time is a slower prediction: the signed error (> 0 = too fast) is negative here
    assert p.signed_error == pytest.approx(-(want / 0.133 - 1))


def test_ttft_rows_in_a_users_file(tmp_path):
    """A CSV time to first token in ms is stored in seconds; ms/s units and the TTFT metric go together only."""
    ok = _csv(tmp_path, "llama-2-7b,a100-80gb,1,tp,fp16,1,2048,1,time_to_first_token_s,133,ms,TensorRT-LLM 0.5,x")
    (row,) = read_measurements(ok)
    assert (row.metric, row.value, row.per_gpu) == ("time_to_first_token_s", pytest.approx(0.133), False)
    for line in ("llama-2-7b,a100-80gb,1,tp,fp16,1,2048,1,time_to_first_token_s,133,tokens/s,,x",
                 "llama-2-7b,a100-80gb,1,tp,fp16,1,2048,1,output_tokens_per_s,133,ms,,x"):
        with pytest.raises(KokubanError, match="row 2: unit: a time to first token is in s or ms"):
            read_measurements(_csv(tmp_path, line))
    for metric in ("tokens_per_s_per_user", "time_to_first_token_s"):  # only a whole-deployment rate is split per GPU
        with pytest.raises(KokubanError, match="row 2: unit: tokens/s/gpu is for metric output_tokens_per_s only"):
            read_measurements(_csv(tmp_path, f"llama-2-7b,a100-80gb,2,tp,fp16,1,128,128,{metric},50,tokens/s/gpu,,x"))
    toml_path = tmp_path / "per_gpu.toml"
    toml_path.write_text('[[result]]\nid = "t"\nmodel = "llama-2-7b"\naccelerator = "a100-80gb"\nnum_gpus = 1\n'
                         'weights_dtype = "fp16"\nmetric = "time_to_first_token_s"\nvalue = 0.1\nper_gpu = true\n'
                         'source = "x"\n')
    with pytest.raises(KokubanError, match="result 1: per_gpu: only an output_tokens_per_s row is quoted per GPU"):
        read_measurements(str(toml_path))


# ---- --file ----------------------------------------------------------------------------------------------
def _csv(tmp_path, *lines: str, header: str = HEADER):
    path = tmp_path / "my.csv"
    path.write_text("\n".join([header, *lines]) + "\n")
    return str(path)


def test_file_json_is_the_use_case(capsys, tmp_path):
    path = _csv(tmp_path, "llama-3.1-8b,h100-sxm,1,tp,bf16,1,512,256,tokens_per_s_per_user,7.5,ms/token,vLLM 0.11,lab",
                "llama-3.1-70b,h100-sxm,4,tp,fp8,64,1000,500,output_tokens_per_s,2500,tokens/s,,my run")
    assert main(["accuracy", "--file", path, "--json"]) == 0
    data = result_of(capsys.readouterr().out)
    assert data == json.loads(to_json(run_accuracy(AccuracyRequest(file=path)).as_dict()))
    assert data["source"] == path and len(data["rows"]) == 2 and len(data["worst"]) == 2
    assert data["rows"][0]["measured"] == pytest.approx(1 / 7.5e-3)  # 7.5 ms/token = 133.3 tokens/s
    assert data["rows"][0]["id"] == f"{path}:2"  # no id column: FILE:line
    assert set(data["summary"]["by_engine"]) == {"vLLM"}  # the row without an engine is in no engine group
    assert main(["accuracy", "--file", path]) == 0  # the tables print
    assert "worst rows" in capsys.readouterr().out


def test_a_csv_row_predicts_as_the_published_row_it_copies(tmp_path):
    """The bundled llama.cpp row (llama-2-7b f16, RTX 4090, batch 1, 1-token prompt, 128 output, 61.0 tok/s)
    written as a CSV row, and as a TOML row in the published schema, predicts the same."""
    bundled = next(r for r in load_published() if r.id == "llamacpp-llama2-7b-f16-rtx4090-tg128")
    csv_path = _csv(tmp_path, "llama-2-7b,rtx-4090,1,tp,fp16,1,1,128,tokens_per_s_per_user,61.0,tokens/s,llama.cpp,x")
    toml_path = tmp_path / "my.toml"
    toml_path.write_text('[[result]]\nid = "mine"\nmodel = "llama-2-7b"\naccelerator = "rtx-4090"\nnum_gpus = 1\n'
                         'weights_dtype = "fp16"\nkv_dtype = "fp16"\nmetric = "tokens_per_s_per_user"\nvalue = 61.0\n'
                         'batch = 1\ninput_tokens = 1\noutput_tokens = 128\nsource = "x"\n')
    want = predict_row(bundled).predicted
    (from_csv,) = read_measurements(csv_path)
    (from_toml,) = read_measurements(str(toml_path))
    assert predict_row(from_csv).predicted == pytest.approx(want, rel=1e-12)
    assert predict_row(from_toml).predicted == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize(("line", "header", "says"), [
    ("llama-3.1-8b,h100-sxm,1,tp,bf16,-1,0,0,output_tokens_per_s,100,tokens/s,,x", HEADER, "row 2: batch:"),
    ("llama-3.1-8b,h100-sxm,1,tp,bf16,1,0,0,output_tokens_per_s,100,tok/s,,x", HEADER, "row 2: unit:"),
    ("llama-3.1-8b,h100-sxm,1,tp,bf16,1,0,0,output_tokens_per_s,7,ms/token,,x", HEADER, "row 2: unit:"),
    ("llama-3.1-8b,h100-sxm,1,tp,bf16,1,0,0,output_tokens_per_s,nan,tokens/s,,x", HEADER, "row 2: value:"),
    ("llama-3.1-8b,h100-sxm,1,tp,bf16,1,0,0,output_per_s,100,tokens/s,,x", HEADER, "row 2: metric:"),
    ("llama-3.1-8b,h100-sxm,1,pp,bf16,1,0,0,output_tokens_per_s,100,tokens/s,,x", HEADER, "row 2: layout:"),
    ("llama-3.1-8b,h100-sxm,1,tp,fp3,1,0,0,output_tokens_per_s,100,tokens/s,,x", HEADER, "row 2: weights:"),
    ("llama-9,h100-sxm,1,tp,bf16,1,0,0,output_tokens_per_s,100,tokens/s,,x", HEADER, "row 2: model:"),
    ("llama-3.1-8b,h900,1,tp,bf16,1,0,0,output_tokens_per_s,100,tokens/s,,x", HEADER, "row 2: gpu:"),
    ("llama-3.1-8b,h100-sxm,1,tp,bf16,1,0,0,output_tokens_per_s,100,tokens/s,", HEADER.replace(",source", ""),
     "row 2: source:"),
    ("llama-3.1-8b,h100-sxm,1,tp,bf16,1,0,0,output_tokens_per_s,100,tokens/s,,x,red", HEADER + ",colour",
     "row 2: colour:"),
])
def test_a_bad_row_is_one_line_naming_file_row_and_field(capsys, tmp_path, line, header, says):
    path = _csv(tmp_path, line, header=header)
    assert main(["accuracy", "--file", path]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "Traceback" not in err
    assert err.startswith(f"error: --measurements-file: {path} {says}"), err


def test_bad_files(capsys, tmp_path):
    toml_path = tmp_path / "bad.toml"
    toml_path.write_text('[[result]]\nid = "a"\nmodel = "llama-3.1-8b"\n')
    empty = _csv(tmp_path)
    too_big = tmp_path / "big.csv"
    too_big.write_text(HEADER + "\nllama-3.1-405b,rtx-4090,1,tp,bf16,1,0,0,output_tokens_per_s,5,tokens/s,,x\n")
    for path, says in ((str(toml_path), "result 1: accelerator:"), (empty, "has no rows"),
                       (str(tmp_path / "nope.csv"), "cannot read"), (str(too_big), "does not fit")):
        assert main(["accuracy", "--file", path]) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("error: --measurements-file: ") and says in err and "\n" not in err, err


# ---- the numbers docs/validation.md quotes ---------------------------------------------------------------
def _docs() -> str:
    from pathlib import Path

    return (Path(__file__).resolve().parents[1] / "docs" / "validation.md").read_text()


def test_docs_quote_the_report():
    """Every line of the workload/dtype/engine table, the overall interval, the held-out intervals and the worst
    row in docs/validation.md, rebuilt here from the report."""
    acc = accuracy()
    s, docs = acc.summary, _docs()

    def pct(x):
        return f"{100 * x:.1f}"

    def line(name, g):
        lo, hi = g["median_abs_error_ci"]
        return f"| {name} | {g['count']} | {pct(g['median_abs_error'])} % | {pct(lo)}–{pct(hi)} % |"

    names = {"decode_batch_1": "decode batch 1", "throughput": "throughput (output tok/s)",
             "prefill": "prefill-dominated", "moe": "MoE", "multi_gpu": "multi-GPU group"}
    lines = [line(names[k], g) for k, g in s["by_workload"].items()]
    lines += [line(f"weights {k}", s["by_weights"][k]) for k in ("fp8", "fp4", "fp16", "int4", "int8", "q4_0", "bf16")]
    lines += [line(f"engine {k}", s["by_engine"][k])
              for k in ("TensorRT-LLM", "gpt-fast", "vLLM", "llama.cpp", "MLC LLM", "ExLlamaV2")]
    lines += [line("metric time to first token", s["by_metric"]["time_to_first_token_s"])]
    for text in lines:
        assert text in docs, text
    lo, hi = s["median_abs_error_ci"]
    assert f"all {s['count']} rows {pct(s['median_abs_error'])} % median (95 % interval {pct(lo)}–{pct(hi)} %)" in docs
    held = "held-out median |error| 27.4 % (95 % interval 13.7–42.3 %) before → 28.0 % (13.1–38.1 %) with the shipped"
    assert held + " fit" in docs
    w = accuracy(STEP_V3_LOOP).worst[0]  # the worst row as "The worst rows" describes it (session 30's step model)
    t = {k: f"{1e3 * w.terms[k]:.1f} ms" for k in ("step_time_s", "compute_s", "weights_s", "kv_s", "comm_s")}
    t["overhead_s"] = f"{1e3 * w.terms['overhead_s']:.1f} ms"
    quoted = (f"predicted +{100 * w.signed_error:.1f} % too fast: a compute-bound decode step of {t['step_time_s']} "
              f"(compute {t['compute_s']}, weights {t['weights_s']}, KV {t['kv_s']}, all-reduce {t['comm_s']}, "
              f"overhead {t['overhead_s']}")
    assert w.terms["bound"] == "compute" and w.terms["phase"] == "decode"
    assert quoted in " ".join(docs.split()), quoted


def test_docs_show_the_bad_row_message(capsys, tmp_path):
    good = "llama-3.1-8b,h100-sxm,1,tp,bf16,1,0,0,output_tokens_per_s,100,tokens/s,,x"
    path = tmp_path / "my.csv"
    path.write_text(f"{HEADER}\n{good}\n{good.replace('tokens/s', 'tok/s')}\n")
    assert main(["accuracy", "--file", str(path)]) == 2
    err = capsys.readouterr().err.strip().replace(str(path), "my.csv")
    assert f"`{err}`" in _docs()


def test_readme_quotes_the_report():
    """The README's "How sure" lines are the report's numbers (95 % bootstrap of the median |error|)."""
    from pathlib import Path

    from kokuban.specs.hardware import Efficiency
    from kokuban.validation.accuracy import accuracy

    readme = " ".join((Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8").split())
    report = accuracy(Efficiency.shipped()).as_dict()
    s = report["summary"]

    def pct(x: float) -> str:
        return f"{100 * x:.1f}"

    lo, hi = s["median_abs_error_ci"]
    assert f"all {s['count']} rows {pct(s['median_abs_error'])} % ({pct(lo)}–{pct(hi)} %)" in readme
    from kokuban.validation.calibrate import holdout_mask

    ids = [r["id"] for r in report["rows"]]
    held = np.array([r["error"] for r in report["rows"]])[holdout_mask(ids)]  # session 31's fit: seed 0's two thirds
    h_lo, h_hi = bootstrap_median_ci(held)
    assert (f"held out of session 31's refit), {pct(np.median(held))} % ({pct(h_lo)}–{pct(h_hi)} %) on "
            f"{len(held)} rows, p90 {pct(np.percentile(held, 90))}") in readme
    # the rows the shipped fit never saw, as the README quotes them: test_gqa_kv_reads
    w = s["by_workload"]
    assert f"decode batch 1 {pct(w['decode_batch_1']['median_abs_error'])} %" in readme
    assert f"throughput {pct(w['throughput']['median_abs_error'])} %" in readme
    assert f"multi-GPU {pct(w['multi_gpu']['median_abs_error'])} %" in readme
    assert f"prefill-dominated {pct(w['prefill']['median_abs_error'])} %" in readme
    ttft = s["by_metric"]["time_to_first_token_s"]
    assert f"time to first token {pct(ttft['median_abs_error'])} % ({ttft['count']} rows)" in readme
    moe_lo, moe_hi = w["moe"]["median_abs_error_ci"]
    moe = f"MoE {pct(w['moe']['median_abs_error'])} % ({w['moe']['count']} rows: {pct(moe_lo)}–{pct(moe_hi)} %)"
    assert moe in readme
    e = {k: pct(s["by_engine"][k]["median_abs_error"]) for k in ("llama.cpp", "ExLlamaV2", "vLLM")}
    assert (f"ExLlamaV2 is the weakest at {e['ExLlamaV2']} % (4 rows), then llama.cpp at {e['llama.cpp']} % (6 rows); "
            f"vLLM (5 rows, MI300X) reads {e['vLLM']} %") in readme
    big = {k: g for k, g in s["by_engine"].items() if g["count"] > 1}
    assert sorted(big, key=lambda k: -big[k]["median_abs_error"])[:2] == ["ExLlamaV2", "llama.cpp"]
    worst, second = report["worst"][:2]
    assert worst["id"] == "trtllm-noxqa-h200-llama2-70b-fp8-tp1-b192-128-2048" and worst["regime"] == "compute"
    assert f"predicted {pct(worst['error'])} % too fast, compute-bound" in readme and worst["signed_error"] > 0
    assert second["id"] == "trtllm09-mixtral-8x7b-fp8-tp2-h200-b1024-128-128" and second["withdrawn"]
    assert f"at batch 1,024, +{pct(second['signed_error'])} %" in readme


def test_docs_the_set_grows():
    """docs/validation.md, "The set grows": the rule's row counts, the table of the three profiles on the 29 new rows,
    and the A100 static batch's bandwidth by hand."""
    from kokuban.specs.catalog import load_accelerator

    text = " ".join(_docs().split())
    rows = _new_rows()
    metrics = [r.metric for r in rows]
    assert (len(rows), metrics.count("output_tokens_per_s"), metrics.count("time_to_first_token_s")) == (29, 19, 10)
    assert sum(r.weights_dtype == "fp16" for r in rows) == 11
    assert {r.model for r in rows} == {"llama-2-7b", "llama-2-70b"}
    # left out, counted by hand in the document's tables: GPT-J 6B 12 throughput + 6 first-token rows, Falcon 180B 6 + 4
    assert "so their 28 rows are left out" in text

    def pct(x):
        return f"{100 * x:.1f} %"

    for eff, label in ((STEP_V3_FIRST, "that day's default (kernel)"), (Efficiency.scalar(), "scalar set"),
                       (Efficiency.textbook(), "textbook fractions")):
        preds = accuracy(eff, rows=rows).predictions
        err, signed = np.array([p.error for p in preds]), np.array([p.signed_error for p in preds])
        lo, hi = bootstrap_median_ci(err)
        groups = [np.array([p.metric == m for p in preds]) for m in ("output_tokens_per_s", "time_to_first_token_s")]
        groups += [np.array([r.model == m for r in rows]) for m in ("llama-2-7b", "llama-2-70b")]
        cells = [f"{pct(np.median(err))} ({100 * lo:.1f}–{pct(hi)})", pct(np.percentile(err, 90)),
                 f"{100 * np.median(signed):+.1f} %".replace("-", "−").replace("+0.0", "−0.0")]
        cells += [pct(np.median(err[g])) for g in groups]
        assert f"| {label} | " + " | ".join(cells) + " |" in text, cells
    # the A100 batch of 60 at 128/2048 (1,928 tok/s): weights + KV at the mean decode context 128 + 2048/2 = 1,152
    row = next(r for r in rows if r.id == "trtllm061-llama2-7b-fp16-tp1-a100-80gb-b60-128-2048")
    weights, kv = 6_607_343_616 * 2, 60 * 1152 * 524_288  # bytes (test_terms_of_a_row_by_hand's counts)
    per_token_s = 60 / row.value  # one output token of each of the 60 requests
    share = (weights + kv) / per_token_s / load_accelerator("a100-80gb").memory_bandwidth_bytes_per_s
    assert (round(weights / 1e9, 1), round(kv / 1e9, 1), round(1e3 * per_token_s, 1), round(share, 2)) == (
        13.2, 36.2, 31.1, 0.78)
    assert "13.2 GB of weights and 36.2 GB of KV" in text and "every 31.1 ms, 0.78 of the A100's 2.04 TB/s" in text


def test_docs_gqa_kv_diagnosis():
    """docs/validation.md, "The set grows": the seven Llama-2-70B throughput rows of TensorRT-LLM 0.5/0.6.1 with the
    KV read k times slower (kv_memory = memory ÷ k, that day's kernel profile otherwise): the range of signed errors."""
    rows = [r for r in _new_rows() if r.model == "llama-2-70b" and r.metric == "output_tokens_per_s"]
    base = STEP_V3_FIRST

    def signed(x):
        return f"{100 * x:+.0f}".replace("-", "−")

    spans = {}
    for k in (8, 4, 2):
        errors = [predict_row(r, base.updated(kv_memory=base.memory / k)).signed_error for r in rows]
        spans[k] = f"{signed(min(errors))} … {signed(max(errors))} %"
    assert len(rows) == 7
    quoted = f"k = 8 (every load from HBM) turns the errors to {spans[8]}, k = 4 to {spans[4]}, k = 2 to {spans[2]}"
    assert quoted in " ".join(_docs().split()), quoted


def test_docs_signed_errors_of_the_new_rows():
    """docs/validation.md: a signed error > 0 is a faster prediction (a higher rate, a shorter time). On the 29 new
    rows that day's default is too slow on throughput and too fast on first tokens; the scalar set's first tokens are
    too fast in 8 of 10; with the scalar set 21 of the 25 compute-bound rows of the whole set are too fast."""
    text = " ".join(_docs().split())
    rows = _new_rows()
    by_metric = accuracy(STEP_V3_FIRST, rows=rows).summary["by_metric"]
    thr, ttft = (by_metric[m]["median_signed_error"] for m in ("output_tokens_per_s", "time_to_first_token_s"))
    assert thr < 0 < ttft
    assert f"(median signed {100 * thr:.1f} % and {100 * ttft:+.1f} %, which cancel".replace("-", "−") in text
    scalar = [p for p in accuracy(Efficiency.scalar(), rows=rows).predictions if p.metric == "time_to_first_token_s"]
    faster = [p for p in scalar if p.predicted < p.measured]  # a shorter predicted time, by definition too fast
    assert all(p.signed_error > 0 for p in faster) and len(scalar) == 10
    median = 100 * float(np.median([p.signed_error for p in scalar]))
    assert f"({len(faster)} of 10 predicted shorter than measured; median signed {median:+.1f} %)" in text
    compute = [p for p in accuracy(Efficiency.scalar()).predictions if p.regime == "compute"]
    assert f"{sum(p.signed_error > 0 for p in compute)} of the {len(compute)} compute-bound rows are too fast" in text
