"""Command line: the `kokuban` group, assembled from the command modules, and `main`, the entry point.

Faces only parse and present: each command builds a use case's typed request from its flags, runs the use
case and prints its result (a table, or `--json`: the result's `as_dict()` in the envelope of
`present.jsonout.envelope`). Bad input ends in one line on stderr naming the flag, and exit code 2 (with
`--json`, the refusal in the same envelope on stdout too); the use cases' errors name request fields, worded here
as flags.
"""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Callable
from typing import Any

import click

from kokuban import __version__
from kokuban.cli import agent, core, economics, examples, outputs, prices, serve, simulate, validate
from kokuban.cli.vocabulary import VocabOption, leaves
from kokuban.errors import KokubanError
from kokuban.notes import KokubanNote, KokubanWarning

#: Optional libraries and the extra that installs each (pyproject.toml [project.optional-dependencies]).
EXTRAS = {"matplotlib": "plots", "scipy": "fitting", "torch": "validate", "ray": "ray"}

#: Fields of the wings' functions whose command-line flag is not the field with dashes.
FIELD_FLAGS = {
    "start": "--from", "end": "--to", "rate_per_s": "--rate", "min_tokens_per_s_per_user": "--tps-slo",
    "max_ttft_s": "--ttft-slo", "tpot_target_s": "--tpot-slo", "ttft_target_s": "--ttft-slo",
    "slow_window_s": "--slow-window", "prompt_tokens": "--prompt-tokens", "output_tokens": "--output-tokens",
    "num_layers": "--layers", "hidden_size": "--hidden", "holdout_fraction": "--holdout-fraction",
    "usd_per_gpu_hour": "--price-per-hour", "csv_path": "--measurements-file", "file": "--measurements-file",
}


#: What to give for a required input a newcomer leaves out (added to click's "Missing option '--gpu'.").
MISSING_HINTS = {
    "gpu": " Give an accelerator: a catalog id such as h100, a100 or mi300x (`kokuban gpus` lists them), an id from "
           "--gpu-file, or custom:bf16=…,bw=…,mem=….",
    "model": " Give a model: a catalog id such as llama-3.1-8b (`kokuban models` lists them), a Hugging Face id "
             "(meta-llama/Llama-3.1-8B), a folder holding config.json, or coarse:total=…,active=…,kv=….",
}


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="kokuban")
@outputs.group_scenario_option
def cli() -> None:
    """kokuban (黒板): what running a large language model costs and how fast it goes, from first principles."""


for module in (core, economics, prices, serve, simulate, validate, agent):
    for command in module.commands:
        cli.add_command(command)


#: Commands that print no result to save (`--out-dir` is for the others).
NO_RESULT = {"serve"}

# every command: its worked example (`cli/examples.py`) at the end of its --help, `--scenario`, and `--out-dir`
# where it has a result (`cli/outputs.py`)
for _path, _command in leaves(cli):
    if _command.epilog is None:
        _command.epilog = examples.epilog(_path)
    outputs.add_run_options(_command, out_dir=_path not in NO_RESULT)


def _command_for(args: list[str]) -> click.Command:
    """The (sub)command that `args` name, for wording a field as that command's flag."""
    return _command_words(args)[0]


def _command_words(args: list[str]) -> tuple[click.Command, str]:
    """The (sub)command that `args` name and its path ("prices explain"), for a refusal's envelope."""
    command: click.Command = cli
    words: list[str] = []
    for arg in args:
        if isinstance(command, click.Group) and arg in command.commands:
            command = command.commands[arg]
            words.append(arg)
    return command, " ".join(words)


def _json_refusal(args: list[str], error: dict[str, Any]) -> None:
    """A refused command asked for `--json` prints the refusal as JSON on stdout too, in the envelope:
    {"kokuban_version", "schema_version", "command", "error": {"field", "value", "reason", "message", "flag"}}."""
    from kokuban.present.jsonout import envelope, to_json

    click.echo(to_json(envelope(_command_words(args)[1], {"error": error})))


def flag_for(field: str, command: click.Command) -> str:
    """The flag a field is given by on `command`: its option of that name, else the known spelling, else
    `--` and the field with dashes (the convention every command follows)."""
    for param in command.params:
        if param.name == field and isinstance(param, click.Option):
            return param.opts[0] if isinstance(param, VocabOption) else max(param.opts, key=len)
        if param.name == field and isinstance(param, click.Argument):
            return field.upper()
    return FIELD_FLAGS.get(field, "--" + field.replace("_", "-"))


def _notes_on_stderr(show: Callable[..., None], held: list[str] | None = None) -> Callable[..., None]:
    """A `warnings.showwarning` that prints a KokubanNote as one line, "note: …" ("warning: …" for a
    KokubanWarning), on stderr (never stdout, so --json output stays clean) and hands every other warning to `show`.
    With `held`, the lines are appended there instead, for the caller to print once the command has succeeded
    (a refused command prints its one error line and nothing else)."""
    def showwarning(message: Warning | str, category: type[Warning], *args: Any, **kwargs: Any) -> None:
        if issubclass(category, KokubanNote):
            line = f"{'warning' if issubclass(category, KokubanWarning) else 'note'}: {message}"
            held.append(line) if held is not None else click.echo(line, err=True)
        else:
            show(message, category, *args, **kwargs)
    return showwarning


def _click_error(exc: click.ClickException, message: str, command: click.Command) -> dict[str, Any]:
    """A flag click refused (a bad value, a missing option) in the refusal's JSON shape."""
    field = getattr(getattr(exc, "param", None), "name", None)
    return {"field": field, "value": None, "reason": message, "message": message,
            "flag": flag_for(field, command) if field else None}


def main(argv: list[str] | None = None) -> int:
    """Entry point: run the CLI; bad input → one line on stderr and exit code 2, never a traceback."""
    # kokuban's NumPy work is elementwise; OpenBLAS's idle worker threads only spin, which cost a short command
    # more CPU than all its imports (benchmarks/bench_startup.py). Only before NumPy loads; a user's setting wins.
    if "numpy" not in sys.modules:
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    args = sys.argv[1:] if argv is None else list(argv)
    outputs.ARGV.set(args)
    held: list[str] = []
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("default", KokubanNote)  # each note once per run
            warnings.showwarning = _notes_on_stderr(warnings.showwarning, held)
            cli.main(args=args or ["--help"], prog_name="kokuban", standalone_mode=False)
        for line in held:
            click.echo(line, err=True)
    except KokubanError as exc:
        command = _command_for(args)
        message = exc.worded(lambda field: flag_for(field, command))
        click.echo(f"error: {message}", err=True)
        if "--json" in args:  # a script asked for JSON: it gets the refusal as JSON too (and exit code 2)
            flag = flag_for(exc.field, command) if exc.field else None
            _json_refusal(args, exc.as_dict() | {"flag": flag, "message": message})
        return 2
    except click.ClickException as exc:
        param = getattr(exc, "param", None)
        hint = MISSING_HINTS.get(param.name or "", "") if isinstance(exc, click.MissingParameter) and param else ""
        message = exc.format_message() + hint
        click.echo(f"error: {message}", err=True)
        if "--json" in args:
            _json_refusal(args, _click_error(exc, message, _command_for(args)))
        return 2
    except ModuleNotFoundError as exc:
        extra = EXTRAS.get((exc.name or "").split(".")[0])
        if extra is None:
            raise
        click.echo(f"error: this needs {exc.name}, an optional part: pip install 'kokuban[{extra}]'", err=True)
        return 2
    except click.exceptions.Abort:
        click.echo("error: aborted", err=True)
        return 130
    return 0


__all__ = ["cli", "flag_for", "main"]
