"""The generated blocks of the README and the guides: every figure they quote, made again from the code and the
evidence, so that prose cannot drift from what kokuban computes.

    python -m evidence.docs            # rewrite every stale block in place
    python -m evidence.docs --check    # exit 1 naming each stale block (CI runs this)

A block is delimited in a Markdown page by two comments:

    <!-- gen: NAME ARGS -->
    …what the block's function returns…
    <!-- /gen -->

NAME `run` runs `kokuban ARGS` in this process at 100 columns and shows the command line and what it printed
(stderr, then stdout) in a code fence; every other NAME is a function of `BLOCKS` (below), given ARGS as one string.
The pages are README.md and docs/*.md (not docs/history/, which keeps what was true when it was written).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import re
import shlex
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BLOCK = re.compile(r"(<!-- gen: (?P<name>[\w-]+)(?: (?P<args>.*?))? -->\n)(?P<body>.*?)(<!-- /gen -->)", re.S)
WIDTH = 100


def pages(root: Path = ROOT) -> list[Path]:
    """The pages whose blocks are generated: the README and the guides under docs/."""
    return [root / "README.md", *sorted((root / "docs").glob("*.md"))]


# ---- the blocks ------------------------------------------------------------------------------------------------
def run(args: str) -> str:
    """`kokuban ARGS` run here at 100 columns: the command line, then stderr and stdout, in a code fence."""
    from kokuban.cli import main

    out, err = io.StringIO(), io.StringIO()
    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(WIDTH)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(shlex.split(args))
    finally:
        if old is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = old
    if code != 0:
        raise RuntimeError(f"`kokuban {args}` exited {code}: {err.getvalue().strip()}")
    printed = [line.rstrip() for line in (err.getvalue() + out.getvalue()).splitlines()]
    while printed and not printed[-1]:
        printed.pop()
    return "\n".join(["```console", f"$ kokuban {args}", *printed, "```"]) + "\n"


#: The guide of each command (or command group), linked from the README's table of commands.
GUIDES = {
    "estimate": "docs/estimate.md", "models": "docs/estimate.md", "gpus": "docs/estimate.md",
    "batch": "docs/economics.md", "io": "docs/economics.md", "lanes": "docs/economics.md",
    "frontier": "docs/economics.md", "context": "docs/economics.md",
    "prices": "docs/prices.md",
    "simulate": "docs/simulate.md", "capacity": "docs/simulate.md", "serving-accuracy": "docs/serving-accuracy.md",
    "agent": "docs/agents.md",
    "serve": "docs/web.md",
    "accuracy": "docs/accuracy.md", "calibrate": "docs/calibration.md", "validate": "docs/calibration.md",
    "probe": "docs/calibration.md",
}


def commands(_: str = "") -> str:
    """Every command of the CLI (subcommands of a group on their own rows), the question its help answers, its
    guide. A command without a guide is an error, so a new command cannot be left out of the README."""
    import click

    from kokuban.cli import cli

    rows = ["| command | what it answers | guide |", "| --- | --- | --- |"]
    for name, command in sorted(cli.commands.items()):
        if name not in GUIDES:
            raise KeyError(f"the command {name!r} has no guide in evidence.docs.GUIDES")
        guide = GUIDES[name]
        link = f"[{Path(guide).stem}]({guide})"
        subs = sorted(command.commands.items()) if isinstance(command, click.Group) else [(None, command)]
        for sub, leaf in subs:
            label = f"`kokuban {name}{' ' + sub if sub else ''}`"
            rows.append(f"| {label} | {leaf.get_short_help_str(limit=200)} | {link} |")
    return "\n".join(rows) + "\n"


def catalogs(_: str = "") -> str:
    """How many models, accelerators, price rows and engine profiles ship, counted from the catalogs."""
    from kokuban.prices.sheets import load_prices
    from kokuban.sim.profiles import profiles
    from kokuban.specs.catalog import accelerator_catalog, model_catalog

    return (f"{len(model_catalog())} models, {len(accelerator_catalog())} accelerators, {len(load_prices())} API price "
            f"rows and {len(profiles())} serving-engine profiles ship inside the package, each entry with its "
            "source and the date it was read.\n")


def _benchmark(name: str) -> dict:
    return json.loads((ROOT / "benchmarks" / "results" / f"{name}.json").read_text(encoding="utf-8"))


def _figure(value: float, unit: str) -> str:
    if unit == "configurations/s":
        return f"{value / 1e6:.1f} M configurations/s"
    if unit == "s" and value < 1e-3:
        return f"{value * 1e6:.0f} µs"
    return f"{value:.2f} s"


def speed(_: str = "") -> str:
    """One line per recorded benchmark (benchmarks/results/*.json, written by `--record`): its command, each case's
    figure, and the machine and its load when it ran."""
    lines = []
    for path in sorted((ROOT / "benchmarks" / "results").glob("*.json")):
        b = _benchmark(path.stem)
        cases = "; ".join(f"{r['case']} {_figure(r['value'], r['unit'])}" for r in b["rows"])
        lines.append(f"- `{b['command']}`: {cases} ({b['cpus']} CPUs, load {b['load_before']:g}–{b['load_after']:g}, "
                     f"Python {b['python']}, commit {b['commit']}).")
    return "\n".join(lines) + "\n"


def _pool() -> dict:
    return json.loads((ROOT / "evidence" / "pool.json").read_text(encoding="utf-8"))


def _pct(x: float) -> str:
    return f"{100 * x:.1f} %"


def accuracy_headline(_: str = "") -> str:
    """One sentence: the shipped step model's error on every measured row no fit saw (evidence/pool.json)."""
    from evidence.pool import headline

    h = headline()
    return (f"On {h.rows:,} published measurements from {h.sources} sources that no fit has seen, the shipped step "
            f"model ({h.step_model}) is off by {_pct(h.median_abs_error)} at the median (95 % interval "
            f"{_pct(h.median_abs_error_ci[0])}–{_pct(h.median_abs_error_ci[1])}), {_pct(h.p90_abs_error)} at the p90, "
            f"with a signed median of {h.median_signed_error * 100:+.1f} % (positive: kokuban predicts faster than "
            "measured).\n")


BLOCKS: dict[str, Callable[[str], str]] = {
    "run": run, "commands": commands, "catalogs": catalogs, "speed": speed, "accuracy-headline": accuracy_headline,
}


# ---- writing and checking ------------------------------------------------------------------------------------
def render(text: str, where: str = "") -> str:
    """`text` with every block's body replaced by what its function returns now."""
    def body(m: re.Match) -> str:
        name, args = m["name"], m["args"] or ""
        if name not in BLOCKS:
            raise KeyError(f"{where}: unknown generated block {name!r} (known: {', '.join(sorted(BLOCKS))})")
        return m.group(1) + BLOCKS[name](args) + m.group(5)

    return BLOCK.sub(body, text)


def stale(root: Path = ROOT) -> dict[Path, str]:
    """The pages whose generated blocks differ from what the code and evidence give now, with their new text."""
    out = {}
    for page in pages(root):
        text = page.read_text(encoding="utf-8")
        new = render(text, str(page.relative_to(root)))
        if new != text:
            out[page] = new
    return out


def describe(page: Path, new: str) -> list[str]:
    """The names of the blocks of `page` that `new` changes."""
    old = [m["body"] for m in BLOCK.finditer(page.read_text(encoding="utf-8"))]
    return [f"{m['name']} {m['args'] or ''}".strip() for m, before in zip(BLOCK.finditer(new), old, strict=True)
            if m["body"] != before]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if a block is stale")
    args = parser.parse_args(argv)
    found = stale()
    for page, new in found.items():
        names = ", ".join(describe(page, new))
        if args.check:
            print(f"stale: {page.relative_to(ROOT)}: {names}", file=sys.stderr)
        else:
            page.write_text(new, encoding="utf-8")
            print(f"wrote {page.relative_to(ROOT)}: {names}")
    if args.check and found:
        print("run `python -m evidence.docs` and commit the result", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
