"""Commands `kokuban batch | io | lanes | frontier | context`: batch economics on the command line.

Presentation only: parse → use case (`kokuban.usecases.economics`) → present (`kokuban.present.economics`).
Each prints a rich table, or `--json` (the result's `as_dict()`: {"summary": …, "rows": [one per point]}),
`--csv PATH` (the rows) and `--plot PATH` (.png/.svg/.pdf).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from kokuban.cli.options import (
    SECONDS,
    TOKENS,
    BatchType,
    OutputPath,
    complete_gpu,
    complete_model,
    deployment_options,
    efficiency_options,
    emit_json,
    request,
)
from kokuban.cli.progress import progress_bar
from kokuban.cli.vocabulary import option


def output_options(func: Callable[..., Any]) -> Callable[..., Any]:
    for decorate in reversed(
        [
            option(
                "--csv", "csv_path", type=OutputPath(), default=None, help="Write the rows as CSV."
            ),
            option(
                "--plot",
                "plot_path",
                type=OutputPath(),
                default=None,
                help="Write a figure (.png, .svg or .pdf).",
            ),
        ]
    ):
        func = decorate(func)
    return func


def _present(result: Any, rows: Any, kw: dict[str, Any], report: Callable[[Any], None],
             plot: Callable[[Any, str], None]) -> None:
    """The rows as CSV, `--json` or the report, and the figure: what every curve command ends with."""
    from kokuban.present.economics import write_csv

    write_csv(rows, kw["csv_path"])
    if kw["as_json"]:
        emit_json(result.as_dict())
    if kw["plot_path"]:
        plot(result, kw["plot_path"])
    if not kw["as_json"]:
        report(result)


def _check_plot(kw: dict[str, Any]) -> None:
    from kokuban.present.economics import check_plot

    check_plot(kw["plot_path"])


# ---- kokuban batch -------------------------------------------------------------------------------------
@click.command()
@deployment_options
@option(
    "--context", type=TOKENS, default=None, help="Tokens each request attends to (default 4096 or the model's maximum)."
)
@option("--min-batch", type=TOKENS, default=1, show_default=True)
@option("--max-batch", type=TOKENS, default=None, help="Largest batch (default: the largest that fits).")
@option(
    "--batch",
    type=BatchType(),
    default="max",
    show_default=True,
    help="Operating point to mark and to price input vs output.",
)
@output_options
def batch(**kw: Any) -> None:
    """Cost per output token and tokens/s for every batch that fits: the three parts, the crossover."""
    from kokuban.present import economics as show
    from kokuban.usecases.economics import BatchRequest, run_batch

    _check_plot(kw)
    result = run_batch(request(BatchRequest, kw))
    _present(result, result.curve, kw, show.batch_report, show.batch_plot)


# ---- kokuban io ----------------------------------------------------------------------------------------
@click.command()
@deployment_options
@option(
    "--batch",
    type=BatchType(),
    default=1,
    show_default=True,
    help="Requests decoded (and prefilled) together, or 'max'.",
)
@option("--context", type=TOKENS, default=None, help="Decode context (default 4096 or the model's maximum).")
@option("--prompt-tokens", "prompt", type=TOKENS, default=None,
        help="Prompt tokens per request (default: the context).")
def io(**kw: Any) -> None:
    """How many input tokens an output token costs, and why (prefill compute-bound, decode memory-bound)."""
    from kokuban.present.economics import io_report
    from kokuban.usecases.economics import IORequest, run_io

    result = run_io(request(IORequest, kw))
    if kw["as_json"]:
        emit_json(result.as_dict())
    else:
        io_report(result)


# ---- kokuban lanes -------------------------------------------------------------------------------------
@click.command()
@deployment_options
@option("--rate", type=float, required=True, help="Requests arriving per second (λ).")
@option("--prompt-tokens", "prompt", type=TOKENS, default=1000, show_default=True,
        help="Prompt tokens per request.")
@option("--output-tokens", "output", type=TOKENS, default=500, show_default=True, help="Output tokens per request.")
@option("--tpot-slo", "tpot", type=SECONDS, default=None, help="Fast-lane target: seconds per output token.")
@option("--ttft-slo", "ttft", type=SECONDS, default=None,
        help="Fast-lane target: seconds to the first token (queueing + prefill).")
@click.option(
    "--slow-window", type=SECONDS, default=3600.0, show_default=True,
    help="Slow lane: seconds a batch may wait to fill."
)
@output_options
def lanes(**kw: Any) -> None:
    """Fast and slow lanes: trains depart every W seconds or when full; the price of speed."""
    from kokuban.present import economics as show
    from kokuban.usecases.economics import LanesRequest, run_lanes

    _check_plot(kw)
    result = run_lanes(request(LanesRequest, kw))
    _present(result, result.table, kw, show.lanes_report, show.lanes_plot)


# ---- kokuban frontier ----------------------------------------------------------------------------------
@click.command()
@click.argument("model", shell_complete=complete_model)
@option("--gpu", "gpu", list_values=True, required=True, shell_complete=complete_gpu,
        help="Accelerator ids to compare")
@option("--counts", join=True, default="1,2,4,8", show_default=True, help="Accelerator counts to try.")
@option("--layouts", join=True, default="tp,ep", show_default=True, help="Layouts to try (ep only for MoE models).")
@option("--weights", "weights", list_values=True, help="Weights dtypes to compare (default: the checkpoint's).")
@click.option("--kv", default=None, help="KV-cache dtype (default bf16).")
@option("--context", type=TOKENS, default=None, help="Decode context (default 4096 or the model's maximum).")
@option("--prompt-tokens", "prompt", type=TOKENS, default=None, help="Prompt tokens for TTFT (default: the context).")
@option("--tps-slo", "slo_tps", type=float, default=None, help="SLO: at least this many tokens/s per user.")
@option("--ttft-slo", "slo_ttft", type=SECONDS, default=None, help="SLO: first token within this many seconds.")
@option("--price-per-hour", type=float, default=None, help="USD per accelerator-hour (default: catalog's).")
@option("--gpu-file", type=click.Path(), default=None, help="Extra accelerators (catalog schema).")
@efficiency_options
@option("--json", "as_json", is_flag=True, help="Print JSON (SI units, stable keys).")
@output_options
def frontier(**kw: Any) -> None:
    """Latency–throughput frontier over batch, GPU count, layout, accelerator and precision."""
    from kokuban.present import economics as show
    from kokuban.usecases.economics import FrontierRequest, run_frontier

    _check_plot(kw)
    with progress_bar("frontier", "config") as progress:
        result = run_frontier(request(FrontierRequest, kw), progress=progress)
    _present(result, result.table, kw, show.frontier_report, show.frontier_plot)


# ---- kokuban context -----------------------------------------------------------------------------------
@click.command()
@deployment_options
@click.option("--from", "start", type=TOKENS, default=1024, show_default=True, help="Shortest context (tokens).")
@click.option(
    "--to", "end", type=TOKENS, default=None, help="Longest context (default: the model's maximum; beyond it warns)."
)
@click.option("--points", type=int, default=40, show_default=True, help="Contexts in the sweep (geometric).")
@click.option(
    "--threshold",
    type=TOKENS,
    default=None,
    help="Pricing tier threshold (default 200k, or a quarter of --to if shorter).",
)
@output_options
def context(**kw: Any) -> None:
    """The long-context wall: KV per request, batch that fits, cost per token, walls and surcharge."""
    from kokuban.present import economics as show
    from kokuban.usecases.economics import ContextRequest, run_context

    _check_plot(kw)
    result = run_context(request(ContextRequest, kw))
    for warning in result.warnings:
        click.echo(f"warning: {warning}", err=True)
    _present(result, result.table, kw, show.context_report, show.context_plot)


commands = [batch, lanes, frontier, context, io]
