"""Fuzzing the CLI contract: for any input, exit 0 with finite, non-negative times and costs in the JSON, or
exit 2 with one line on stderr and no traceback. Hypothesis draws each flag's value from valid values and from
the values that broke tools like this one (0, negatives, nan, inf, 10³⁰, words); the corpus below keeps the
inputs that once broke kokuban, run on every CI pass."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kokuban.cli import main

BAD_NUMBERS = ["0", "-1", "-0.5", "nan", "inf", "-inf", "1e30", "1e308", "abc", "", "1.5", "0x10"]


def numbers(valid: st.SearchStrategy) -> st.SearchStrategy:
    return st.one_of(valid.map(str), st.sampled_from(BAD_NUMBERS))


MODELS = st.sampled_from(["llama-3.1-8b", "llama-3.1-70b", "deepseek-v3", "qwen3-235b-a22b", "gpt-oss-20b",
                          "llama-3.1-8x", "coarse:total=7e9,active=7e9,kv=131072", "coarse:total=nan"])
GPUS = st.sampled_from(["h100-sxm", "h200", "b200", "mi300x", "a100-80gb", "h1000", "custom:bf16=1e15"])
DEPLOYMENT = {
    "--gpus": numbers(st.sampled_from([1, 2, 4, 8])),
    "--layout": st.sampled_from(["tp", "ep", "pp"]),
    "--weights": st.sampled_from(["bf16", "fp8", "int4", "fp3"]),
    "--kv": st.sampled_from(["bf16", "fp8"]),
    "--price-per-hour": numbers(st.floats(0.5, 10)),
    "--compute-eff": numbers(st.floats(0.1, 1)),
    "--overlap": numbers(st.floats(0, 1)),
    "--step-overhead": numbers(st.floats(0, 0.01)),
}
TOKENS = numbers(st.integers(1, 200_000))
COMMANDS = {
    "estimate": DEPLOYMENT | {"--batch": st.one_of(TOKENS, st.just("max")), "--context": TOKENS,
                              "--prompt": TOKENS, "--output": TOKENS},
    "batch": DEPLOYMENT | {"--context": TOKENS, "--max-batch": numbers(st.integers(1, 4096))},
    "io": DEPLOYMENT | {"--batch": numbers(st.integers(1, 512)), "--context": TOKENS, "--prompt": TOKENS},
    "context": DEPLOYMENT | {"--from": TOKENS, "--to": TOKENS, "--points": numbers(st.integers(2, 40))},
    "lanes": DEPLOYMENT | {"--rate": numbers(st.floats(0.1, 50)), "--prompt": numbers(st.integers(1, 8000)),
                           "--output": numbers(st.integers(1, 2000)), "--tpot": numbers(st.floats(0.001, 0.2)),
                           "--ttft": numbers(st.floats(0.01, 10))},
}

#: Inputs that once broke kokuban (found by this fuzzer or by hand); each must keep the contract.
CORPUS = [
    ["estimate", "llama-3.1-8b", "--gpu", "h100-sxm", "--price-per-hour", "nan"],
    ["estimate", "llama-3.1-8b", "--gpu", "h100-sxm", "--context", "1e30"],
    ["estimate", "llama-3.1-8b", "--gpu", "h100-sxm", "--step-overhead", "inf"],
    ["estimate", "llama-3.1-8b", "--gpu", "h100-sxm", "--compute-eff", "nan"],
    # work that would not fit in memory (or finish) is refused, not started
    ["simulate", "llama-3.1-8b", "--gpu", "h100-sxm", "--rate", "10", "--requests", "100000000"],
    ["capacity", "llama-3.1-8b", "--gpu", "h100-sxm", "--requests", "100000000", "--ttft-p99", "0.5"],
    ["agent", "api", "anthropic/claude-sonnet-4.5", "--preset", "swe-bench", "--runs", "100000000"],
    # output paths that cannot be written: refused before the work, not a traceback after it
    ["simulate", "llama-3.1-8b", "--gpu", "h100-sxm", "--rate", "10", "--requests", "10", "--records", "/no/dir/x.csv"],
    ["batch", "llama-3.1-8b", "--gpu", "h100-sxm", "--csv", "/no/dir/x.csv"],
    ["batch", "llama-3.1-8b", "--gpu", "h100-sxm", "--plot", "/no/dir/x.png"],
]


def check_contract(args: list[str], capsys, *, expect_refusal: bool = False) -> None:
    """Run `args` with --json: exit 0 with finite numbers (times and costs ≥ 0), or exit 2 with one line on
    stderr and no traceback (`expect_refusal`: exit 2 only)."""
    try:
        code = main([*args, "--json"])
    except BaseException as exc:  # noqa: B036 — any escape is the defect this test looks for
        pytest.fail(f"{args}: raised {type(exc).__name__}: {exc}")
    out, err = capsys.readouterr()
    assert code in ((2,) if expect_refusal else (0, 2)), (args, code, err)
    if code == 2:
        assert err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err, (args, err)
        return
    data = json.loads(out)
    for path, value in _numbers(data):
        assert math.isfinite(value), (args, path, value)
        if path.endswith(("_s", "_usd", "usd_per_m_input", "usd_per_m_output", "_bytes")) and ".error." not in path:
            assert value >= 0, (args, path, value)


def _numbers(data, path=""):
    if isinstance(data, dict):
        for k, v in data.items():
            yield from _numbers(v, f"{path}.{k}")
    elif isinstance(data, list):
        for v in data:
            yield from _numbers(v, path)
    elif isinstance(data, (int, float)) and not isinstance(data, bool):
        yield path, float(data)


@pytest.mark.parametrize("args", CORPUS)
def test_corpus_keeps_the_contract(args, capsys):
    check_contract(args, capsys)


@st.composite
def command_lines(draw):
    name = draw(st.sampled_from(sorted(COMMANDS)))
    args = [name, draw(MODELS), "--gpu", draw(GPUS)]
    options = COMMANDS[name]
    for flag in draw(st.lists(st.sampled_from(sorted(options)), max_size=4, unique=True)):
        args += [flag, draw(options[flag])]
    return args


@settings(max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture])  # capsys is read out per call
@given(args=command_lines())
def test_any_command_line_keeps_the_contract(args, capsys):
    check_contract(args, capsys)
