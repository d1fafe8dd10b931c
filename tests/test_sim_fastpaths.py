"""The simulator's fast paths (steady decode steps, event skipping) give exactly the general path's results."""

from __future__ import annotations

import numpy as np
import pytest

from kokuban.core.roofline import decode_step_mixed
from kokuban.sim import SchedulerConfig, simulate, synthetic
from kokuban.sim.decoderun import plan_decode_run
from kokuban.sim.engine import Engine
from kokuban.sim.steptime import StepModel
from kokuban.specs.catalog import load_accelerator, load_model
from kokuban.specs.deployment import Deployment
from kokuban.specs.hardware import Efficiency

EMPTY = np.zeros(0, np.int64)


@pytest.fixture(scope="module")
def h100():
    return Deployment.make(load_model("llama-3.1-8b"), load_accelerator("h100-sxm"))


@pytest.mark.parametrize("overlap,hidden,kernels", [(False, 1.0, False), (True, 1.0, False), (False, 0.3, False),
                                                    (False, 1.0, True), (True, 1.0, True)])
def test_float_step_time_is_the_cores(overlap, hidden, kernels):
    # 8 GPUs of tensor parallelism: communication is a real term, and with overlap it enters the max();
    # hidden < 1: part of each kernel's shorter time shows (Efficiency.overlap); the kernel profile adds the TP group's
    # barrier wait (the body × 1.14), which the float path and the core must multiply alike
    eff = Efficiency.shipped() if kernels else Efficiency(overlap=hidden)
    dep = Deployment.make(load_model("llama-3.1-70b"), load_accelerator("h100-sxm"), 8, overlap_comm=overlap,
                          efficiency=eff)
    assert (decode_step_mixed(dep, [5]).sync_loss > 0) == kernels
    model = StepModel(dep, 512, 5000)
    ctx = np.array([17, 900, 4000, 1234, 2])
    core = float(decode_step_mixed(dep, ctx).step_time_s)
    assert model.step_time_s(5, ctx, EMPTY, EMPTY) == pytest.approx(core, rel=1e-12)
    attn, kv = model.decode_terms(ctx)
    one = model.seconds(5, 5, attn, kv)
    many = model.decode_run_s(np.array([ctx, ctx]))
    assert one == pytest.approx(core, rel=1e-12)
    assert many.tolist() == [one, one]  # the vectorised form is the same arithmetic, bit for bit
    rng = np.random.default_rng(0)  # and on many steps: one rounding of body·(1 + ℓ) + overhead in both
    runs = rng.integers(1, 5000, size=(300, 5))
    assert model.decode_run_s(runs).tolist() == [model.seconds(5, 5, *model.decode_terms(c)) for c in runs]


def test_decode_run_by_hand(h100):
    model = StepModel(h100, 64, 64)
    # blocks of 4 tokens. A: context 5 (4 computed in 1 block), 1 token left; B: context 8 (2 blocks), 3 left.
    # step 0: A needs ⌈5/4⌉ = 2 blocks (takes 1), B ⌈8/4⌉ = 2: in use 2 + 2 = 4; A finishes and frees its 2.
    # step 1: B at 9 needs ⌈9/4⌉ = 3 (takes 1): in use 3.  step 2: B at 10, still 3 blocks.
    ctx, owned, left = np.array([5, 8]), np.array([1, 2]), np.array([1, 3])
    run = plan_decode_run(model, 4, ctx, owned, left, 3, 10, 1.0, np.inf, 10)
    assert run.steps == 3
    assert run.batch.tolist() == [2, 1, 1]
    assert run.used_blocks.tolist() == [4, 3, 3]
    assert run.owned.tolist() == [2, 3]
    expected = [model.step_time_s(2, np.array([5, 8]), EMPTY, EMPTY), model.step_time_s(1, np.array([9]), EMPTY, EMPTY),
                model.step_time_s(1, np.array([10]), EMPTY, EMPTY)]
    assert run.step_s.tolist() == expected
    assert run.start_s.tolist() == [1.0, 1.0 + expected[0], 1.0 + expected[0] + expected[1],
                                    1.0 + expected[0] + expected[1] + expected[2]]
    # an arrival at the start of step 2 ends the run after step 1; one at step 1's start, after step 0
    assert plan_decode_run(model, 4, ctx, owned, left, 3, 10, 1.0, run.start_s[2], 10).steps == 2
    assert plan_decode_run(model, 4, ctx, owned, left, 3, 10, 1.0, run.start_s[1], 10).steps == 1
    # a pool of 3 blocks cannot give step 0 its 4: no run (the engine preempts in a normal step)
    assert plan_decode_run(model, 4, ctx, owned, left, 3, 3, 1.0, np.inf, 10) is None


FIELDS = ("arrival_s", "first_scheduled_s", "first_token_s", "finish_s", "preemptions", "cached_tokens", "itl_values_s",
          "itl_weights", "step_start_s", "step_s", "step_tokens", "step_batch", "step_decodes", "step_kv_blocks")


@pytest.mark.parametrize("rate, cfg, kv_blocks", [
    (4.0, SchedulerConfig(), None),  # long pure-decode stretches between arrivals: event skipping
    (60.0, SchedulerConfig(max_num_batched_tokens=1024), None),  # chunked prompts, steady steps
    (float("inf"), SchedulerConfig(), 2000),  # KV-bound: preemption
    (20.0, SchedulerConfig(policy="static", batch_timeout_s=0.5, max_num_seqs=32), None),
    (float("inf"), SchedulerConfig(max_concurrency=16), None),
    (30.0, SchedulerConfig(policy="prefill_first"), 3000),
])
def test_fast_paths_give_the_general_paths_results(h100, monkeypatch, rate, cfg, kv_blocks):
    wl = synthetic(300, rate, "uniform:100,1500", "uniform:1,300", seed=3)
    fast = simulate(h100, wl, cfg, kv_blocks=kv_blocks)
    monkeypatch.setattr(Engine, "_decode_run", lambda self, t: 0)
    monkeypatch.setattr(Engine, "_steady_step", lambda self, t: None)
    general = simulate(h100, wl, cfg, kv_blocks=kv_blocks)
    for name in FIELDS:
        assert np.array_equal(getattr(fast, name), getattr(general, name), equal_nan=True), name
    assert fast.end_s == general.end_s
