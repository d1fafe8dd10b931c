"""The floor check (docs/calibration.md, "The floor check"): the fastest a row's metric could be for the work kokuban
counts, a step's floor never above its predicted time, and the one published row beyond its floor. Expected values
derived by hand from the configs and catalog figures."""

from __future__ import annotations

import tomllib
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kokuban.cli import main
from kokuban.core import roofline
from kokuban.present.jsonout import read_result
from kokuban.specs.catalog import load_accelerator, load_model
from kokuban.specs.deployment import Deployment
from kokuban.specs.hardware import Efficiency
from kokuban.validation.accuracy import PublishedResult, floor_row, load_published, predict_row

ROOT = Path(__file__).resolve().parents[1]
A100_BW = 2.039e12  # catalog: A100 80GB SXM, 2,039 GB/s

# Llama-2-7B (config.json): 32 layers, hidden 4,096, MHA (32 KV heads of 128), vocabulary 32,000, untied embeddings.
LLAMA2_7B_PARAMS = 6_738_415_616
EMBEDDING = 32_000 * 4_096
KV_PER_TOKEN = 32 * 2 * 4_096 * 2  # layers · (K, V) · KV width · fp16 bytes


def row(**kw) -> PublishedResult:
    base = dict(id="t", model="llama-2-7b", accelerator="a100-80gb", num_gpus=1, tensor_parallel=1,
                expert_parallel=False, weights_dtype="fp16", kv_dtype="fp16", engine="", metric="tokens_per_s_per_user",
                value=50.0, per_gpu=False, batch=1, input_tokens=128, output_tokens=128, scenario="", source="x")
    return PublishedResult(**(base | kw))


def test_a_batch_one_decode_floor_by_hand():
    """Each step reads every weight but the input embedding (fp16) and the KV of its context (128 … 255 tokens);
    at batch 1 the bytes outlast the FLOPs by far, so the floor is bytes ÷ bandwidth, summed over the 128 steps."""
    weights = (LLAMA2_7B_PARAMS - EMBEDDING) * 2
    contexts = sum(range(128, 256))  # 24,512
    assert contexts == 128 * 128 + 127 * 128 // 2
    seconds = (128 * weights + KV_PER_TOKEN * contexts) / A100_BW
    assert floor_row(row()) == pytest.approx(128 / seconds, rel=1e-9)
    # A static batch of 4 adds its prefill's floor (the core's prefill step at the ideal efficiency) to 128 decode
    # steps that read the weights once and 4 requests' KV.
    ideal = Deployment.make(load_model("llama-2-7b"), load_accelerator("a100-80gb"), weights_dtype="fp16",
                            kv_dtype="fp16", efficiency=Efficiency.ideal())
    prefill = float(roofline.floor_time_s(roofline.prefill(ideal, 4, 128)))
    decode = sum((weights + 4 * KV_PER_TOKEN * c) / A100_BW for c in range(128, 256))
    assert floor_row(row(metric="output_tokens_per_s", batch=4, value=100.0)) == pytest.approx(
        4 * 128 / (prefill + decode), rel=1e-9)
    first = floor_row(row(metric="time_to_first_token_s", value=0.01))
    assert first == float(roofline.floor_time_s(roofline.prefill(ideal, 1, 128)))
    # 128 prompt tokens: 2 · 6.61 G FLOPs each at 312 TFLOP/s is 5.4 ms, the weights' 13.2 GB at 2.039 TB/s 6.5 ms
    assert first == pytest.approx(max(128 * 2 * (LLAMA2_7B_PARAMS - EMBEDDING) / 312e12, weights / A100_BW), rel=0.02)
    assert floor_row(row(metric="output_tokens_per_s", batch=0)) is None  # the engine's batch: no fixed work


def test_beyond_floor_reads_the_metric_direction():
    fast = replace(predict_row(row(value=200.0)), floor=150.0)
    slow = replace(predict_row(row(value=100.0)), floor=150.0)
    assert fast.beyond_floor and not slow.beyond_floor
    ttft = predict_row(row(metric="time_to_first_token_s", value=0.01))
    assert replace(ttft, floor=0.02).beyond_floor and not replace(ttft, floor=0.005).beyond_floor
    assert replace(ttft, floor=0.02).floor_ratio == pytest.approx(2.0)  # a time: floor ÷ measured, 0.02 ÷ 0.01
    assert not replace(ttft, floor=None).beyond_floor


MODELS = ("llama-3.1-8b", "mixtral-8x7b", "qwen3-30b-a3b", "gemma-3-12b", "deepseek-v2-lite", "gpt-oss-20b")


@settings(max_examples=60, deadline=None)
@given(model=st.sampled_from(MODELS), gpu=st.sampled_from(("h100-sxm", "a100-80gb", "b200", "l40s")),
       gpus=st.sampled_from((1, 2, 4)), weights=st.sampled_from((None, "fp8", "int4-g128-zp")),
       batch=st.integers(1, 512), context=st.integers(1, 32_768), profile=st.sampled_from(("default", "scalar")))
def test_no_step_is_faster_than_its_floor(model, gpu, gpus, weights, batch, context, profile):
    """Whatever the efficiencies (each ≤ 1, every fixed time ≥ 0), a predicted step is at least its floor:
    max(a, b) + max(c, d) ≥ max(a + c, b + d), and every term at an efficiency ≤ 1 is at least its ideal."""
    m, acc = load_model(model), load_accelerator(gpu)
    make = lambda eff: Deployment.make(m, acc, gpus, weights_dtype=weights, efficiency=eff)  # noqa: E731
    real, ideal = make(Efficiency.from_file(profile)), make(Efficiency.ideal())
    for step, floor in ((roofline.decode_step(real, batch, context), roofline.decode_step(ideal, batch, context)),
                        (roofline.prefill(real, 1, context), roofline.prefill(ideal, 1, context))):
        assert float(step.step_time_s) >= float(roofline.floor_time_s(floor)) * (1 - 1e-12)


def test_the_one_row_beyond_its_floor_and_what_it_bounds():
    rows = load_published()
    with_floor = [(r, floor_row(r)) for r in rows]
    beyond = [r.id for r, f in with_floor if f is not None and replace(predict_row(r), floor=f).beyond_floor]
    assert beyond == ["trtllm09-mixtral-8x7b-fp16-tp2-a100-b32-2048-2048"]
    r, f = next((r, f) for r, f in with_floor if r.id == beyond[0])
    assert replace(predict_row(r), floor=f).floor_ratio == pytest.approx(r.value / f)  # a rate: measured ÷ floor
    # Per GPU at TP 2, one expert of all 32 layers: 32 · 3 · 4,096 · 14,336 weights · 2 B ÷ 2 GPUs.
    expert_bytes = 32 * 3 * 4_096 * 14_336 * 2 / 2
    expert_s = expert_bytes / A100_BW
    assert (round(expert_bytes / 1e9, 2), round(expert_s * 1e3, 2)) == (5.64, 2.76)
    floor_total, measured_total = 32 * 2_048 / (2 * f), 32 * 2_048 / (2 * r.value)  # seconds for the whole batch
    most = 8 - (floor_total - measured_total) / (2_048 * expert_s)  # each step bandwidth-bound in the floor
    assert (round(measured_total, 1), round(floor_total, 1), round(most, 1)) == (40.9, 55.9, 5.3)
    assert round(0.75**32, 4) == 0.0001  # an expert missed by all 32 tokens under uniform top-2 of 8 routing


def test_accuracy_prints_and_returns_the_floor_check(capsys):
    assert main(["accuracy", "--json"]) == 0
    data = read_result(capsys.readouterr().out)
    assert data["beyond_floor"] == ["trtllm09-mixtral-8x7b-fp16-tp2-a100-b32-2048-2048"]
    by_id = {r["id"]: r for r in data["rows"]}
    assert by_id[data["beyond_floor"][0]]["beyond_floor"] and by_id[data["beyond_floor"][0]]["floor"] > 0
    # which rows have a floor, counted from the data file by the rule: every per-user speed and first token, and the
    # throughputs of a stated batch that a static-batch tool or a disaggregated decode node ran (not in-flight runs)
    rows = tomllib.loads((ROOT / "src/kokuban/data/published_results.toml").read_text())["result"]
    fixed = [r for r in rows if r["metric"] != "output_tokens_per_s" or (r["batch"] and (
        any(t in r["engine"] for t in ("gptSessionBenchmark", "static batch", "benchmark_latency"))
        or "PD disaggregation" in r["engine"]))]
    assert sum(r["floor"] is not None for r in data["rows"]) == len(fixed) == 161
    assert all(np.isfinite(r["floor"]) and r["floor"] > 0 for r in data["rows"] if r["floor"] is not None)
    assert main(["accuracy"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "floor check: 1 of 161 rows with a stated batch were measured faster than the hardware allows" in out
