"""Fuzzing the API's validation: hypothesis builds bodies from the OpenAPI schema's own properties (plausible
values, edges and junk of every JSON type); whatever arrives, the answer is a 200 with finite numbers or a
422/413 naming what is wrong — never a 500, never a hang. Deterministic (`derandomize=True`)."""

from __future__ import annotations

import json
import time

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("httpx")

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
    "model": st.sampled_from(["llama-3.1-8b", "qwen3-30b-a3b", "deepseek-v3", "gemma-3-1b", "gpt-oss-20b",
                              "mixtral-8x7b", "meta-llama/Llama-3.1-8B", "coarse:total=7e9,active=7e9,kv=131072",
                              "coarse:total=1", "nope", "/etc/passwd", "../config.json"])
             | st.fixed_dictionaries({"model_type": st.sampled_from(["llama", "qwen3", "gpt2"]),
                                      "num_hidden_layers": st.integers(-2, 5000), "hidden_size": st.integers(-1, 10**6),
                                      "num_attention_heads": st.integers(0, 64), "vocab_size": st.integers(0, 10**6),
                                      "intermediate_size": st.integers(0, 10**6)}),
    "gpu": st.sampled_from(["h100-sxm", "h200", "b200", "a10g", "tpu-v5e", "h20", "custom:bf16=1e15,bw=3e12,mem=80e9",
                            "custom:bw=0", "H100-SXM", "x"]),
    "layout": st.sampled_from(["tp", "ep", None, "dp"]),
    "weights": st.sampled_from(["bf16", "fp8", "int4", "fp4", "float16", "fp3", None]),
    "kv": st.sampled_from(["bf16", "fp8", None, "int2"]),
    "compute": st.sampled_from(["bf16", "fp8", "fp4", None, "tf32"]),
}


def value_for(name: str, prop: dict) -> st.SearchStrategy:
    """Plausible values of a property (from its schema's types and bounds) mixed with edges and junk."""
    if name in PLAUSIBLE:
        return PLAUSIBLE[name] | junk
    kinds = {t.get("type") for t in prop.get("anyOf", [prop])} | {t.get("const") for t in prop.get("anyOf", [])}
    options = [junk]
    if "integer" in kinds:
        options += [st.integers(-5, 300), st.sampled_from([0, 1, 2**31, 2**31 + 1, 4096, 4097, 65_536, 10**12])]
    if "number" in kinds:
        options += [st.floats(-1, 2), st.sampled_from([0.0, 1e-300, 1e300, 1.0])]
    if "max" in kinds:
        options.append(st.just("max"))
    if "boolean" in kinds:
        options.append(st.booleans())
    return st.one_of(*options)


def body_strategy(path: str) -> st.SearchStrategy:
    ref = SCHEMA["paths"][path]["post"]["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    props = SCHEMA["components"]["schemas"][ref.rsplit("/", 1)[1]]["properties"]
    fields = {k: value_for(k, v) for k, v in props.items()}
    base = st.fixed_dictionaries({"model": PLAUSIBLE["model"], "gpu": PLAUSIBLE["gpu"]},
                                 optional={k: v for k, v in fields.items() if k not in ("model", "gpu")})
    extra = st.dictionaries(st.sampled_from(["gpu_file", "efficiency", "zzz", "model"]), junk, max_size=1)
    return st.one_of(base, st.builds(lambda a, b: a | b, base, extra), junk)


def strict_json(text: str):
    def refuse(constant: str):
        raise AssertionError(f"non-finite number {constant} in a response")
    return json.loads(text, parse_constant=refuse)


def check(path: str, body) -> None:
    start = time.perf_counter()
    r = CLIENT.post(path, content=json.dumps(body), headers={"content-type": "application/json"})
    assert time.perf_counter() - start < 10, f"{path} took {time.perf_counter() - start:.1f} s for {body!r}"
    assert r.status_code in (200, 413, 422), (r.status_code, r.text[:500], body)
    data = strict_json(r.text)
    if r.status_code != 200:
        err = data["error"]
        assert err["reason"] and err["message"].endswith(err["reason"])
        assert err["field"] is None or isinstance(err["field"], str)


@pytest.mark.parametrize("path", POSTS)
def test_fuzzed_bodies_never_crash_the_server(path):
    @settings(max_examples=40, derandomize=True, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
    @given(body=body_strategy(path))
    def run(body):
        check(path, body)

    run()


def test_every_post_endpoint_is_fuzzed():
    assert set(POSTS) == {"/api/estimate", "/api/blackboard", "/api/batch-curve", "/api/context-wall"}
