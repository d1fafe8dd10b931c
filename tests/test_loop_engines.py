"""Single-request decode loops (gpt-fast, MLC LLM, ExLlamaV2, llama.cpp) and dequantising kernels: the rules of
session 29 (2026-12-04) and their arithmetic, expected values by hand."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from step_versions import V3_KV_REREAD_FRACTIONS, step_v3

from kokuban.core import roofline
from kokuban.errors import KokubanError
from kokuban.specs.catalog import load_accelerator
from kokuban.specs.hardware import Efficiency
from kokuban.validation import accuracy
from kokuban.validation.accuracy import (
    GENERIC_DEQUANT_MEMORY,
    load_published,
    predict_row,
    replica_layout,
    row_efficiency,
)
from kokuban.validation.calibrate import holdout_mask

ROWS = {r.id: r for r in load_published()}
EFF = Efficiency.kernel_calibrated().updated(step_overhead_s=2.5e-3, loop_overhead_s=1e-3, dequant_memory=0.9)


def test_loop_overhead_defaults_to_the_step_overhead():
    assert Efficiency().loop_overhead == Efficiency().step_overhead_s == 2.7e-3
    assert Efficiency().updated(loop_overhead_s=0.0).loop_overhead == 0.0
    assert Efficiency().as_dict()["loop_overhead_s"] == 2.7e-3


@pytest.mark.parametrize("bad", [-1e-3, float("nan"), float("inf"), 1e6])
def test_loop_overhead_is_checked(bad):
    with pytest.raises(KokubanError, match="loop_overhead_s"):
        Efficiency().updated(loop_overhead_s=bad)


def test_engines_get_their_overhead():
    """MLC LLM, ExLlamaV2 and gpt-fast rows pay 1 ms per step; a TensorRT-LLM row, and llama.cpp's (its CUDA backend
    of 2023-24 launches every op from the host), the serving 2.5 ms; the scalar set (no kernel curves) has no engine
    rules."""
    for rid in ("perfbench-mlc-llama2-7b-rtx-4090", "perfbench-exllamav2-llama2-13b-rtx-3090-ti",
                "gptfast-llama2-7b-bf16-tp1-a100"):
        assert row_efficiency(ROWS[rid], EFF).step_overhead_s == 1e-3
    for rid in ("trtllm05-ttft-llama2-7b-fp8-tp1-h100-sxm-128", "perfbench-llamacpp-llama2-7b-rtx-4090"):
        assert row_efficiency(ROWS[rid], EFF).step_overhead_s == 2.5e-3
    scalar = Efficiency.scalar().updated(loop_overhead_s=1e-3)
    assert row_efficiency(ROWS["perfbench-mlc-llama2-7b-rtx-4090"], scalar) is scalar


def test_engine_string_marks():
    """Session 33's two marks, read from engine strings (no published row names either): a llama.cpp decode loop
    replayed as a CUDA graph pays the 1 ms loop step, its prompt processing and the 2023-24 rows the serving 2.5 ms;
    an engine that says its layers call NCCL all-reduces as gpt-fast does, and only it."""
    old = ROWS["perfbench-llamacpp-llama2-7b-rtx-4090"]
    tg = replace(old, engine="llama.cpp (CUDA build x, CUDA-graph decode loop)")
    pp = replace(tg, engine="llama.cpp (CUDA build x, prompt processing)")
    assert row_efficiency(tg, EFF).step_overhead_s == 1e-3
    assert row_efficiency(pp, EFF).step_overhead_s == 2.5e-3
    assert not any(accuracy.LOOP_MARK in r.engine or accuracy.PLAIN_NCCL_MARK in r.engine for r in ROWS.values())
    tp4 = ROWS["trtllm05-ttft-llama2-7b-fp8-tp1-h100-sxm-128"]
    lmdeploy = replace(tp4, engine="LMDeploy 0.1.0 (TurboMind, NCCL all-reduce)")
    assert row_efficiency(lmdeploy, EFF).kernels.plain_nccl
    assert not row_efficiency(replace(tp4, engine="LMDeploy 0.1.0 (TurboMind)"), EFF).kernels.plain_nccl
    assert row_efficiency(lmdeploy, EFF).step_overhead_s == 2.5e-3  # a serving engine's step


def test_generic_kernels_keep_the_assumed_rate():
    """gpt-fast's weight-only matmuls stream at 0.6 of the plain rate whatever the fit says; MLC's at the fit's."""
    assert GENERIC_DEQUANT_MEMORY == 0.6
    assert row_efficiency(ROWS["gptfast-llama2-7b-int4-tp1-a100"], EFF).dequant_memory == 0.6
    assert row_efficiency(ROWS["perfbench-mlc-llama2-7b-rtx-4090"], EFF).dequant_memory == 0.9


def test_mlc_step_by_hand():
    """Llama-2-7B in int4-g32 on an RTX 4090, one request at 8 + 128 tokens of context, under EFF: the 32 layers
    hold 32 × (4 × 4096² + 3 × 4096 × 11008) = 6,476,005,376 weights at 4.5 bits = 3,642,753,024 B, read at
    0.9 of the memory rate; the fp16 LM head 32,000 × 4096 × 2 = 262,144,000 B at the full rate. The KV cache
    (32 layers × 2 × 4096 × 2 B × 136 tokens = 71,303,168 B) at the memory rate; then the 1 ms loop overhead."""
    row = ROWS["perfbench-mlc-llama2-7b-rtx-4090"]
    dep, _ = replica_layout(row, row_efficiency(row, EFF))
    rate = 1.008e12 * EFF.memory
    step = roofline.decode_step(dep, 1, 136)
    assert float(step.weights_s) == pytest.approx((3_642_753_024 / 0.9 + 262_144_000) / rate, rel=2e-3)
    assert float(step.kv_s) == pytest.approx(71_303_168 / (1.008e12 * EFF.kv_memory_fraction), rel=1e-6)
    assert float(step.overhead_s) == 1e-3
    pred = predict_row(row, EFF)
    assert pred.predicted == pytest.approx(1 / float(step.step_time_s))


@given(st.floats(0.3, 1.0), st.floats(0.0, 5e-3))
def test_faster_kernels_and_smaller_loops_never_slow_a_row(dequant, loop_s):
    """Property: a higher dequantising rate or a smaller loop overhead never lowers a loop engine's predicted
    speed, and never touches a serving engine's row."""
    row, trt = ROWS["perfbench-exllamav2-llama2-7b-rtx-4090"], ROWS["trtllm05-h200-llama2-13b-fp8-tp1-b64-2048-128"]
    base = Efficiency.kernel_calibrated().updated(dequant_memory=dequant, loop_overhead_s=loop_s)
    better = base.updated(dequant_memory=min(1.0, dequant + 0.1), loop_overhead_s=loop_s / 2)
    assert predict_row(row, better).predicted >= predict_row(row, base).predicted
    assert predict_row(trt, better).predicted == predict_row(trt, replace(base, loop_overhead_s=None)).predicted


def test_gpt_fast_int8_is_weight_only():
    """gpt-fast quantizes int8 weight-only (one scale per output channel): int8-ch, which dequantises on an A100."""
    for rid in ("gptfast-llama2-7b-int8-tp1-a100", "gptfast-llama2-70b-int8-tp1-a100"):
        assert ROWS[rid].weights_dtype == "int8-ch"
        dep, _ = replica_layout(ROWS[rid], row_efficiency(ROWS[rid], EFF))
        assert dep.dequantises_weights


def test_rtx_3090_ti_by_hand():
    """84 SMs × 128 = 10,752 CUDA cores × 2 FLOP × 1.86 GHz = 40.0 TF FP32; tensor fp16 with FP32 accumulate at
    2× that (80 TF), int8 at 8× (320 TOPS); 21 Gb/s × 384 bits ÷ 8 = 1,008 GB/s."""
    acc = load_accelerator("3090 ti")
    assert acc.id == "rtx-3090-ti"
    assert acc.peak_flops["fp32"] == pytest.approx(10_752 * 2 * 1.86e9, rel=1e-3)
    assert acc.peak_flops["bf16"] == pytest.approx(2 * 40.0e12) and acc.peak_flops["int8"] == pytest.approx(8 * 40e12)
    assert acc.memory_bandwidth_bytes_per_s == 21e9 * 384 / 8


def test_perfbench_rows_quote_their_table():
    """The 12 cells of llm-perf-bench's 'Single GPU, 4-bit' table, each value in its quoted line."""
    import tomllib
    from importlib.resources import files

    raw = tomllib.loads(files("kokuban.data").joinpath("published_results.toml").read_text())["result"]
    rows = [r for r in raw if r["id"].startswith("perfbench-")]
    assert len(rows) == 12
    for r in rows:
        assert f"{r['value']:g}" in r["quote"].replace("**", "") and r["batch"] == 1 and r["output_tokens"] == 256
        assert "d401356f84fa9cfb564b353ca39fb31cc47d61ea" in r["source"]
    assert {r["weights_dtype"] for r in rows} == {"int4-g32", "int4-g128-zp", "q4_0"}
    assert {r["accelerator"] for r in rows} == {"rtx-4090", "rtx-3090-ti"}


ROOT = Path(__file__).resolve().parents[1]
CHOICE = {"as shipped before (compute, memory, step overhead, r)": ROOT / "evidence/fractions/choice-100/before",
          "A: + `dequant_memory`, `loop_overhead_s` for gpt-fast, MLC, ExLlamaV2, llama.cpp":
              ROOT / "evidence/fractions/choice-100/A-llamacpp-in-loop",
          "B: as A, llama.cpp keeps the serving step (**chosen**)": ROOT / "evidence/fractions/choice-100/B-chosen"}


def _regime_medians(rows_err: dict[str, list[float]]) -> tuple[str, float]:
    worst = max(rows_err, key=lambda k: float(np.median(rows_err[k])))
    return worst, float(np.median(rows_err[worst]))


def _training_regimes(seeds: list[dict], loop_engines: tuple[str, ...], monkeypatch) -> tuple[str, float]:
    """The pooled training rows of the five splits, each predicted by its split's fit, grouped by workload and
    weights family: the group with the largest median |error|."""
    monkeypatch.setattr(accuracy, "LOOP_ENGINES", loop_engines)
    rows = [r for r in load_published() if not r.id.startswith("trtllm09-")]  # the 100 rows the reports were run on
    groups: dict[str, list[float]] = {}
    for s in seeds:
        eff = step_v3(s["fitted"])  # the curves and memory rule the reports ran at
        for row, held in zip(rows, holdout_mask([r.id for r in rows], 1 / 3, s["seed"]), strict=True):
            if held:
                continue
            p = predict_row(row, eff)
            for key in (p.weights_dtype.split("-")[0], *p.workloads):
                groups.setdefault(key, []).append(p.error)
    return _regime_medians(groups)


def test_docs_choice_of_the_decode_loop_rules_is_the_reports(monkeypatch):
    """docs/validation.md, "Quantized single-request engines": each procedure's mean training median / p90 over the
    five splits and pooled held-out median / p90 (the committed reports), its worst pooled held-out group of workload
    and dtype, and its worst pooled training group (recomputed from each split's fitted fields)."""
    text = " ".join((ROOT / "docs/validation.md").read_text().split())
    loops = {"as shipped": ("gpt-fast", "MLC LLM", "ExLlamaV2"),
             "A:": ("gpt-fast", "MLC LLM", "ExLlamaV2", "llama.cpp"), "B:": ("gpt-fast", "MLC LLM", "ExLlamaV2")}
    for label, folder in CHOICE.items():
        report = json.loads((folder / "report.json").read_text())
        assert report["rows"] == 100
        default = report["profiles"]["default"]
        seeds, pooled = default["per_seed"], default["pooled"]
        train = " / ".join(f"{100 * np.mean([s[k] for s in seeds]):.1f} %"
                           for k in ("train_median_abs_error", "train_p90_abs_error"))
        held = f"{100 * pooled['median_abs_error']:.1f} % / {100 * pooled['p90_abs_error']:.1f} %"
        groups = {k: g for part in ("by_workload", "by_weights") for k, g in pooled[part].items()}
        worst = max(groups, key=lambda k: groups[k]["median_abs_error"])
        after = text.split(f"| {label} |")[1][:200]
        assert f"| {label} | {train} |" in text, label
        assert f"| {held} | {worst} {100 * groups[worst]['median_abs_error']:.1f} %" in after, (label, held, worst)
        if "dequant_memory" in seeds[0]["fitted"]:
            key = next(k for k in loops if label.startswith(k))
            name, median = _training_regimes(seeds, loops[key], monkeypatch)
            assert f"| {name} {100 * median:.1f} % |" in text.split(f"| {label} |")[1][:120], (label, name, median)


def test_docs_clean_check_of_the_perfbench_rows():
    """The 12 llm-perf-bench rows against the step model shipped before them (step-v3 with the KV re-read rule,
    `step_versions`; docs/validation.md names it `kernel-2026-12-04b`) and the scalar set:
    median and p90 |error| as docs/validation.md and the README quote them, and each engine's signed range."""
    rows = [r for r in load_published() if r.id.startswith("perfbench-")]
    text = " ".join((ROOT / "docs/validation.md").read_text().split())

    def figures(eff):
        err = np.array([predict_row(r, eff).error for r in rows])
        return f"{100 * np.median(err):.1f} %", f"{100 * np.percentile(err, 90):.1f} %"

    shipped_before = step_v3(V3_KV_REREAD_FRACTIONS)
    before, scalar = figures(shipped_before), figures(Efficiency.scalar())
    assert (f"`kernel-2026-12-04b`): {before[0]} median, p90 {before[1]} (the scalar set {scalar[0]} / "
            f"{scalar[1]})") in text
    signed = {}
    for r in rows:
        signed.setdefault(r.id.split("-")[1], []).append(
            100 * predict_row(r, shipped_before).signed_error)
    r = {k: (f"{max(v):+.0f}", f"{min(v):+.0f}") for k, v in signed.items()}  # nearest to zero, then farthest

    def span(k, lo, hi):  # "−46 … −52 %" as the docs write a signed range
        return f"{lo} … {hi} %".replace("-", "−")

    assert (f"MLC {span('mlc', *r['mlc'])} and ExLlamaV2 {span('exllamav2', *r['exllamav2'])} too slow, llama.cpp "
            f"{span('llamacpp', r['llamacpp'][1], r['llamacpp'][0])}") in text
    readme = " ".join((ROOT / "README.md").read_text().split())
    assert f"the profile shipped until then read {before[0]} (p90 {before[1]})" in readme
