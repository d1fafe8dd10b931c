"""Fuzzing the API's validation: hypothesis builds bodies from the OpenAPI schema's own properties (plausible
values, edges and junk of every JSON type); whatever arrives, the answer is a 200 with finite numbers or a
422/413 naming what is wrong — never a 500, never a hang. Deterministic (`derandomize=True`)."""

from __future__ import annotations

import json
import time
import warnings

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("httpx")

with warnings.catch_warnings():  # starlette's note that its test client may move off httpx one day
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient  # noqa: E402
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from kokuban.web.app import create_app  # noqa: E402

CLIENT = TestClient(create_app(), raise_server_exceptions=False)
SCHEMA = CLIENT.get("/openapi.json").json()
POSTS = sorted(p for p, ops in SCHEMA["paths"].items() if "post" in ops)

junk = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**63), 2**63), st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12), st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=4), st.integers(), max_size=2),
)
PLAUSIBLE = {
    "model": st.sampled_from(["llama-3.1-8b", "llama-3.2-1b", "qwen3-30b-a3b", "gemma-3-1b", "gpt-oss-20b",
                              "meta-llama/Llama-3.1-8B", "coarse:total=7e9,active=7e9,kv=131072", "deepseek-v3",
                              "coarse:total=1", "nope", "/etc/passwd", "../config.json"])
             | st.fixed_dictionaries({"model_type": st.sampled_from(["llama", "qwen3", "gpt2"]),
                                      "num_hidden_layers": st.integers(-2, 5000), "hidden_size": st.integers(-1, 10**6),
                                      "num_attention_heads": st.integers(0, 64), "vocab_size": st.integers(0, 10**6),
                                      "intermediate_size": st.integers(0, 10**6)}),
    "gpu": st.sampled_from(["h100-sxm", "h200", "b200", "mi300x", "tpu-v5e", "h20", "custom:bf16=1e15,bw=3e12,mem=80e9",
                            "custom:bw=0", "H100-SXM", "x"]),
    "layout": st.sampled_from(["tp", "ep", None]),
    "weights": st.sampled_from(["bf16", "fp8", "int4", "fp4", "float16", "fp3", None]),
    "kv": st.sampled_from(["bf16", "fp8", None, "int2"]),
    "compute": st.sampled_from(["bf16", "fp8", "fp4", None, "tf32"]),
    "preset": st.sampled_from(["swe-bench", "swe-bench-variable", "nope", ""]),
    "name": st.sampled_from(["deepseek/deepseek-chat", "openai/gpt-5.4-mini", "anthropic/claude-sonnet-4", "x/y", ""]),
    "provider": st.sampled_from(["deepseek", "openai", "nope", None]),
    "price": st.sampled_from(["anthropic/claude-sonnet-4", "deepseek/deepseek-chat", "x/y", "", None]),
    "compaction": st.lists(st.sampled_from(["none", "auto", "every:10,8000", "threshold:1,1", "every:0,0", "x"]),
                           max_size=6),
}


def plausible(name: str, prop: dict) -> st.SearchStrategy:
    """Values of a property inside (or at the edges of) what its schema allows, from its types and bounds."""
    if name in PLAUSIBLE:
        return PLAUSIBLE[name]
    kinds = {t.get("type") for t in prop.get("anyOf", [prop])} | {t.get("const") for t in prop.get("anyOf", [])}
    options = []
    if "integer" in kinds:
        hi = min((t.get("maximum", 2**31) for t in prop.get("anyOf", [prop]) if t.get("type") == "integer"),
                 default=2**31)
        options += [st.integers(1, min(hi, 40_000)), st.sampled_from([1, 2, 8, hi])]
    if "number" in kinds:
        options += [st.floats(0.05, 1.0), st.sampled_from([1.0, 1e-6])]
    if "max" in kinds:
        options.append(st.just("max"))
    if "boolean" in kinds:
        options.append(st.booleans())
    if "null" in kinds:
        options.append(st.none())
    return st.one_of(*options) if options else junk


def body_strategy(path: str) -> st.SearchStrategy:
    """Bodies of three kinds: plausible fields; plausible with one field (or an unknown one) junk; pure junk."""
    ref = SCHEMA["paths"][path]["post"]["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    props = SCHEMA["components"]["schemas"][ref.rsplit("/", 1)[1]]["properties"]
    optional = {k: plausible(k, v) for k, v in props.items() if k not in ("model", "gpu")}
    good = st.fixed_dictionaries({"model": PLAUSIBLE["model"], "gpu": PLAUSIBLE["gpu"]}, optional=optional)
    spoiled = st.builds(lambda body, key, value: body | {key: value}, good,
                        st.sampled_from([*props, "gpu_file", "efficiency", "zzz"]), junk)
    return st.one_of(valid_body(props), valid_body(props), good, spoiled, junk)


def valid_body(props: dict) -> st.SearchStrategy:
    """Bodies inside what fits (small models, one to eight accelerators, modest batches and contexts), with the
    numbers free inside their ranges: these reach the use cases' arithmetic, where a NaN or a crash would hide."""
    fields = {
        "gpus": st.integers(1, 8), "batch": st.integers(1, 32) | st.just("max"),
        "context": st.integers(1, 8192), "weights": st.sampled_from(["bf16", "fp8", "int4"]),
        "kv": st.sampled_from(["bf16", "fp8"]),
        "price_per_hour": st.floats(0, 100), "compute_eff": st.floats(0.05, 1), "memory_eff": st.floats(0.05, 1),
        "kv_eff": st.floats(0.05, 1), "link_eff": st.floats(0.05, 1), "overlap": st.floats(0, 1),
        "step_overhead": st.floats(0, 0.1), "max_batch": st.integers(1, 16), "points": st.integers(20, 64),
        "start": st.integers(1, 2048), "end": st.integers(2048, 32768),
        "runs": st.integers(1, 10), "compaction": st.sampled_from([["none"], ["auto"], ["every:10,8000"]]),
        "survival": st.sampled_from(["keep", "offload", "drop", "best"]),
    }
    required = {"model": st.sampled_from(["llama-3.2-1b", "llama-3.1-8b", "qwen3-30b-a3b", "gemma-3-1b"]),
                "gpu": st.sampled_from(["h100-sxm", "h200", "b200", "mi300x", "h20"])}
    if "preset" in props:  # the agent: a bundled scenario, self-hosted on the deployment (a batch of sessions)
        required["preset"] = st.sampled_from(["swe-bench", "swe-bench-variable"])
        fields["batch"] = st.integers(1, 64)
    if "name" in props:  # a price row: read against a deployment, the model its own (or the row's stand-in)
        rows = ["deepseek/deepseek-chat", "openai/gpt-5.4-mini", "anthropic/claude-sonnet-4"]
        required = {"name": st.sampled_from(rows)}
        fields |= {"speed": st.floats(1, 60), "gpu": st.sampled_from(["h100-sxm", "h200", "b200"]),
                   "context": st.integers(1024, 32768), "batch": st.integers(1, 64)}
        fields.pop("gpus")  # the automatic count: what the prices commands default to
    if "provider" in props:  # the price list: no deployment at all
        required = {}
    if "rate" in props:  # a simulation: length specs at and past the web's caps, rates down to nearly idle
        specs = st.sampled_from(["1", "200", "8192", "8193", "uniform:1,300", "lognormal:1000,0.6", "lognormal:1e300,1",
                                 "hist:100=1,2000=1", "uniform:0,1", "99999999999999999999", "x", 500])
        required["rate"] = st.floats(1e-3, 100) | st.just("inf")
        fields |= {"requests": st.integers(1, 300), "prompt": specs, "output": specs, "seed": st.integers(0, 9),
                   "scheduler": st.sampled_from(["continuous", "prefill_first", "static", "inflight", "nope"]),
                   "arrival": st.sampled_from(["poisson", "gamma", "nope"]), "ttft_slo": st.floats(0.01, 10)}
    return st.fixed_dictionaries(required, optional={k: v for k, v in fields.items() if k in props})

def strict_json(text: str):
    def refuse(constant: str):
        raise AssertionError(f"non-finite number {constant} in a response")
    return json.loads(text, parse_constant=refuse)


def check(path: str, body) -> None:
    start = time.perf_counter()
    r = CLIENT.post(path, content=json.dumps(body), headers={"content-type": "application/json"})
    assert time.perf_counter() - start < 30, f"{path} hung: took {time.perf_counter() - start:.1f} s for {body!r}"
    assert r.status_code in (200, 413, 422), (r.status_code, r.text[:500], body)
    data = strict_json(r.text)
    if r.status_code != 200:
        err = data["error"]
        assert err["reason"] and err["message"].endswith(err["reason"])
        assert err["field"] is None or isinstance(err["field"], str)


@pytest.mark.parametrize("path", POSTS)
def test_fuzzed_bodies_never_crash_the_server(path):
    @settings(max_examples=20 if path in ("/api/agent", "/api/prices/list") else 30, derandomize=True, deadline=None,
              database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
    @given(body=body_strategy(path))
    def run(body):
        check(path, body)

    run()


def test_every_post_endpoint_is_fuzzed():
    assert set(POSTS) == {"/api/estimate", "/api/blackboard", "/api/batch-curve", "/api/context-wall", "/api/agent",
                          "/api/prices/list", "/api/prices/explain", "/api/prices/infer", "/api/simulate"}
