"""The steady-state step of in-flight batching (`generation.inflight_step`) and which published rows use it."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kokuban.core import roofline
from kokuban.core.generation import inflight_step
from kokuban.specs.catalog import load_accelerator, load_model
from kokuban.specs.deployment import Deployment
from kokuban.specs.hardware import Efficiency
from kokuban.validation.accuracy import is_inflight_batching, load_published

EFF = Efficiency.textbook()  # compute 0.6, memory 0.8, no step overhead, overlap 1
DEP = Deployment.make(load_model("llama-3.1-8b"), load_accelerator("h200"), 1, efficiency=EFF)  # bf16, one GPU


def test_fused_step_by_hand_llama8b_h200():
    # B = 8 requests of P = 96 prompt and O = 4 output tokens. Per step: B·(O−1)/O = 6 decodes at the mean
    # context 96 + 4/2 = 98, B/O = 2 whole prompts of 96: T = 6 + 2·96 = 198 tokens through the weights, 8 LM heads.
    step = inflight_step(DEP, 8, 96, 4)
    lm_head = 128256 * 4096  # vocab × hidden = 525,336,576
    matmul = 15_009_849_344 // 2  # 2 FLOP per matmul param per token: 7,504,924,672 params (LM head included)
    linear_flops = 198 * 2 * (matmul - lm_head) + 8 * 2 * lm_head
    # attention: 2·2·32 heads·128 = 16,384 FLOP per query-key pair per layer, 32 layers
    decode_pairs = 6 * 98 * 32  # 18,816
    prefill_pairs = 2 * (96 * 97 // 2) * 32  # causal: 2 × 4,656 × 32 = 297,984
    assert float(step.terms.flops) == pytest.approx(linear_flops + 16_384 * (decode_pairs + prefill_pairs))
    kv_per_token = 32 * 2 * 8 * 128 * 2  # layers × (K, V) × KV heads × head dim × bf16 = 131,072 B
    assert float(step.terms.kv_bytes) == pytest.approx((6 * 98 + 2 * 96) * kv_per_token)
    weight_bytes = matmul * 2  # bf16; the input embedding is not read
    assert float(step.terms.weight_bytes) == pytest.approx(weight_bytes)
    peak, bw = 989.4e12 * 0.6, 4.8e12 * 0.8  # H200 dense bf16 × compute; HBM × memory
    linear_s = linear_flops / peak  # 2.772e12 FLOP ÷ 593.6e12 ≈ 4.670 ms
    weights_s = weight_bytes / bw  # 15.01e9 B ÷ 3.84e12 ≈ 3.91 ms: the weight read hides under the compute
    decode_attn_s = max(16_384 * decode_pairs / peak, 6 * 98 * kv_per_token / bw)  # KV read: 20.1 µs
    prefill_attn_s = max(16_384 * prefill_pairs / peak, 2 * 96 * kv_per_token / bw)  # compute: 8.2 µs
    hand = max(linear_s, weights_s) + decode_attn_s + prefill_attn_s
    assert float(step.step_time_s) == pytest.approx(hand)
    assert float(step.step_time_s) == pytest.approx(4.698e-3, rel=1e-3)  # 4.670 + 0.0201 + 0.0082 ms
    # run apart, the prompts' pass and the decodes each read the weights: the fused step is shorter
    apart = (float(roofline.prefill(DEP, 2, 96).step_time_s) + float(roofline.decode_step(DEP, 6, 98).step_time_s))
    assert apart > float(step.step_time_s) + 0.9 * weights_s


@settings(max_examples=60, deadline=None)
@given(batch=st.integers(1, 512), prompt=st.integers(1, 8192), output=st.integers(1, 4096),
       overlap=st.sampled_from([1.0, 0.5, 0.0]), overhead_s=st.sampled_from([0.0, 1e-3]))
def test_fused_step_between_either_pass_and_both(batch, prompt, output, overlap, overhead_s):
    # Per output token (B of them a step), against the same work run as two passes: B/O prompts of P tokens
    # (prefill) and B·(O−1)/O decodes at the mean context. Under the default (linear) profile, fusing them
    # can only share the weight read and the fixed cost: never slower than both passes, never faster than either.
    dep = dataclasses.replace(DEP, efficiency=dataclasses.replace(EFF, overlap=overlap, step_overhead_s=overhead_s))
    fused = float(inflight_step(dep, batch, prompt, output).step_time_s)
    pre = float(roofline.prefill(dep, batch / output, prompt).step_time_s)
    decodes = batch * (output - 1) / output
    dec = float(roofline.decode_step(dep, decodes, prompt + output / 2).step_time_s) if output > 1 else 0.0
    assert fused <= (pre + dec) * (1 + 1e-9)
    assert fused >= max(pre, dec) * (1 - 1e-9)


def test_inflight_rows_are_continuous_batching_throughput_runs():
    rows = {r.id: r for r in load_published()}
    assert is_inflight_batching(rows["mlperf41-llama2-70b-h200-8gpu-offline"])  # TensorRT-LLM, whole run
    assert is_inflight_batching(rows["amd-vllm0901-llama31-70b-mi300x-fp8-tp8-128-2048"])  # vLLM throughput
    assert not is_inflight_batching(rows["oracle-llama31-405b-mi300x-fp8-bs256-128-128"])  # benchmark_latency: static
    assert not is_inflight_batching(rows["sglang-deepseek-v3-h100-96gpu-pd-ep-decode-per-node"])  # decode node
    assert not is_inflight_batching(rows["gptfast-llama2-7b-bf16-tp1-a100"])  # per-user speed, no batching
