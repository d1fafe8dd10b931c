"""Data-parallel ranks behind a router (issue 12, item 3, step 1): per-rank schedulers, pools and merged metrics."""

from __future__ import annotations

import json

import numpy as np
import pytest

from kokuban.cli import main
from kokuban.errors import KokubanError
from kokuban.present.jsonout import read_result, to_json
from kokuban.sim import SchedulerConfig, StepModel, simulate, synthetic
from kokuban.sim.dataparallel import RankStepModel, route, simulate_data_parallel, subset
from kokuban.sim.kvcache import capacity_blocks
from kokuban.specs.catalog import load_accelerator, load_model
from kokuban.specs.deployment import Deployment
from kokuban.usecases.simulate import SimulateRequest, run_simulate


def ep2():
    return Deployment.make(load_model("qwen3-30b-a3b"), load_accelerator("h100-sxm"), 2, layout="ep")


def test_low_load_ranks_are_independent_md1_queues():
    """Random routing splits a Poisson stream of rate λ into N Poisson streams of rate λ/N. With one request
    running per rank (max_num_seqs 1) and every request one identical prefill step of D seconds (prompt P,
    one output token), each rank is an M/D/1 queue: mean wait W = ρ / (2μ(1 − ρ)) = ρ·D / (2(1 − ρ)), with
    μ = 1/D and ρ = (λ/N)·D. At ρ = 0.3: W = 0.3·D / 1.4 = 0.2143·D; mean TTFT = W + D."""
    dep, n, prompt = ep2(), 2, 512
    cfg = SchedulerConfig(max_num_seqs=1, prefix_caching=False)
    probe = simulate_data_parallel(dep, synthetic(2, float("inf"), prompt, 1, seed=0), cfg)
    d = float(probe.merged.e2e_s.min())  # the service time: one prefill step of 512 tokens on a rank
    rho = 0.3
    lam = rho * n / d
    run = simulate_data_parallel(dep, synthetic(40_000, lam, prompt, 1, seed=5), cfg, router="random", seed=7)
    service = run.merged.e2e_s - run.merged.queue_s
    assert np.ptp(service) < 1e-9 * d and service[0] == pytest.approx(d, rel=1e-9)  # deterministic service
    want = rho * d / (2 * (1 - rho))
    for rank in run.ranks:  # each rank: ~20,000 requests, its own M/D/1 queue
        assert rank.queue_s.mean() == pytest.approx(want, rel=0.1)
    assert run.merged.queue_s.mean() == pytest.approx(want, rel=0.07)
    assert run.merged.ttft_s.mean() == pytest.approx(want + d, rel=0.03)
    # round robin: each rank sees every N-th arrival (Erlang-N gaps, less bursty than Poisson): shorter waits
    rr = simulate_data_parallel(dep, synthetic(40_000, lam, prompt, 1, seed=5), cfg, router="round_robin")
    assert rr.merged.queue_s.mean() < run.merged.queue_s.mean()


def test_each_rank_has_its_own_limits_and_pool():
    dep, n = ep2(), 2
    cfg = SchedulerConfig(max_num_seqs=8, max_num_batched_tokens=1024).resolve(dep.accelerator)
    run = simulate_data_parallel(dep, synthetic(200, float("inf"), 300, 20, seed=1), cfg)
    # N ranks of max_num_seqs 8 run up to 8 each: merged per-step batches never exceed one rank's limit
    assert run.merged.step_batch.max() == 8 and all(r.step_batch.max() == 8 for r in run.ranks)
    assert all(r.step_tokens.max() <= 1024 for r in run.ranks)
    # the deployment's pool for N × 8 sequences, split in N equal per-rank pools
    per_rank = capacity_blocks(dep, 16, n * 8) // n
    assert [r.kv_capacity_blocks for r in run.ranks] == [per_rank, per_rank]
    assert run.merged.kv_capacity_blocks == n * per_rank
    # round robin: 200 requests → 100 each; the merged record keeps the workload's order
    assert [r.arrival_s.size for r in run.ranks] == [100, 100]
    assert run.merged.generated_tokens.sum() == 200 * 20
    # `kv_blocks` is one rank's pool (as an engine's log reports it)
    kv = simulate_data_parallel(dep, synthetic(10, 1.0, 300, 20), SchedulerConfig(kv_blocks=1000))
    assert [r.kv_capacity_blocks for r in kv.ranks] == [1000, 1000] and kv.merged.kv_capacity_blocks == 2000


def test_one_rank_is_the_plain_simulation():
    dep = Deployment.make(load_model("llama-3.1-8b"), load_accelerator("h100-sxm"))  # TP: one data-parallel rank
    wl = synthetic(300, 20.0, "lognormal:800,0.5", "uniform:20,200", seed=4)
    plain = simulate(dep, wl).summary()
    dp = simulate_data_parallel(dep, wl, router="random", seed=3)
    assert dp.merged.summary() == plain
    assert dp.ranks[0].summary() == plain


def test_rank_step_model_is_the_deployment_at_n_times_the_load():
    base = StepModel(ep2(), 2 * 64, 600)
    rank = RankStepModel(base, 2)
    attn, kv = base.one_chunk_terms(0, 40)
    # a rank's 40-token chunk = the deployment's step with two such chunks (80 tokens, 2 sampled)
    assert rank.seconds(40, 1, *rank.one_chunk_terms(0, 40)) == base.seconds(80, 2, 2 * attn, 2 * kv)
    ctx = np.array([[100, 200, 300], [101, 201, 301]])
    for row, s in zip(ctx, rank.decode_run_s(ctx), strict=True):  # the protocol's bit-for-bit rule
        assert s == rank.seconds(3, 3, *rank.decode_terms(row))


def test_router_checks():
    assert route(5, 2, "round_robin").tolist() == [0, 1, 0, 1, 0]
    with pytest.raises(KokubanError) as err:
        route(5, 2, "least_loaded")
    assert err.value.field == "router"
    with pytest.raises(KokubanError) as err:
        simulate_data_parallel(ep2(), synthetic(1, 1.0, 100, 5))
    assert err.value.field == "requests"
    with pytest.raises(KokubanError) as err:
        simulate_data_parallel(ep2(), synthetic(4, 1.0, 100, 5), SchedulerConfig(max_concurrency=2))
    assert err.value.field == "max_concurrency"


def test_cli_router_matches_the_use_case(capsys):
    args = ["simulate", "qwen3-30b-a3b", "--gpu", "h100-sxm", "--gpus", "2", "--layout", "ep", "--rate", "4",
            "--requests", "40", "--prompt", "300", "--output", "30", "--router", "round_robin", "--json"]
    assert main(args) == 0
    got = read_result(capsys.readouterr().out)
    want = run_simulate(SimulateRequest(model="qwen3-30b-a3b", gpu="h100-sxm", gpus=2, layout="ep", rate=4,
                                        requests=40, prompt="300", output="30", router="round_robin"))
    assert got == json.loads(to_json(want.as_dict()))
    assert got["router"] == "round_robin" and [r["requests"] for r in got["ranks"]] == [20, 20]
    assert sum(r["kv_cache"]["capacity_blocks"] for r in got["ranks"]) == got["kv_cache"]["capacity_blocks"]


def test_replicas_are_independent_copies_behind_the_router():
    dep = Deployment.make(load_model("llama-3.1-8b"), load_accelerator("h100-sxm"))  # TP: one rank per replica
    wl = synthetic(400, 30.0, "lognormal:800,0.5", "uniform:20,200", seed=6)
    run = simulate_data_parallel(dep, wl, replicas=2)
    # round robin over 2 replicas: replica 0 serves requests 0, 2, 4, …, exactly as one deployment would alone
    alone = simulate(dep, subset(wl, np.arange(0, 400, 2))).summary()
    assert run.ranks[0].summary() == alone
    s = run.merged.summary()
    # the merged run costs two deployments and counts their GPUs
    assert s["cost"]["usd_per_hour"] == pytest.approx(2 * dep.usd_per_s * 3600, rel=1e-12)
    assert s["throughput"]["output_tokens_per_s_per_gpu"] == pytest.approx(
        s["throughput"]["output_tokens_per_s"] / 2, rel=1e-12)
    assert s["deployment"].startswith("2 replicas of ")
    with pytest.raises(KokubanError) as err:
        simulate_data_parallel(dep, wl, replicas=0)
    assert err.value.field == "replicas"


def test_use_case_replicas_default_to_round_robin():
    sim = run_simulate(SimulateRequest(model="llama-3.1-8b", gpu="h100-sxm", rate=4, requests=30, prompt="200",
                                       output="10", replicas=3))
    d = sim.as_dict()
    assert d["router"] == "round_robin" and [r["requests"] for r in d["ranks"]] == [10, 10, 10]
