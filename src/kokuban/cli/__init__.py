"""Command line: `kokuban estimate | models | gpus` and the commands other modules register.

Presentation only: every number printed here was computed by the core (`kokuban.estimate`,
`kokuban.roofline`, …). Bad input ends in one line on stderr and exit code 2.
"""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Callable
from typing import Any

import click
import numpy as np

from kokuban.errors import KokubanError

#: Modules that add commands to the group: each defines `commands: list[click.Command]`.
COMMAND_MODULES = ("kokuban.cli.economics", "kokuban.cli.prices", "kokuban.cli.simulate", "kokuban.cli.validate")


# ---- shared helpers for every command ---------------------------------------------------------------
def _json_default(obj: Any) -> Any:
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")


def emit_json(data: Any) -> None:
    """Print `data` as JSON (NumPy scalars and arrays become plain numbers and lists)."""
    click.echo(json.dumps(data, indent=2, default=_json_default))


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
        click.argument("model"),
        click.option("--gpu", required=True, help="Accelerator id (`kokuban gpus`), an id in --gpu-file, or custom:bf16=…,bw=…,mem=…"),
        click.option("--gpus", default=1, type=int, show_default=True, help="Number of accelerators."),
        click.option("--layout", type=click.Choice(["tp", "ep"]), default="tp", show_default=True, help="tp: tensor parallel; ep: DP attention + expert parallel (MoE)."),
        click.option("--weights", default=None, help="Weights dtype (default: the checkpoint's): bf16 fp16 fp8 int8 int4 fp4."),
        click.option("--kv", default=None, help="KV-cache dtype (default bf16)."),
        click.option("--compute", default=None, help="Matmul dtype (default: what the accelerator runs the weights in)."),
        click.option("--price-per-hour", type=float, default=None, help="USD per accelerator-hour (default: catalog's typical price)."),
        click.option("--gpu-file", type=click.Path(), default=None, help="TOML/JSON file of extra accelerators in the catalog schema."),
        *efficiency_option_list(),
        click.option("--json", "as_json", is_flag=True, help="Print JSON (SI units, stable keys)."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def efficiency_option_list(base: Any = None, note: str = "calibrated") -> list[Callable[..., Any]]:
    """The five achievable-fraction flags, their help naming `base`'s values (default: the shipped ones)."""
    from kokuban.specs.hardware import Efficiency

    e = base or Efficiency()
    kv = "--memory-eff's" if e.kv_memory is None else f"{e.kv_memory:g}"
    return [
        click.option("--compute-eff", type=float, default=None, help=f"Achievable fraction of peak FLOP/s (default {e.compute:g}, {note})."),
        click.option("--memory-eff", type=float, default=None, help=f"Achievable fraction of memory bandwidth for weight reads (default {e.memory:g}, {note})."),
        click.option("--kv-eff", type=float, default=None, help=f"Achievable fraction of memory bandwidth for KV-cache reads (default {kv}, {note})."),
        click.option("--link-eff", type=float, default=None, help=f"Achievable fraction of interconnect bandwidth (default {e.interconnect:g}, {note})."),
        click.option("--overlap", type=float, default=None, help=f"Fraction of the shorter of a kernel's compute and memory times hidden under the longer (default {e.overlap:g}, {note}; 1 = roofline)."),
        click.option("--step-overhead", type=float, default=None, help=f"Fixed seconds per step (default {e.step_overhead_s:g}, {note})."),
    ]


def efficiency_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """Decorate a command with `efficiency_option_list()` (help naming the shipped defaults)."""
    for option in reversed(efficiency_option_list()):
        func = option(func)
    return func


def efficiency_from_flags(kw: dict[str, Any], base: Any = None):
    """`Efficiency` with the flags of `efficiency_option_list` (popped from `kw`) replacing the shipped
    (calibrated) defaults, or `base`'s fields."""
    from kokuban.specs.hardware import Efficiency

    return (base or Efficiency()).updated(
        compute=kw.pop("compute_eff", None), memory=kw.pop("memory_eff", None), kv_memory=kw.pop("kv_eff", None),
        interconnect=kw.pop("link_eff", None), overlap=kw.pop("overlap", None), step_overhead_s=kw.pop("step_overhead", None))


def deployment_kwargs(kw: dict[str, Any]) -> dict[str, Any]:
    """Pop the shared options from a command's kwargs into `estimate()`-style keyword arguments."""
    from kokuban.specs.catalog import load_accelerator

    eff = efficiency_from_flags(kw)
    return {
        "model": kw.pop("model"), "gpu": load_accelerator(kw.pop("gpu"), kw.pop("gpu_file")), "gpus": kw.pop("gpus"),
        "layout": kw.pop("layout"), "weights": kw.pop("weights"), "kv": kw.pop("kv"), "compute": kw.pop("compute"),
        "price_per_hour": kw.pop("price_per_hour"), "efficiency": eff,
    }


def make_deployment(common: dict[str, Any]):
    """A Deployment from `deployment_kwargs` output."""
    from kokuban.specs.catalog import load_model
    from kokuban.specs.deployment import Deployment

    return Deployment.make(
        load_model(common["model"]) if isinstance(common["model"], str) else common["model"], common["gpu"],
        common["gpus"], layout=common["layout"], weights_dtype=common["weights"], kv_dtype=common["kv"],
        compute_dtype=common["compute"], efficiency=common["efficiency"], price_per_hour_usd=common["price_per_hour"],
    )


def console():
    import shutil

    from rich.console import Console

    # wide enough for the tables when printing to a pipe or a file (rich assumes 80 columns there)
    return Console(highlight=False, width=max(shutil.get_terminal_size((140, 40)).columns, 140) if not sys.stdout.isatty() else None)


# ---- number formatting (presentation only) ------------------------------------------------------------
def si(value: float, unit: str = "", digits: int = 3) -> str:
    """1.23e12 → '1.23 T' + unit."""
    value = float(value)
    for factor, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= factor:
            return f"{value / factor:.{digits}g} {prefix}{unit}"
    return f"{value:.{digits}g} {unit}".rstrip()


def secs(value: float) -> str:
    value = float(value)
    if value == 0:
        return "0 s"
    if value < 1e-3:
        return f"{value * 1e6:.3g} µs"
    if value < 1:
        return f"{value * 1e3:.3g} ms"
    return f"{value:.3g} s"


def gb(value: float) -> str:
    return f"{float(value) / 1e9:.2f} GB"


# ---- the group -------------------------------------------------------------------------------------------
@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="kokuban")
def cli() -> None:
    """kokuban (黒板): what running a large language model costs and how fast it goes, from first principles."""


@cli.command()
@deployment_options
@click.option("--batch", type=BatchType(), default=1, show_default=True, help="Requests decoded together, or 'max'.")
@click.option("--context", type=int, default=None, help="Tokens each request attends to (default 4096, or prompt+output).")
@click.option("--prompt", type=int, default=None, help="Prompt tokens per request (with --output: time a whole generation).")
@click.option("--output", type=int, default=None, help="Output tokens per request.")
def estimate(**kw: Any) -> None:
    """Time and price one configuration: the blackboard."""
    from kokuban.usecases.estimate import estimate as run

    as_json = kw.pop("as_json")
    common = deployment_kwargs(kw)
    result = run(**common, batch=kw["batch"], context=kw["context"], prompt=kw["prompt"], output=kw["output"])
    if as_json:
        emit_json(result.as_dict())
    else:
        from kokuban.present.blackboard import blackboard

        blackboard(console(), result)


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def models(as_json: bool) -> None:
    """List the bundled model catalog."""
    from kokuban.specs.catalog import load_model, model_catalog

    rows = []
    for model_id, entry in model_catalog().items():
        m = load_model(model_id)
        rows.append({
            "id": model_id, "family": m.family, "params_total": m.params_total, "params_active": m.params_active,
            "kv_bytes_per_token_bf16": m.kv_bytes_per_token("bf16"), "max_context": m.max_context,
            "attention": m.attention, "experts": m.num_experts, "top_k": m.top_k, "native_dtype": m.native_dtype,
            "source": entry.get("source", ""), "retrieved": entry.get("retrieved", ""),
            "verified": bool(entry.get("verified", False)),
        })
    if as_json:
        emit_json(rows)
        return
    from rich.table import Table

    table = Table(title="kokuban models (config.json from the Hugging Face Hub)")
    for col in ("id", "params total", "active", "KV/token (bf16)", "max ctx", "attention", "experts", "dtype", "verified"):
        table.add_column(col, justify="left" if col in ("id", "attention", "dtype") else "right")
    for r in rows:
        table.add_row(
            r["id"], si(r["params_total"]), si(r["params_active"]), si(r["kv_bytes_per_token_bf16"], "B"),
            f"{r['max_context']:,}", r["attention"], f"{r['experts']}/{r['top_k']}" if r["experts"] else "-",
            r["native_dtype"], "yes" if r["verified"] else "no",
        )
    console().print(table)


@cli.command()
@click.option("--gpu-file", type=click.Path(), default=None, help="Also list accelerators from this file.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def gpus(gpu_file: str | None, as_json: bool) -> None:
    """List the bundled accelerator catalog (dense FLOP/s, HBM, bandwidth, interconnect, price)."""
    from kokuban.specs.catalog import accelerator_catalog, read_accelerator_file

    accs = dict(accelerator_catalog())
    if gpu_file:
        accs.update(read_accelerator_file(gpu_file))
    rows = [
        {
            "id": a.id, "name": a.name, "vendor": a.vendor, "memory_bytes": a.memory_bytes,
            "memory_bandwidth_bytes_per_s": a.memory_bandwidth_bytes_per_s, "peak_flops": a.peak_flops,
            "interconnect": a.interconnect, "interconnect_bytes_per_s": a.interconnect_bytes_per_s,
            "price_per_hour_usd": a.price_per_hour_usd, "sources": list(a.sources), "retrieved": a.retrieved,
        }
        for a in accs.values()
    ]
    if as_json:
        emit_json(rows)
        return
    from rich.table import Table

    table = Table(title="kokuban accelerators (dense peak FLOP/s; memory in bytes, 1 GB = 1e9 B)")
    for col in ("id", "bf16", "fp8", "fp4", "HBM", "HBM BW", "link/dir", "$/h"):
        table.add_column(col, justify="left" if col == "id" else "right")
    for a in accs.values():
        flops = [si(a.peak_flops[k], "FLOP/s") if a.peak_flops.get(k) else "-" for k in ("bf16", "fp8", "fp4")]
        table.add_row(
            a.id, *flops, gb(a.memory_bytes), si(a.memory_bandwidth_bytes_per_s, "B/s"),
            si(a.interconnect_bytes_per_s, "B/s") if a.interconnect_bytes_per_s else "-",
            f"{a.price_per_hour_usd:.2f}" if a.price_per_hour_usd else "-",
        )
    console().print(table)


def _register() -> None:
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:
                continue
            raise
        for command in module.commands:
            cli.add_command(command)


def main(argv: list[str] | None = None) -> int:
    """Entry point: run the CLI; bad input → one line on stderr and exit code 2, never a traceback."""
    _register()
    args = sys.argv[1:] if argv is None else list(argv)
    try:
        cli.main(args=args or ["--help"], prog_name="kokuban", standalone_mode=False)
    except KokubanError as exc:
        click.echo(f"error: {exc}", err=True)
        return 2
    except click.ClickException as exc:
        click.echo(f"error: {exc.format_message()}", err=True)
        return 2
    except click.exceptions.Abort:
        click.echo("error: aborted", err=True)
        return 130
    return 0


__all__ = ["cli", "deployment_kwargs", "deployment_options", "emit_json", "gb", "main", "make_deployment", "secs", "si"]
