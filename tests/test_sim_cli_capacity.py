"""CLI, prefix caching, capacity search and the Ray sweep."""

from __future__ import annotations

import json

import numpy as np
import pytest

from kokuban.cli import main
from kokuban.sim import SLO, SchedulerConfig, simulate, synthetic
from kokuban.sim.capacity import WorkloadShape, max_rate, parallel_map
from kokuban.sim.scheduler import vllm_defaults
from kokuban.specs.catalog import load_accelerator, load_model
from kokuban.specs.deployment import Deployment


def test_vllm_defaults_follow_the_gpu():
    # vLLM get_batch_defaults: ≥ 70 GiB and not an A100 → (1024, 8192); otherwise (256, 2048)
    assert vllm_defaults(load_accelerator("h100-sxm")) == (1024, 8192)
    assert vllm_defaults(load_accelerator("a100-80gb")) == (256, 2048)
    assert vllm_defaults(load_accelerator("l4")) == (256, 2048)


def test_prefix_caching_skips_the_shared_prompt():
    dep = Deployment.make(load_model("llama-3.1-8b"), load_accelerator("h100-sxm"))
    wl = synthetic(200, 5.0, 200, 20, shared_prefix_tokens=1024, seed=3)
    on = simulate(dep, wl, SchedulerConfig())
    off = simulate(dep, wl, SchedulerConfig(prefix_caching=False))
    # after the first request computes the 1024-token prefix (64 blocks of 16), the other 199 reuse it
    assert on.cached_tokens.sum() == 199 * 1024
    assert off.step_tokens.sum() - on.step_tokens.sum() == 199 * 1024
    assert np.percentile(on.ttft_s, 50) < np.percentile(off.ttft_s, 50)


def test_simulate_cli_json_records_and_plots(tmp_path, capsys):
    records, plots = tmp_path / "r.csv", tmp_path / "plots"
    code = main(["simulate", "llama-3.1-8b", "--gpu", "h100-sxm", "--rate", "4", "--requests", "60", "--json",
                 "--ttft-slo", "0.5", "--tpot-slo", "0.05", "--records", str(records), "--plots", str(plots)])
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    assert out["requests"] == 60 and out["scheduler"]["max_num_seqs"] == 1024
    assert {"ttft", "tpot", "itl", "e2e", "queue"} <= set(out["latency_s"])
    assert 0 < out["slo"]["fraction_good"] <= 1
    assert records.read_text().count("\n") == 61
    assert sorted(p.name for p in plots.iterdir()) == ["latency_cdf.png", "occupancy.png", "steps.png"]


def test_simulate_cli_readable_output(capsys):
    assert main(["simulate", "llama-3.1-8b", "--gpu", "h100-sxm", "--rate", "2", "--requests", "30"]) == 0
    text = capsys.readouterr().out
    assert "TTFT" in text and "per M output tokens" in text


@pytest.mark.parametrize(("args", "message"), [
    (["--rate", "0"], "--rate must be > 0"),
    (["--rate", "1", "--prompt", "500000"], "needs 500,199 tokens of KV cache"),
    (["--rate", "1", "--scheduler", "static", "--requests", "0"], "--requests: must be a positive integer, got 0"),
    ([], "give --rate"),
])
def test_simulate_cli_errors_are_one_line(args, message, capsys):
    assert main(["simulate", "llama-3.1-8b", "--gpu", "h100-sxm", *args]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err


def test_trace_cli_error_names_the_line(tmp_path, capsys):
    trace = tmp_path / "t.csv"
    trace.write_text("arrival_s,prompt_tokens,output_tokens\n0,10,5\n-1,10,5\n")
    assert main(["simulate", "llama-3.1-8b", "--gpu", "h100-sxm", "--trace", str(trace)]) == 2
    assert "t.csv line 3: arrival_s '-1'" in capsys.readouterr().err


def test_max_rate_is_the_edge_of_the_slo():
    dep = Deployment.make(load_model("llama-3.1-8b"), load_accelerator("h100-sxm"))
    shape = WorkloadShape(requests=300, prompt="500", output="50")
    slo = SLO(ttft_s=0.2, tpot_s=0.03)
    cap = max_rate(dep, slo, shape, workers=2, rel_tol=0.05)
    assert 0 < cap.max_rate_per_s < 1.2 * cap.saturation_rate_per_s
    passing = [t["rate_per_s"] for t in cap.trials if t["meets_slo"]]
    failing = [t["rate_per_s"] for t in cap.trials if not t["meets_slo"]]
    assert cap.max_rate_per_s == max(passing)
    assert not failing or min(failing) <= cap.max_rate_per_s * 1.05 + 1e-9  # the bracket closed within 5 %


def test_capacity_cli_cheapest(capsys):
    code = main(["capacity", "llama-3.1-8b", "--gpu", "h100-sxm", "--candidates", "h100-sxm,l4", "--counts", "1",
                 "--requests", "150", "--prompt", "400", "--output", "40", "--ttft-p99", "1.0", "--tpot-p99", "0.1",
                 "--target-rate", "30", "--workers", "2", "--json"])
    assert code == 0
    rows = json.loads(capsys.readouterr().out)
    assert {r["gpu"] for r in rows} == {"h100-sxm", "l4"}
    best = rows[0]
    # cheapest first: replicas × GPUs × price per GPU-hour
    assert best["usd_per_hour"] == pytest.approx(best["replicas"] * best["num_gpus"] * best["usd_per_gpu_hour"])
    assert all(best["usd_per_hour"] <= r["usd_per_hour"] for r in rows)


def _square(x: int) -> int:
    return x * x


def test_sweep_runs_on_a_local_ray_instance():
    ray = pytest.importorskip("ray", reason="ray is not installed (pip install 'kokuban[ray]')")
    from kokuban.sim import capacity

    dep = Deployment.make(load_model("llama-3.1-8b"), load_accelerator("h100-sxm"))
    jobs = [(dep, WorkloadShape(requests=80, prompt="300", output="30"), SchedulerConfig(), SLO(0.5, 0.05), r)
            for r in (2.0, 8.0)]
    try:
        on_ray = parallel_map(capacity._meets, jobs, ray_address="local")
    finally:
        ray.shutdown()
    # the same simulations give the same answers on Ray as in this process
    assert on_ray == [capacity._meets(job) for job in jobs]


def test_sweep_runs_on_local_processes():
    assert parallel_map(_square, range(5), workers=2) == [0, 1, 4, 9, 16]
