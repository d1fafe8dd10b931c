"""The web API (issue 14): the use cases as JSON over HTTP, the same keys and numbers as `--json`, errors as
422s naming the field, every request bounded, and the page served with nothing from elsewhere."""

from __future__ import annotations

import json
import re
import warnings
from importlib import resources

import pytest

from kokuban.present.jsonout import read_result

pytest.importorskip("fastapi")
pytest.importorskip("httpx")

with warnings.catch_warnings():  # starlette's note that its test client may move off httpx one day
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient  # noqa: E402

from kokuban.cli import main  # noqa: E402
from kokuban.errors import KokubanError  # noqa: E402
from kokuban.present.jsonout import to_json  # noqa: E402
from kokuban.usecases.request import EstimateRequest  # noqa: E402
from kokuban.web.app import MAX_BODY_BYTES, create_app  # noqa: E402

GPU = "h100-sxm"


@pytest.fixture(scope="module")
def client():
    return TestClient(create_app())


def cli_json(capsys, *args, key=None):
    """The result of a `--json` command without its envelope (the API's body is the result itself)."""
    assert main(list(args)) == 0
    out, _ = capsys.readouterr()
    return read_result(out, key)


# ---- the same numbers as the CLI -------------------------------------------------------------------
CASES = [
    ({"model": "llama-3.1-8b", "gpu": GPU, "batch": 8}, ["llama-3.1-8b", "--gpu", GPU, "--batch", "8"]),
    ({"model": "llama-3.1-70b", "gpu": "h200", "gpus": 2, "weights": "fp8", "batch": "max", "context": 8192},
     ["llama-3.1-70b", "--gpu", "h200", "--gpus", "2", "--weights", "fp8", "--batch", "max", "--context", "8192"]),
    ({"model": "qwen3-30b-a3b", "gpu": "b200", "gpus": 4, "layout": "ep", "batch": 64, "prompt": 2000, "output": 300,
      "kv": "fp8", "price_per_hour": 4.5, "compute_eff": 0.5, "memory_eff": 0.7, "overlap": 0.5,
      "step_overhead": 0.001},
     ["qwen3-30b-a3b", "--gpu", "b200", "--gpus", "4", "--layout", "ep", "--batch", "64", "--prompt", "2000",
      "--output", "300", "--kv", "fp8", "--price-per-hour", "4.5", "--compute-eff", "0.5", "--memory-eff", "0.7",
      "--overlap", "0.5", "--step-overhead", "0.001"]),
]


@pytest.mark.parametrize(("body", "args"), CASES)
def test_estimate_matches_cli_json(client, capsys, body, args):
    r = client.post("/api/estimate", json=body)
    assert r.status_code == 200, r.text
    assert r.json() == cli_json(capsys, "estimate", *args, "--json")


@pytest.mark.parametrize(("body", "args"), CASES[:2])
def test_blackboard_carries_the_estimate_unchanged(client, capsys, body, args):
    d = client.post("/api/blackboard", json=body).json()
    assert d["estimate"] == cli_json(capsys, "estimate", *args, "--json")


def test_hugging_face_repo_names_the_catalog_model(client):
    a = client.post("/api/estimate", json={"model": "meta-llama/Llama-3.1-8B", "gpu": GPU}).json()
    b = client.post("/api/estimate", json={"model": "llama-3.1-8b", "gpu": GPU}).json()
    assert a == b


def test_uploaded_config_gives_the_catalog_numbers(client):
    config = json.loads((resources.files("kokuban") / "data" / "models" / "llama-3.1-8b.json").read_text())
    up = client.post("/api/estimate", json={"model": config, "gpu": GPU, "batch": 8}).json()
    cat = client.post("/api/estimate", json={"model": "llama-3.1-8b", "gpu": GPU, "batch": 8}).json()
    for key in ("name", "source"):
        up["model"].pop(key), cat["model"].pop(key)
    assert up == cat


def test_catalog_lists_are_the_cli_rows(client, capsys):
    models = client.get("/api/models").json()
    cli_models = cli_json(capsys, "models", "--json", key="models")
    assert [{k: v for k, v in m.items() if k != "hf_repo"} for m in models] == cli_models
    assert next(m for m in models if m["id"] == "llama-3.1-8b")["hf_repo"] == "meta-llama/Llama-3.1-8B"
    assert client.get("/api/gpus").json() == cli_json(capsys, "gpus", "--json", key="gpus")


# ---- errors: 422 naming the field, whichever layer finds them ----------------------------------------
def error_of(client, body, path="/api/estimate"):
    r = client.post(path, json=body)
    assert r.status_code == 422, r.text
    return r.json()["error"]


@pytest.mark.parametrize(("extra", "field"), [
    ({"batch": 0}, "batch"),                     # FastAPI's body validation
    ({"batch": "many"}, "batch"),
    ({"compute_eff": 1.5}, "compute_eff"),
    ({"gpus": 5000}, "gpus"),
    ({"layout": "pp"}, "layout"),
    ({"prompt": 100}, "output"),                 # the request's cross-field check
    ({"batch": 100_000}, "batch"),               # the use case: does not fit
    ({"context": 10**6}, "context"),             # beyond the model's window
    ({"weights": "fp3"}, "weights"),             # the deployment's dtype check
    ({"gpu": "h900"}, "gpu"),
    ({"model": "llama-9"}, "model"),
    ({"gpu_file": "/etc/hosts"}, "gpu_file"),    # not accepted over HTTP
    ({"efficiency": {"compute": 0.5}}, "efficiency"),
])
def test_errors_are_422_naming_the_field(client, extra, field):
    err = error_of(client, {"model": "llama-3.1-8b", "gpu": GPU} | extra)
    assert err["field"] == field
    assert err["reason"] and err["message"] == f"{field}: {err['reason']}"


@pytest.mark.parametrize("extra", [{"batch": 0}, {"compute_eff": 1.5}, {"layout": "pp"}, {"batch": -3}])
def test_fastapi_and_request_word_a_bad_field_alike(client, extra):
    """The same bad field reads the same whether FastAPI's validation or `Request.__init__` finds it."""
    body = {"model": "llama-3.1-8b", "gpu": GPU} | extra
    with pytest.raises(KokubanError) as direct:
        EstimateRequest(**body)
    assert error_of(client, body) == direct.value.as_dict()


def test_missing_field_and_bad_bodies(client):
    assert error_of(client, {"gpu": GPU}) == {"field": "model", "value": None, "reason": "field required",
                                              "message": "model: field required"}
    r = client.post("/api/estimate", content=b'{"model": ', headers={"content-type": "application/json"})
    assert r.status_code == 422 and "not valid JSON" in r.json()["error"]["reason"]
    for body in ([1, 2], "text", 3):
        r = client.post("/api/estimate", json=body)
        assert r.status_code == 422 and r.json()["error"]["field"] is None


def test_a_path_is_never_read(client, tmp_path):
    config = tmp_path / "config.json"
    config.write_text((resources.files("kokuban") / "data" / "models" / "llama-3.1-8b.json").read_text())
    err = error_of(client, {"model": str(config), "gpu": GPU})
    assert err["field"] == "model" and err["reason"].startswith("unknown model")


def test_uploaded_config_is_bounded(client):
    config = json.loads((resources.files("kokuban") / "data" / "models" / "llama-3.1-8b.json").read_text())
    for layers in (10**9, 0, "32", True):
        err = error_of(client, {"model": config | {"num_hidden_layers": layers}, "gpu": GPU})
        assert err["field"] == "model" and "num_hidden_layers" in err["reason"]
    err = error_of(client, {"model": {"model_type": "llama", "num_hidden_layers": 2}, "gpu": GPU})
    assert err["field"] == "model" and "missing the field" in err["reason"]
    err = error_of(client, {"model": config | {"hidden_size": "wide"}, "gpu": GPU})
    assert err["field"] == "model"


def test_bodies_are_bounded(client):
    r = client.post("/api/estimate", content=b" " * (MAX_BODY_BYTES + 1), headers={"content-type": "application/json"})
    assert r.status_code == 413 and "limit" in r.json()["error"]["reason"]
    deep = b"[" * 100_000 + b"]" * 100_000
    r = client.post("/api/estimate", content=deep[:MAX_BODY_BYTES], headers={"content-type": "application/json"})
    assert r.status_code in (400, 422) and "error" in r.json()


def test_unknown_route_is_json(client):
    r = client.get("/api/nothing")
    assert r.status_code == 404 and r.json()["error"]["field"] is None


# ---- the curves: bounded, and each row the estimate's number ----------------------------------------
def test_batch_curve_rows_are_estimates(client):
    body = {"model": "llama-3.1-8b", "gpu": GPU, "context": 4096}
    d = client.post("/api/batch-curve", json=body | {"points": 24}).json()
    assert len(d["rows"]) <= 24 and d["rows"][0]["batch"] == 1 and d["rows"][-1]["batch"] == d["max_batch"]
    for row in (d["rows"][0], d["rows"][-1]):
        est = client.post("/api/estimate", json=body | {"batch": row["batch"]}).json()
        assert row["usd_per_m_output"] == est["cost"]["usd_per_m_output"]
        # shared + per request = the whole cost of a token (the wing's split, summed)
        parts = row["usd_per_m_output_shared"] + row["usd_per_m_output_per_request"]
        assert parts == pytest.approx(row["usd_per_m_output"])


def test_curves_refuse_unbounded_work(client):
    body = {"model": "llama-3.2-1b", "gpu": "b200", "gpus": 8, "context": 128}
    assert error_of(client, body | {"points": 10_000}, "/api/batch-curve")["field"] == "points"
    assert error_of(client, body | {"max_batch": 10**6}, "/api/batch-curve")["field"] == "max_batch"
    d = client.post("/api/batch-curve", json=body).json()
    assert d["capped"] and d["max_batch"] == 65_536 and len(d["rows"]) <= 48
    wall = {k: v for k, v in body.items() if k != "context"}
    assert error_of(client, wall | {"end": 10**7}, "/api/context-wall")["field"] == "end"
    assert error_of(client, wall | {"start": 5000, "end": 4000}, "/api/context-wall")["field"] == "start"
    assert error_of(client, wall | {"points": 65}, "/api/context-wall")["field"] == "points"


def test_context_wall(client):
    d = client.post("/api/context-wall", json={"model": "llama-3.1-8b", "gpu": GPU, "points": 20}).json()
    contexts = [r["context"] for r in d["rows"]]
    assert contexts == sorted(contexts) and contexts[0] == 1024 and contexts[-1] == 131_072 and len(contexts) <= 22
    assert d["summary"]["max_context"] == 131_072


def test_every_response_names_its_version_and_schema(client):
    """The headers carry what `--json`'s envelope carries; the body is the result (the same keys as the CLI)."""
    from kokuban import __version__
    from kokuban.present.jsonout import SCHEMA_VERSION

    for r in (client.get("/api/gpus"), client.post("/api/estimate", json={"model": "llama-3.1-8b", "gpu": GPU}),
              client.post("/api/estimate", json={"model": "llama-3.1-8b", "gpu": "nope"}), client.get("/")):
        assert r.headers["x-kokuban-version"] == __version__
        assert r.headers["x-kokuban-schema-version"] == str(SCHEMA_VERSION) == "1"
    assert "kokuban_version" not in client.post("/api/estimate", json={"model": "llama-3.1-8b", "gpu": GPU}).json()


# ---- the page --------------------------------------------------------------------------------------
def test_page_and_assets_are_served_from_here(client):
    r = client.get("/")
    assert r.status_code == 200 and "default-src 'self'" in r.headers["content-security-policy"]
    assets = re.findall(r'(?:src|href)="(/static/[^"]+)"', r.text)
    assert {"/static/app.js", "/static/charts.js", "/static/app.css"} <= set(assets)
    for path in assets:
        text = client.get(path).text
        # nothing fetched from elsewhere: the only absolute URL is the SVG namespace name
        assert set(re.findall(r"https?://[^\s\"'`)]+", text)) <= {"http://www.w3.org/2000/svg"}, path


def test_openapi_documents_every_endpoint(client):
    schema = client.get("/openapi.json").json()
    for path in ("/api/estimate", "/api/blackboard", "/api/batch-curve", "/api/context-wall"):
        body = schema["paths"][path]["post"]["requestBody"]["content"]["application/json"]["schema"]
        name = body["$ref"].rsplit("/", 1)[1]
        props = schema["components"]["schemas"][name]["properties"]
        assert "model" in props and "gpu_file" not in props and "efficiency" not in props
    assert {"/api/models", "/api/gpus", "/api/limits"} <= set(schema["paths"])


def test_json_goes_through_the_one_serialiser(client):
    body = {"model": "llama-3.1-8b", "gpu": GPU}
    from kokuban.usecases.estimate import run_estimate

    assert client.post("/api/estimate", json=body).text == to_json(run_estimate(EstimateRequest(**body)).as_dict())


def test_no_page_that_loads_a_cdn(client):
    """FastAPI's /docs and /redoc pages fetch their scripts from a CDN: they are off; the schema stays."""
    assert client.get("/docs").status_code == 404 and client.get("/redoc").status_code == 404
    assert client.get("/openapi.json").status_code == 200


def test_serve_binds_this_machine_only(monkeypatch, capsys):
    import uvicorn

    calls: dict = {}
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: calls.update(kw, app=app))
    assert main(["serve", "--port", "8123"]) == 0
    assert calls["host"] == "127.0.0.1" and calls["port"] == 8123
    assert "http://127.0.0.1:8123/" in capsys.readouterr().err


# ---- the agent use case: bounded, and the CLI's numbers ----------------------------------------------
@pytest.mark.parametrize(("body", "args"), [
    ({"preset": "swe-bench", "model": "llama-3.1-8b", "gpu": GPU, "runs": 20},
     ["self-hosted", "llama-3.1-8b", "--gpu", GPU, "--preset", "swe-bench", "--runs", "20"]),
    ({"preset": "tracelab-session", "price": "anthropic/claude-sonnet-4", "compaction": ["auto"]},
     ["api", "anthropic/claude-sonnet-4", "--preset", "tracelab-session", "--compaction", "auto"]),
])
def test_agent_matches_cli_json(client, capsys, body, args):
    r = client.post("/api/agent", json=body)
    assert r.status_code == 200, r.text
    assert main(["agent", *args, "--json"]) == 0
    assert r.json() == read_result(capsys.readouterr().out)


@pytest.mark.parametrize(("extra", "field"), [
    ({"trace": "example"}, "trace"),                       # reads a file: refused over HTTP
    ({"scenario_file": "/etc/hosts"}, "scenario_file"),
    ({"price_file": ["/etc/hosts"]}, "price_file"),
    ({"steps": "100000"}, "steps"),                        # unbounded work: presets only
    ({"runs": 201}, "runs"),
    ({"compaction": ["none"] * 6}, "compaction"),
    ({"preset": "nope"}, "preset"),
])
def test_agent_is_bounded(client, extra, field):
    body = {"preset": "swe-bench", "price": "anthropic/claude-sonnet-4"} | extra
    assert error_of(client, body, "/api/agent")["field"] == field
    assert error_of(client, {"price": "anthropic/claude-sonnet-4"}, "/api/agent")["field"] == "preset"


def test_agent_presets_are_the_cli_rows(client, capsys):
    assert main(["agent", "presets", "--json"]) == 0
    assert client.get("/api/agent/presets").json() == read_result(capsys.readouterr().out, "presets")


# ---- the price sheets: the CLI's numbers, no files ----------------------------------------------------
@pytest.mark.parametrize(("path", "body", "args"), [
    ("/api/prices/list", {"provider": "deepseek"}, ["list", "--provider", "deepseek"]),
    ("/api/prices/explain", {"name": "deepseek/deepseek-chat"}, ["explain", "deepseek/deepseek-chat"]),
    ("/api/prices/explain", {"name": "anthropic/claude-sonnet-4", "gpu": "h200", "compute_eff": 0.6},
     ["explain", "anthropic/claude-sonnet-4", "--gpu", "h200", "--compute-eff", "0.6"]),
    ("/api/prices/infer", {"name": "deepseek/deepseek-chat"}, ["infer", "deepseek/deepseek-chat"]),
    ("/api/prices/infer", {"name": "openai/gpt-5.4-mini", "speed": 100},
     ["infer", "openai/gpt-5.4-mini", "--speed", "100"]),
])
def test_prices_match_cli_json(client, capsys, path, body, args):
    r = client.post(path, json=body)
    assert r.status_code == 200, r.text
    assert main(["prices", *args, "--json"]) == 0
    assert r.json() == read_result(capsys.readouterr().out, "prices" if args[0] == "list" else None)


@pytest.mark.parametrize(("path", "extra", "field"), [
    ("/api/prices/explain", {"files": ["/etc/hosts"]}, "files"),
    ("/api/prices/infer", {"plot": "/tmp/x.png"}, "plot"),     # would write a file on the server
    ("/api/prices/infer", {"name": "x/y"}, "name"),
    ("/api/prices/explain", {"name": None}, "name"),
])
def test_prices_refuse_files_and_name_fields(client, path, extra, field):
    assert error_of(client, {"name": "deepseek/deepseek-chat"} | extra, path)["field"] == field


# ---- the simulator: a capped run, the CLI's numbers plus every request's latencies ------------------------
SIM_BODY = {"model": "llama-3.1-8b", "gpu": GPU, "rate": 4, "requests": 60, "prompt": "lognormal:1000,0.6",
            "output": "uniform:1,300", "scheduler": "prefill_first", "seed": 3}
SIM_ARGS = ["llama-3.1-8b", "--gpu", GPU, "--rate", "4", "--requests", "60", "--prompt", "lognormal:1000,0.6",
            "--output", "uniform:1,300", "--scheduler", "prefill_first", "--seed", "3"]


def test_simulate_matches_cli_json_plus_samples(client, capsys):
    import numpy as np

    r = client.post("/api/simulate", json=SIM_BODY)
    assert r.status_code == 200, r.text
    api = r.json()
    samples = api.pop("samples_s")
    assert api == cli_json(capsys, "simulate", *SIM_ARGS, "--json")  # every key the CLI prints, unchanged
    assert len(samples["ttft"]) == len(samples["e2e"]) == 60 and samples["ttft"] == sorted(samples["ttft"])
    assert len(samples["tpot"]) <= 60  # one-token outputs have no TPOT
    for k in ("ttft", "tpot", "e2e"):  # the summary's percentiles are those of the samples the page draws
        assert api["latency_s"][k]["p50"] == pytest.approx(float(np.percentile(samples[k], 50)), rel=1e-12)


@pytest.mark.parametrize(("extra", "field"), [
    ({"requests": 301}, "requests"),                       # over the web's cap (300)
    ({"output": "8193", "requests": 1}, "output"),         # one output over 8,192 tokens
    ({"prompt": "lognormal:1e300,1"}, "prompt"),           # draws past int64
    ({"requests": 300, "output": "1000"}, "output"),       # 300 × 1000 = 300,000 output tokens > 2¹⁸ = 262,144
    ({"requests": 300, "prompt": "1600", "output": "200"}, "prompt"),  # 300 × 1800 = 540,000 > 2¹⁹ = 524,288
    ({"trace": "example"}, "trace"),                       # a file on the server
    ({"max_num_batched_tokens": 1}, "max_num_batched_tokens"),  # multiplies the steps
    ({"rate": None}, "rate"),
])
def test_simulate_is_capped(client, extra, field):
    body = {"model": "llama-3.1-8b", "gpu": GPU, "rate": 4} | extra
    if body["rate"] is None:
        del body["rate"]
    assert error_of(client, body, "/api/simulate")["field"] == field


def test_simulate_just_inside_the_caps(client):
    # 300 × (1547 + 200) = 524,100 ≤ 524,288 tokens in all; 300 × 200 = 60,000 output tokens ≤ 262,144
    r = client.post("/api/simulate", json={"model": "llama-3.1-8b", "gpu": GPU, "rate": "inf", "requests": 300,
                                           "prompt": "1547", "output": "200"})
    assert r.status_code == 200, r.text
    assert r.json()["requests"] == 300
