"""The prices use cases: each `kokuban prices X --json` is `run_X(XRequest(...)).as_dict()` (contract), requests
own the defaults (auto GPU count, EP for MoE) and check the input once, naming fields, not flags."""

from __future__ import annotations

import json

import pytest

from kokuban.cli import main
from kokuban.errors import KokubanError
from kokuban.present.jsonout import to_json
from kokuban.usecases.prices import (
    CompareRequest,
    ExplainRequest,
    FleetRequest,
    InferRequest,
    ListRequest,
    run_compare,
    run_explain,
    run_fleet,
    run_infer,
    run_list,
)

H800 = "docs/examples/h800.toml"
DAY6 = {"input_tokens": 608e9, "cached_tokens": 342e9, "output_tokens": 168e9, "context": 4989, "speed": 21.0}
DAY6_FLAGS = ["--input-tokens", "608e9", "--cached-tokens", "342e9", "--output-tokens", "168e9", "--context", "4989",
              "--speed", "21"]




def as_json(result):
    return json.loads(to_json(result.as_dict()))


# ---- contract: the CLI's JSON is the use case's as_dict() ------------------------------------------------
def test_list_contract(cli_json, capsys):
    out = cli_json(["prices", "list", "--provider", "deepseek"])["prices"]
    assert out == as_json(run_list(ListRequest(provider="deepseek")))


def test_explain_contract(cli_json, capsys):
    out = cli_json(["prices", "explain", "anthropic/claude-haiku-3.5", "--context", "4096"])
    assert out == as_json(run_explain(ExplainRequest(name="anthropic/claude-haiku-3.5", context=4096)))


def test_explain_with_a_stand_in_contract(cli_json, capsys):
    args = ["prices", "explain", "anthropic/claude-sonnet-4", "--stand-in", "gpt-oss-120b", "--gpus", "2"]
    out = cli_json(args)
    assert out == as_json(run_explain(ExplainRequest(name="anthropic/claude-sonnet-4", model="gpt-oss-120b", gpus=2)))
    assert out["model"] == "gpt-oss-120b" and out["gpus"] == 2


def test_infer_open_contract(cli_json, capsys):
    args = ["prices", "infer", "deepinfra/llama-3.3-70b-instruct-turbo", "--weights", "fp8", "--context", "4096",
            "--speed", "30", "--batch", "16"]
    req = InferRequest(name="deepinfra/llama-3.3-70b-instruct-turbo", weights="fp8", context=4096, speed=30, batch=16)
    out = cli_json(args)
    assert out == as_json(run_infer(req))
    assert out["range"]["central"]["given_batch"]["batch"] == 16


def test_infer_closed_contract(cli_json, capsys, tmp_path):
    png = str(tmp_path / "region.png")
    out = cli_json(["prices", "infer", "openai/gpt-5.4-mini", "--speed", "100", "--plot", png])
    assert out == as_json(run_infer(InferRequest(name="openai/gpt-5.4-mini", speed=100, plot=png)))
    assert out["plot"] == png and (tmp_path / "region.png").stat().st_size > 1000 and "grid" not in out


def test_compare_contract(cli_json, capsys):
    args = ["prices", "compare", "llama-3.1-8b", "--prompt", "1000", "--output", "200", "--requests", "100",
            "--all-apis"]
    out = cli_json(args)
    assert out == as_json(run_compare(CompareRequest(model="llama-3.1-8b", prompt=1000, output=200, requests=100,
                                                     all_apis=True)))


def test_fleet_contract(cli_json, capsys):
    args = ["prices", "fleet", "deepseek/deepseek-reasoner", "--gpu", "h800", "--gpu-file", H800, *DAY6_FLAGS]
    out = cli_json(args)
    assert out == as_json(run_fleet(FleetRequest(name="deepseek/deepseek-reasoner", gpu="h800", gpu_file=H800, **DAY6)))
    assert out["efficiency"]["kv_memory"] == out["efficiency"]["memory"]  # the KV-read fraction in use, not null


def test_every_command_prints_its_table(capsys):
    for args in (["prices", "list"], ["prices", "explain", "anthropic/claude-sonnet-4", "--context", "4096"],
                 ["prices", "infer", "llama-3.1-8b", "--input-price", "0.05", "--output-price", "0.1", "--speed", "40"],
                 ["prices", "infer", "openai/gpt-5.4-mini", "--speed", "100"],
                 ["prices", "compare", "llama-3.1-8b", "--prompt", "1000", "--output", "200"],
                 ["prices", "fleet", "deepseek/deepseek-reasoner", "--gpu", "h800", "--gpu-file", H800, *DAY6_FLAGS]):
        assert main(args) == 0, args
        assert capsys.readouterr().out.strip()


# ---- the requests own the defaults ------------------------------------------------------------------------
def test_defaults_are_the_automatic_count_and_ep_for_moe():
    r = InferRequest(name="deepseek/deepseek-reasoner", speed=21)
    assert (r.gpu, r.gpus, r.layout, r.context) == ("h100-sxm", None, None, 8192)
    res = run_infer(r)
    assert res.deployment.layout == "ep" and res.deployment.num_gpus >= 8  # 671 B parameters need several H100s
    dense = run_infer(InferRequest(name="llama-3.1-8b", input_price=0.05, output_price=0.1))
    assert dense.deployment.layout == "tp"


def test_hand_price_names_its_open_model():
    res = run_infer(InferRequest(name="llama-3.1-8b", input_price=0.05, output_price=0.1, cached_price=0.01, gpus=1))
    price = res.inference.price
    assert (price.open_model, price.input_usd_per_m, price.output_usd_per_m, price.cached_input_usd_per_m) == \
        ("llama-3.1-8b", 0.05, 0.1, 0.01)


# ---- errors name fields (the CLI words them as flags) ----------------------------------------------------
@pytest.mark.parametrize("make, field", [
    (lambda: InferRequest(input_price=1.0), "output_price"),
    (lambda: InferRequest(output_price=1.0), "input_price"),
    (lambda: InferRequest(name="llama-3.1-8b", cached_price=0.1), "cached_price"),
    (lambda: InferRequest(), "name"),
    (lambda: InferRequest(name="x", input_price=-1.0, output_price=1.0), "input_price"),
    (lambda: InferRequest(name="x", input_price=float("nan"), output_price=1.0), "input_price"),
    (lambda: ExplainRequest(name="x", memory_eff=2.0), "memory_eff"),
    (lambda: CompareRequest(model="llama-3.1-8b", prompt=10, output=10, cache_hit=1.5), "cache_hit"),
    (lambda: CompareRequest(model="llama-3.1-8b", prompt=0, output=10), "prompt"),
    (lambda: FleetRequest(name="deepseek/deepseek-reasoner", **(DAY6 | {"cached_tokens": 700e9})), "cached_tokens"),
    (lambda: FleetRequest(name="deepseek/deepseek-reasoner", **(DAY6 | {"cached_tokens": 608e9})), "cached_tokens"),
    (lambda: run_list(ListRequest(provider="antropic")), "provider"),
    (lambda: run_explain(ExplainRequest(name="deepseek/deepseek-chatt")), "name"),
    (lambda: run_explain(ExplainRequest(name="anthropic/claude-sonnet-4", model="llama-3.1-8x")), "model"),
    (lambda: run_infer(InferRequest(name="openai/gpt-5.4-mini")), "speed"),
    (lambda: run_infer(InferRequest(name="llama-3.1-8b", input_price=0.1, output_price=0.2, speed=1e5)), "speed"),
    (lambda: run_infer(InferRequest(name="llama-3.1-8b", input_price=0.1, output_price=0.2, batch=10**6)), "batch"),
    (lambda: run_infer(InferRequest(name="llama-3.1-8b", input_price=0.1, output_price=0.2, context=300_000)),
     "context"),
    (lambda: run_infer(InferRequest(name="llama-3.1-8b", input_price=0.1, output_price=0.2, price_per_hour=0)),
     "price_per_hour"),
    (lambda: run_compare(CompareRequest(model="llama-3.1-8b", prompt=130_000, output=10_000)), "output"),
    (lambda: run_compare(CompareRequest(model="llama-3.1-8b", prompt=10, output=10, apis=("foo/bar",))), "apis"),
    (lambda: run_fleet(FleetRequest(name="anthropic/claude-sonnet-4", **DAY6)), "model"),
])
def test_bad_input_names_the_field(make, field):
    with pytest.raises(KokubanError) as exc:
        make()
    assert exc.value.field == field and "--" not in exc.value.reason and "\n" not in str(exc.value)


@pytest.mark.parametrize("args, flag", [
    (["prices", "infer", "--input-price", "1"], "--output-price"),
    (["prices", "infer", "openai/gpt-5.4-mini"], "--speed"),
    (["prices", "explain", "anthropic/claude-sonnet-4", "--stand-in", "llama-3.1-8x"], "--model"),
    (["prices", "fleet", "anthropic/claude-sonnet-4", *DAY6_FLAGS], "--model"),
    (["prices", "compare", "llama-3.1-8b", "--prompt", "10", "--output", "10", "--api", "foo/bar"], "--api"),
    (["prices", "infer", "llama-3.1-8b", "--input-price", "0.1", "--output-price", "0.2", "--price-per-hour", "0"],
     "--price-per-hour"),
])
def test_the_cli_words_the_field_as_its_flag(capsys, args, flag):
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {flag}: ") and err.count("\n") == 1


def _finite(text: str):
    def refuse(name):
        raise AssertionError(f"{name} in the JSON")
    return json.loads(text, parse_constant=refuse)


@pytest.mark.parametrize("args", [
    ["prices", "explain", "llama-3.1-8b", "--input-price", "0", "--output-price", "1", "--context", "4096"],
    ["prices", "explain", "llama-3.1-8b", "--input-price", "0", "--output-price", "0", "--context", "4096"],
    ["prices", "infer", "llama-3.1-8b", "--input-price", "0", "--output-price", "0", "--context", "4096"],
    ["prices", "fleet", "llama-3.1-8b", "--input-price", "0", "--output-price", "0", "--input-tokens", "1e9",
     "--output-tokens", "1e9", "--context", "4000", "--speed", "20", "--prefill-gpus", "1", "--decode-gpus", "1"],
])
def test_free_prices_give_finite_json_not_a_traceback(capsys, args):
    # a price of 0 has no gross margin (1 − cost ÷ 0) and no output ÷ input ratio (÷ 0): null, never inf or NaN
    # (the old code printed Infinity for the ratio and -Infinity for the gross margins)
    assert main(args + ["--json"]) == 0
    out = _finite(capsys.readouterr().out)
    if args[1] == "explain" and args[3] == "0":
        assert out["features"][0]["sheet"]["output_over_input"] is None
    if args[1] == "infer":
        assert out["range"]["central"]["margin_at_max_batch"]["gross_margin"] is None
        assert out["range"]["central"]["margin_at_max_batch"]["profit_over_cost"] == -1.0  # 0 ÷ cost − 1
    if args[1] == "fleet":
        assert out["day"]["gross_margin"] is None and out["day"]["revenue_usd_per_day"] == 0.0
