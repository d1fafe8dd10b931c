"""Every command's `--json` is one object in one envelope, its keys in one vocabulary (README, "JSON output").

Each command runs once on small inputs; the document must parse with no NaN or Infinity, start with
`kokuban_version`, `schema_version` and `command`, and use no key the vocabulary forbids. A refusal asked for as
JSON is the same envelope around `error`, and a configuration that does not fit carries its numbers.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import click
import pytest
from test_validate_usecases import fixed_probe, fixed_timer, tiny, tiny_flags  # noqa: F401 (fixtures)

from kokuban import __version__
from kokuban.cli import cli, main
from kokuban.present.jsonout import ENVELOPE_KEYS, SCHEMA_VERSION, envelope, read_envelope, read_result

ROOT = Path(__file__).resolve().parents[1]

#: One small run of every command that takes --json (the validation commands on the tiny model, timers fixed).
RUNS = {
    "estimate": "estimate llama-3.1-8b --gpu h100-sxm --batch 8 --prompt 1000 --output 200",
    "models": "models",
    "gpus": "gpus",
    "batch": "batch llama-3.1-8b --gpu h100-sxm --context 1024 --max-batch 8",
    "io": "io llama-3.1-8b --gpu h100-sxm --batch 8 --context 1024",
    "lanes": "lanes llama-3.1-8b --gpu h100-sxm --rate 5 --prompt 1000 --output 500 --tpot 0.012 --ttft 2",
    "frontier": "frontier llama-3.1-8b --gpu h100-sxm --counts 1,2 --layouts tp --context 2048",
    "context": "context llama-3.1-8b --gpu h100-sxm --to 65536 --points 4",
    "prices list": "prices list --provider deepseek",
    "prices explain": "prices explain anthropic/claude-sonnet-4",
    "prices infer": "prices infer deepseek/deepseek-chat --batch 64",
    "prices compare": "prices compare llama-3.3-70b --prompt 2000 --output 400 --requests 1000",
    "prices fleet": "prices fleet deepseek/deepseek-reasoner --gpu h800 --gpu-file docs/examples/h800.toml "
                    "--input-tokens 608e9 --cached-tokens 342e9 --output-tokens 168e9 --context 4989 --speed 21",
    "simulate": "simulate llama-3.1-8b --gpu h100-sxm --rate 20 --requests 40 --ttft-slo 0.5 --tpot-slo 0.05",
    "capacity": "capacity llama-3.1-8b --gpu h100-sxm --requests 40 --ttft-p99 0.5 --tpot-p99 0.05 --workers 1",
    "accuracy": "accuracy",
    "agent api": "agent api anthropic/claude-sonnet-4.5 --preset swe-bench --runs 3",
    "agent self-hosted": "agent self-hosted llama-3.1-8b --gpu h100-sxm --preset swe-bench --runs 3",
    "agent simulate": "agent simulate llama-3.1-8b --gpu h100-sxm --preset swe-bench --sessions 2",
    "agent presets": "agent presets",
    "probe": "probe --device cpu --seconds 0.5",
    "serving-accuracy": "serving-accuracy --measurements-file tests/fixtures/vllm_bench_small.json",
}
#: More runs whose result has another shape (the closed-model inference, the cheapest-deployment search).
MORE_RUNS = {
    "prices infer": "prices infer openai/gpt-5.4-mini --speed 100",
    "capacity": "capacity llama-3.1-8b --gpu h100-sxm --requests 40 --ttft-p99 0.5 --tpot-p99 0.05 "
                "--target-rate 2 --counts 1 --workers 1",
}
#: Commands whose list-shaped result sits under a named key.
LIST_KEYS = {"models": "models", "gpus": "gpus", "prices list": "prices", "agent presets": "presets",
             "probe": "accelerator"}
#: The vocabulary's bans: (pattern a key must not match, what to write instead).
FORBIDDEN = [
    (r"price_per_hour|per_hour_usd", "an accelerator's hourly price is usd_per_gpu_hour"),
    (r"_(seconds|secs?|ms|us|ns|minutes)$", "a time is in seconds and ends in _s"),
    (r"_s_(?!per_)", "_s ends a time's name (or starts a rate, _s_per_…)"),
    (r"bytes_(?!per_)", "_bytes ends a size's name (or starts a rate, _bytes_per_…)"),
    (r"^num_", "a count is named by what it counts (gpus, experts), no num_"),
    (r"^usd_(?!per_)", "an amount of money ends in _usd; usd_ starts only a rate (usd_per_…)"),
    (r"^usd_per_m_\w*tokens$", "a cost per million tokens is usd_per_m_input / _output / _total…"),
    (r"^speed$", "a speed says its unit: tokens_per_s_per_user"),
    (r"(gpu|node)_hours_", "hours billed end the name (gpu_hours, decode_node_hours)"),
]
#: Subtrees that are a file's schema, not output vocabulary: an accelerator entry (accelerators.toml keys), a
#: model's Hugging Face config.json.
FILE_SCHEMA = {("probe", "accelerator"), ("validate", "setup", "accelerator"), ("validate", "setup", "config")}


def _leaves(group: click.Group, prefix: str = "") -> set[str]:
    out: set[str] = set()
    for name, command in group.commands.items():
        out |= _leaves(command, f"{prefix}{name} ") if isinstance(command, click.Group) else {f"{prefix}{name}"}
    return out


def _parse(text: str) -> dict:
    def refuse(name: str) -> None:
        raise AssertionError(f"{name} in the JSON")
    json.loads(text, parse_constant=refuse)  # NaN / Infinity are not JSON numbers
    return read_envelope(text)


def _keys(data, path=()):
    """(path, key, value) of every key under `data`."""
    if isinstance(data, dict):
        for k, v in data.items():
            yield path, k, v
            yield from _keys(v, (*path, k))
    elif isinstance(data, list):
        for v in data:
            yield from _keys(v, path)


def _check_vocabulary(command: str, doc: dict) -> None:
    for path, key, value in _keys(doc):
        if any((command, *path[:n]) in FILE_SCHEMA for n in range(1, len(path) + 1)):
            continue
        for pattern, rule in FORBIDDEN:
            assert not re.search(pattern, str(key)), f"{command}: {'.'.join((*map(str, path), str(key)))}: {rule}"
        if isinstance(value, float):
            assert math.isfinite(value), (command, path, key, value)


@pytest.fixture
def in_repo(monkeypatch):
    monkeypatch.chdir(ROOT)  # docs/examples/h800.toml


def _run(capsys, line: str) -> dict:
    code = main([*line.split(), "--json"])
    out, err = capsys.readouterr()
    assert code == 0, (line, err)
    return _parse(out)


def test_every_command_takes_json_and_is_run_here():
    assert _leaves(cli) - {"serve"} == set(RUNS) | {"validate", "calibrate"}


@pytest.mark.parametrize("command", sorted(RUNS))
def test_json_is_one_enveloped_object_in_the_vocabulary(capsys, in_repo, fixed_probe, command):  # noqa: F811
    docs = [_run(capsys, RUNS[command])] + ([_run(capsys, MORE_RUNS[command])] if command in MORE_RUNS else [])
    for doc in docs:
        assert list(doc)[:3] == list(ENVELOPE_KEYS)
        assert (doc["kokuban_version"], doc["schema_version"], doc["command"]) == (__version__, 1, command)
        if command in LIST_KEYS:
            assert set(doc) == {*ENVELOPE_KEYS, LIST_KEYS[command]} and isinstance(doc[LIST_KEYS[command]], list)
        _check_vocabulary(command, doc)


def test_validate_and_calibrate_json(capsys, fixed_timer, tiny):  # noqa: F811
    out_dir = tiny.dir / "report"
    doc = _run(capsys, " ".join([*tiny_flags(tiny), "--out-dir", str(out_dir)]))
    assert doc["command"] == "validate" and doc["rows"]
    _check_vocabulary("validate", doc)
    doc = _run(capsys, f"calibrate --source validate-csv --csv {out_dir / 'validate.csv'} --params memory")
    assert doc["command"] == "calibrate" and doc["after"]["memory"] > 0
    _check_vocabulary("calibrate", doc)


def test_the_hourly_price_has_one_name(capsys, in_repo):
    """gpus, estimate, prices and capacity all say usd_per_gpu_hour; a deployment's hour is usd_per_hour."""
    h100 = next(g for g in read_result(_json_text(capsys, "gpus"), "gpus") if g["id"] == "h100-sxm")
    price = h100["usd_per_gpu_hour"]
    assert price > 0
    est = read_result(_json_text(capsys, "estimate llama-3.1-8b --gpu h100-sxm --gpus 2"))
    assert (est["hardware"]["gpus"], est["hardware"]["usd_per_gpu_hour"]) == (2, price)
    assert est["cost"]["usd_per_hour"] == pytest.approx(2 * price)  # 2 GPUs × the catalog's hourly price
    agent = read_result(_json_text(capsys, "agent self-hosted llama-3.1-8b --gpu h100-sxm --gpus 2 --preset swe-bench "
                                         "--runs 1"))
    assert (agent["terms"]["gpus"], agent["terms"]["usd_per_gpu_hour"]) == (2, price)
    assert agent["terms"]["usd_per_hour"] == pytest.approx(2 * price)
    explain = read_result(_json_text(capsys, "prices explain anthropic/claude-sonnet-4 --gpu h100-sxm --gpus 16"))
    assert (explain["gpus"], explain["usd_per_gpu_hour"]) == (16, price)
    cheapest = read_result(_json_text(capsys, MORE_RUNS["capacity"]))["candidates"][0]
    assert (cheapest["gpu"], cheapest["gpus"], cheapest["usd_per_gpu_hour"]) == ("h100-sxm", 1, price)
    assert cheapest["usd_per_hour"] == pytest.approx(cheapest["replicas"] * price)


def _json_text(capsys, line: str) -> str:
    assert main([*line.split(), "--json"]) == 0
    return capsys.readouterr().out


def test_a_configuration_that_does_not_fit_is_json_with_the_reason_and_what_fits(capsys):
    """405B parameters in bf16 are 811.7 GB of weights: one 80 GB H100 holds no batch, 16 of them batch 1."""
    for line, field in (("estimate llama-3.1-405b --gpu h100-sxm", "batch"),
                        ("batch llama-3.1-405b --gpu h100-sxm", None),
                        ("agent self-hosted llama-3.1-405b --gpu h100-sxm --preset swe-bench", "gpus")):
        code = main([*line.split(), "--json"])
        out, err = capsys.readouterr()
        assert code == 2 and err.startswith("error: ") and err.count("\n") == 1
        doc = _parse(out)
        assert set(doc) == {*ENVELOPE_KEYS, "error"} and doc["command"] == line.split(" --")[0].rsplit(" ", 1)[0]
        error = doc["error"]
        assert error["field"] == field and error["reason"].startswith("does not fit")
        assert err == f"error: {error['message']}\n"
        fit = error["detail"]["does_not_fit"]
        assert fit["weights_bytes"] > 800e9 and fit["used_bytes"] > fit["usable_bytes"]
        # 811.7e9 B ÷ 16 = 50.7e9 B a GPU, under the 77.0e9 B usable (0.9 × 85.52e9); ÷ 8 = 101.5e9 B is over
        assert (fit["gpus"], fit["max_batch"], fit["min_gpus"]) == (1, 0, 16)
        _check_vocabulary(doc["command"], doc)


def test_a_bad_flag_value_asked_for_as_json_is_json_too(capsys):
    assert main(["prices", "explain", "anthropic/claude-sonnet-4", "--gpus", "two", "--json"]) == 2
    out, err = capsys.readouterr()
    doc = _parse(out)
    assert doc["command"] == "prices explain" and doc["error"]["flag"] == "--gpus"
    assert err == f"error: {doc['error']['message']}\n" and "'two' is not a valid integer" in err


def test_the_envelope_is_made_in_one_place():
    assert envelope("gpus", [1, 2], "gpus") == {"kokuban_version": __version__, "schema_version": SCHEMA_VERSION,
                                                "command": "gpus", "gpus": [1, 2]}
    with pytest.raises(TypeError):
        envelope("gpus", [1, 2])  # a list needs its key: the top level is always an object
    with pytest.raises(ValueError):
        envelope("x", {"command": "y"})  # a result cannot shadow the envelope


def test_probe_json_is_an_accelerator_file(capsys, fixed_probe, tmp_path):  # noqa: F811
    """`probe --json > f.json` is a `--gpu-file`: the entry under "accelerator", as `probe --out` writes it."""
    saved = tmp_path / "probe.json"
    saved.write_text(_json_text(capsys, "probe --device cpu --seconds 0.5 --id here"))
    gpus = read_result(_json_text(capsys, f"gpus --gpu-file {saved}"), "gpus")
    here = next(g for g in gpus if g["id"] == "here")
    # the fixed probe: 2e10 B/s read, 1e11 FLOP/s (fp32, bf16), no price
    assert (here["memory_bandwidth_bytes_per_s"], here["peak_flops"]["bf16"], here["usd_per_gpu_hour"]) == (
        2e10, 1e11, 0.0)


def test_a_sweep_where_nothing_fits_lists_every_configuration_left_out(capsys):
    assert main("frontier llama-3.1-405b --gpu h100-sxm --counts 1,2 --layouts tp --json".split()) == 2
    doc = _parse(capsys.readouterr().out)
    # 811.7 GB of bf16 weights: neither 1 nor 2 H100s (77.0 GB usable each) hold them
    assert doc["error"]["detail"]["skipped"] == [
        {"config": "1× h100-sxm TP1 bf16", "reason": "does not fit at context 4096"},
        {"config": "2× h100-sxm TP2 bf16", "reason": "does not fit at context 4096"},
    ]
