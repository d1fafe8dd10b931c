"""The options the commands share, and the bridge from parsed flags to the use cases' typed requests.

Flags are the request fields with dashes (`--price-per-hour` is `price_per_hour`): `request(Cls, kw)` builds a
use case's request from a command's keyword arguments, so a click body reads parse → use case → present.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, TypeVar

import click

from kokuban.cli.vocabulary import option

R = TypeVar("R")


class OutputPath(click.Path):
    """A file the command will write: checked before any work, so an unwritable path is one line, not a
    traceback after the run: its folder must exist and be writable, and it must not be a folder."""

    def __init__(self) -> None:
        super().__init__(dir_okay=False)

    def convert(self, value: Any, param: Any, ctx: Any) -> Any:
        import os

        if not str(value).strip():
            self.fail("an output path cannot be empty", param, ctx)
        path = super().convert(value, param, ctx)
        folder = os.path.dirname(os.path.abspath(os.fsdecode(path)))
        if not os.path.isdir(folder):
            self.fail(f"cannot write {os.fsdecode(path)!r}: the folder {folder!r} does not exist", param, ctx)
        if not os.access(folder, os.W_OK):
            self.fail(f"cannot write {os.fsdecode(path)!r}: the folder {folder!r} is not writable", param, ctx)
        if os.path.exists(path):  # an existing file that refuses writing (read-only, or /proc, /sys): try it
            try:
                with open(path, "ab"):
                    pass
            except OSError as exc:
                self.fail(f"cannot write {os.fsdecode(path)!r}: {exc.strerror}", param, ctx)
        return path


class OutputDir(click.Path):
    """A folder the command will write files into (made if absent): checked before any work, like `OutputPath`:
    not empty, not an existing file, and the folder it goes in must exist and be writable."""

    def __init__(self) -> None:
        super().__init__(file_okay=False)

    def convert(self, value: Any, param: Any, ctx: Any) -> Any:
        import os

        if not str(value).strip():
            self.fail("an output folder cannot be empty", param, ctx)
        path = os.fsdecode(super().convert(value, param, ctx))
        if os.path.exists(path) and not os.path.isdir(path):
            self.fail(f"cannot write into {path!r}: it is a file, not a folder", param, ctx)
        target = path if os.path.isdir(path) else os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(target):
            self.fail(f"cannot write into {path!r}: the folder {target!r} does not exist", param, ctx)
        if not os.access(target, os.W_OK):
            self.fail(f"cannot write into {path!r}: the folder {target!r} is not writable", param, ctx)
        return path


class TokenCountType(click.ParamType):
    """A token count as people write it: `4096`, `2k` (2,000), `1.5M`, `128Ki` (131,072) — SI prefixes are powers
    of 1,000, `Ki`/`Mi` of 1,024. The request checks the range."""

    name = "TOKENS"
    FACTORS = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9, "ki": 2**10, "mi": 2**20, "gi": 2**30}

    def convert(self, value: Any, param: Any, ctx: Any) -> Any:
        if isinstance(value, int) or value is None:
            return value
        m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([kKmMgG]i?)?\s*", str(value))
        if not m:
            self.fail(f"{value!r} is not a token count (e.g. 4096, 2k, 1.5M, 128Ki)", param, ctx)
        tokens = float(m.group(1)) * self.FACTORS[(m.group(2) or "").lower()]
        if not tokens.is_integer():
            self.fail(f"{value!r} is not a whole number of tokens", param, ctx)
        return int(tokens)


class SecondsType(click.ParamType):
    """A duration as people write it: `0.5`, `500ms`, `250us` (or `µs`), `2s`, `1.5min`, `1h`; seconds inside.
    The request checks the range (finite, positive where it must be)."""

    name = "SECONDS"
    FACTORS = {"": 1.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9, "min": 60.0, "h": 3600.0}

    def convert(self, value: Any, param: Any, ctx: Any) -> Any:
        if isinstance(value, float) or value is None:
            return value
        m = re.fullmatch(r"\s*([-+]?(?:[0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?|nan|inf))\s*(s|ms|us|µs|ns|min|h)?\s*",
                         str(value), flags=re.IGNORECASE)
        if not m:
            self.fail(f"{value!r} is not a duration (e.g. 0.5, 500ms, 2s, 1.5min)", param, ctx)
        return float(m.group(1)) * self.FACTORS[(m.group(2) or "").lower()]


class BytesType(click.ParamType):
    """A size as people write it: `64e9`, `64GB` (64·10⁹), `64GiB` (64·2³⁰), `512MB`, `2TB`; bytes inside. With
    `per_second`, a bandwidth: `50GB/s`, `64e9` (bytes/s). The request checks the range."""

    FACTORS = {"": 1.0, "b": 1.0, "kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12, "kib": 2.0**10, "mib": 2.0**20,
               "gib": 2.0**30, "tib": 2.0**40}

    def __init__(self, per_second: bool = False) -> None:
        self.per_second = per_second
        self.name = "BYTES/S" if per_second else "BYTES"

    def convert(self, value: Any, param: Any, ctx: Any) -> Any:
        if isinstance(value, float) or value is None:
            return value
        rate = r"(?:/s|ps)?" if self.per_second else ""
        m = re.fullmatch(r"\s*([-+]?(?:[0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?|nan|inf))\s*([kmgt]i?b|b)?" + rate + r"\s*",
                         str(value), flags=re.IGNORECASE)
        if not m:
            example = "50GB/s, 64e9" if self.per_second else "64GB, 64GiB, 512MB, 64e9"
            self.fail(f"{value!r} is not a {'bandwidth' if self.per_second else 'size'} (e.g. {example})", param, ctx)
        return float(m.group(1)) * self.FACTORS[(m.group(2) or "").lower()]


TOKENS = TokenCountType()
SECONDS = SecondsType()
BYTES = BytesType()
BYTES_PER_S = BytesType(per_second=True)


def complete_model(ctx: Any, param: Any, incomplete: str) -> list[str]:
    """Shell completion of a model argument: the catalog ids that start with what was typed."""
    from kokuban.specs.catalog import model_catalog

    return [name for name in sorted(model_catalog()) if name.startswith(incomplete.lower())]


def complete_gpu(ctx: Any, param: Any, incomplete: str) -> list[str]:
    """Shell completion of `--gpu`: the catalog's accelerator ids that start with what was typed."""
    from kokuban.specs.catalog import accelerator_catalog

    return [name for name in sorted(accelerator_catalog()) if name.startswith(incomplete.lower())]


def command_path(ctx: click.Context | None = None) -> str:
    """The running command's path without the program name ("prices explain"), the envelope's `command`."""
    ctx = ctx or click.get_current_context()
    words = []
    while ctx.parent is not None:
        words.append(ctx.info_name or "")
        ctx = ctx.parent
    return " ".join(reversed(words))


def emit_json(data: Any, key: str | None = None) -> None:
    """Print `data` as JSON through the one serialiser, inside the envelope (`present.jsonout.envelope`:
    version, schema version, this command's path); a list-shaped `data` goes under `key`."""
    from kokuban.present.jsonout import envelope, to_json

    click.echo(to_json(envelope(command_path(), data, key)))


def request(cls: type[R], kw: dict[str, Any], **extra: Any) -> R:
    """`cls(**fields)` from a command's keyword arguments: the fields `cls` declares, plus `extra`."""
    fields = {k: v for k, v in kw.items() if k in cls.model_fields} | extra  # type: ignore[attr-defined]
    return cls(**fields)


class BatchType(click.ParamType):
    """A positive integer or the word 'max'."""

    name = "INTEGER|max"

    def convert(self, value: Any, param: Any, ctx: Any) -> int | str:
        if isinstance(value, int) or value == "max":
            return value
        try:
            return int(value)
        except ValueError:
            self.fail(f"{value!r} is not a positive integer or 'max'", param, ctx)


def deployment_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """The options every deployment-building command shares (model argument, accelerator, precisions…)."""
    options = [
        click.argument("model", shell_complete=complete_model),
        option(
            "--gpu",
            required=True,
            shell_complete=complete_gpu,
            help="Accelerator id (`kokuban gpus`), an id in --gpu-file, or custom:bf16=…,bw=…,mem=…",
        ),
        click.option("--gpus", default=1, type=int, show_default=True, help="Number of accelerators."),
        click.option(
            "--layout",
            type=click.Choice(["tp", "ep"]),
            default="tp",
            show_default=True,
            help="tp: tensor parallel; ep: DP attention + expert parallel (MoE).",
        ),
        option(
            "--weights", default=None, help="Weights dtype (default: the checkpoint's): bf16 fp16 fp8 int8 int4 fp4."
        ),
        option("--experts", default=None,
               help="Routed experts' dtype, stored apart from the other weights (default: the checkpoint's; MoE)."),
        click.option("--kv", default=None, help="KV-cache dtype (default bf16)."),
        click.option(
            "--compute", default=None, help="Matmul dtype (default: what the accelerator runs the weights in)."
        ),
        option(
            "--price-per-hour",
            type=float,
            default=None,
            help="USD per accelerator-hour (default: catalog's typical price).",
        ),
        option(
            "--gpu-file",
            type=click.Path(),
            default=None,
            help="TOML/JSON file of extra accelerators in the catalog schema.",
        ),
        *efficiency_option_list(),
        option("--json", "as_json", is_flag=True, help="Print JSON (SI units, stable keys)."),
    ]
    for decorate in reversed(options):
        func = decorate(func)
    return func


def efficiency_option_list(base: Any = None, note: str = "calibrated") -> list[Callable[..., Any]]:
    """The five achievable-fraction flags, their help naming `base`'s values (default: the shipped step model's)."""
    from kokuban.specs.hardware import Efficiency

    e = base or Efficiency.shipped(curves=False)
    kv = "--memory-eff's" if e.kv_memory is None else f"{e.kv_memory:g}"
    return [
        option(
            "--efficiency-file",
            type=click.Path(),
            default=None,
            help="TOML/JSON of efficiency fields to start from (`kokuban calibrate --out-file`, or its --json), or "
            "a profile: `default` (= `kernel`, the shipped GEMM and collective curves) or `scalar` (one fraction per "
            "resource, for blackboard arithmetic); the flags below override it.",
        ),
        click.option(
            "--compute-eff",
            type=float,
            default=None,
            help=f"Achievable fraction of peak FLOP/s (default {e.compute:g}, {note}).",
        ),
        click.option(
            "--memory-eff",
            type=float,
            default=None,
            help=f"Achievable fraction of memory bandwidth for weight reads (default {e.memory:g}, {note}).",
        ),
        click.option(
            "--kv-eff",
            type=float,
            default=None,
            help=f"Achievable fraction of memory bandwidth for KV-cache reads (default {kv}, {note}).",
        ),
        click.option(
            "--link-eff",
            type=float,
            default=None,
            help=f"Achievable fraction of interconnect bandwidth (default {e.interconnect:g}, {note}).",
        ),
        click.option(
            "--overlap",
            type=float,
            default=None,
            help="Fraction of the shorter of a kernel's compute and memory times hidden under the longer (default "
                 f"{e.overlap:g}, {note}; 1 = roofline).",
        ),
        click.option(
            "--step-overhead",
            type=float,
            default=None,
            help=f"Fixed seconds per step (default {e.step_overhead_s:g}, {note}).",
        ),
    ]


def efficiency_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """Decorate a command with `efficiency_option_list()` (help naming the shipped defaults)."""
    for decorate in reversed(efficiency_option_list()):
        func = decorate(func)
    return func
