"""Command line: the `kokuban` group, assembled from the command modules, and `main`, the entry point.

Faces only parse and present: each command builds a use case's typed request from its flags, runs the use
case and prints its result (a table, or `--json`: the result's `as_dict()`). Bad input ends in one line on
stderr naming the flag, and exit code 2; the use cases' errors name request fields, worded here as flags.
"""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Callable
from typing import Any

import click

from kokuban import __version__
from kokuban.cli import agent, core, economics, examples, prices, serve, simulate, validate
from kokuban.errors import KokubanError
from kokuban.notes import KokubanNote, KokubanWarning

#: Optional libraries and the extra that installs each (pyproject.toml [project.optional-dependencies]).
EXTRAS = {"matplotlib": "plots", "scipy": "fitting", "torch": "validate", "ray": "ray"}

#: Fields of the wings' functions whose command-line flag is not the field with dashes.
FIELD_FLAGS = {
    "start": "--from", "end": "--to", "rate_per_s": "--rate", "min_tokens_per_s_per_user": "--slo-tps",
    "max_ttft_s": "--slo-ttft", "tpot_target_s": "--tpot", "ttft_target_s": "--ttft", "slow_window_s": "--slow-window",
    "prompt_tokens": "--prompt", "num_layers": "--layers", "hidden_size": "--hidden", "holdout_fraction": "--holdout",
    "usd_per_gpu_hour": "--price-per-hour",
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
def cli() -> None:
    """kokuban (黒板): what running a large language model costs and how fast it goes, from first principles."""


for module in (core, economics, prices, serve, simulate, validate, agent):
    for command in module.commands:
        cli.add_command(command)


def _add_examples(group: click.Group, prefix: str = "") -> None:
    """Give every command its worked example (`cli/examples.py`) at the end of its `--help`."""
    for name, command in group.commands.items():
        path = f"{prefix}{name}"
        if isinstance(command, click.Group):
            _add_examples(command, path + " ")
        elif command.epilog is None:
            command.epilog = examples.epilog(path)


_add_examples(cli)


def _command_for(args: list[str]) -> click.Command:
    """The (sub)command that `args` name, for wording a field as that command's flag."""
    command: click.Command = cli
    for arg in args:
        if isinstance(command, click.Group) and arg in command.commands:
            command = command.commands[arg]
    return command


def flag_for(field: str, command: click.Command) -> str:
    """The flag a field is given by on `command`: its option of that name, else the known spelling, else
    `--` and the field with dashes (the convention every command follows)."""
    for param in command.params:
        if param.name == field and isinstance(param, click.Option):
            return max(param.opts, key=len)
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


def main(argv: list[str] | None = None) -> int:
    """Entry point: run the CLI; bad input → one line on stderr and exit code 2, never a traceback."""
    # kokuban's NumPy work is elementwise; OpenBLAS's idle worker threads only spin, which cost a short command
    # more CPU than all its imports (benchmarks/bench_startup.py). Only before NumPy loads; a user's setting wins.
    if "numpy" not in sys.modules:
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    args = sys.argv[1:] if argv is None else list(argv)
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
            from kokuban.present.jsonout import to_json

            flag = flag_for(exc.field, command) if exc.field else None
            click.echo(to_json({"error": exc.as_dict() | {"flag": flag, "message": message},
                                "kokuban_version": __version__}))
        return 2
    except click.ClickException as exc:
        param = getattr(exc, "param", None)
        hint = MISSING_HINTS.get(param.name or "", "") if isinstance(exc, click.MissingParameter) and param else ""
        click.echo(f"error: {exc.format_message()}{hint}", err=True)
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
