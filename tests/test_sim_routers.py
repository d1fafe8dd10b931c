"""Routers that read the ranks' state (issue 12 item 3): least outstanding requests and prefix-cache aware, with
the ranks' engines stepped together in time order (`dataparallel.run_routed`)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sim_helpers import h100_8b, workload

from kokuban.cli import main
from kokuban.errors import KokubanError
from kokuban.sim import SchedulerConfig, StepModel, synthetic
from kokuban.sim.dataparallel import (
    Feed,
    RankStepModel,
    RoutedClient,
    choose_rank,
    run_routed,
    simulate_data_parallel,
    take,
)
from kokuban.sim.engine import build_engine
from kokuban.sim.kvcache import capacity_blocks
from kokuban.specs.catalog import load_accelerator, load_model
from kokuban.specs.deployment import Deployment


def test_stepped_together_equals_the_split_path():
    """The routed loop with a router that ignores the state (request i → rank i mod N) serves every request
    exactly as the split path's N independent engines do: stepping the engines together changes nothing."""
    dep, n = h100_8b(), 3
    wl = synthetic(300, 30.0, "lognormal:800,0.8", "uniform:10,300", seed=3)
    cfg = SchedulerConfig(max_num_seqs=16, max_num_batched_tokens=2048).resolve(dep.accelerator)
    split = simulate_data_parallel(dep, wl, cfg, router="round_robin", replicas=n)
    feed, arrival = Feed(), wl.arrival_s.tolist()
    clients = [RoutedClient(wl.arrival_s, arrival, feed) for _ in range(n)]
    blocks = capacity_blocks(dep, cfg.block_size, cfg.max_num_seqs)
    model = RankStepModel(StepModel(dep, int(cfg.max_num_batched_tokens), int((wl.prompt_tokens + wl.output_tokens)
                                                                               .max())), 1)
    engines = [build_engine(dep, wl, cfg, kv_blocks=blocks, step_model=model, client=c) for c in clients]
    owner, ends = run_routed(engines, clients, feed, wl, lambda outstanding, i, *rest: i % n)
    assert (owner == np.arange(len(wl)) % n).all()
    for r in range(n):
        mine = take(engines[r].record(ends[r]), np.flatnonzero(owner == r))
        want = split.ranks[r]
        for name in ("first_scheduled_s", "first_token_s", "finish_s"):
            np.testing.assert_allclose(getattr(mine, name), getattr(want, name), rtol=1e-12, atol=0)
        np.testing.assert_allclose(mine.step_start_s, want.step_start_s, rtol=1e-12, atol=0)


def test_one_rank_least_outstanding_is_an_md1_queue():
    """One rank behind the router: Poisson arrivals of rate λ, one request running at a time (max_num_seqs 1),
    every request one identical prefill step of D seconds (prompt 512, one output token): an M/D/1 queue, mean
    wait W = ρ·D / (2(1 − ρ)) at ρ = λ·D. At ρ = 0.3: W = 0.3·D / 1.4 = 0.2143·D."""
    dep = h100_8b()
    cfg = SchedulerConfig(max_num_seqs=1, prefix_caching=False)
    d = float(simulate_data_parallel(dep, synthetic(2, float("inf"), 512, 1, seed=0), cfg).merged.e2e_s.min())
    rho = 0.3
    run = simulate_data_parallel(dep, synthetic(20_000, rho / d, 512, 1, seed=5), cfg, router="least_outstanding")
    assert run.merged.queue_s.mean() == pytest.approx(rho * d / (2 * (1 - rho)), rel=0.1)


def test_least_outstanding_beats_independent_md1_queues():
    """N = 2 ranks, per-rank load ρ = 0.3 (arrival rate 2ρ/D): random splitting makes two independent M/D/1
    queues (mean wait ρ·D / (2(1 − ρ)) = 0.2143·D, checked in test_sim_dataparallel); least outstanding sends each
    arrival to an idle rank when there is one, so a request waits only when both ranks are busy: far less."""
    dep = Deployment.make(load_model("qwen3-30b-a3b"), load_accelerator("h100-sxm"), 2, layout="ep")
    cfg = SchedulerConfig(max_num_seqs=1, prefix_caching=False)
    d = float(simulate_data_parallel(dep, synthetic(2, float("inf"), 512, 1, seed=0), cfg).merged.e2e_s.min())
    rho = 0.3
    wl = synthetic(20_000, 2 * rho / d, 512, 1, seed=5)
    md1 = rho * d / (2 * (1 - rho))
    lo = simulate_data_parallel(dep, wl, cfg, router="least_outstanding").merged
    rnd = simulate_data_parallel(dep, wl, cfg, router="random", seed=7).merged
    assert rnd.queue_s.mean() == pytest.approx(md1, rel=0.07)
    assert lo.queue_s.mean() < 0.5 * md1
    assert lo.ttft_s.mean() < rnd.ttft_s.mean()


@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 10_000), ranks=st.integers(2, 3), seqs=st.integers(2, 5), long=st.integers(300, 600),
       short=st.integers(2, 10), load=st.floats(0.2, 0.9))
def test_least_outstanding_not_worse_than_round_robin_on_skew(seed, ranks, seqs, long, short, load):
    """A skewed workload that round robin serves badly: every N-th request is long (round robin sends all the
    long ones to rank 0), offered at `load` × the ranks' capacity (about 8 ms per decode step, `seqs` at a time).
    Least outstanding's mean TTFT is never worse than round robin's by more than 10 ms (two steps or so).
    Strictly "never worse" does not hold: hypothesis found light-load cases where mixing long and short requests
    on every rank costs ~0.3 ms of step time, and an overloaded one 4 ms worse on 5.25 s."""
    rng = np.random.default_rng(seed)
    n = 60
    rate = load * ranks * seqs / ((long + (ranks - 1) * short) / ranks * 0.008)
    wl = workload(np.cumsum(rng.exponential(1 / rate, n)), rng.integers(100, 800, n),
                  np.where(np.arange(n) % ranks == 0, long, short))
    cfg = SchedulerConfig(max_num_seqs=seqs, prefix_caching=False)
    dep = h100_8b()
    rr = simulate_data_parallel(dep, wl, cfg, router="round_robin", replicas=ranks).merged
    lo = simulate_data_parallel(dep, wl, cfg, router="least_outstanding", replicas=ranks).merged
    assert lo.ttft_s.mean() <= rr.ttft_s.mean() + 0.010
    assert np.isfinite(lo.finish_s).all() and lo.generated_tokens.sum() == wl.output_tokens.sum()


def test_least_outstanding_wins_under_skew_at_load():
    """The same skew at 0.7 of capacity (2 ranks, max_num_seqs 4, outputs alternating 500 and 5 tokens): round
    robin piles every long request on rank 0, whose queue grows; least outstanding spreads them."""
    rng = np.random.default_rng(1)
    n, rate = 200, 0.7 * 2 * 4 / ((500 + 5) / 2 * 0.008)
    wl = workload(np.cumsum(rng.exponential(1 / rate, n)), rng.integers(100, 800, n),
                  np.where(np.arange(n) % 2 == 0, 500, 5))
    cfg = SchedulerConfig(max_num_seqs=4, prefix_caching=False)
    rr = simulate_data_parallel(h100_8b(), wl, cfg, router="round_robin", replicas=2).merged
    lo = simulate_data_parallel(h100_8b(), wl, cfg, router="least_outstanding", replicas=2).merged
    assert lo.ttft_s.mean() < 0.5 * rr.ttft_s.mean()


def test_prefix_aware_keeps_a_prefix_on_its_rank():
    """Two replicas, requests 1 s apart (each done in well under 1 s, so both ranks are idle at every arrival).
    Requests 0, 1 and 3 share prefix key 7: 1,024 of their 1,100 prompt tokens (match 0.93 > 0.5).
        prefix_aware   0 → rank 0 (no key placed yet; the idle ranks tie, broken round robin from i = 0: rank 0);
                       1 → rank 0 (key 7 is there); 2 (no key) → tie from i = 2: rank 0; 3 → rank 0 (key 7);
                       4 (no key) → tie from i = 4: rank 0; 5 → tie from i = 5: rank 1
        round robin    i mod 2: requests 1 and 3 land on rank 1
    A request on the rank holding the prefix reuses ⌊1,024 ÷ 16⌋ = 64 blocks = 1,024 tokens; on the other rank it
    computes everything, unless a request of that key ran there before (round robin: request 3 after 1)."""
    wl = workload(np.arange(6.0), [1100] * 6, [2] * 6, key=[7, 7, -1, 7, -1, -1], prefix=[1024, 1024, 0, 1024, 0, 0])
    dep, cfg = h100_8b(), SchedulerConfig()
    pa = simulate_data_parallel(dep, wl, cfg, router="prefix_aware", replicas=2)
    assert [len(r.arrival_s) for r in pa.ranks] == [5, 1]
    assert pa.ranks[1].arrival_s.tolist() == [5.0]
    assert pa.merged.cached_tokens.tolist() == [0, 1024, 0, 1024, 0, 0]
    rr = simulate_data_parallel(dep, wl, cfg, router="round_robin", replicas=2)
    assert rr.merged.cached_tokens.tolist() == [0, 0, 0, 1024, 0, 0]
    assert pa.merged.ttft_s[1] < rr.merged.ttft_s[1]


def test_prefix_aware_balances_when_imbalanced():
    """sglang-router's rule: ranks count as imbalanced when max − min outstanding > 32 and max > 1.0001·min; then
    the least outstanding rank wins over the cached one."""
    placed = {7: 0}
    assert choose_rank("prefix_aware", [32, 0], 5, 7, 0.9, placed) == 0  # 32 − 0 is not > 32: cache affinity
    assert choose_rank("prefix_aware", [33, 0], 5, 7, 0.9, placed) == 1  # imbalanced: least outstanding
    assert choose_rank("prefix_aware", [3, 0], 5, 7, 0.4, placed) == 1  # match 0.4 ≤ 0.5: least outstanding
    assert choose_rank("least_outstanding", [1, 1, 0], 0, -1, 0.0, placed) == 2
    assert choose_rank("least_outstanding", [1, 1, 1], 4, -1, 0.0, placed) == 1  # ties: round robin from 4 mod 3


def test_an_empty_rank_is_a_one_line_error():
    wl = workload([0.0, 1.0, 2.0], [1100] * 3, [2] * 3, key=[7] * 3, prefix=[1024] * 3)
    with pytest.raises(KokubanError, match="prefix_aware kept every request elsewhere"):
        simulate_data_parallel(h100_8b(), wl, SchedulerConfig(), router="prefix_aware", replicas=2)


def test_cli_router_flag(capsys):
    args = ["simulate", "llama-3.1-8b", "--gpu", "h100-sxm", "--rate", "20", "--requests", "200", "--replicas", "2",
            "--router", "least_outstanding", "--json"]
    assert main(args) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["router"] == "least_outstanding" and len(out["ranks"]) == 2
    assert out["requests"] == 200


def test_capacity_takes_the_router(capsys):
    """`capacity --router` searches the rate of the deployment's ranks behind the router: every trial is the
    merged run of the 2 ranks (its p99s are those of `simulate --router` at that rate)."""
    args = ["capacity", "qwen3-30b-a3b", "--gpu", "h100-sxm", "--gpus", "2", "--layout", "ep", "--router",
            "least_outstanding", "--requests", "100", "--prompt", "500", "--output", "50", "--ttft-p99", "1",
            "--tpot-p99", "0.1", "--workers", "1", "--json"]
    assert main(args) == 0
    out = json.loads(capsys.readouterr().out)
    trial = out["trials"][0]
    sim = ["simulate", "qwen3-30b-a3b", "--gpu", "h100-sxm", "--gpus", "2", "--layout", "ep", "--router",
           "least_outstanding", "--requests", "100", "--prompt", "500", "--output", "50", "--rate",
           repr(trial["rate_per_s"]), "--json"]
    assert main(sim) == 0
    s = json.loads(capsys.readouterr().out)
    assert s["latency_s"]["ttft"]["p99"] == pytest.approx(trial["ttft_p99_s"], rel=1e-12)
    assert s["router"] == "least_outstanding"


def test_router_counts_a_step_in_flight_as_outstanding():
    """Request 0 (an 8,000-token prompt, one output token) keeps rank 0 busy in one long prefill step; request 1
    (100 tokens) at 10 ms goes to the idle rank 1 and is done within ~10 ms; request 2 at 50 ms finds rank 0 still
    in that step (1 outstanding) and rank 1 idle (0): least outstanding sends it to rank 1, where round robin
    (2 mod 2) sends it to rank 0. (Seeing rank 0 as at the end of its step would count request 0 finished.)"""
    wl = workload([0.0, 0.01, 0.05], [8000, 100, 100], [1, 1, 1])
    dep, cfg = h100_8b(), SchedulerConfig(prefix_caching=False)
    lo = simulate_data_parallel(dep, wl, cfg, router="least_outstanding", replicas=2)
    assert lo.merged.first_token_s[0] > 0.05  # the long step is still running at request 2's arrival
    assert lo.ranks[1].arrival_s.tolist() == [0.01, 0.05]
    rr = simulate_data_parallel(dep, wl, cfg, router="round_robin", replicas=2)
    assert rr.ranks[0].arrival_s.tolist() == [0.0, 0.05]
