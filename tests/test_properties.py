"""Physics that must hold for every model, accelerator and size (hypothesis)."""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from kokuban.core import memory, roofline
from kokuban.specs.catalog import load_accelerator, load_model
from kokuban.specs.deployment import Deployment

MODELS = [
    "llama-3.1-8b",
    "llama-3.1-70b",
    "mixtral-8x7b",
    "qwen3-30b-a3b",
    "deepseek-v3",
    "gpt-oss-120b",
    "gemma-3-27b",
    "phi-3-mini",
    "llama-4-scout",
    "qwen3-next-80b-a3b",
    "nemotron-h-8b",
]
GPUS = ["h100-sxm", "h200", "mi300x", "b200", "l40s"]

deployments = st.builds(
    lambda m, g, n, w, kv: Deployment.make(load_model(m), load_accelerator(g), n, weights_dtype=w, kv_dtype=kv),
    st.sampled_from(MODELS), st.sampled_from(GPUS), st.sampled_from([1, 2, 4, 8]),
    st.sampled_from(["bf16", "fp8", "int4", "fp4"]), st.sampled_from(["bf16", "fp8"]),
)
batches = st.integers(min_value=1, max_value=4096)
contexts = st.integers(min_value=1, max_value=1_000_000)
SETTINGS = settings(max_examples=60, deadline=None)


@SETTINGS
@given(deployments, batches, contexts, contexts)
def test_more_context_never_faster(dep, b, c1, c2):
    lo, hi = sorted((c1, c2))
    assert roofline.decode_step(dep, b, hi).step_time_s >= roofline.decode_step(dep, b, lo).step_time_s


@SETTINGS
@given(deployments, batches, batches, contexts)
def test_more_batch_never_raises_weight_read_per_token(dep, b1, b2, c):
    lo, hi = sorted((b1, b2))
    a, z = roofline.decode_step(dep, lo, c), roofline.decode_step(dep, hi, c)
    assert z.weight_bytes / hi <= a.weight_bytes / lo * (1 + 1e-12)
    assert z.step_time_s >= a.step_time_s  # a bigger batch never makes the step itself shorter
    assert z.step_time_s / hi <= a.step_time_s / lo * (1 + 1e-12)  # but never makes a token dearer


@SETTINGS
@given(deployments, batches, contexts)
def test_compute_and_kv_are_per_request(dep, b, c):
    one, many = roofline.decode_step(dep, 1, c), roofline.decode_step(dep, b, c)
    assert np.isclose(many.kv_bytes, b * one.kv_bytes)
    assert np.isclose(many.flops, b * one.flops)


@SETTINGS
@given(deployments, contexts, contexts)
def test_kv_bytes_monotone_and_windows_cap(dep, c1, c2):
    lo, hi = sorted((c1, c2))
    m = dep.model
    kv_lo, kv_hi = roofline.kv_bytes_per_request(dep, lo), roofline.kv_bytes_per_request(dep, hi)
    assert kv_hi >= kv_lo
    # never more than every attention layer keeping every token, never less than the global layers keeping
    # them; plus the constant linear-attention state (0 for models without one)
    state = roofline.state_bytes_per_request(dep)
    assert kv_hi <= (m.kv_elements_per_token * hi * dep.kv_bytes_per_element + state) * (1 + 1e-12)
    assert kv_hi >= (m.kv_elements_per_token_global * hi * dep.kv_bytes_per_element + state) * (1 - 1e-12)


@SETTINGS
@given(st.integers(1, 512), st.integers(1, 16), st.integers(1, 10_000), st.integers(1, 10_000))
def test_experts_touched_bounds(e, k, t1, t2):
    k = min(k, e)
    lo, hi = sorted((t1, t2))
    a, z = roofline.expected_experts_touched(e, k, lo), roofline.expected_experts_touched(e, k, hi)
    assert k - 1e-9 <= a <= z + 1e-9
    assert z <= min(e, k * hi) + 1e-9


@SETTINGS
@given(deployments, contexts, contexts)
def test_max_batch_never_grows_with_context(dep, c1, c2):
    lo, hi = sorted((c1, c2))
    assert memory.max_batch(dep, hi) <= memory.max_batch(dep, lo)


@SETTINGS
@given(deployments, st.integers(1, 64), st.integers(1, 200_000), st.integers(1, 200_000))
def test_longer_prompt_never_prefills_faster(dep, b, t1, t2):
    lo, hi = sorted((t1, t2))
    assert roofline.prefill(dep, b, hi).step_time_s >= roofline.prefill(dep, b, lo).step_time_s


@SETTINGS
@given(st.sampled_from(MODELS), st.sampled_from(GPUS), batches, contexts)
def test_more_gpus_never_slower_memory_reads(model, gpu, b, c):
    m, acc = load_model(model), load_accelerator(gpu)
    times = [float(roofline.decode_step(Deployment.make(m, acc, n), b, c).memory_s) for n in (1, 2, 4, 8)]
    assert all(x >= y * (1 - 1e-12) for x, y in itertools.pairwise(times))


@SETTINGS
@given(deployments, batches, contexts)
def test_max_batch_fits_and_one_more_does_not(dep, b, c):
    mb = int(memory.max_batch(dep, c))
    if mb >= 1 and dep.layout == "tp":
        assert memory.plan(dep, mb, c).fits
        assert not memory.plan(dep, mb + 1, c).fits


@SETTINGS
@given(deployments, batches, contexts)
def test_step_lies_between_one_max_and_the_sum(dep, b, c):
    # two kinds of kernels, each max(compute, memory), one after the other: never faster than a single max over
    # everything, never slower than every time added up (these deployments add communication, never overlap it);
    # a TP group on NVLink waits a share ℓ of that body at its barriers (`roofline.tp_sync_loss`), both bounds × (1 + ℓ)
    s = roofline.decode_step(dep, b, c)
    wait = 1.0 + s.sync_loss
    lo = np.maximum(s.compute_s, s.memory_s)
    assert s.step_time_s >= (lo + s.comm_s) * wait + s.overhead_s - 1e-15
    assert s.step_time_s <= (s.compute_s + s.memory_s + s.comm_s) * wait + s.overhead_s + 1e-15


@SETTINGS
@given(
    deployments, batches, contexts, st.floats(0.05, 1.0), st.floats(0.05, 1.0), st.floats(0.0, 1.0), st.floats(0.0, 1.0)
)
def test_lower_fractions_never_make_a_step_faster(dep, b, c, kv1, kv2, ov1, ov2):
    # a slower KV read or less compute/memory overlap can only lengthen a step
    def step(kv: float, ov: float) -> float:
        d = Deployment.make(
            dep.model,
            dep.accelerator,
            dep.num_gpus,
            layout=dep.layout,
            weights_dtype=dep.weights_dtype,
            kv_dtype=dep.kv_dtype,
            efficiency=dep.efficiency.updated(kv_memory=kv, overlap=ov),
        )
        return float(roofline.decode_step(d, b, c).step_time_s)

    (kv_lo, kv_hi), (ov_lo, ov_hi) = sorted((kv1, kv2)), sorted((ov1, ov2))
    assert step(kv_lo, ov_hi) >= step(kv_hi, ov_hi) * (1 - 1e-12)
    assert step(kv_hi, ov_lo) >= step(kv_hi, ov_hi) * (1 - 1e-12)
