"""Runs you can save and repeat (issue 15 item 6): `--scenario FILE.toml` on every command, `--out-dir` on
every command with a result, and calibrate's efficiency file that every pricing/simulating command loads."""

from __future__ import annotations

import json
import shlex

import pytest

from kokuban import __version__
from kokuban.cli import NO_RESULT, cli, main
from kokuban.cli.vocabulary import leaves
from kokuban.specs.hardware import Efficiency

ESTIMATE = ["estimate", "llama-3.1-8b", "--gpu", "h100-sxm", "--prompt-tokens", "1k", "--output-tokens", "200"]




def _json(capsys, args):
    assert main(args) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


def test_every_command_takes_a_scenario_and_every_result_an_out_dir():
    for path, command in dict(leaves(cli)).items():
        names = {p.name for p in command.params}
        assert "--scenario" in {o for p in command.params for o in getattr(p, "opts", [])}, path
        assert ("out_dir" in names) == (path not in NO_RESULT), path


def test_scenario_gives_defaults_and_flags_override(tmp_path, capsys):
    scenario = tmp_path / "s.toml"
    # canonical names, an older spelling, underscores and a leading -- all name options
    scenario.write_text('model = "llama-3.1-8b"\ngpu = "h100-sxm"\n"--prompt" = 1000\noutput_tokens = 200\n'
                        'batch = 8\n')
    direct = _json(capsys, [*ESTIMATE, "--batch", "8", "--json"])
    assert _json(capsys, ["estimate", "--scenario", str(scenario), "--json"]) == direct
    assert _json(capsys, ["--scenario", str(scenario), "estimate", "--json"]) == direct  # before the command too
    overridden = _json(capsys, ["estimate", "--scenario", str(scenario), "--batch", "1", "--json"])
    assert overridden == _json(capsys, [*ESTIMATE, "--batch", "1", "--json"]) != direct


@pytest.mark.parametrize(("text", "words"), [
    ('model = "llama-3.1-8b"\ngpu = "h100-sxm"\npromt-tokens = 5\n',
     "'promt-tokens' is not an option of `estimate`; did you mean 'prompt-tokens'?"),
    ('model = "llama-3.1-8b"\ngpu = "h100-sxm"\nbatch = "lots"\n', "batch: 'lots' is not a positive integer or 'max'"),
    ('model = "llama-3.1-8b"\ngpu = "h100-sxm"\nprompt = "many"\n', "prompt: 'many' is not a token count"),
    ('model = "llama-3.1-8b"\ngpu = [', "is not valid TOML"),
])
def test_a_bad_scenario_is_one_line(tmp_path, capsys, text, words):
    scenario = tmp_path / "s.toml"
    scenario.write_text(text)
    assert main(["estimate", "--scenario", str(scenario)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and words in err and err.count("\n") == 1, err


def test_out_dir_saves_a_run_that_reruns_to_the_same_result(tmp_path, capsys):
    first, second = tmp_path / "first", tmp_path / "second"
    args = ["lanes", "llama-3.1-8b", "--gpu", "h100-sxm", "--rate", "5", "--prompt-tokens", "1000",
            "--output-tokens", "500", "--tpot-slo", "12ms", "--ttft-slo", "2"]
    direct = _json(capsys, [*args, "--json"])
    assert main([*args, "--out-dir", str(first)]) == 0
    out, err = capsys.readouterr()
    assert out == "" and "result.json" in err  # without --json the run is saved, not printed
    assert json.loads((first / "result.json").read_text()) == direct  # result.json is the --json output
    command = (first / "command.txt").read_text().splitlines()
    assert shlex.split(command[0]) == ["kokuban", *args, "--out-dir", str(first)]
    assert command[1].startswith(f"# kokuban {__version__}")
    assert (first / "rows.csv").read_text().count("\n") > 1  # the CSV lanes can write (--csv), here by default
    scenario = (first / "scenario.toml").read_text()
    assert 'tpot-slo = 0.012' in scenario and "out-dir" not in scenario and "csv" not in scenario
    # re-run from the written scenario alone: the same result.json
    assert main(["lanes", "--scenario", str(first / "scenario.toml"), "--out-dir", str(second), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == direct
    assert (second / "result.json").read_text() == (first / "result.json").read_text()


def test_calibrate_writes_an_efficiency_file_every_command_loads(tmp_path, capsys):
    """calibrate --out-file → --efficiency-file: the commands then predict with the fitted set."""
    eff_file = tmp_path / "eff.toml"
    cal = _json(capsys, ["calibrate", "--source", "published", "--params", "step_overhead_s",
                         "--out-file", str(eff_file), "--json"])
    fitted = Efficiency(**{k: v for k, v in cal["after"].items()})
    assert Efficiency.from_file(str(eff_file)) == fitted  # the file round-trips the fitted set exactly
    estimate = _json(capsys, [*ESTIMATE, "--efficiency-file", str(eff_file), "--json"])
    assert estimate["efficiency"] == fitted.as_dict()
    # every command that prices or simulates takes the file
    for path, command in dict(leaves(cli)).items():
        names = {p.name for p in command.params}
        if names & {"compute_eff"}:
            assert "efficiency_file" in names, path
    assert "efficiency_file" in {p.name for p in dict(leaves(cli))["prices compare"].params}


@pytest.mark.parametrize("args", [
    ["models"], ["gpus"], ["agent", "presets"], ["prices", "list", "--provider", "deepseek"],
    ["io", "llama-3.1-8b", "--gpu", "h100-sxm", "--batch", "8", "--prompt-tokens", "2000"],
])
def test_out_dir_works_on_commands_of_every_shape(tmp_path, capsys, args):
    """Commands with a fixed signature (models, gpus, agent presets) as well as the **kw ones: result.json is
    their --json output, and the saved scenario reruns to it."""
    direct = _json(capsys, [*args, "--json"])
    assert main([*args, "--out-dir", str(tmp_path / "a")]) == 0
    capsys.readouterr()
    assert json.loads((tmp_path / "a" / "result.json").read_text()) == direct
    path = [w for w in args if not w.startswith("-")][:2 if args[0] in ("agent", "prices") else 1]
    assert _json(capsys, [*path, "--scenario", str(tmp_path / "a" / "scenario.toml"), "--json"]) == direct


def test_the_docs_typo_example_is_what_the_cli_says(tmp_path, capsys, monkeypatch):
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[1] / "docs" / "runs.md").read_text(encoding="utf-8")
    (line,) = [ln for ln in doc.splitlines() if ln.startswith("error: scenario 'typo.toml'")]
    monkeypatch.chdir(tmp_path)
    Path("typo.toml").write_text('model = "llama-3.1-8b"\ngpu = "h100-sxm"\npromt-tokens = 500\n')
    assert main(["simulate", "--scenario", "typo.toml"]) == 2
    assert capsys.readouterr().err == line + "\n"


def test_a_named_efficiency_profile_is_saved_as_its_name(tmp_path, capsys, monkeypatch):
    """`--efficiency-file kernel` names a profile, not a file: the saved scenario keeps the name (made absolute it
    would be a path that does not exist), and reruns from another folder to the same result."""
    direct = _json(capsys, [*ESTIMATE, "--efficiency-file", "kernel", "--json"])
    assert main([*ESTIMATE, "--efficiency-file", "kernel", "--out-dir", str(tmp_path / "a")]) == 0
    capsys.readouterr()
    assert 'efficiency-file = "kernel"' in (tmp_path / "a" / "scenario.toml").read_text()
    monkeypatch.chdir(tmp_path)
    assert _json(capsys, ["estimate", "--scenario", str(tmp_path / "a" / "scenario.toml"), "--json"]) == direct
