"""One vocabulary (issue 15 item 5): one canonical flag per concept on every command, older spellings still
parsed but hidden, lists comma-separated (or repeated) everywhere, and docs/vocabulary.md the table of it all."""

from __future__ import annotations

import re

import click
import pytest

from kokuban.cli import cli, main
from kokuban.cli.vocabulary import TERMS, VocabOption, leaves, markdown_table, split_list


def _options() -> list[tuple[str, click.Option]]:
    return [(path, p) for path, c in dict(leaves(cli)).items() for p in c.params if isinstance(p, click.Option)]


def test_no_canonical_flag_is_an_older_spelling_of_a_concept():
    """`--prompt`, `--output`, `--holdout`, `--file`, `--slo-ttft`, `--ttft-p99`… are aliases only: no command
    shows one of them as its flag for anything."""
    old = {a for t in TERMS.values() for a in t.aliases} - set(TERMS)
    shown = {(path, p.opts[0]) for path, p in _options() if p.opts[0] in old}
    assert not shown, shown


def test_every_concept_flag_keeps_its_older_spellings():
    for path, p in _options():
        term = TERMS.get(p.opts[0])
        if term is not None:
            assert isinstance(p, VocabOption), (path, p.opts[0])
            assert set(term.aliases) <= set(p.opts), (path, p.opts, term.aliases)


def test_one_parameter_one_flag():
    """The same request field is the same flag on every command (two spellings for one concept would show
    here as one parameter name with two canonical flags)."""
    by_name: dict[str, set[str]] = {}
    for _, p in _options():
        by_name.setdefault(p.name, set()).add(p.opts[0])
    # the one exception: `prices fleet`'s request names its daily totals output_tokens (a different concept, so a
    # different flag, --output-tokens-per-day)
    assert {n: f for n, f in by_name.items() if len(f) > 1} == {
        "output_tokens": {"--output-tokens", "--output-tokens-per-day"}}


def test_the_flag_table_lists_every_canonical_flag():
    """The table docs/vocabulary.md generates (`markdown_table` of the whole CLI) has a row for every shown flag."""
    table = markdown_table(cli)
    for _, p in _options():
        if not p.hidden:
            assert f"| `{p.opts[0]}` |" in table


def test_help_hides_the_older_spellings(capsys):
    assert main(["simulate", "--help"]) == 0
    out = capsys.readouterr().out
    assert "--prompt-tokens" in out and "--output-tokens" in out and "--trace-file" in out
    assert not re.search(r"--(prompt|output|trace|plots)\b(?!-)", out.split("Example")[0])


@pytest.mark.parametrize(("path", "old", "new"), [
    ("estimate", ["--prompt", "2k", "--output", "500"], ["--prompt-tokens", "2000", "--output-tokens", "500"]),
    ("lanes", ["--rate", "1", "--tpot", "12ms", "--ttft", "2"],
     ["--rate", "1", "--tpot-slo", "0.012", "--ttft-slo", "2"]),
    ("capacity", ["--ttft-p99", "0.5", "--tpot-p99", "50ms"], ["--ttft-slo", "500ms", "--tpot-slo", "0.05"]),
    ("frontier", ["--slo-tps", "50", "--slo-ttft", "1"], ["--tps-slo", "50", "--ttft-slo", "1"]),
    ("calibrate", ["--source", "published", "--holdout", "0.5", "--hold-out", "context=32"],
     ["--source", "published", "--holdout-fraction", "0.5", "--holdout-values", "context=32"]),
    ("prices list", ["--file", "a.toml"], ["--price-file", "a.toml"]),
    ("accuracy", ["--file", "m.csv"], ["--measurements-file", "m.csv"]),
    ("probe", ["--out", "p.toml"], ["--out-file", "p.toml"]),
])
def test_older_spellings_parse_to_the_same_values(path, old, new):
    command = dict(leaves(cli))[path]
    head = ["llama-3.1-8b", "--gpu", "h100-sxm"] if any(isinstance(p, click.Argument) and p.name == "model"
                                                       for p in command.params) else []
    assert command.make_context(path, head + old).params == command.make_context(path, head + new).params


def test_lists_are_comma_separated_or_repeated_everywhere():
    frontier = dict(leaves(cli))["frontier"]
    a = frontier.make_context("frontier", ["m", "--gpu", "h100-sxm,h200", "--counts", "1,2", "--counts", "4"]).params
    b = frontier.make_context("frontier", ["m", "--gpu", "h100-sxm", "--gpu", "h200", "--counts", "1,2,4"]).params
    assert a == b and a["gpu"] == ("h100-sxm", "h200") and a["counts"] == "1,2,4"
    assert frontier.make_context("frontier", ["m", "--gpu", "h200"]).params["counts"] == "1,2,4,8"  # the default
    agent = dict(leaves(cli))["agent api"]
    params = agent.make_context("agent api", ["x/y", "--compaction", "threshold:100000,8000,auto"]).params
    assert params["compaction"] == ("threshold:100000,8000", "auto")


def test_split_list_keeps_parameterised_items_whole():
    assert split_list("1,2, 4") == ["1", "2", "4"]
    assert split_list("every:5,2,none,threshold:1e5,8000") == ["every:5,2", "none", "threshold:1e5,8000"]
    assert split_list("custom:bf16=1e15,bw=3e12,mem=8e10,h100") == ["custom:bf16=1e15,bw=3e12,mem=8e10", "h100"]
    assert split_list("") == []


def test_every_list_concept_is_a_list_option():
    for path, p in _options():
        term = TERMS.get(p.opts[0])
        if term is not None and term.list:
            assert isinstance(p, VocabOption) and p.list_values, (path, p.opts[0])
        if isinstance(p, VocabOption) and p.list_values:
            assert p.multiple and "comma-separated" in (p.help or ""), (path, p.opts[0])
