"""Memory fit, largest batch, smallest GPU count, money and whole generations, by hand."""

from __future__ import annotations

import numpy as np
import pytest

from kokuban.core import cost, memory, roofline
from kokuban.errors import KokubanError
from kokuban.specs.catalog import load_accelerator, load_model
from kokuban.specs.deployment import Deployment
from kokuban.specs.hardware import Efficiency
from kokuban.usecases.estimate import estimate, generation

EFF = Efficiency.textbook()  # compute 0.6, memory 0.8, interconnect 0.75, 8 µs per collective, no overhead


def test_max_batch_by_hand_llama8b_h100():
    dep = Deployment.make(load_model("llama-3.1-8b"), load_accelerator("h100-sxm"), efficiency=EFF)
    usable = dep.accelerator.memory_bytes * 0.9
    weights = 8_030_261_248 * 2  # bf16, embedding and LM head included
    # workspace: 8192-token chunk × 2 B × (4·4096 + 2·14336) + fp32 logits 128256 × 4 B per request
    chunk = 8192 * 2 * (4 * 4096 + 2 * 14336)
    per_request = 8192 * 32 * 2 * 8 * 128 * 2 + 128256 * 4  # KV at 8192 tokens + logits
    expected = int((usable - weights - chunk) // per_request)
    assert int(memory.max_batch(dep, 8192)) == expected
    p = memory.plan(dep, expected, 8192)
    assert p.fits and not memory.plan(dep, expected + 1, 8192).fits


def test_does_not_fit_says_what_would():
    with pytest.raises(KokubanError, match=r"does not fit.*8× h200 would fit batch 1"):
        estimate("llama-3.1-405b", "h200", weights="bf16")
    # 405.85e9 params × 2 B = 812 GB: 8 × 135.7 GB usable = 1085 GB holds it, 4 × = 543 GB does not
    dep = Deployment.make(load_model("llama-3.1-405b"), load_accelerator("h200"), efficiency=EFF)
    assert memory.min_gpus_to_fit(dep, 1, 4096) == 8


def test_usd_per_million_output_by_hand():
    est = estimate(
        "llama-3.1-70b", "h200", gpus=2, batch=16, context=2048, weights="fp8", price_per_hour=3.0, efficiency=EFF
    )
    step = float(est.decode.step_time_s)
    # 2 GPUs × $3/h = $6/h = 1/600 $/s; per token: step ÷ 16; per million: × 1e6
    assert est.as_dict()["cost"]["usd_per_m_output"] == pytest.approx(6 / 3600 * step / 16 * 1e6)
    split = cost.decode_split_usd_per_m(est.deployment, est.decode)
    assert sum(float(v) for v in split.values()) == pytest.approx(est.as_dict()["cost"]["usd_per_m_output"])
    # memory-bound kernels: the weights' share is w·max(c_lin, w)/(c_lin + w) = w²/(c_lin + w), the KV's
    # k·max(c_attn, k)/(c_attn + k) = k²/(c_attn + k)
    d = est.decode
    w, k, c_lin, c_attn = (float(x) for x in (d.weights_s, d.kv_s, d.linear_compute_s, d.attn_compute_s))
    assert w > c_lin and k > c_attn
    assert float(split["kv"]) / float(split["weights"]) == pytest.approx((k * k / (c_attn + k)) / (w * w / (c_lin + w)))


def test_output_dearer_than_input():
    est = estimate("llama-3.1-70b", "h100-sxm", gpus=4, batch=8, context=4096, efficiency=EFF)
    d = est.as_dict()
    assert d["prefill"]["bound"] == "compute" and d["decode"]["bound"] in ("weights", "kv")
    assert d["cost"]["usd_per_m_output"] > 5 * d["cost"]["usd_per_m_input"]


def test_generation_two_tokens_by_hand():
    dep = Deployment.make(load_model("llama-3.1-8b"), load_accelerator("h100-sxm"), efficiency=EFF)
    g = generation(dep, 4, 1000, 2)
    # first token comes out of the prefill; the second needs one decode step attending to 1001 tokens
    ttft = float(roofline.prefill(dep, 4, 1000).step_time_s)
    second = float(roofline.decode_step(dep, 4, 1001).step_time_s)
    assert g.ttft_s == pytest.approx(ttft)
    assert g.total_time_s == pytest.approx(ttft + second)
    assert g.output_tokens_per_s == pytest.approx(4 * 2 / (ttft + second))


def test_generation_context_grows():
    dep = Deployment.make(load_model("llama-3.1-8b"), load_accelerator("h100-sxm"), efficiency=EFF)
    g = generation(dep, 8, 500, 100)
    steps = roofline.decode_step(dep, 8, 500 + np.arange(1, 100)).step_time_s
    assert g.decode_time_s == pytest.approx(float(steps.sum()))
    assert steps[-1] > steps[0]


def test_batch_max_takes_largest_that_fits():
    est = estimate("llama-3.1-8b", "l40s", batch="max", context=8192)
    assert est.batch == est.memory.max_batch >= 1
    assert est.memory.fits


def test_json_keys_required_by_the_issue():
    d = estimate("qwen3-30b-a3b", "h100-sxm", batch=8, prompt=512, output=128).as_dict()
    for path in [
        "model.params_total",
        "model.params_active",
        "model.kv_bytes_per_token",
        "memory.weights_bytes",
        "memory.kv_bytes",
        "memory.fits",
        "memory.max_batch",
        "decode.step_time_s",
        "decode.tokens_per_s",
        "decode.tokens_per_s_per_user",
        "decode.bound",
        "decode.breakdown.compute_s",
        "decode.breakdown.weights_s",
        "decode.breakdown.kv_s",
        "decode.breakdown.comm_s",
        "prefill.time_s",
        "prefill.tokens_per_s",
        "cost.usd_per_m_input",
        "cost.usd_per_m_output",
        "generation.ttft_s",
        "generation.total_time_s",
        "generation.output_tokens_per_s",
    ]:
        node = d
        for key in path.split("."):
            node = node[key]
        assert node is not None, path


@pytest.mark.parametrize("kwargs,message", [
    ({"batch": 0}, "batch: input should be greater than 0 or 'max', got 0"),
    ({"context": -5}, "context: input should be greater than 0, got -5"),
    ({"context": 10**7}, "context: 10000000 exceeds llama-3.1-8b's maximum context of 131072 tokens"),
    ({"prompt": 10}, "output: prompt and output go together"),
    ({"gpus": 0}, "gpus: input should be greater than 0, got 0"),
    ({"weights": "fp3"}, "weights: 'fp3' is not supported"),
])
def test_bad_input_one_line(kwargs, message):
    with pytest.raises(KokubanError, match=message) as info:
        estimate("llama-3.1-8b", "h100-sxm", **kwargs)
    assert "\n" not in str(info.value)


def test_usd_per_byte_s_by_hand():
    # $0.0095 per GB-hour = 0.0095 / (10⁹ B · 3600 s) = 2.6389e-15 $ per byte-second
    from kokuban.core.cost import usd_per_byte_s

    assert usd_per_byte_s(0.0095) == pytest.approx(0.0095 / 3.6e12)
