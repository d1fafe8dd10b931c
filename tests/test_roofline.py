"""The roofline step model, checked against arithmetic done by hand."""

from __future__ import annotations

import numpy as np
import pytest

from kokuban.core import roofline
from kokuban.errors import KokubanError
from kokuban.specs.catalog import load_accelerator, load_model
from kokuban.specs.deployment import Deployment
from kokuban.specs.hardware import Accelerator, Efficiency

EFF = Efficiency.textbook()  # compute 0.6, memory 0.8, interconnect 0.75, 8 µs per collective, no overhead


def dep(model: str, gpu: str = "h200", n: int = 1, **kw) -> Deployment:
    return Deployment.make(load_model(model), load_accelerator(gpu), n, efficiency=EFF, **kw)


def test_llama70b_fp8_h200_batch1_is_weight_bound():
    d = dep("llama-3.1-70b", weights_dtype="fp8")
    step = roofline.decode_step(d, 1, 4096)
    # H200: 4.8 TB/s (NVIDIA H200 datasheet) × 0.8 achievable = 3.84e12 B/s
    bw = 4.8e12 * 0.8
    # fp8 weights: 1 byte/param for the blocks, the 16-bit LM head (128256 × 8192) at 2 bytes,
    # the input embedding not read: (70,553,706,496 − 2·1,050,673,152)·1 + 1,050,673,152·2
    lm_head = 128256 * 8192
    weight_bytes = (70_553_706_496 - 2 * lm_head) * 1 + lm_head * 2
    kv_bytes = 4096 * 80 * 2 * 8 * 128 * 2  # context × layers × (K,V) × KV heads × head dim × bf16
    assert float(step.weight_bytes) == weight_bytes
    assert float(step.kv_bytes) == kv_bytes
    assert float(step.weights_s) == pytest.approx(weight_bytes / bw)
    assert step.bound == "weights"
    assert float(step.step_time_s) == pytest.approx((weight_bytes + kv_bytes) / bw)  # ≈ 18.7 ms
    assert float(step.step_time_s) == pytest.approx(0.01872, rel=1e-3)
    # compute is two orders of magnitude below: 2·69.5e9 FLOP ÷ (1979e12·0.6) ≈ 0.12 ms
    assert float(step.compute_s) < float(step.step_time_s) / 50


def test_qwen3_moe_weight_read_grows_with_batch_compute_per_token_stays():
    d = dep("qwen3-235b-a22b", "h200", 8)
    b1, b256 = roofline.decode_step(d, 1, 1024), roofline.decode_step(d, 256, 1024)
    # 128 experts, top-8, 94 MoE layers, 3·4096·1536 params per expert.
    # batch 1 touches 8 experts per layer; batch 256 touches 128·(1 − (15/16)^256) ≈ 128 − 8e-6
    assert float(b1.experts_touched) == pytest.approx(8.0)
    assert float(b256.experts_touched) == pytest.approx(128 * (1 - (15 / 16) ** 256))
    per_expert_bytes = 3 * 4096 * 1536 * 2
    routed_growth = 94 * (float(b256.experts_touched) - 8) * per_expert_bytes
    assert float(b256.weight_bytes - b1.weight_bytes) == pytest.approx(routed_growth)
    assert float(b256.weight_bytes / b1.weight_bytes) > 5  # several-fold
    # compute per token (linear part) does not change: 2 × matmul params each
    m = d.model
    lin1 = float(b1.flops) - float(b1.batch) * m.attn_flops_per_ctx_token_per_layer_decode * float(
        m.attended_tokens(1024)
    )
    lin256 = float(b256.flops) - 256 * m.attn_flops_per_ctx_token_per_layer_decode * float(m.attended_tokens(1024))
    assert lin1 == pytest.approx(lin256 / 256)


def test_expected_experts_formula():
    # E·(1 − (1 − k/E)^T): T=1 → k; T=2, E=4, k=2 → 4·(1 − 1/4) = 3
    assert float(roofline.expected_experts_touched(4, 2, 1)) == pytest.approx(2)
    assert float(roofline.expected_experts_touched(4, 2, 2)) == pytest.approx(3)
    assert float(roofline.expected_experts_touched(0, 0, 5)) == 0


def test_decode_attention_flops_grow_with_context():
    d = dep("llama-3.1-8b")
    a, b = roofline.decode_step(d, 1, 1000), roofline.decode_step(d, 1, 2000)
    # per attended token: 2 FLOP × 32 heads × (128 for QK + 128 for AV) per layer, 32 layers
    per_ctx = 2 * 32 * (128 + 128) * 32
    assert float(b.flops - a.flops) == pytest.approx(per_ctx * 1000)
    assert float(b.kv_bytes - a.kv_bytes) == 1000 * 32 * 2 * 8 * 128 * 2


def test_mixed_contexts_equal_sum_of_uniform():
    d = dep("llama-3.1-8b")
    mixed = roofline.decode_step_mixed(d, [1000, 3000])
    uniform = roofline.decode_step(d, 2, 2000)  # attention and KV are linear in context
    assert float(mixed.kv_bytes) == pytest.approx(float(uniform.kv_bytes))
    assert float(mixed.step_time_s) == pytest.approx(float(uniform.step_time_s))
    with pytest.raises(KokubanError):
        roofline.decode_step_mixed(d, [])


def test_prefill_is_compute_bound_and_causal_attention_by_hand():
    d = dep("llama-3.1-8b", "h100-sxm")
    p = roofline.prefill(d, 1, 4096)
    assert p.bound == "compute"
    # causal pairs per layer = T(T+1)/2; attention FLOPs per pair 2·32·(128+128); 32 layers
    m = d.model
    attn = 32 * 4096 * 4097 / 2 * 2 * 32 * 256
    # the LM head (128256 × 4096) runs for the last prompt position only, the rest of the matmuls for all 4096
    lm_head = 128256 * 4096
    assert float(p.flops) == pytest.approx(4096 * (m.flops_per_token - 2 * lm_head) + 2 * lm_head + attn)
    # bf16 compute at 989.4 TFLOP/s dense (H100 SXM datasheet, halved sparse figure) × 0.6
    assert float(p.compute_s) == pytest.approx(float(p.flops) / (989.4e12 * 0.6))


def test_sliding_window_prefill_pairs():
    d = dep("gpt-oss-20b", "h100-sxm")
    m = d.model
    t, w = 1000, 128
    n_global = sum(x is None for x in m.layer_windows)
    n_local = m.num_layers - n_global
    pairs = n_global * t * (t + 1) / 2 + n_local * (w * (w + 1) / 2 + (t - w) * w)
    assert float(m.causal_attended_tokens(t)) == pytest.approx(pairs)


def test_tensor_parallel_splits_and_communicates():
    one, eight = dep("llama-3.1-70b", n=1), dep("llama-3.1-70b", n=8)
    s1, s8 = roofline.decode_step(one, 16, 2048), roofline.decode_step(eight, 16, 2048)
    assert float(s8.weights_s) == pytest.approx(float(s1.weights_s) / 8)
    assert float(s8.kv_s) == pytest.approx(float(s1.kv_s) / 8)  # 8 KV heads split 8 ways
    assert float(s1.comm_s) == 0
    # 2 all-reduces per layer × 80 layers; ring: 2·(8−1)/8 × 16 tokens × 8192 × 2 bytes per GPU
    msg = 2 * 7 / 8 * 16 * 8192 * 2
    expected = 160 * (8e-6 + msg / (450e9 * 0.75))
    assert float(s8.comm_s) == pytest.approx(expected)


def test_mla_kv_replicated_under_tp_split_under_ep():
    tp, ep = dep("deepseek-v3", "h200", 8), dep("deepseek-v3", "h200", 8, layout="ep")
    s_tp, s_ep = roofline.decode_step(tp, 64, 8192), roofline.decode_step(ep, 64, 8192)
    assert float(s_tp.kv_s) == pytest.approx(8 * float(s_ep.kv_s))
    # EP: dispatch + combine per MoE layer: 2 × 58 × (lat + 7/8 · (64/8) tokens · 8 experts · 7168 · 2 B / link)
    expected = 2 * 58 * (8e-6 + 7 / 8 * 8 * 8 * 7168 * 2 / (450e9 * 0.75))
    assert float(s_ep.comm_s) == pytest.approx(expected)


def test_ep_needs_moe():
    with pytest.raises(KokubanError, match="needs a mixture-of-experts"):
        dep("llama-3.1-8b", n=2, layout="ep")


def test_no_interconnect_is_an_error():
    acc = Accelerator(id="x", name="x", memory_bytes=80e9, memory_bandwidth_bytes_per_s=1e12, peak_flops={"bf16": 1e14})
    d = Deployment.make(load_model("llama-3.1-8b"), acc, 2, efficiency=EFF)
    with pytest.raises(KokubanError, match="no interconnect"):
        roofline.decode_step(d, 1, 100)


def test_vectorised_equals_scalar():
    d = dep("mixtral-8x7b", "h100-sxm", 2)
    batches = np.array([1, 4, 64])
    contexts = np.array([512, 4096, 32000])
    vec = roofline.decode_step(d, batches[:, None], contexts[None, :])
    for i, b in enumerate(batches):
        for j, c in enumerate(contexts):
            s = roofline.decode_step(d, int(b), int(c))
            assert vec.step_time_s[i, j] == pytest.approx(float(s.step_time_s))
            assert vec.bound[i, j] == s.bound


def test_overhead_bound():
    d = Deployment.make(
        load_model("llama-3.2-1b"), load_accelerator("h200"), efficiency=EFF.updated(step_overhead_s=0.01)
    )
    s = roofline.decode_step(d, 1, 100)
    assert s.bound == "overhead"
    assert float(s.step_time_s) == pytest.approx(float(np.maximum(s.compute_s, s.memory_s)) + 0.01)


def test_prefill_with_cached_prefix_by_hand():
    d = dep("llama-3.1-8b", "h100-sxm")
    m = d.model
    full, rest = roofline.prefill(d, 2, 3000), roofline.prefill(d, 2, 3000, cached_tokens=1000)
    # 2000 new tokens per prompt; their queries see positions 1001..3000: Σ t = (3000·3001 − 1000·1001)/2 per layer
    pairs = 32 * (3000 * 3001 - 1000 * 1001) / 2
    assert float(rest.tokens) == 2 * 2000
    lm_head = 128256 * 4096  # logits for the last position of each prompt only
    assert float(rest.flops) == pytest.approx(
        2 * (2000 * (m.flops_per_token - 2 * lm_head) + 2 * lm_head + pairs * 2 * 32 * 256)
    )
    assert float(rest.kv_bytes) == float(full.kv_bytes)  # new KV written + cached KV read once = kv(3000)
    assert float(rest.step_time_s) < float(full.step_time_s)
    with pytest.raises(KokubanError, match="cached tokens"):
        roofline.prefill(d, 1, 100, cached_tokens=100)


def test_overlapped_communication_takes_the_max():
    plain, hidden = dep("llama-3.1-70b", n=8), dep("llama-3.1-70b", n=8, overlap_comm=True)
    a, b = roofline.decode_step(plain, 64, 4096), roofline.decode_step(hidden, 64, 4096)
    roof = float(np.maximum(a.compute_s, a.memory_s))
    assert float(a.step_time_s) == pytest.approx(roof + float(a.comm_s))
    assert float(b.step_time_s) == pytest.approx(max(roof, float(a.comm_s)))


def test_weight_multiplies_and_attention_run_one_after_the_other():
    # Llama-3.1-8B, bf16, one H100 (989.4 TFLOP/s dense bf16, 3.35 TB/s; textbook fractions), batch 256 at
    # context 1024: the weight multiplies are compute-bound, the attention kernels KV-bound; the two add.
    F, BW = 989.4e12 * 0.6, 3.35e12 * 0.8
    matmul_params = 8_030_261_248 - 128256 * 4096  # all but the embedding lookup, at 2 FLOP each (norms: 0.004 %)
    c_lin = 256 * 2 * matmul_params / F  # 6.473 ms
    w = (8_030_261_248 - 128256 * 4096) * 2 / BW  # 15.01 GB of weights (norms included): 5.601 ms
    k = 256 * 1024 * (32 * 2 * 8 * 128 * 2) / BW  # 131,072 B of KV per token: 12.82 ms
    a = 256 * 32 * (4 * 32 * 128) * 1024 / F  # 4·heads·head_dim FLOP per context token per layer: 0.2315 ms
    step = roofline.decode_step(dep("llama-3.1-8b", "h100-sxm"), 256, 1024)
    assert float(step.linear_compute_s) == pytest.approx(c_lin, rel=1e-9)
    assert float(step.attn_compute_s) == pytest.approx(a, rel=1e-9)
    assert float(step.step_time_s) == pytest.approx(c_lin + k, rel=1e-9)  # max(c_lin, w) + max(a, k) = 19.29 ms
    assert float(step.step_time_s) > max(c_lin + a, w + k)  # one max over everything would hide the KV read
    assert step.bound == "kv"  # 12.82 ms of KV-bound attention against 6.47 ms of compute-bound multiplies
    # both kinds memory-bound (batch 8): the sum of the two maxima is the single max, (w + k)
    small = roofline.decode_step(dep("llama-3.1-8b", "h100-sxm"), 8, 1024)
    assert float(small.step_time_s) == pytest.approx(w + 8 * 1024 * 131072 / BW, rel=1e-9)


def test_kv_memory_fraction_reads_the_cache_only():
    slow_kv = Efficiency.textbook().updated(kv_memory=0.4)
    base = roofline.decode_step(dep("llama-3.1-8b", "h100-sxm"), 8, 4096)
    slow = roofline.decode_step(
        Deployment.make(load_model("llama-3.1-8b"), load_accelerator("h100-sxm"), efficiency=slow_kv), 8, 4096
    )
    assert float(slow.kv_s) == pytest.approx(2 * float(base.kv_s))  # 0.8 → 0.4 of the bandwidth
    assert float(slow.weights_s) == float(base.weights_s)
    with pytest.raises(KokubanError, match="kv_memory"):
        Efficiency(kv_memory=1.5)
    # unset, it follows the memory fraction, and JSON says the number it uses
    assert Efficiency(memory=0.7).as_dict()["kv_memory"] == 0.7 and slow_kv.as_dict()["kv_memory"] == 0.4


def test_partial_overlap_shows_part_of_the_shorter_time():
    # Llama-3.1-8B on one H100, batch 8 at context 1024, textbook fractions but overlap 0.25: each kernel takes
    # max(c, m) + 0.75·min(c, m)
    F, BW = 989.4e12 * 0.6, 3.35e12 * 0.8
    c_lin = 8 * 2 * (8_030_261_248 - 128256 * 4096) / F
    w = (8_030_261_248 - 128256 * 4096) * 2 / BW
    a = 8 * 32 * 16384 * 1024 / F
    k = 8 * 1024 * 131072 / BW
    d = Deployment.make(load_model("llama-3.1-8b"), load_accelerator("h100-sxm"), efficiency=EFF.updated(overlap=0.25))
    step = roofline.decode_step(d, 8, 1024)
    assert float(step.step_time_s) == pytest.approx(w + 0.75 * c_lin + k + 0.75 * a, rel=1e-9)
    with pytest.raises(KokubanError, match="overlap"):
        Efficiency(overlap=-0.1)
