"""Worked numbers, derived BY HAND: every figure of the guides' worked examples (the blackboard's, the crossover batch,
the bandwidth wall, the DeepSeek day) written out as a formula with the catalog's numbers and compared with the code.
The guides print these through generated blocks (`python -m evidence`); here the arithmetic is checked on its own.

Catalog numbers used below (each also checked against the catalog, so the premises cannot drift either):
  H100 SXM: dense bf16 989.4e12 FLOP/s, fp8 1978.9e12, HBM 3.35e12 B/s, 85.52e9 B visible, NVLink 450e9 B/s
            per direction, $2.99/h.   H200: same FLOP/s, HBM 4.8e12 B/s, 143771 MiB, $3.59/h.
  Llama-3.1-8B:  hidden 4096, 32 layers, MLP 14336, 32 heads / 8 KV heads of 128, vocab 128256.
  Llama-3.1-70B: hidden 8192, 80 layers, MLP 28672, 64 heads / 8 KV heads of 128, vocab 128256.
  Mixtral 8x7B:  hidden 4096, 32 layers, 8 experts of MLP 14336 (top 2), 32 heads / 8 KV heads of 128, vocab 32000.
  DeepSeek-V3:   61 layers, MLA latent kv_lora_rank 512 + rope 64.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from json_envelope import result_of

from kokuban.cli import main
from kokuban.core import memory, roofline
from kokuban.economics.batch import blackboard_crossover_batch, compute_bound_batch, crossover_batch
from kokuban.economics.context import bandwidth_wall
from kokuban.specs import dtypes
from kokuban.specs.catalog import accelerator_catalog, load_accelerator, load_model, model_catalog
from kokuban.specs.deployment import Deployment
from kokuban.specs.hardware import Efficiency
from kokuban.usecases.estimate import estimate

ROOT = Path(__file__).resolve().parents[1]

TEXTBOOK = Efficiency.textbook()
SCALAR = Efficiency.scalar()  # the one-fraction-per-resource set the worked examples are stated at
SCALAR_FLAGS = ["--efficiency-file", "scalar"]
TEXTBOOK_FLAGS = [*SCALAR_FLAGS, "--compute-eff", "0.6", "--memory-eff", "0.8", "--link-eff", "0.75", "--step-overhead",
                  "0"]

# ---- the catalog numbers the arithmetic uses -------------------------------------------------------
H100_BF16, H100_FP8, H100_BW, H100_MEM, LINK, H100_USD = 989.4e12, 1978.9e12, 3.35e12, 85.52e9, 450e9, 2.99
H200_BW, H200_MEM, H200_USD = 4.8e12, 143771 * 1048576, 3.59
# parameters from the config.json dimensions
L8_LAYER = 2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 14336 + 2 * 4096  # q,o + k,v + gated MLP + 2 norms
L8_BODY = 32 * L8_LAYER + 4096  # + final norm: 6,979,588,096
L8_VOCAB = 128256 * 4096  # input embedding = LM head = 525,336,576
L70_LAYER = 2 * 8192 * 8192 + 2 * 8192 * 1024 + 3 * 8192 * 28672 + 2 * 8192
L70_BODY = 80 * L70_LAYER + 8192  # 68,452,360,192
L70_VOCAB = 128256 * 8192  # 1,050,673,152
L70_TOTAL = L70_BODY + 2 * L70_VOCAB  # 70,553,706,496
L70_MATMUL = L70_BODY + L70_VOCAB  # active − input embedding (a lookup): 69,503,033,344
L70_KV_PER_TOKEN = 80 * 2 * 8 * 128 * 2  # layers × (K and V) × KV heads × head dim × bf16 bytes = 327,680
MIX_EXPERT = 3 * 4096 * 14336  # 176,160,768
MIX_ROUTED = 32 * 8 * MIX_EXPERT  # 45,097,156,608
MIX_ALWAYS = (
    32 * (2 * 4096 * 4096 + 2 * 4096 * 1024 + 4096 * 8 + 2 * 4096) + 4096 + 32000 * 4096
)  # attn, router, norms, head
MIX_EMBED = 32000 * 4096


def test_catalog_premises():
    h100, h200 = load_accelerator("h100-sxm"), load_accelerator("h200")
    assert (h100.flops("bf16"), h100.flops("fp8"), h100.memory_bandwidth_bytes_per_s) == (H100_BF16, H100_FP8, H100_BW)
    assert (h100.memory_bytes, h100.interconnect_bytes_per_s, h100.price_per_hour_usd) == (H100_MEM, LINK, H100_USD)
    assert (h200.flops("bf16"), h200.flops("fp8"), h200.memory_bandwidth_bytes_per_s) == (H100_BF16, H100_FP8, H200_BW)
    assert (h200.memory_bytes, h200.price_per_hour_usd) == (H200_MEM, H200_USD)
    l8, l70, mix = load_model("llama-3.1-8b"), load_model("llama-3.1-70b"), load_model("mixtral-8x7b")
    assert (l8.params_total, l8.params_lm_head, l8.params_embedding) == (L8_BODY + 2 * L8_VOCAB, L8_VOCAB, L8_VOCAB)
    assert (l70.params_total, l70.params_lm_head) == (L70_TOTAL, L70_VOCAB)
    assert l70.kv_bytes_per_token("bf16") == L70_KV_PER_TOKEN
    assert (mix.params_routed, mix.params_per_expert) == (MIX_ROUTED, MIX_EXPERT)
    assert mix.params_total == MIX_ALWAYS + MIX_EMBED + MIX_ROUTED == 46_702_792_704


# ---- the README's conventions ----------------------------------------------------------------------
def test_bytes_per_element_of_the_sub_byte_formats():
    int4 = (4 + 16 / 128) / 8  # 4 bits + one fp16 scale per 128 weights = 4.125 bits
    fp4 = (4 + 8 / 32) / 8  # MXFP4: 4 bits + one E8M0 (8-bit) scale per 32 = 4.25 bits
    assert (int4, fp4) == (0.515625, 0.53125)
    assert (dtypes.BYTES_PER_ELEMENT["int4"], dtypes.BYTES_PER_ELEMENT["fp4"]) == (int4, fp4)


def test_efficiency_defaults_as_the_prose_states_them():
    e, t = SCALAR, Efficiency.textbook()
    assert e == Efficiency()  # the dataclass defaults are the scalar set
    assert (e.compute, e.memory, e.interconnect, e.collective_latency_s, e.step_overhead_s, e.overlap) == (
        0.74, 0.84, 0.27, 8e-6, 2.7e-3, 1.0)
    assert e.kv_memory is None and e.kv_memory_fraction == e.memory  # "KV reads the same unless --kv-eff"
    assert (t.compute, t.memory, t.interconnect, t.step_overhead_s, t.overlap) == (0.6, 0.8, 0.75, 0.0, 1.0)
    dep = Deployment.make(load_model("llama-3.1-8b"), load_accelerator("h100-sxm"))
    assert (dep.memory_utilization, dep.prefill_chunk_tokens) == (0.9, 8192)


def test_h200_memory_in_bytes():
    assert H200_MEM == 150_754_820_096  # 143771 MiB × 1,048,576 B/MiB
    assert f"{H200_MEM / 1e9:.2f}" == "150.75"


def test_catalog_sizes_the_readme_quotes():
    from kokuban.validation.accuracy import load_published

    models = model_catalog()
    verified = sum(bool(entry.get("verified")) for entry in models.values())
    # 15 GPUs joined the 27 as the judges of the MMQ-rate change (evidence/changes/ggml_mmq_rate)
    assert (len(models), verified, len(accelerator_catalog()), len(load_published())) == (36, 21, 27 + 15, 196)


# ---- the crossover batch (README, docs/economics.md, economics.batch docstrings) -------------------
def test_crossover_h100_bf16_textbook_is_221_5():
    hand = H100_BF16 * 0.6 / (H100_BW * 0.8) * (2 / 2) * 1  # F/BW × bytes per weight ÷ FLOPs per param × read/active
    assert f"{hand:.1f}" == "221.5"
    assert compute_bound_batch(H100_BF16 * 0.6, H100_BW * 0.8) == pytest.approx(hand, rel=1e-12)
    # a dense bf16 deployment reads exactly its active matmul params × 2 B: read/active = 1
    dep = Deployment.make(load_model("llama-3.1-8b"), load_accelerator("h100-sxm"), efficiency=TEXTBOOK)
    assert blackboard_crossover_batch(dep) == pytest.approx(hand, rel=1e-9)
    assert crossover_batch(dep, 1) == math.ceil(hand) == 222  # the core's curve: first batch with c·B ≥ w
    tp4 = Deployment.make(load_model("llama-3.1-70b"), load_accelerator("h100-sxm"), 4, efficiency=TEXTBOOK)
    assert crossover_batch(tp4, 1024) == 222  # the KV read runs in its own kernels: the context does not move it
    # fp8 weights on fp8 tensor cores: twice the FLOP/s, half the bytes
    fp8 = H100_FP8 * 0.6 / (H100_BW * 0.8) * (1 / 2)
    assert f"{fp8:.1f}" == "221.5" and compute_bound_batch(H100_FP8 * 0.6, H100_BW * 0.8, 1.0) == pytest.approx(fp8)


def test_crossover_h100_bf16_scalar_is_260():
    hand = H100_BF16 * 0.74 / (H100_BW * 0.84)
    assert f"{hand:.0f}" == "260" and f"{hand:.1f}" == "260.2"
    dep = Deployment.make(load_model("llama-3.1-70b"), load_accelerator("h100-sxm"), 4, efficiency=SCALAR)
    assert blackboard_crossover_batch(dep) == pytest.approx(hand, rel=1e-9)
    assert crossover_batch(dep, 1024) == math.ceil(hand) == 261


def test_crossover_fp8_with_a_16_bit_lm_head_is_237():
    # bytes read per step: body at 1 B + the LM head at 2 B; FLOPs: body + LM head (the input embedding is a lookup)
    read_bytes, active = L8_BODY * 1 + L8_VOCAB * 2, L8_BODY + L8_VOCAB
    hand = H100_FP8 * 0.6 / (H100_BW * 0.8) * (1 / 2) * (read_bytes / 1 / active)
    assert f"{hand:.1f}" == "237.0"
    dep = Deployment.make(
        load_model("llama-3.1-8b"), load_accelerator("h100-sxm"), weights_dtype="fp8", efficiency=TEXTBOOK
    )
    assert blackboard_crossover_batch(dep) == pytest.approx(hand, rel=1e-9)


def test_crossover_mixtral_scales_by_expert_touching():
    # at a batch of ~800 every expert is touched (E·(1 − (1 − 2/8)^800) = 8): the step reads all params but
    # the input embedding, while a token multiplies the active ones (2 of 8 experts) but the embedding
    read = MIX_ALWAYS + MIX_ROUTED
    active = MIX_ALWAYS + MIX_ROUTED // 4
    assert (f"{read / 1e9:.2f}", f"{active / 1e9:.2f}", f"{read / active:.2f}") == ("46.57", "12.75", "3.65")
    hand = H100_BF16 * 0.6 / (H100_BW * 0.8) * read / active
    assert f"{hand:.0f}" == "809"
    dep = Deployment.make(load_model("mixtral-8x7b"), load_accelerator("h100-sxm"), 2, efficiency=TEXTBOOK)
    assert blackboard_crossover_batch(dep) == pytest.approx(hand, rel=1e-6)
    assert crossover_batch(dep, 1) == 810  # the curve: 809.2 rounded up


def test_bandwidth_wall_llama_8b_h100_textbook_is_517():
    c = 2 * (L8_BODY + L8_VOCAB) / (H100_BF16 * 0.6)  # multiply compute per request: 25.3 µs
    k_per_token = 32 * 2 * 8 * 128 * 2 / (H100_BW * 0.8)  # its KV read per context token: 48.9 ns
    a_per_token = 32 * 2 * 32 * (128 + 128) / (H100_BF16 * 0.6)  # its attention compute: 0.88 ns < k: KV-bound
    assert a_per_token < k_per_token
    hand = math.floor(c / k_per_token) + 1  # first integer context with k·L > c
    assert hand == 517
    dep = Deployment.make(load_model("llama-3.1-8b"), load_accelerator("h100-sxm"), efficiency=TEXTBOOK)
    assert bandwidth_wall(dep, 8192) == hand


# ---- the README's worked example ---------------------------------------------------------------------
EXAMPLE = ["estimate", "llama-3.1-70b", "--gpu", "h200", "--weights", "fp8", "--batch", "32", "--prompt", "2000",
           "--output", "500", *SCALAR_FLAGS]


def test_readme_worked_example_by_hand():
    b, prompt, out, ctx = 32, 2000, 500, 2500  # decode at prompt + output
    F8, F16, BW = H100_FP8 * 0.74, H100_BF16 * 0.74, H200_BW * 0.84  # fp8 multiplies, bf16 attention
    usd_s = H200_USD / 3600
    # decode step: multiplies (LM head once per sequence, here also once per token), weight read, attention, KV
    mult_flops = b * 2 * L70_MATMUL
    mult_s = mult_flops / F8
    weight_bytes = L70_BODY * 1 + L70_VOCAB * 2  # fp8 body, 16-bit LM head; the input embedding is not read
    weights_s = weight_bytes / BW
    attn_flops = b * 80 * ctx * 2 * 64 * (128 + 128)
    attn_s = attn_flops / F16
    kv_bytes = b * L70_KV_PER_TOKEN * ctx
    kv_s = kv_bytes / BW
    step = max(mult_s, weights_s) + max(attn_s, kv_s) + 0 + 2.7e-3  # one GPU: no communication
    # prefill of 32 × 2000 tokens: the body for every token, the LM head once per prompt, causal attention
    pre_lin = 2 * (b * prompt * L70_BODY + b * L70_VOCAB) / F8
    pre_attn = b * 80 * (prompt * (prompt + 1) // 2) * 2 * 64 * 256 / F16
    pre_kv = b * prompt * L70_KV_PER_TOKEN / BW
    ttft = max(pre_lin, weights_s) + max(pre_attn, pre_kv) + 2.7e-3
    # memory per GPU
    weights_mem = L70_BODY * 1 + 2 * L70_VOCAB * 2
    kv_mem = b * L70_KV_PER_TOKEN * ctx
    act_mem = 8192 * 2 * (4 * 8192 + 2 * 28672) + b * 128256 * 4
    usable = 0.9 * H200_MEM
    fit = math.floor((usable - weights_mem - 8192 * 2 * (4 * 8192 + 2 * 28672)) / (L70_KV_PER_TOKEN * ctx + 128256 * 4))
    # the split inside each kernel: each part's raw time × kernel ÷ (sum of the two)
    lin, att = max(mult_s, weights_s) / (mult_s + weights_s), max(attn_s, kv_s) / (attn_s + kv_s)
    per_m = usd_s / b * 1e6
    # a generation: prefill, then 499 decode steps at contexts 2001 … 2499 (weights-bound, KV grows)
    kv_sum = b * L70_KV_PER_TOKEN * sum(prompt + i for i in range(1, out)) / BW
    total = ttft + (out - 1) * (weights_s + 2.7e-3) + kv_sum

    hand = {
        "multiply TFLOP": (mult_flops / 1e12, "4.45"),
        "multiply ms": (mult_s * 1e3, "3.04"),
        "weight GB": (weight_bytes / 1e9, "70.6"),
        "weights ms": (weights_s * 1e3, "17.5"),
        "weights µs/token": (weights_s / b * 1e6, "547"),
        "attention GFLOP": (attn_flops / 1e9, "210"),
        "attention µs": (attn_s * 1e6, "286"),
        "KV GB": (kv_bytes / 1e9, "26.2"),
        "KV ms": (kv_s * 1e3, "6.5"),
        "KV µs/token": (kv_s / b * 1e6, "203"),
        "step ms": (step * 1e3, "26.7"),
        "µs/token": (step / b * 1e6, "834"),
        "tokens/s": (b / step, "1.2e+03"),
        "per user": (1 / step, "37.5"),
        "ttft s": (ttft, "6.22"),
        "prefill compute s": (pre_lin + pre_attn, "6.21"),
        "KV write ms": (pre_kv * 1e3, "5.2"),
        "$/M out": (per_m * step, "0.832"),
        "$/M in": (usd_s * ttft / (b * prompt) * 1e6, "0.0968"),
        "compute $": (per_m * (mult_s * lin + attn_s * att), "0.0892"),
        "weights $": (per_m * weights_s * lin, "0.465"),
        "KV $": (per_m * kv_s * att, "0.194"),
        "overhead $": (per_m * 2.7e-3, "0.0841"),
        "ratio": (step / b / (ttft / (b * prompt)), "8.59"),
        "total s": (total, "19.2"),
        "out tok/s": (b * out / total, "833"),
        "$/request": (usd_s * total / b, "0.000599"),
        "weights GB": (weights_mem / 1e9, "72.7"),
        "KV mem GB": (kv_mem / 1e9, "26.2"),
        "act GB": (act_mem / 1e9, "1.49"),
        "used GB": ((weights_mem + kv_mem + act_mem) / 1e9, "100"),
        "usable GB": (usable / 1e9, "136"),
    }
    for name, (value, text) in hand.items():
        assert f"{value:.3g}" == text, name
    assert f"{b / step:,.1f}" == "1,198.5" and f"{b * prompt / ttft:,.0f}" == "10,297" and fit == 75

    # the code agrees with the hand numbers
    e = estimate("llama-3.1-70b", "h200", batch=32, prompt=2000, output=500, weights="fp8", efficiency=SCALAR).as_dict()
    dec, cost = e["decode"], e["cost"]
    assert dec["step_time_s"] == pytest.approx(step, rel=1e-9) and dec["bound"] == "weights"
    for key, value in (("multiply_compute_s", mult_s), ("weights_s", weights_s), ("attention_compute_s", attn_s),
                       ("kv_s", kv_s)):
        assert dec["breakdown"][key] == pytest.approx(value, rel=1e-9)
    assert e["prefill"]["time_s"] == pytest.approx(ttft, rel=1e-9) == e["generation"]["ttft_s"]
    assert e["generation"]["total_time_s"] == pytest.approx(total, rel=1e-9)
    assert cost["usd_per_m_output"] == pytest.approx(per_m * step, rel=1e-9)
    assert cost["decode_split_usd_per_m"]["weights"] == pytest.approx(per_m * weights_s * lin, rel=1e-9)
    assert e["memory"]["max_batch"] == fit and e["memory"]["activation_bytes"] == pytest.approx(act_mem, rel=1e-12)

    # the prose around the example


def test_readme_worked_example_at_the_shipped_step_model():
    """The README's paragraph after the example: the same command without `--efficiency-file scalar`, priced with the
    kernel profile (memory 0.90, 3.8 ms per step; the fp8 body's GEMMs at 0.69 · 0.92 · s · 32 ÷ (32 + 103) of peak,
    s the shape factor of one H100-class GPU's Llama-3.1-70B GEMMs: QKV 10,240 × 8192, output 8192 × 8192, gate/up
    57,344 × 8192, down 8192 × 28,672 at fp8's N_half 1581, K_half 215, FLOP-weighted)."""
    b, ctx = 32, 2500
    BW = H200_BW * 0.90  # 4.32e12 B/s
    weights_s = (L70_BODY * 1 + L70_VOCAB * 2) / BW  # 70,553,706,496 B ÷ 4.32e12 = 16.332 ms
    kv_s = b * L70_KV_PER_TOKEN * ctx / BW  # 26.2144 GB ÷ 4.32e12 = 6.068 ms
    gemms = ((10240, 8192), (8192, 8192), (57344, 8192), (8192, 28672))
    s = sum(n * k for n, k in gemms) / sum(n * k / (n / (n + 1581) * k / (k + 215)) for n, k in gemms)  # 0.8920
    body_s = 2 * b * L70_BODY / (H100_FP8 * 0.69 * 0.92 * s * b / (b + 103))  # the fp8 body alone: 16.5 ms
    multiply_s = max(body_s, weights_s)  # the multiplies or the weight read, whichever is longer
    step = multiply_s + kv_s + 3.8e-3  # compute-bound multiplies (the LM head's few FLOPs added below), KV, fixed cost
    assert (f"{weights_s * 1e3:.1f}", f"{kv_s * 1e3:.1f}", f"{body_s * 1e3:.1f}", f"{s:.3f}") == (
        "16.3", "6.1", "16.5", "0.892")
    e = estimate("llama-3.1-70b", "h200", batch=32, prompt=2000, output=500, weights="fp8").as_dict()
    dec = e["decode"]
    assert dec["bound"] == "compute" and dec["breakdown"]["weights_s"] == pytest.approx(weights_s, rel=1e-9)
    assert body_s < dec["breakdown"]["multiply_compute_s"] < 1.01 * body_s  # + the 16-bit LM head's few FLOPs
    step = dec["breakdown"]["multiply_compute_s"] + kv_s + 3.8e-3
    assert dec["step_time_s"] == pytest.approx(step, rel=1e-9)
    assert (f"{step * 1e3:.1f}", f"{b / step:,.1f}") == ("26.4", "1,211.6")


# ---- docs/economics.md's examples, by hand ------------------------------------------------------------


def test_economics_batch_example_by_hand():
    """`kokuban batch llama-3.1-70b --gpu h100-sxm --gpus 4 --context 1024 --efficiency-file scalar`, batch 1, 484."""
    F, BW, link = H100_BF16 * 0.74, H100_BW * 0.84, LINK * 0.27
    weights_s = (L70_BODY + L70_VOCAB) * 2 / 4 / BW  # bf16, split 4 ways
    mult_s = 2 * L70_MATMUL / 4 / F
    attn_s = 80 * 1024 * 2 * 64 * 256 / 4 / (H100_BF16 * 0.74)
    kv_s = L70_KV_PER_TOKEN * 1024 / 4 / BW  # 8 KV heads split 4 ways
    comm_s = 2 * 80 * (8e-6 + 2 * 3 / 4 * 1 * 8192 * 2 / link)  # two ring all-reduces per layer of 1 token
    step = max(mult_s, weights_s) + max(attn_s, kv_s) + comm_s + 2.7e-3
    usd_per_m = 4 * H100_USD / 3600 * step * 1e6
    for value, text in ((weights_s * 1e3, "12.3"), ((mult_s + attn_s) * 1e6, "48.4"), (kv_s * 1e6, "29.8"),
                        (1 / step, "61"), (usd_per_m, "54.5"), (L70_KV_PER_TOKEN * 1024 / 1e9, "0.336")):
        assert f"{value:.3g}" == text
    # the largest batch: (0.9 × HBM − weights ÷ 4 − one prefill chunk's activations) ÷ (KV ÷ 4 + fp32 logits)
    free = 0.9 * H100_MEM - L70_TOTAL * 2 / 4 - 8192 * 2 * (4 * 8192 + 2 * 28672 / 4)
    fit = math.floor(free / (L70_KV_PER_TOKEN * 1024 / 4 + 128256 * 4))
    assert fit == 484
    dep = Deployment.make(load_model("llama-3.1-70b"), load_accelerator("h100-sxm"), 4, efficiency=SCALAR)
    assert int(memory.max_batch(dep, 1024)) == fit
    one = roofline.decode_step(dep, 1, 1024)
    assert float(one.step_time_s) == pytest.approx(step, rel=1e-9)
    assert 64 * 1024 == 65_536


def test_economics_io_lanes_frontier_context_examples_by_hand():
    # DeepSeek-V3's MLA caches one latent per token per layer: (512 + 64) elements × 2 B × 61 layers
    mla = (512 + 64) * 2 * 61
    assert f"{mla * 4096 / 1e9:.3g}" == "0.288" and f"{mla * 1024 / 1e6:.3g}" == "72"
    assert load_model("deepseek-v3").kv_bytes_per_token("bf16") == mla
    assert 256 * 2000 == 512_000
    # lanes: a train of 16 at 5 requests/s departs every 16 ÷ 5 = 3.2 s
    # frontier: Llama-3.1-70B in bf16 holds 2 × 70.55e9 = 141.1 GB, more than one H100's or H200's usable HBM
    assert L70_TOTAL * 2 > 0.9 * H200_MEM > 0.9 * H100_MEM


# ---- the README's accuracy table (computed by `kokuban accuracy`; medians of 48 predictions, so the
# ---- guard is prose = code, not a hand derivation) ------------------------------------------------------


# ---- the README's DeepSeek day (docs/prices.md, worked example) ----------------------------------------
FLEET = ["prices", "fleet", "deepseek/deepseek-reasoner", "--gpu-file", str(ROOT / "docs" / "examples" / "h800.toml"),
         "--input-tokens", "608e9", "--cached-tokens", "342e9", "--output-tokens", "168e9", "--context", "4989",
         "--speed", "21", "--json"]


def fleet_day(capsys, gpu, *extra):
    assert main([*FLEET, "--gpu", gpu, *extra]) == 0
    out = result_of(capsys.readouterr().out)
    return out["day"]


def test_deepseek_day_reproduced_from_the_published_throughputs(capsys):
    # node-hours: tokens ÷ (tokens/s per node) ÷ 3600 s; cache hits count in prefill's published 73.7k/s
    node_hours = 608e9 / 73.7e3 / 3600 + 168e9 / 14.8e3 / 3600
    nodes = node_hours / 24
    cost = nodes * 8 * 2.0 * 24  # 8 H800 per node at $2 per GPU-hour
    revenue = (608e9 - 342e9) * 0.55 / 1e6 + 342e9 * 0.14 / 1e6 + 168e9 * 2.19 / 1e6  # R1: miss, hit, output
    margin = (revenue - cost) / cost
    assert (f"{nodes:.2f}", f"${cost:,.0f}", f"${revenue:,.0f}", f"{margin:.0%}") == (
        "226.86",
        "$87,116",
        "$562,100",
        "545%",
    )
    day = fleet_day(capsys, "h800", "--prefill-tps", "73.7e3", "--decode-tps", "14.8e3")
    assert day["average_nodes"] == pytest.approx(nodes, rel=1e-12)
    assert day["cost_usd_per_day"] == pytest.approx(cost, rel=1e-12)
    assert day["revenue_usd_per_day"] == pytest.approx(revenue, rel=1e-12)
    assert day["profit_over_cost"] == pytest.approx(margin, rel=1e-12)


# ---- docs/simulate.md ------------------------------------------------------------------------------------
def test_simulator_kv_cache_of_llama_8b_on_an_h100(capsys):
    """blocks = ⌊(0.9 × HBM − weights − activations(max_num_seqs 1024)) ÷ KV bytes of 16 tokens⌋."""
    weights = (L8_BODY + 2 * L8_VOCAB) * 2  # bf16
    activations = 8192 * 2 * (4 * 4096 + 2 * 14336) + 1024 * 128256 * 4  # one prefill chunk + fp32 logits per sequence
    kv_16 = 16 * 32 * 2 * 8 * 128 * 2  # 16 tokens × layers × (K, V) × KV heads × head dim × bf16
    blocks = math.floor((0.9 * H100_MEM - weights - activations) / kv_16)
    assert (blocks, blocks * 16) == (28_440, 455_040)
    assert main(["simulate", "llama-3.1-8b", "--gpu", "h100-sxm", "--rate", "20", "--requests", "5", "--json"]) == 0
    kv = result_of(capsys.readouterr().out)["kv_cache"]
    assert (kv["capacity_blocks"], kv["capacity_tokens"]) == (blocks, blocks * 16)


def test_md1_mean_wait_at_half_load_is_half_the_service_time():
    service = 0.0123  # any S
    mu, rho = 1 / service, 0.5
    assert rho / (2 * mu * (1 - rho)) == pytest.approx(service / 2, rel=1e-15)


# ---- the README's formula table, each row evaluated by hand once -------------------------------------
def test_formula_table_rows_by_hand():
    # attention FLOPs per attended token per layer: 2 · heads · (d_qk + d_v);
    # MLA decode (absorbed): 2 · heads · (2·r_kv + d_rope)
    l70, ds = load_model("llama-3.1-70b"), load_model("deepseek-v3")
    assert l70.attn_flops_per_ctx_token_per_layer_decode == 2 * 64 * (128 + 128) == 32_768
    assert ds.attn_flops_per_ctx_token_per_layer_prefill == 2 * 128 * ((128 + 64) + 128) == 81_920
    assert ds.attn_flops_per_ctx_token_per_layer_decode == 2 * 128 * (2 * 512 + 64) == 278_528
    # experts touched: E · (1 − (1 − k/E)^tokens): k at batch 1, → E at a large batch
    assert float(roofline.expected_experts_touched(8, 2, 1)) == pytest.approx(8 * (1 - (1 - 2 / 8) ** 1)) == 2
    assert float(roofline.expected_experts_touched(8, 2, 800)) == pytest.approx(8.0)
    # prefill attention: causal pairs Σ_{t ≤ T} min(t, window) per layer (no window: T(T+1)/2)
    assert float(l70.causal_attended_tokens(2000)) == 80 * 2000 * 2001 / 2
    # EP all-to-all: 2 per MoE layer of latency + (N−1)/N · (tokens/N) · k · d · 2 B ÷ (link · eff_link)
    qwen = Deployment.make(load_model("qwen3-30b-a3b"), load_accelerator("h100-sxm"), 4, layout="ep", efficiency=SCALAR)
    per_gpu = (4 - 1) / 4 * (64 / 4) * 8 * 2048 * 2  # 64 tokens in flight, top-8 of hidden 2048 in bf16
    seconds, sent = roofline.comm_time_s(qwen, 64.0)
    assert float(seconds) == pytest.approx(2 * 48 * (8e-6 + per_gpu / (LINK * 0.27)), rel=1e-12)
    assert float(sent) == 2 * 48 * per_gpu == 37_748_736
    # kernel time: max(c, m) + (1 − overlap) · min(c, m)
    dep = Deployment.make(load_model("llama-3.1-8b"), load_accelerator("h100-sxm"),
                          efficiency=Efficiency().updated(overlap=0.25))
    step = roofline.decode_step(dep, 8, 1024)
    c, m = float(step.linear_compute_s), float(step.weights_s)
    assert float(step.linear_s) == pytest.approx(max(c, m) + 0.75 * min(c, m), rel=1e-12)
