"""The `sglang` policy (sim/policies/sglang.py): SGLang 0.4.0.post1's admission check and prefill budget, by hand,
and what they do to a run: nobody admitted whose tokens the pool cannot hold to the end, and no new prefill tried
until a request finished (batch_is_full)."""

from __future__ import annotations

import numpy as np
import pytest

from kokuban.errors import KokubanError
from kokuban.sim import SchedulerConfig, simulate
from kokuban.sim.policies.sglang import (
    INIT_NEW_TOKEN_RATIO,
    MIN_NEW_TOKEN_RATIO,
    NEW_TOKEN_RATIO_DECAY,
    sglang_admits,
    sglang_budget_left,
)
from kokuban.sim.profiles import Overheads, launch_bound_s
from kokuban.sim.workload import synthetic
from kokuban.specs.catalog import load_accelerator, load_model
from kokuban.specs.deployment import Deployment


def test_admission_check_by_hand():
    # running (left 5, holding 50) and (10, 40); the candidate (20 left, its 10-token prompt): sorted L = 5, 10, 20,
    # O = 50, 40, 10, k = 3, r = free − 10. Needs r − L2·3 > 0, r + 50 − L3·2 > 0, r + 90 − L3·1 > 0:
    # the first binds: r > 30, i.e. free > 40
    # (the candidate is element 0 of the arrays)
    left, held = np.array([20, 5, 10]), np.array([10, 50, 40])
    assert not sglang_admits(40, 10, left, held)  # r = 30: 30 − 30 = 0, not > 0
    assert sglang_admits(41, 10, left, held)  # r = 31: 1, 31 + 50 − 40 = 41, 31 + 90 − 20 = 101
    # the code's D_i is the NEXT request's tokens left: one running request (1 left, holding 100), a candidate with
    # 40 left and a 10-token prompt, 60 free: r = 50, 50 − 40·2 = −30, refused (with D_i = L_i it would pass:
    # 50 − 1·2 = 48 and 50 + 100 − 40 = 110)
    assert not sglang_admits(60, 10, np.array([40, 1]), np.array([10, 100]))
    # a request with nothing left is left out: (0 left, holding 500) does not count as running
    assert sglang_admits(41, 10, np.array([20, 5, 10, 0]), np.array([10, 50, 40, 500]))
    # ties: the candidate sorts FIRST among equals, as SGLang inserts it. Candidate (10 left, holding 10), running
    # (10, 500) and (100, 20), 110 free, 10-token prompt: r = 100; order candidate, (10, 500), (100, 20):
    # 100 − 10·3 = 70, then 100 + 10 − 100·2 = −90: refused. (Candidate after its equal: 70, 100 + 500 − 200 =
    # 400, 100 + 510 − 100 = 510: admitted — the order matters.)
    assert not sglang_admits(110, 10, np.array([10, 10, 100]), np.array([10, 500, 20]))


def test_prefill_budget_and_new_token_ratio_by_hand():
    # 1,000 free − 0.5 × (100 + min(5,000, 4,096)) − 300 admitted outputs = 1,000 − 2,098 − 300 = −1,398
    assert sglang_budget_left(1000, 0.5, np.array([100, 5000]), 300) == -1398
    # SGLang's defaults: 0.7 falling to 0.7 × 0.14 = 0.098 over 600 decode batches, (0.7 − 0.098) / 600 each
    assert (INIT_NEW_TOKEN_RATIO, round(MIN_NEW_TOKEN_RATIO, 12)) == (0.7, 0.098)
    assert abs(NEW_TOKEN_RATIO_DECAY - 0.602 / 600) < 1e-15


def test_admission_keeps_the_running_set_inside_the_pool():
    """A 1,000-token pool (1-token pages), ten requests of 100 prompt and 300 output tokens at t = 0. The first is
    admitted (r = 900: 900 − 300 > 0), the second too (r = 800: 800 − 300·2 = 200 > 0, 800 + 100 − 300 > 0; the
    budget after the first, 900 free − 300 outputs = 600, is > 0), the third not (r = 700: 700 − 300·3 < 0):
    two run at a time, every pair finishing before the next starts, and nobody is preempted. Without the check
    (`prefill_first`: blocks for the prompt only) all ten prompts fit the pool and the decodes run out of blocks."""
    dep = Deployment.make(load_model("llama-3.1-8b"), load_accelerator("h100-sxm"))
    wl = synthetic(10, float("inf"), 100, 300, seed=0)
    cfg = SchedulerConfig(policy="sglang", block_size=1, kv_blocks=1000, max_num_seqs=64, max_num_batched_tokens=8192)
    run = simulate(dep, wl, cfg)
    assert run.step_batch.max() == 2 and run.preemptions.sum() == 0
    # five pairs, each 1 prefill step + 299 decode steps: 1,500 steps
    assert run.step_s.size == 5 * 300
    base = simulate(dep, wl, SchedulerConfig(policy="prefill_first", block_size=1, kv_blocks=1000, max_num_seqs=64,
                                             max_num_batched_tokens=8192))
    assert base.step_batch.max() == 10 and base.preemptions.sum() > 0


def test_steps_run_eagerly_last_at_least_their_launches():
    """`launch_bound_s` with a graph for decode batches up to 160 and 1 ms of launches per layer, 80 layers: a decode
    batch of 160 keeps its 30 ms (the graph); one of 161 lasts max(30 ms, 80 × 1 ms) = 80 ms; a 200-ms one stays
    200 ms (the GPU is the longer); a prefill step (not a decode) of 30 ms lasts 80 ms whatever its batch."""
    o = Overheads(graph_max_batch=160, eager_per_layer_s=1e-3)
    assert launch_bound_s(0.030, 80, 160, True, o) == 0.030
    assert launch_bound_s(0.030, 80, 161, True, o) == 0.080
    assert launch_bound_s(0.200, 80, 161, True, o) == 0.200
    assert launch_bound_s(0.030, 80, 1, False, o) == 0.080
    assert np.array_equal(launch_bound_s(np.array([0.03, 0.2]), 80, 161, True, o), [0.08, 0.2])
    assert launch_bound_s(0.030, 80, 161, False, Overheads()) == 0.030  # no term: the step as it is
    for bad in (-1, True, 1.5):  # a bool is not a batch size
        with pytest.raises(KokubanError) as err:
            Overheads(graph_max_batch=bad)
        assert err.value.field == "graph_max_batch"


def test_the_engine_applies_the_launch_floor_and_event_skipping_agrees():
    """Through the engine: 8 requests of 100 prompt and 50 output tokens at t = 0, no graph at all (graph_max_batch
    0) and a floor of 1 s per layer: every step lasts 32 layers × 1 s = 32 s (the GPU's take milliseconds), whether
    the engine times it one by one (`seconds`) or skips events (`decode_run_s`)."""
    dep = Deployment.make(load_model("llama-3.1-8b"), load_accelerator("h100-sxm"))
    wl = synthetic(8, float("inf"), 100, 50, seed=0)
    floor = Overheads(eager_per_layer_s=1.0)
    run = simulate(dep, wl, SchedulerConfig(policy="sglang", block_size=1, overheads=floor))
    # one prefill step of the 8 prompts (their first tokens), then 49 decode steps: 50 steps, each 32 s
    assert run.step_s.size == 50 and np.allclose(run.step_s, 32.0) and run.duration_s == pytest.approx(50 * 32.0)
