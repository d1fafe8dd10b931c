"""The MI300X's two candidates (evidence/changes/mi300x_memory_stream/, rejected; mi300x_weight_stream/, shipped) and
the first checks of LMDeploy 0.1, llama.cpp's scoreboard and AMD's vLLM: the fits' records and decisions, the
catalog's constant, the weight stream by hand, and the frozen checks reproduced where the shipped model can still
price them by explicit `KernelCurves` fields."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evidence import report
from evidence.sources import HERE, measurements
from kokuban.specs.catalog import load_accelerator, load_model
from kokuban.specs.hardware import Efficiency
from kokuban.validation.accuracy import predict_row

CHANGES = Path(__file__).resolve().parents[1] / "evidence/changes"


def _json(path: Path) -> dict:
    return json.loads(path.read_text())


def _least(grid: list) -> float:
    return min(grid, key=lambda row: row[1])[0]


def test_the_fits_and_the_rules_decide():
    """Each candidate is its grid's least mean squared log error (grid records as produced); the first (weights and
    KV) was rejected by its judges, the second (weights only) shipped, and the catalog holds it."""
    first, second = (_json(CHANGES / c / "fit.json") for c in ("mi300x_memory_stream", "mi300x_weight_stream"))
    assert _least(first["grid"]) == _least(second["grid"]) == 0.50
    # the rows each was fitted on: the AMD latency rows first read (144), and those with the first judges' (270)
    assert len(measurements("amd_vllm")) + len(measurements("amd_vllm", "versions.toml")) == 144
    assert 144 + len(measurements("amd_vllm_judge")) == 270
    assert load_accelerator("mi300x").kernel_constants == {"weight_memory_ratio": 0.50}
    assert not any("weight_memory_ratio" in load_accelerator(a).kernel_constants for a in ("mi325x", "h100-sxm"))
    one = _json(CHANGES / "mi300x_memory_stream/judgement.json")
    j1, j2 = "judge 1: July 2025 latency", "judge 2: throughput"
    # the first: lower on the July latency tables, higher on the throughput tables: rejected
    assert one["with"]["groups"][j1]["median_abs_error"] < one["without"]["groups"][j1]["median_abs_error"]
    assert one["with"]["groups"][j2]["median_abs_error"] > one["without"]["groups"][j2]["median_abs_error"]
    assert one["decision"] == "does not ship"
    two = _json(CHANGES / "mi300x_weight_stream/judgement.json")
    w, wo = two["with"]["rows"]["groups"], two["without"]["rows"]["groups"]
    for key in ("vLLM 0.11.1 latency", "judge B: Oracle"):
        assert w[key]["median_abs_error"] < wo[key]["median_abs_error"], key
    assert w["vLLM 0.11.1 throughput"]["median_abs_error"] <= wo["vLLM 0.11.1 throughput"]["median_abs_error"]
    assert two["decision"] == "ships"
    record = _json(CHANGES / "mi300x_weight_stream/pool_record.json")
    assert record["judge"]["decision"] == one["decision"] and record["second_judge"]["decision"] == two["decision"]


def test_the_weight_stream_is_the_shipped_model():
    """The judgement's "with" is the shipped model on the judges' rows: the figures reproduce."""
    two = _json(CHANGES / "mi300x_weight_stream/judgement.json")
    rows = list(measurements("amd_vllm_nov"))
    oracle = [p for p in (predict_row(r) for r in rows) if p.id.startswith("oracle-")]
    saved = two["with"]["rows"]["groups"]["judge B: Oracle"]
    fresh = report.figures(oracle)
    keys = ("count", "median_abs_error", "p90_abs_error", "median_signed_error")
    assert {k: fresh[k] for k in keys} == pytest.approx({k: saved[k] for k in keys}, rel=1e-9)


def test_the_mi300x_weight_stream_by_hand(capsys):
    """Llama-3.1-70B in fp8 on eight MI300X, one request at 4,096 tokens: a GPU reads its eighth of the weights at
    5.3e12 B/s × 0.9 × 0.50 = 2.385e12 B/s (2.4e12, half the kernel profile's rate), its KV at the full 0.9; an H100's
    weight read keeps the full fraction; the blackboard names the ratio."""
    from kokuban.cli import main
    from kokuban.core import roofline
    from kokuban.specs.deployment import Deployment

    def dep(gpu):
        return Deployment.make(load_model("llama-3.1-70b"), load_accelerator(gpu), 8, weights_dtype="fp8",
                               kv_dtype="fp8", compute_dtype="fp8", efficiency=Efficiency.shipped())

    mi300x = dep("mi300x")
    step = roofline.decode_step(mi300x, 1, 4096)
    per_gpu = float(roofline.weight_bytes_read_per_gpu(mi300x, 1.0))
    assert mi300x.efficiency.weight_memory_fraction == 0.9 * 0.5
    assert float(step.weights_s) == pytest.approx(per_gpu / (5.3e12 * 0.9 * 0.5), rel=1e-12)
    assert f"{5.3e12 * 0.9 * 0.5:.1e}" == "2.4e+12"
    assert mi300x.efficiency.kv_memory_fraction == dep("h100-sxm").efficiency.kv_memory_fraction == 0.9
    assert dep("h100-sxm").efficiency.weight_memory_fraction == 0.9
    assert main(["estimate", "llama-3.1-70b", "--gpu", "mi300x", "--gpus", "8", "--weights", "fp8"]) == 0
    assert "(weights × 0.5: this GPU's own weight stream)" in " ".join(capsys.readouterr().out.split())
    assert main(["estimate", "llama-3.1-70b", "--gpu", "h100-sxm", "--gpus", "8", "--weights", "fp8"]) == 0
    assert "own weight stream" not in capsys.readouterr().out


def test_the_pools_of_the_record():
    """The record's pools: the 517 TensorRT-LLM rows no model of then had seen and the three checks' (625); with every
    AMD table the rules keep beside (863); and step-v6's (680: not the 270 AMD rows its fit used, but the second
    candidate's 47 judging rows and the 40 beside)."""
    record = _json(CHANGES / "mi300x_weight_stream/pool_record.json")
    counts = {c: record["checks"][c]["as_checked"]["all"]["count"] for c in record["checks"]}
    assert counts == {"lmdeploy01": 64, "llamacpp-cuda": 12, "amd-vllm": 32}
    assert record["as_checked"]["all"]["count"] == 517 + 64 + 12 + 32 == 625
    assert record["as_checked_every_amd_table"]["all"]["count"] == 625 + 112 + 126
    assert record["step_v6"]["all"]["count"] == 517 + 64 + 12 + 47 + 40 == 680


@pytest.mark.parametrize("source", ["lmdeploy01", "llamacpp_cuda"])
def test_the_first_checks_reproduce(source, same_groups):
    """LMDeploy's and the scoreboard's rows as checked (step-v5) and with step-v6: on these rows both are the shipped
    model without the barrier wait and without llama.cpp's per-SM bounds (the MI300X's ratio does not touch them)."""
    saved = _json(HERE / source / "as_checked.json")
    rows = list(measurements(source))
    then = Efficiency.shipped().with_kernels(tp_sync_loss=0.0, ggml_mmq_ops_per_cycle=0.0,
                                             ggml_sm_stream_bytes_per_cycle=0.0)
    preds = [predict_row(r, then) for r in rows]
    fresh = {"all": report.figures(preds)}
    for key in ("as_checked", "step_v6"):
        same_groups({"all": saved[key]["groups"]["all"]}, fresh)
