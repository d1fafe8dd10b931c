"""The economics use cases: each command's `--json` is its use case's `as_dict()` (contract), and the requests
own the defaults, the policies and the checks (errors name the field, never a flag)."""

from __future__ import annotations

import json

import pytest

from kokuban.core import memory
from kokuban.errors import KokubanError
from kokuban.present.jsonout import to_json
from kokuban.specs.catalog import load_accelerator, load_model
from kokuban.specs.hardware import Efficiency
from kokuban.usecases.economics import (
    BatchRequest,
    ContextRequest,
    FrontierRequest,
    IORequest,
    LanesRequest,
    run_batch,
    run_context,
    run_frontier,
    run_io,
    run_lanes,
)

# the textbook fractions on the scalar set (no kernel curves)
TEXTBOOK = ["--efficiency-file", "scalar", "--compute-eff", "0.6", "--memory-eff", "0.8", "--link-eff", "0.75",
            "--step-overhead", "0"]
TEXTBOOK_FIELDS = {"efficiency_file": "scalar", "compute_eff": 0.6, "memory_eff": 0.8, "link_eff": 0.75,
                   "step_overhead": 0.0}




def as_json(result):
    return json.loads(to_json(result.as_dict()))


# ---- contract: kokuban X --json == run_X(XRequest(...)).as_dict() ------------------------------------
def test_batch_contract(cli_json, capsys):
    args = ["batch", "llama-3.1-70b", "--gpu", "h100-sxm", "--gpus", "4", "--context", "1024", "--max-batch", "300",
            "--batch", "64", *TEXTBOOK]
    request = BatchRequest(model="llama-3.1-70b", gpu="h100-sxm", gpus=4, context=1024, max_batch=300, batch=64,
                           **TEXTBOOK_FIELDS)
    assert cli_json(args) == as_json(run_batch(request))


def test_io_contract(cli_json, capsys):
    args = [
        "io",
        "deepseek-v3",
        "--gpu",
        "h200",
        "--gpus",
        "8",
        "--layout",
        "ep",
        "--batch",
        "256",
        "--context",
        "4096",
        "--prompt",
        "2000",
    ]
    request = IORequest(model="deepseek-v3", gpu="h200", gpus=8, layout="ep", batch=256, context=4096, prompt=2000)
    assert cli_json(args) == as_json(run_io(request))


def test_lanes_contract(cli_json, capsys):
    args = ["lanes", "llama-3.1-8b", "--gpu", "h100-sxm", "--rate", "5", "--prompt", "1000", "--output", "500",
            "--tpot", "0.012", "--ttft", "2"]
    request = LanesRequest(model="llama-3.1-8b", gpu="h100-sxm", rate=5, prompt=1000, output=500, tpot=0.012, ttft=2)
    assert cli_json(args) == as_json(run_lanes(request))
    # without a target: the timetable only, "lanes" null
    out = cli_json(["lanes", "llama-3.1-8b", "--gpu", "h100-sxm", "--rate", "5"])
    assert out == as_json(run_lanes(LanesRequest(model="llama-3.1-8b", gpu="h100-sxm", rate=5)))
    assert out["summary"]["lanes"] is None


def test_frontier_contract(cli_json, capsys):
    args = ["frontier", "llama-3.1-8b", "--gpu", "h100-sxm", "--gpu", "h200", "--weights", "bf16", "--weights", "fp8",
            "--counts", "1,2", "--context", "2048", "--slo-tps", "100"]
    request = FrontierRequest(model="llama-3.1-8b", gpu=("h100-sxm", "h200"), weights=("bf16", "fp8"), counts="1,2",
                              context=2048, slo_tps=100)
    out = cli_json(args)
    assert out == as_json(run_frontier(request))
    assert out["summary"]["configurations"] == 2 * 2 * 2  # accelerators × dtypes × counts (TP only: dense model)


def test_context_contract(cli_json, capsys):
    args = ["context", "deepseek-v3", "--gpu", "h200", "--gpus", "8", "--layout", "ep", "--to", "262144",
            "--threshold", "128000", "--points", "12"]
    request = ContextRequest(
        model="deepseek-v3", gpu="h200", gpus=8, layout="ep", end=262144, threshold=128000, points=12
    )
    result = run_context(request)
    assert cli_json(args) == as_json(result)
    # the warning travels with the result (not in the JSON, whose rows say beyond_max_context)
    assert result.warnings and "beyond deepseek-v3's maximum of 163840" in result.warnings[0]
    assert as_json(result)["rows"][-1]["beyond_max_context"] is True


# ---- the requests own the defaults and the policies ------------------------------------------------
def test_batch_defaults_context_and_operating_batch():
    r = run_batch(BatchRequest(model="llama-3.1-8b", gpu="h100-sxm", max_batch=40))
    # context: 4096 (Llama-3.1-8B's window of 131072 is larger); batch "max": the curve's last batch
    assert r.context == 4096 and r.operating_batch == 40 == r.input_output.batch
    assert list(r.curve["batch"]) == list(range(1, 41))
    short = run_batch(BatchRequest(model="coarse:total=1e9,active=1e9,kv=1000,max_context=2048", gpu="h100-sxm",
                                   max_batch=2))
    assert short.context == 2048  # a window shorter than 4096 caps the default


def test_io_batch_max_is_the_largest_that_fits_at_the_longer_of_context_and_prompt():
    r = run_io(IORequest(model="llama-3.1-8b", gpu="h100-sxm", batch="max", context=2048, prompt=8192))
    dep = IORequest(model="llama-3.1-8b", gpu="h100-sxm").deployment()
    assert r.input_output.batch == int(memory.max_batch(dep, 8192)) < int(memory.max_batch(dep, 2048))


def test_frontier_request_parses_lists_and_takes_python_objects():
    spec, acc = load_model("llama-3.1-8b"), load_accelerator("h100-sxm")
    text = FrontierRequest(model="llama-3.1-8b", gpu=["h100-sxm"], counts=" 1, 2,,4 ", layouts="tp")
    assert text.counts == (1, 2, 4) and text.layouts == ("tp",)
    one = FrontierRequest(model="llama-3.1-8b", gpu="custom:bf16=989e12,bw=3.35e12,mem=80e9", weights="bf16, fp8")
    assert one.gpu == ("custom:bf16=989e12,bw=3.35e12,mem=80e9",) and one.weights == ("bf16", "fp8")
    objs = FrontierRequest(model=spec, gpu=(acc,), counts=(1, 2), layouts=("tp",))
    assert objs.model_spec() is spec and objs.accelerators() == [acc]
    # the efficiency set: the request's overrides on the shipped step model (the kernel profile)
    assert objs.efficiency_spec() == Efficiency.shipped() and objs.efficiency_spec().kernels is not None
    assert FrontierRequest(model=spec, gpu=(acc,), compute_eff=0.6).efficiency_spec() == Efficiency.shipped().updated(
        compute=0.6
    )


@pytest.mark.parametrize("cls,fields,field,needle", [
    (FrontierRequest, {"counts": "1,x"}, "counts", "comma-separated list of positive integers"),
    (FrontierRequest, {"counts": ""}, "counts", "must list positive integers"),
    (FrontierRequest, {"layouts": "tp,pp"}, "layouts", "must list tp and/or ep"),
    (FrontierRequest, {"gpu": ()}, "gpu", "at least 1 item"),
    (FrontierRequest, {"slo_tps": -1}, "slo_tps", "greater than 0"),
    (FrontierRequest, {"weights": ("bf16", "int3")}, "weights", "'int3' is not supported"),
    (FrontierRequest, {"kv": "fp7"}, "kv", "'fp7' is not supported"),
    (LanesRequest, {"rate": float("inf")}, "rate", "finite"),
    (LanesRequest, {"rate": 5, "tpot": 0}, "tpot", "greater than 0"),
    (BatchRequest, {"batch": 0}, "batch", "greater than 0 or 'max'"),
    (ContextRequest, {"points": 0}, "points", "greater than 0"),
    (IORequest, {"prompt": -5}, "prompt", "greater than 0"),
])
def test_bad_requests_name_the_field(cls, fields, field, needle):
    base = {"model": "llama-3.1-8b", "gpu": ("h100-sxm",) if cls is FrontierRequest else "h100-sxm"}
    if cls is LanesRequest:
        base["rate"] = 5
    with pytest.raises(KokubanError) as err:
        cls(**(base | fields))
    assert err.value.field == field and needle in err.value.reason
    assert "--" not in str(err.value)


@pytest.mark.parametrize("run,request_,field", [
    (run_batch, BatchRequest(model="llama-3.1-8b", gpu="h100-sxm", max_batch=10, batch=11), "batch"),
    (run_batch, BatchRequest(model="llama-3.1-8b", gpu="h100-sxm", min_batch=9, max_batch=8), "min_batch"),
    (run_batch, BatchRequest(model="llama-3.1-8b", gpu="h100-sxm", max_batch=100_000), "max_batch"),
    (run_io, IORequest(model="llama-3.1-8b", gpu="h100-sxm", context=200_000), "context"),
    (run_lanes, LanesRequest(model="llama-3.1-8b", gpu="h100-sxm", rate=5, output=1), "output"),
    (run_lanes, LanesRequest(model="llama-3.1-8b", gpu="h100-sxm", rate=5, tpot=0.001), "tpot_target_s"),
    (run_context, ContextRequest(model="llama-3.1-8b", gpu="h100-sxm", start=9000, end=100), "start"),
])
def test_impossible_requests_name_the_field(run, request_, field):
    with pytest.raises(KokubanError) as err:
        run(request_)
    assert err.value.field == field and "--" not in str(err.value)
