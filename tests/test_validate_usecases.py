"""The validation wing's use cases: each command's --json is its use case's as_dict(); one efficiency default
per command, the same from Python and from the CLI; every number checked at the request (field named).

Measurements are made deterministic by replacing the timers (the model is still built and predicted), so
the CLI run and the Python run must agree to the last digit.
"""

from __future__ import annotations

import datetime
import inspect
import json
from types import SimpleNamespace

import numpy as np
import pytest

from kokuban.cli import main
from kokuban.errors import KokubanError
from kokuban.present.jsonout import read_result, to_json
from kokuban.specs.hardware import Efficiency
from kokuban.usecases.validation import (
    AccuracyRequest,
    CalibrateRequest,
    ProbeRequest,
    ValidateRequest,
    run_accuracy,
    run_calibrate,
    run_probe,
    run_validate,
)
from kokuban.validation.probe import entry_to_toml

# the tiny llama of test_validate.py: d=64, 2 layers, 4 heads of 16, 2 KV heads, MLP 128, vocab 100
TINY = {
    "model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
    "num_key_value_heads": 2, "intermediate_size": 128, "vocab_size": 100, "max_position_embeddings": 4096,
    "tie_word_embeddings": False, "rope_theta": 10000.0,
}
ENTRY = {"id": "test-cpu", "name": "test machine", "memory_bytes": 8e9, "memory_bandwidth_bytes_per_s": 1e9,
         "flops_fp32": 1e15, "flops_bf16": 1e13}


def as_json(result) -> object:
    return json.loads(to_json(result.as_dict()))




def cli_error(capsys, args: list[str]) -> str:
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "\n" not in err
    return err


# ---- deterministic measurements -----------------------------------------------------------------------
@pytest.fixture
def fixed_probe(monkeypatch):
    """probe() with fixed figures: 2e10 B/s read, 1e11 FLOP/s per dtype, measured on 2026-12-03."""
    from kokuban.validation import probe as probe_module

    monkeypatch.setattr(probe_module, "measure_bandwidth", lambda device, budget_s: {
        "best_bytes_per_s": 2e10, "median_bytes_per_s": 1.8e10, "buffer_bytes": 2.0**29, "runs": 7.0})
    monkeypatch.setattr(probe_module, "measure_matmul", lambda device, dtype, budget_s: {
        "best_flops": 1e11, "median_flops": 9e10, "n": 1024.0, "runs": 5.0})
    monkeypatch.setattr(
        probe_module, "_dt", SimpleNamespace(date=SimpleNamespace(today=lambda: datetime.date(2026, 12, 3)))
    )


@pytest.fixture
def fixed_timer(monkeypatch):
    """Every timed call takes 1 ms and the load average reads 0.5: validate's measurements repeat exactly."""
    pytest.importorskip("torch")
    from kokuban.validation import harness

    monkeypatch.setattr(
        harness, "time_calls", lambda fn, *, warmup, repeats, sync, budget_s=None: np.full(repeats, 1e-3)
    )
    monkeypatch.setattr(harness.os, "getloadavg", lambda: (0.5, 0.5, 0.5))


@pytest.fixture
def tiny(tmp_path):
    """A tiny config.json and a probe file with ENTRY."""
    cfg, gpu = tmp_path / "tiny.json", tmp_path / "probe.toml"
    cfg.write_text(json.dumps(TINY))
    gpu.write_text(entry_to_toml(ENTRY))
    return SimpleNamespace(cfg=str(cfg), gpu=str(gpu), dir=tmp_path)


TINY_GRID = {"layers": 0, "batches": "1,4", "contexts": "8,32", "prompts": "4", "warmup": 0, "repeats": 2}


def tiny_flags(t) -> list[str]:
    return [
        "validate",
        "--model",
        t.cfg,
        "--gpu-file",
        t.gpu,
        "--layers",
        "0",
        "--batches",
        "1,4",
        "--contexts",
        "8,32",
        "--prompts",
        "4",
        "--warmup",
        "0",
        "--repeats",
        "2",
    ]


# ---- contract: --json == the use case's as_dict() -----------------------------------------------------
def test_probe_json_is_the_use_case(cli_json, capsys, fixed_probe, tmp_path):
    out = tmp_path / "p.json"
    doc = cli_json(["probe", "--device", "cpu", "--seconds", "0.5", "--id", "here", "--out", str(out)])
    data = doc["accelerator"][0]  # the entry, in the accelerator file's shape: {"accelerator": [entry]}
    assert data == as_json(run_probe(ProbeRequest(device="cpu", seconds=0.5, entry_id="here")))
    # the fixed figures, and the file written through the one serialiser: {"accelerator": [entry]}
    assert (data["id"], data["memory_bandwidth_bytes_per_s"], data["flops_fp32"]) == ("here", 2e10, 1e11)
    assert out.read_text() == to_json({"accelerator": [data]})


def test_validate_json_is_the_use_case(cli_json, capsys, fixed_timer, tiny):
    out_dir = tiny.dir / "report"
    data = cli_json([*tiny_flags(tiny), "--out-dir", str(out_dir)])
    result = run_validate(ValidateRequest(model=tiny.cfg, gpu_file=tiny.gpu, **TINY_GRID))
    assert data == as_json(result)
    # 2 batches × 2 contexts of decode + 1 prefill, each timed twice at 1 ms
    assert len(data["rows"]) == 5 and all(
        r["measured_s"] == 1e-3 and r["repeats_s"] == [1e-3, 1e-3] for r in data["rows"]
    )
    assert read_result((out_dir / "validate.json").read_text(), command="validate") == data  # the same JSON


def test_accuracy_json_is_the_use_case(cli_json, capsys):
    assert cli_json(["accuracy"]) == as_json(run_accuracy(AccuracyRequest()))
    flags = ["accuracy", "--compute-eff", "0.5", "--step-overhead", "0.001"]
    data = cli_json(flags)
    assert data == as_json(run_accuracy(AccuracyRequest(compute_eff=0.5, step_overhead=0.001)))
    assert (data["efficiency"]["compute"], data["efficiency"]["step_overhead_s"]) == (0.5, 0.001)


def test_calibrate_json_is_the_use_case(cli_json, capsys, fixed_timer, tiny):
    out_dir = tiny.dir / "report"
    assert main([*tiny_flags(tiny), "--out-dir", str(out_dir), "--json"]) == 0
    capsys.readouterr()
    csv = str(out_dir / "validate.csv")
    data = cli_json(["calibrate", "--source", "validate-csv", "--csv", csv, "--params", "memory",
                             "--hold-out", "context=32"])
    result = run_calibrate(CalibrateRequest(source="validate-csv", csv_path=csv, params=("memory",),
                                            hold_out=("context", (32,))))
    assert data == as_json(result)
    # held out: the two decode rows at context 32 (batch 1 and 4); fitted on the other three
    assert (data["train_rows"], data["holdout_rows"]) == (3, 2)


# ---- one efficiency default per command, from Python and the CLI alike ---------------------------------
def test_validate_and_calibrate_start_from_textbook_from_python_too(cli_json, capsys, fixed_timer, tiny):
    """The old Python API (`run_validation()`, `calibrate_published()`/`calibrate_validation()`) predicted with
    the calibrated Efficiency() while `kokuban validate`/`calibrate` used Efficiency.textbook(); the docs
    (docs/history/validation-journal.md) document textbook for both commands."""
    textbook = Efficiency.textbook().as_dict()
    report = run_validate(ValidateRequest(model=tiny.cfg, gpu_file=tiny.gpu, **TINY_GRID))
    assert report.setup["efficiency"] == textbook
    assert cli_json(tiny_flags(tiny))["setup"]["efficiency"] == textbook
    out_dir = tiny.dir / "r"
    assert main([*tiny_flags(tiny), "--out-dir", str(out_dir)]) == 0
    capsys.readouterr()
    cal = run_calibrate(CalibrateRequest(source="validate-csv", csv_path=str(out_dir / "validate.csv"),
                                         params=("memory",), hold_out=("batch", (4,))))
    assert cal.before == Efficiency.textbook()
    # a flag replaces one field of that base: memory 0.5, the rest textbook
    req = CalibrateRequest(source="published", memory_eff=0.5)
    assert req.efficiency_spec() == Efficiency.textbook().updated(memory=0.5)
    assert AccuracyRequest().efficiency_spec() == Efficiency.shipped()  # accuracy judges the shipped step model


def test_the_wing_has_no_efficiency_default_to_disagree_with():
    from kokuban.validation.calibrate import calibrate, calibrate_published, calibrate_validation, fit_efficiency
    from kokuban.validation.harness import deployment_for, deployment_from_setup, run_validation

    for fn, name in (
        (run_validation, "efficiency"),
        (deployment_for, "efficiency"),
        (deployment_from_setup, "efficiency"),
        (calibrate, "start"),
        (calibrate_published, "start"),
        (calibrate_validation, "start"),
        (fit_efficiency, "start"),
    ):
        assert inspect.signature(fn).parameters[name].default is inspect.Parameter.empty, fn.__name__


# ---- inputs checked once, at the request: one line naming the field (the flag on the CLI) --------------
@pytest.mark.parametrize(("args", "flag"), [
    (["probe", "--seconds", "nan"], "--seconds"),
    (["probe", "--seconds", "inf"], "--seconds"),
    (["probe", "--seconds", "-1"], "--seconds"),
    (["probe", "--seconds", "1e9"], "--seconds"),
    (["validate", "--probe-seconds", "nan"], "--probe-seconds"),  # the old code blamed probe's --seconds
    (["validate", "--max-kv-gb", "nan"], "--max-kv-gb"),
    (["validate", "--max-kv-gb", "0"], "--max-kv-gb"),  # the old code read 0 as "the default"
    (["validate", "--batches", "1,x"], "--batches"),
    (["validate", "--batches", "1,0"], "--batches"),
    (["validate", "--contexts", ""], "--contexts"),
    (["validate", "--prefill-batch", "0"], "--prefill-batch"),
    (["validate", "--repeats", "0"], "--repeats"),
    (["validate", "--warmup", "-1"], "--warmup"),
    (["validate", "--layers", "-1"], "--layers"),
    (["validate", "--compute-eff", "nan"], "--compute-eff"),
    (["validate", "--gpu", "x"], "--gpu"),
    (["calibrate", "--source", "published", "--holdout", "nan"], "--holdout-fraction"),
    (["calibrate", "--source", "published", "--holdout", "1"], "--holdout-fraction"),
    (["calibrate", "--source", "published", "--seed", "-1"], "--seed"),
    (["calibrate", "--source", "published", "--params", "compute,speed"], "--params"),
    (["calibrate", "--source", "published", "--phase", "decode"], "--phase"),
    (["calibrate", "--source", "published", "--hold-out", "context=4096"], "--holdout-values"),
    (["calibrate", "--source", "validate-csv"], "--measurements-file"),
    (["calibrate", "--source", "validate-csv", "--csv", __file__, "--hold-out", "context"], "--holdout-values"),
    (["calibrate", "--source", "validate-csv", "--csv", __file__, "--hold-out", "speed=1"], "--holdout-values"),
    (["accuracy", "--overlap", "1.5"], "--overlap"),
])
def test_bad_input_is_one_line_naming_the_flag(capsys, args, flag):
    assert cli_error(capsys, args).startswith(f"error: {flag}: ")


def test_requests_name_fields_not_flags():
    with pytest.raises(KokubanError) as err:
        ProbeRequest(seconds=float("nan"))
    assert (err.value.field, str(err.value)) == ("seconds", "seconds: input should be a finite number, got nan")
    with pytest.raises(KokubanError) as err:
        ValidateRequest(gpu="test-cpu")
    assert err.value.field == "gpu" and "--" not in str(err.value)
    with pytest.raises(KokubanError) as err:
        CalibrateRequest(source="validate-csv")
    assert err.value.field == "csv_path" and "--" not in str(err.value)
    # text forms a face hands in, parsed at the request
    assert ValidateRequest(batches="1, 2,4", prompts="").batches == (1, 2, 4)
    assert CalibrateRequest(source="validate-csv", csv_path="x", hold_out="context=128,4096").hold_out == (
        "context",
        (128, 4096),
    )
    assert CalibrateRequest(source="published", params="compute, memory").fitted_params() == ("compute", "memory")


def test_probe_file_errors_name_the_request_fields(tiny):
    with pytest.raises(KokubanError) as err:
        ValidateRequest(gpu_file=tiny.gpu, gpu="nope").accelerator_entry()
    assert err.value.field == "gpu" and "test-cpu" in err.value.reason  # what the file holds
    bad = tiny.dir / "bad.toml"
    bad.write_text("not toml [")
    with pytest.raises(KokubanError) as err:
        ValidateRequest(gpu_file=str(bad)).accelerator_entry()
    assert err.value.field == "gpu_file"
