"""Closed-form checks of the serving simulator: queueing theory, the core's step model, saturation."""

from __future__ import annotations

import numpy as np
import pytest

from kokuban.core.generation import generation
from kokuban.core.roofline import decode_step_mixed, prefill
from kokuban.sim import SchedulerConfig, simulate, synthetic
from kokuban.sim.kvcache import capacity_blocks
from kokuban.sim.steptime import StepModel
from kokuban.specs.catalog import load_accelerator, load_model
from kokuban.specs.deployment import Deployment
from kokuban.specs.hardware import Efficiency


@pytest.fixture(scope="module")
def h100():
    return Deployment.make(load_model("llama-3.1-8b"), load_accelerator("h100-sxm"), efficiency=Efficiency.textbook())


def test_decode_only_step_is_the_cores_mixed_decode(h100):
    model = StepModel(h100, 4096, 5000)
    ctx = np.array([17, 900, 4000, 1234])
    got = model.step_time_s(4, ctx, np.zeros(0, np.int64), np.zeros(0, np.int64))
    assert got == pytest.approx(float(decode_step_mixed(h100, ctx).step_time_s), rel=1e-12)


def test_moe_step_pays_the_dispatch_time_of_its_own_token_count():
    # Under the kernel profile an MoE layer adds L_moe·(α + β·P) with P = tokens·top-k pairs: the simulator's
    # table must follow the step's token count (it once froze the term at its first entry, T = 0). The core's
    # mixed decode of 64 and of 4 requests is the reference; their overheads differ by L_moe·β·60·top-k.
    dep = Deployment.make(load_model("qwen3-30b-a3b"), load_accelerator("h100-sxm"),
                          efficiency=Efficiency.kernel_calibrated())
    model = StepModel(dep, 256, 3000)
    empty = np.zeros(0, np.int64)
    for n in (4, 64):
        ctx = np.full(n, 2000)
        want = decode_step_mixed(dep, ctx)
        assert model.step_time_s(n, ctx, empty, empty) == pytest.approx(float(want.step_time_s), rel=1e-12)
    m, k = dep.model, dep.efficiency.kernels
    gap = model.overhead_l[64] - model.overhead_l[4]
    assert gap == pytest.approx(m.moe_layers * k.moe_pair_s * 60 * m.top_k, rel=1e-9)
    assert gap > 0


def test_prefill_chunk_is_the_cores_prefill_with_cached_tokens(h100):
    model = StepModel(h100, 8192, 5000)
    empty = np.zeros(0, np.int64)
    # chunk [1000, 3000): 2000 new tokens after 1000 cached ones
    got = model.step_time_s(2000, empty, np.array([1000]), np.array([3000]))
    assert got == pytest.approx(float(prefill(h100, 1, 3000, 1000).step_time_s), rel=1e-12)
    # a whole prompt of 4096 tokens in one chunk
    got = model.step_time_s(4096, empty, np.array([0]), np.array([4096]))
    assert got == pytest.approx(float(prefill(h100, 1, 4096).step_time_s), rel=1e-12)


def test_md1_mean_wait_matches_queueing_theory(h100):
    # batch size one (max_num_seqs = 1), one-token outputs: each request is served by one prefill step of
    # 512 tokens, a fixed service time S. Poisson arrivals at λ = ρ/S with ρ = 0.5 make an M/D/1 queue:
    # Wq = ρ / (2μ(1 − ρ)) with μ = 1/S  →  Wq = 0.5·S / (2·0.5) = S/2.
    service_s = float(prefill(h100, 1, 512).step_time_s)
    rho = 0.5
    wl = synthetic(20_000, rho / service_s, 512, 1, seed=0)
    result = simulate(h100, wl, SchedulerConfig(max_num_seqs=1))
    expected_wq = rho * service_s / (2 * (1 - rho))
    assert result.queue_s.mean() == pytest.approx(expected_wq, rel=0.06)
    # and every service took exactly S
    assert np.allclose(result.step_s, service_s)


def test_saturated_waves_run_at_the_cores_generation_throughput(h100):
    # 640 identical requests at t = 0 with max_num_seqs = 64: continuous batching runs 10 waves of 64,
    # each a prefill of 64×32 tokens and 255 decodes, which is exactly estimate.generation(dep, 64, 32, 256).
    wl = synthetic(640, float("inf"), 32, 256)
    result = simulate(h100, wl, SchedulerConfig(max_num_seqs=64))
    gen = generation(h100, 64, 32, 256)
    assert result.summary()["throughput"]["output_tokens_per_s"] == pytest.approx(gen.output_tokens_per_s, rel=1e-6)


def test_kv_bound_saturation_lies_between_the_cores_throughput_at_the_kv_batches():
    # On one L4 (24 GB) Llama-3.1-8B leaves a small KV cache. A request of 32 + 512 tokens holds
    # ⌈543/16⌉ = 34 blocks at its end and ⌈(32 + 256)/16⌉ = 18 blocks at mid-life. Saturated continuous
    # batching keeps the cache full with requests of every age, so its decode-dominated throughput lies
    # between the core's generation throughput at B_end = ⌊blocks/34⌋ (every request at its longest)
    # and at B_mid = ⌊blocks/18⌋ (every request at the mean context).
    dep = Deployment.make(load_model("llama-3.1-8b"), load_accelerator("l4"))
    blocks = capacity_blocks(dep, 16, 256)
    b_end, b_mid = blocks // 34, blocks // 18
    wl = synthetic(6 * b_end, float("inf"), 32, 512)
    result = simulate(dep, wl, SchedulerConfig())
    got = result.summary()["throughput"]["output_tokens_per_s"]
    low, high = generation(dep, b_end, 32, 512), generation(dep, b_mid, 32, 512)
    assert low.output_tokens_per_s <= got <= high.output_tokens_per_s
    assert result.summary()["kv_cache"]["mean_occupancy"] > 0.75
