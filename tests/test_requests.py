"""The use-case boundary: requests own the defaults and checks; errors carry the field; each face words it."""

from __future__ import annotations

import math

import pytest
from pydantic import ValidationError

from kokuban.cli import main
from kokuban.errors import KokubanError, require_positive
from kokuban.present.jsonout import read_result
from kokuban.usecases.estimate import run_estimate
from kokuban.usecases.request import DeploymentRequest, EstimateRequest


def test_error_carries_field_and_value():
    err = KokubanError("must be a positive integer, got 0", field="max_batch", value=0)
    assert str(err) == "max_batch: must be a positive integer, got 0"
    assert err.worded(lambda f: "--" + f.replace("_", "-")) == "--max-batch: must be a positive integer, got 0"
    assert err.as_dict() == {"field": "max_batch", "value": 0, "reason": "must be a positive integer, got 0",
                             "message": "max_batch: must be a positive integer, got 0"}
    assert str(KokubanError("plain")) == "plain"


@pytest.mark.parametrize("value", [0, -1, 1.5, math.nan, math.inf, True, "3"])
def test_require_positive_refuses(value):
    with pytest.raises(KokubanError, match=r"^batch: must be a positive"):
        require_positive("batch", value, integer=True)


@pytest.mark.parametrize("kw,field", [
    ({"batch": 0}, "batch"), ({"batch": "most"}, "batch"), ({"context": -1}, "context"),
    ({"context": 10**30}, "context"), ({"gpus": 0}, "gpus"), ({"price_per_hour": math.nan}, "price_per_hour"),
    ({"price_per_hour": -1.0}, "price_per_hour"), ({"compute_eff": 1.5}, "compute_eff"),
    ({"overlap": math.inf}, "overlap"), ({"layout": "pp"}, "layout"), ({"prompt": 100}, "output"),
    ({"batchh": 1}, "batchh"),
])
def test_request_refuses_naming_the_field(kw, field):
    with pytest.raises(KokubanError) as info:
        EstimateRequest(model="llama-3.1-8b", gpu="h100-sxm", **kw)
    assert info.value.field == field
    assert "\n" not in str(info.value) and str(info.value).startswith(f"{field}: ")


def test_request_is_frozen_and_owns_the_policies():
    req = DeploymentRequest(model="qwen3-235b-a22b", gpu="h100-sxm", gpus=None, layout=None)
    with pytest.raises(ValidationError, match="frozen"):
        req.gpus = 2  # type: ignore[misc]
    dep = req.deployment(context=4096)
    assert dep.layout == "ep"  # MoE → expert parallel
    # the fewest of 1, 2, 4, 8, 16 … that holds a batch of AUTO_GPUS_BATCH = 256 at the context: under EP each
    # GPU keeps the attention and dense weights whole, so 8× H100 holds fewer than 256 requests and 16× more
    from kokuban.core.memory import max_batch

    assert dep.num_gpus == 16
    assert int(max_batch(dep.with_gpus(8), 4096)) < 256 <= int(max_batch(dep, 4096))
    with pytest.raises(KokubanError, match="^gpus: an automatic GPU count needs a context"):
        req.deployment()


def test_cli_words_fields_as_its_flags(capsys):
    cases = [
        (["estimate", "llama-3.1-8b", "--gpu", "h100-sxm", "--batch", "0"], "error: --batch: "),
        (["estimate", "llama-3.1-8b", "--gpu", "h100-sxm", "--price-per-hour", "nan"], "error: --price-per-hour: "),
        (["estimate", "llama-3.1-8b", "--gpu", "h100-sxm", "--compute-eff", "2"], "error: --compute-eff: "),
        (
            ["batch", "llama-3.1-8b", "--gpu", "h100-sxm", "--max-batch", "100000"],
            "error: --max-batch: 100000 does not fit",
        ),
        (["context", "llama-3.1-8b", "--gpu", "h100-sxm", "--from", "9000", "--to", "8000"], "error: --from: "),
    ]
    for args, start in cases:
        assert main(args) == 2
        err = capsys.readouterr().err
        assert err.startswith(start), (args, err)
        assert err.count("\n") == 1 and "Traceback" not in err


def test_python_api_names_fields_not_flags():
    with pytest.raises(KokubanError, match=r"^batch: does not fit: llama-3.1-8b batch 999999 at context 4096"):
        run_estimate(EstimateRequest(model="llama-3.1-8b", gpu="h100-sxm", batch=999_999))


def test_an_efficiency_file_is_a_starting_set_the_flags_override(tmp_path, capsys):
    saved = tmp_path / "eff.toml"
    saved.write_text("compute = 0.5\nmemory = 0.7\n")
    req = EstimateRequest(model="llama-3.1-8b", gpu="h100-sxm", efficiency_file=str(saved), memory_eff=0.9)
    eff = req.efficiency_spec()
    # the file's compute, the flag's memory (flags override the file), the shipped value for the rest
    assert (eff.compute, eff.memory, eff.interconnect) == (0.5, 0.9, 0.27)
    # `kokuban calibrate --json` output is an efficiency file: its fitted set sits under "after"
    cal = tmp_path / "cal.json"
    cal.write_text('{"source": "published", "after": {"compute": 0.61, "overlap": 0.5}}')
    assert assert_fields(EstimateRequest(model="llama-3.1-8b", gpu="h100-sxm", efficiency_file=str(cal)))
    bad = tmp_path / "bad.toml"
    bad.write_text("compute = 0.5\nbogus = 1\n")
    assert main(["estimate", "llama-3.1-8b", "--gpu", "h100-sxm", "--efficiency-file", str(bad)]) == 2
    assert capsys.readouterr().err.startswith("error: --efficiency-file: efficiency file")
    assert main(["estimate", "llama-3.1-8b", "--gpu", "h100-sxm", "--efficiency-file", str(tmp_path / "no.json")]) == 2
    assert capsys.readouterr().err.startswith("error: --efficiency-file: cannot read efficiency file")


def assert_fields(req: EstimateRequest) -> bool:
    eff = req.efficiency_spec()
    return (eff.compute, eff.overlap, eff.memory) == (0.61, 0.5, 0.84)


def test_a_refusal_asked_for_as_json_is_json(capsys):

    assert main(["estimate", "llama-3.1-70b", "--gpu", "h200", "--json"]) == 2
    out, err = capsys.readouterr()
    data = read_result(out, command="estimate")  # the envelope too: version, schema version, command
    # 70.6e9 params × 2 B = 141 GB of bf16 weights > 0.9 × 150.7 GB usable on one H200: the refusal says what fits
    assert data["error"]["field"] == "batch" and data["error"]["flag"] == "--batch"
    assert "2× h200 would fit batch 1" in data["error"]["reason"]
    assert err == f"error: {data['error']['message']}\n"
    # and the same numbers for a script: 0.9 × 150.754820096e9 B usable, no batch fits, 2 GPUs would
    fit = data["error"]["detail"]["does_not_fit"]
    assert fit["usable_bytes"] == pytest.approx(0.9 * 150.754820096e9)
    assert fit["used_bytes"] > fit["usable_bytes"] and fit["weights_bytes"] > 141e9
    assert (fit["batch"], fit["gpus"], fit["gpu"], fit["max_batch"], fit["min_gpus"]) == (1, 1, "h200", 0, 2)
