"""Runs you can save and repeat: `--scenario FILE.toml` on every command and `--out-dir DIR`
on every command that produces a result.

- **Scenario**: a TOML whose keys are the command's option names (canonical or older spelling, dashes or
  underscores, `--` optional) gives the command's defaults through click's `default_map`: flags on the command
  line override them, click checks their types, and an unknown key is one line naming the closest option.
  `kokuban --scenario FILE CMD …` and `kokuban CMD --scenario FILE …` are the same.
- **Out-dir**: the command's `--json` output as `result.json`, the exact command line (shell-quoted, with the
  kokuban version and the folder it ran in) as `command.txt`, the effective parameter values as `scenario.toml`
  (re-runnable: `kokuban CMD --scenario DIR/scenario.toml`), and every CSV and figure the command can write
  (its `--csv`, `--plot`, `--records`, `--plot-dir`, `--out-file`), into DIR unless the command line names
  another path for them.
"""

from __future__ import annotations

import contextlib
import io
import math
import os
import sys
from collections.abc import Callable
from contextvars import ContextVar
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import click

from kokuban.cli.options import OutputDir

#: The arguments `kokuban.cli.main` was called with (what command.txt records).
ARGV: ContextVar[list[str] | None] = ContextVar("kokuban_argv", default=None)

#: ctx.meta key of the group-level `kokuban --scenario FILE`.
SCENARIO_KEY = "kokuban.scenario"

#: File names in DIR for the outputs a command can write, by parameter name.
OUTPUT_FILES = {"csv_path": "rows.csv", "plot_path": "plot.png", "plot": "plot.png", "records": "records.csv",
                "plots": "plots", "out": "gpu.toml", "out_file": "efficiency.toml"}

#: Parameters that are not part of a run's scenario (where it is written, how it is shown).
NOT_SCENARIO = {"scenario", "out_dir", "as_json"}


def _key(name: str) -> str:
    return name.lstrip("-").replace("-", "_").lower()


def scenario_key(param: click.Parameter) -> str:
    """The key a parameter has in a scenario file: its canonical flag without `--` (an argument: its name)."""
    if isinstance(param, click.Option):
        return param.opts[0].lstrip("-")
    return param.name or ""


def scenario_defaults(command: click.Command, data: dict[str, Any], path: str,
                      ctx: click.Context | None = None) -> dict[str, Any]:
    """A scenario file's table as `command`'s default_map (parameter name → value); an unknown key, or (with
    `ctx`) a value click's type for that option refuses, is a `click.UsageError` naming the file and the key."""
    spellings: dict[str, tuple[click.Parameter, bool]] = {}
    for param in command.params:
        if param.name in NOT_SCENARIO or param.name is None:
            continue
        spellings[_key(param.name)] = (param, False)
        for opt in getattr(param, "opts", []):
            spellings.setdefault(_key(opt), (param, False))
        for opt in getattr(param, "secondary_opts", []):
            spellings.setdefault(_key(opt), (param, True))
    out: dict[str, Any] = {}
    for key, value in data.items():
        found = spellings.get(_key(key))
        if found is None:
            import difflib

            canonical = sorted({scenario_key(p) for p, _ in spellings.values()})
            close = difflib.get_close_matches(key.lstrip("-").replace("_", "-"), canonical, n=1, cutoff=0.5)
            hint = f"; did you mean '{close[0]}'?" if close else f"; its options: {', '.join(canonical)}"
            raise click.UsageError(f"scenario '{path}': '{key}' is not an option of `{command.name}`{hint}")
        param, negated = found
        if negated and isinstance(value, bool):
            value = not value
        if (getattr(param, "multiple", False) or param.nargs != 1) and not isinstance(value, (list, tuple)):
            value = [value]
        if ctx is not None:
            try:
                param.type_cast_value(ctx, value)
            except click.BadParameter as exc:
                raise click.UsageError(f"scenario '{path}': {key}: {exc.message}") from None
        out[param.name] = value  # type: ignore[index]
    return out


def _load_scenario(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    """The `--scenario` callback (eager, so it runs before the options whose defaults it sets)."""
    path = value or ctx.meta.get(SCENARIO_KEY)
    if not path:
        return
    from kokuban.specs.files import read_toml

    data = read_toml(path, "scenario")
    ctx.default_map = {**(ctx.default_map or {}), **scenario_defaults(ctx.command, data, path, ctx)}


def _remember_scenario(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    """The group-level `kokuban --scenario FILE`: kept for the command it names."""
    if value:
        ctx.meta[SCENARIO_KEY] = value


SCENARIO_HELP = "TOML of this command's option values (keys: the option names); flags given here override it."

group_scenario_option = click.option(
    "--scenario", type=click.Path(dir_okay=False), expose_value=False, is_eager=True, callback=_remember_scenario,
    help="TOML of option values for the command that follows (see `kokuban CMD --help`).")


def toml_value(value: Any) -> str:
    """One TOML value: a string, bool, number or list of them."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else ("nan" if math.isnan(value) else
                                                         ("inf" if value > 0 else "-inf"))
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    import json

    return json.dumps(str(value), ensure_ascii=False)


def _absolute(path: str | os.PathLike) -> str:
    """An input path made absolute; a named efficiency profile (`--efficiency-file kernel`) is not a path."""
    from kokuban.specs.hardware import PROFILES

    text = os.fsdecode(path)
    return text if text in PROFILES else os.path.abspath(text)


def scenario_toml(command: click.Command, params: dict[str, Any], header: str) -> str:
    """The effective values of a run as a scenario file (unset values and where the run wrote left out; input
    paths made absolute, so the file runs from any folder)."""
    lines = [f"# {line}" for line in header.splitlines()]
    for param in command.params:
        value = params.get(param.name or "")
        if param.name in NOT_SCENARIO or param.name in OUTPUT_FILES or value is None or value == ():
            continue
        if isinstance(param.type, click.Path) and isinstance(value, (str, os.PathLike)):
            value = _absolute(value)
        elif isinstance(param.type, click.Path) and isinstance(value, (list, tuple)):
            value = [_absolute(v) for v in value]
        lines.append(f"{scenario_key(param)} = {toml_value(value)}")
    return "\n".join(lines) + "\n"


def _path(ctx: click.Context) -> str:
    return ctx.command_path.removeprefix(ctx.find_root().info_name or "").strip()


def save_run(callback: Callable[..., Any], kw: dict[str, Any], out_dir: str, ctx: click.Context, *,
             own: bool = False) -> None:
    """Run `callback` through its `--json` path into DIR/result.json (echoed too when --json was asked), with
    command.txt, scenario.toml and the command's files; the files written are listed on stderr. `own`: the
    command has an --out-dir of its own (validate), which is handed DIR to write its files there too."""
    import shlex

    from kokuban import __version__

    folder = Path(out_dir)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise click.UsageError(f"--out-dir: cannot make '{out_dir}': {exc.strerror}") from None
    params = dict(kw)
    can_plot = find_spec("matplotlib") is not None
    for name, filename in OUTPUT_FILES.items():
        if name in params and params[name] is None and (can_plot or not name.startswith("plot")):
            params[name] = str(folder / filename)
    if own:
        params["out_dir"] = out_dir
    shown = kw.get("as_json", False)
    params["as_json"] = True
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        callback(**params)
    text = buffer.getvalue()
    (folder / "result.json").write_text(text, encoding="utf-8")
    argv = ARGV.get()
    argv = list(sys.argv[1:]) if argv is None else argv
    (folder / "command.txt").write_text(
        f"kokuban {shlex.join(argv)}\n# kokuban {__version__}, in {os.getcwd()}\n", encoding="utf-8")
    header = (f"kokuban {_path(ctx)}, kokuban {__version__}: re-run with\n"
              f"  kokuban {_path(ctx)} --scenario {folder / 'scenario.toml'}")
    (folder / "scenario.toml").write_text(scenario_toml(ctx.command, kw, header), encoding="utf-8")
    if shown:
        click.echo(text, nl=False)
    written = sorted(str(p) for p in folder.iterdir())
    click.echo(f"wrote {', '.join(written)}", err=True)


def add_run_options(command: click.Command, *, out_dir: bool) -> None:
    """Give `command` `--scenario` and, with `out_dir`, `--out-dir` (wrapping its callback with `save_run`)."""
    from kokuban.cli.vocabulary import VocabOption

    command.params.insert(0, VocabOption(["--scenario"], type=click.Path(dir_okay=False), is_eager=True,
                                         expose_value=False, callback=_load_scenario, help=SCENARIO_HELP))
    if not out_dir or command.callback is None:
        return
    own = any(p.name == "out_dir" for p in command.params)
    if not own:
        command.params.append(VocabOption(
            ["--out-dir"], type=OutputDir(), default=None,
            help="Save the run here: result.json (the --json output), command.txt, scenario.toml (re-run it with "
                 "--scenario) and the CSVs and figures the command can write."))
    callback = command.callback

    def run(**kw: Any) -> Any:
        folder = kw.get("out_dir") if own else kw.pop("out_dir", None)
        if not folder:
            return callback(**kw)
        return save_run(callback, kw, folder, click.get_current_context(), own=own)

    run.__doc__, run.__name__ = callback.__doc__, callback.__name__
    command.callback = run
