"""Disaggregated prefill/decode pools (issue 12 item 3's next step): `--disaggregate P:D`, the KV of every prompt
sent from the prefill pool to the decode pool in b ÷ BW + latency."""

from __future__ import annotations

import json

import numpy as np
import pytest

from kokuban.cli import main
from kokuban.sim import SchedulerConfig, simulate, synthetic
from kokuban.sim.disaggregated import kv_transfer_seconds, simulate_disaggregated
from kokuban.sim.workload import Workload
from kokuban.specs.catalog import load_accelerator, load_model
from kokuban.specs.deployment import Deployment


def h100_8b():
    return Deployment.make(load_model("llama-3.1-8b"), load_accelerator("h100-sxm"))


def one(arrival, prompt, output) -> Workload:
    n = len(arrival)
    return Workload(np.asarray(arrival, np.float64), np.asarray(prompt, np.int64), np.asarray(output, np.int64),
                    np.full(n, -1, np.int64), np.zeros(n, np.int64), np.zeros(n, bool), "test")


def test_transfer_by_hand():
    # Llama-3.1-8B: 131,072 bytes of KV per token; a 1,000-token prompt is 131,072,000 bytes; over the H100's
    # 450e9 bytes/s NVLink per direction (one KV shard at TP1): 131,072,000 ÷ 450e9 = 291.27 µs, + 2 ms latency
    assert kv_transfer_seconds(np.array([131_072_000.0]), 450e9, 2e-3)[0] == pytest.approx(2.291271e-3, rel=1e-6)
    run = simulate_disaggregated(h100_8b(), one([0.0], [1000], [50]), SchedulerConfig(), latency_s=2e-3)
    assert run.transfer_s[0] == pytest.approx(131_072_000 / 450e9 + 2e-3, rel=1e-12)


def test_one_request_pays_the_transfer_once():
    """A request alone: colocated, it prefills then decodes 49 steps at batch 1; disaggregated, the same prefill
    step on the prefill pool, the transfer, then the same 49 decode steps on the decode pool. TTFT is the same;
    E2E grows by exactly the transfer (2.2913 ms); the first inter-token gap holds it."""
    dep, wl = h100_8b(), one([0.0], [1000], [50])
    co = simulate(dep, wl, SchedulerConfig())
    run = simulate_disaggregated(dep, wl, SchedulerConfig(), latency_s=2e-3)
    d = run.merged
    assert d.ttft_s[0] == co.ttft_s[0]
    assert d.e2e_s[0] - co.e2e_s[0] == pytest.approx(run.transfer_s[0], rel=1e-9)
    assert d.generated_tokens[0] == 50 and d.recomputed_tokens[0] == 0
    assert d.num_gpus == 2 and d.usd_per_s == pytest.approx(2 * dep.usd_per_s)


def test_one_token_outputs_never_reach_the_decode_pool():
    dep = h100_8b()
    wl = synthetic(50, 10.0, 500, 1, seed=2)
    run = simulate_disaggregated(dep, wl, SchedulerConfig(), prefill=2, decode=1)
    pre_only = simulate(dep, wl, SchedulerConfig())
    assert run.decode is None
    assert (run.merged.finish_s == run.merged.first_token_s).all()
    assert run.merged.ttft_s.mean() <= pre_only.ttft_s.mean()  # two prefill copies queue no more than one


def test_decode_pool_frees_prefill_from_decodes():
    """Long prompts at a rate one H100 cannot keep up with colocated: 1 prefill + 1 decode H100 hold TTFT down
    (no decode batch shares the prefill GPU's steps) at twice the cost."""
    dep = h100_8b()
    wl = synthetic(600, 20.0, "lognormal:2000,0.6", "uniform:50,350", seed=0)
    co = simulate(dep, wl, SchedulerConfig())
    run = simulate_disaggregated(dep, wl, SchedulerConfig(), prefill=1, decode=1)
    m = run.merged
    assert np.isfinite(m.finish_s).all() and (m.generated_tokens == wl.output_tokens).all()
    assert m.ttft_s.mean() < co.ttft_s.mean()
    assert (m.finish_s >= m.first_token_s + run.transfer_s).all()  # decoding starts after the KV arrived


def test_cli(capsys):
    args = ["simulate", "llama-3.1-8b", "--gpu", "h100-sxm", "--rate", "10", "--requests", "100",
            "--disaggregate", "1:2", "--kv-link-bandwidth", "50GB/s", "--kv-link-latency", "1ms", "--json"]
    assert main(args) == 0
    out = json.loads(capsys.readouterr().out)
    pools = out["disaggregated"]
    assert pools["prefill_deployments"] == 1 and pools["decode_deployments"] == 2
    # 1,000-token prompts: 131,072,000 bytes ÷ 50e9 + 1 ms = 3.62144 ms each
    assert pools["kv_transfer_s"]["mean"] == pytest.approx(131_072_000 / 50e9 + 1e-3, rel=1e-9)
    assert out["requests"] == 100 and pools["decode"]["requests"] == 100


@pytest.mark.parametrize("bad", ["2", "a:b", "0:1", "1:"])
def test_cli_refuses_bad_pools(capsys, bad):
    assert main(["simulate", "llama-3.1-8b", "--gpu", "h100-sxm", "--rate", "5", "--disaggregate", bad]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error:") and "--disaggregate" in err and "\n" not in err
