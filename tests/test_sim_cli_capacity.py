"""CLI, prefix caching, capacity search and the Ray sweep."""

from __future__ import annotations

import json

import numpy as np
import pytest

from kokuban.cli import main
from kokuban.errors import KokubanError
from kokuban.present.jsonout import read_result, to_json
from kokuban.sim import SLO, SchedulerConfig, simulate, synthetic
from kokuban.sim.capacity import WorkloadShape, max_rate, parallel_map
from kokuban.sim.scheduler import vllm_defaults
from kokuban.specs.catalog import load_accelerator, load_model
from kokuban.specs.deployment import Deployment
from kokuban.usecases.simulate import CapacityRequest, SimulateRequest, run_capacity, run_simulate


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
    out = read_result(capsys.readouterr().out)
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
    (["--rate", "0"], "error: --rate: must be > 0 requests/s (or 'inf' to send everything at once), got '0'"),
    (["--rate", "nan"], "error: --rate: must be > 0 requests/s"),
    (["--rate", "1", "--prompt", "500000"], "error: --prompt-tokens: request 0 needs 500,199 tokens of KV cache"),
    (["--rate", "1", "--scheduler", "static", "--requests", "0"],
     "error: --requests: input should be greater than 0, got 0"),
    ([], "error: --rate: give a rate (requests/s) or a trace file"),
    (["--rate", "1", "--prompt", "uniform:5"], "error: --prompt-tokens: 'uniform:5' needs 2 numbers, got 1"),
    (["--rate", "1", "--output", "zipf:3"], "error: --output-tokens: 'zipf' is not a known length distribution"),
    (["--rate", "1", "--arrival", "zipf"], "error: --arrival: 'zipf' is not a known arrival process; allowed: poisson"),
    (["--rate", "1", "--scheduler", "fifo"], "error: --scheduler: 'fifo' is not a known scheduler; allowed: contin"),
    (["--rate", "1", "--batch-timeout", "-1"], "error: --batch-timeout: input should be greater than or equal to 0"),
    (["--rate", "1", "--max-concurrency", "0"], "error: --max-concurrency: input should be greater than 0"),
    (["--rate", "1", "--seed", "-1"], "error: --seed: input should be greater than or equal to 0, got -1"),
])
def test_simulate_cli_errors_are_one_line(args, message, capsys):
    assert main(["simulate", "llama-3.1-8b", "--gpu", "h100-sxm", "--json", *args]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(message) and "\n" not in err


@pytest.mark.parametrize(("args", "message"), [
    ([], "error: --ttft-slo: an SLO needs a p99 TTFT and/or a p99 TPOT target"),
    (["--ttft-p99", "1", "--target-rate", "3", "--counts", "1,x"], "error: --counts: input should be a valid integer"),
    (["--ttft-p99", "1", "--target-rate", "0"], "error: --target-rate: input should be greater than 0, got 0.0"),
    (["--ttft-p99", "1", "--target-rate", "3", "--seqs", "0"], "error: --seqs: input should be greater than 0"),
])
def test_capacity_cli_errors_are_one_line(args, message, capsys):
    assert main(["capacity", "llama-3.1-8b", "--gpu", "h100-sxm", "--json", *args]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(message) and "\n" not in err


def test_use_case_errors_name_fields_not_flags():
    # the use cases speak field names; only the CLI words them as flags
    with pytest.raises(KokubanError) as err:
        SimulateRequest(model="llama-3.1-8b", gpu="h100-sxm", rate=0)
    assert err.value.field == "rate" and "--" not in str(err.value)
    with pytest.raises(KokubanError) as err:
        run_simulate(SimulateRequest(model="llama-3.1-8b", gpu="h100-sxm", rate=1, prompt=500_000, requests=3))
    assert err.value.field == "prompt" and "--" not in str(err.value)
    with pytest.raises(KokubanError) as err:
        CapacityRequest(model="llama-3.1-8b", gpu="h100-sxm", counts="1,2", seqs=[])
    assert err.value.field == "seqs"


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
    rows = read_result(capsys.readouterr().out)["candidates"]
    assert {r["gpu"] for r in rows} == {"h100-sxm", "l4"}
    best = rows[0]
    # cheapest first: replicas × GPUs × price per GPU-hour
    assert best["usd_per_hour"] == pytest.approx(best["replicas"] * best["gpus"] * best["usd_per_gpu_hour"])
    assert all(best["usd_per_hour"] <= r["usd_per_hour"] for r in rows if r["usd_per_hour"] is not None)
    # every row has the same keys (stable JSON); one that cannot serve the target has null cost, never Infinity
    assert all(list(r) == list(best) for r in rows)


def _square(x: int) -> int:
    return x * x


def test_sweep_runs_on_a_local_ray_instance():
    ray = pytest.importorskip("ray", reason="ray is not installed (pip install 'kokuban[ray]')")
    from kokuban.sim import capacity

    dep = Deployment.make(load_model("llama-3.1-8b"), load_accelerator("h100-sxm"))
    jobs = [(dep, WorkloadShape(requests=80, prompt="300", output="30"), SchedulerConfig(), SLO(0.5, 0.05), r, None)
            for r in (2.0, 8.0)]
    try:
        on_ray = parallel_map(capacity._meets, jobs, ray_address="local")
    finally:
        ray.shutdown()
    # the same simulations give the same answers on Ray as in this process
    assert on_ray == [capacity._meets(job) for job in jobs]


def test_sweep_runs_on_local_processes():
    assert parallel_map(_square, range(5), workers=2) == [0, 1, 4, 9, 16]


# ---- contract tests: `kokuban X --json` is exactly the use case's as_dict() ----------------------------------
def _json(capsys, args):
    assert main(args) == 0
    return read_result(capsys.readouterr().out)


def test_simulate_json_is_the_use_case(capsys):
    args = ["simulate", "llama-3.1-8b", "--gpu", "h100-sxm", "--rate", "20", "--requests", "200", "--prompt",
            "lognormal:1000,0.6", "--output", "uniform:50,350", "--ttft-slo", "0.5", "--tpot-slo", "0.05",
            "--max-num-seqs", "64", "--no-prefix-caching", "--json"]
    req = SimulateRequest(model="llama-3.1-8b", gpu="h100-sxm", rate=20, requests=200, prompt="lognormal:1000,0.6",
                          output="uniform:50,350", ttft_slo=0.5, tpot_slo=0.05, max_num_seqs=64, prefix_caching=False)
    assert _json(capsys, args) == json.loads(to_json(run_simulate(req).as_dict()))


def test_simulate_json_of_a_trace_is_the_use_case(tmp_path, capsys):
    trace = tmp_path / "t.csv"
    trace.write_text("arrival_s,prompt_tokens,output_tokens,prefix_id,prefix_tokens\n0,300,1,,\n0.1,500,40,sys,256\n"
                     "0.2,400,1,sys,256\n")
    got = _json(capsys, ["simulate", "llama-3.1-8b", "--gpu", "h100-sxm", "--trace", str(trace), "--json"])
    want = json.loads(to_json(run_simulate(SimulateRequest(model="llama-3.1-8b", gpu="h100-sxm", trace=str(trace)))
                              .as_dict()))
    assert got == want
    # two of three outputs are one token: their TPOT is undefined, so only one request has a TPOT; no NaN printed
    assert got["latency_s"]["tpot"]["p50"] is not None


def test_one_token_outputs_print_null_not_nan(capsys):
    # every output one token: no TPOT and no inter-token gap exists; the JSON says null (NaN is not JSON)
    got = _json(capsys, ["simulate", "llama-3.2-1b", "--gpu", "l4", "--rate", "5", "--requests", "20", "--output", "1",
                         "--json"])
    assert got["latency_s"]["tpot"] == {"mean": None, "p50": None, "p90": None, "p99": None}
    assert got["latency_s"]["itl"] == {"mean": None, "p50": None, "p90": None, "p99": None}


def test_capacity_json_is_the_use_case(capsys):
    args = ["capacity", "llama-3.1-8b", "--gpu", "h100-sxm", "--requests", "120", "--prompt", "400", "--output", "40",
            "--ttft-p99", "0.5", "--tpot-p99", "0.05", "--workers", "1", "--json"]
    req = CapacityRequest(model="llama-3.1-8b", gpu="h100-sxm", requests=120, prompt="400", output="40", ttft_p99=0.5,
                          tpot_p99=0.05, workers=1)
    assert _json(capsys, args) == json.loads(to_json(run_capacity(req).as_dict()))


def test_cheapest_json_is_the_use_case(capsys):
    args = ["capacity", "llama-3.1-8b", "--gpu", "h100-sxm", "--candidates", "h100-sxm,nope", "--counts", "1",
            "--requests", "80", "--prompt", "300", "--output", "30", "--ttft-p99", "1.0", "--target-rate", "30",
            "--workers", "1", "--json"]
    req = CapacityRequest(model="llama-3.1-8b", gpu="h100-sxm", candidates="h100-sxm,nope", counts=(1,), requests=80,
                          prompt="300", output="30", ttft_p99=1.0, target_rate=30, workers=1)
    got = _json(capsys, args)
    assert got == json.loads(to_json(run_capacity(req).as_dict()))
    # an unknown accelerator is a row with its reason, last, with no cost
    got = got["candidates"]
    assert got[-1]["gpu"] == "nope" and "unknown" in got[-1]["error"] and got[-1]["usd_per_hour"] is None
