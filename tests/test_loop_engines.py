"""Single-request decode loops (gpt-fast, MLC LLM, ExLlamaV2, llama.cpp) and dequantising kernels: the rules and
their arithmetic, expected values by hand."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

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
    """The two marks of the LMDeploy and llama.cpp checks, read from engine strings (no published row names either):
    a llama.cpp decode loop replayed as a CUDA graph pays the 1 ms loop step, its prompt processing and the 2023-24
    rows the serving 2.5 ms; an engine that says its layers call NCCL all-reduces as gpt-fast does, and only it."""
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
#: the committed reports of the three procedures compared for the decode-loop rules, and whether each fits
#: `dequant_memory` and `loop_overhead_s`
CHOICE = {ROOT / "evidence/fractions/choice-100/before": False,
          ROOT / "evidence/fractions/choice-100/A-llamacpp-in-loop": True,
          ROOT / "evidence/fractions/choice-100/B-chosen": True}


def test_choice_of_the_decode_loop_rules_reports():
    """Each committed report ran on the 100 published rows before TensorRT-LLM 0.9's, and its splits fit the decode
    loop's terms exactly when its procedure adds them (A and B, not the one shipped before)."""
    for folder, loop_terms in CHOICE.items():
        report = json.loads((folder / "report.json").read_text())
        assert report["rows"] == 100
        for seed in report["profiles"]["default"]["per_seed"]:
            assert {"dequant_memory", "loop_overhead_s"} <= set(seed["fitted"]) if loop_terms else (
                not {"dequant_memory", "loop_overhead_s"} & set(seed["fitted"])), (folder, seed["fitted"])
