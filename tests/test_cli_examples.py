"""Every command's --help ends with a worked example, and every example parses against the command it names."""

from __future__ import annotations

import shlex
from pathlib import Path

import click

from kokuban.cli import cli, main
from kokuban.cli.examples import EXAMPLES
from kokuban.present.jsonout import read_result


def _leaves(group: click.Group, prefix: str = "") -> dict[str, click.Command]:
    out: dict[str, click.Command] = {}
    for name, command in group.commands.items():
        if isinstance(command, click.Group):
            out |= _leaves(command, f"{prefix}{name} ")
        else:
            out[f"{prefix}{name}"] = command
    return out


def test_every_command_has_an_example_that_parses(monkeypatch):
    monkeypatch.chdir(Path(__file__).resolve().parents[1])  # the examples' paths are the repository's
    leaves = _leaves(cli)
    assert set(leaves) == set(EXAMPLES), set(leaves) ^ set(EXAMPLES)
    for path, command in leaves.items():
        line, _ = EXAMPLES[path]
        args = shlex.split(line)
        words = path.split()
        assert args[: len(words)] == words, (path, line)
        command.make_context(path, args[len(words):])  # raises on an unknown flag or a bad value


def test_help_shows_the_example(capsys):
    assert main(["lanes", "--help"]) == 0
    out = capsys.readouterr().out
    assert "Example (output in docs/economics.md):" in out
    assert ("kokuban lanes llama-3.1-8b --gpu h100-sxm --rate 5 --prompt-tokens 1000 --output-tokens 500 "
            "--tpot-slo 0.012 --ttft-slo 2") in out


def test_shell_completion_offers_catalog_ids(monkeypatch, capsys):
    """Click's completion protocol (`_KOKUBAN_COMPLETE=bash_complete`), as a shell would call it."""
    import pytest

    monkeypatch.setenv("_KOKUBAN_COMPLETE", "bash_complete")
    monkeypatch.setenv("COMP_WORDS", "kokuban estimate llama-3.1 --gpu h2")
    monkeypatch.setenv("COMP_CWORD", "4")
    with pytest.raises(SystemExit):
        cli.main(args=[], prog_name="kokuban")
    offered = {line.split(",", 1)[1] for line in capsys.readouterr().out.split()}
    assert {"h20", "h200"} <= offered and all(name.startswith("h2") for name in offered)
    monkeypatch.setenv("COMP_WORDS", "kokuban estimate llama-3.1")
    monkeypatch.setenv("COMP_CWORD", "2")
    with pytest.raises(SystemExit):
        cli.main(args=[], prog_name="kokuban")
    offered = {line.split(",", 1)[1] for line in capsys.readouterr().out.split()}
    assert {"llama-3.1-8b", "llama-3.1-70b", "llama-3.1-405b"} <= offered


def test_units_people_write_mean_the_same_run(capsys):
    """`1k` tokens = 1000, `12ms` = 0.012 s, `128Ki` = 131072: the same JSON as the plain numbers."""

    def run(*args: str) -> dict:
        assert main([*args, "--json"]) == 0
        return read_result(capsys.readouterr().out)

    plain = run("lanes", "llama-3.1-8b", "--gpu", "h100-sxm", "--rate", "5", "--prompt", "1000", "--output", "500",
                "--tpot", "0.012", "--ttft", "2")
    units = run("lanes", "llama-3.1-8b", "--gpu", "h100-sxm", "--rate", "5", "--prompt", "1k", "--output", "0.5k",
                "--tpot", "12ms", "--ttft", "2s")
    assert plain == units
    assert run("estimate", "llama-3.1-8b", "--gpu", "h100-sxm", "--context", "128Ki")["decode"]["context"] == 131072
    for bad in ("1.5x", "1.5", "2kk"):
        assert main(["estimate", "llama-3.1-8b", "--gpu", "h100-sxm", "--context", bad]) == 2
        assert capsys.readouterr().err.count("\n") == 1
