"""`kokuban prices list | explain | infer | compare | fleet`: API price sheets read backwards.

Presentation only: parse → use case (`kokuban.usecases.prices`) → present (`kokuban.present.prices`). The
numbers come from the prices wing (`kokuban.prices`: the dataset, costing, explain, infer) on the core physics.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from kokuban.cli.options import (
    TOKENS,
    OutputPath,
    complete_gpu,
    efficiency_option_list,
    efficiency_options,
    emit_json,
    request,
)
from kokuban.cli.vocabulary import option
from kokuban.usecases.defaults import AUTO_GPUS_BATCH


def _hw_options(func: Callable[..., Any]) -> Callable[..., Any]:
    options = [
        option("--gpu", default="h100-sxm", show_default=True, shell_complete=complete_gpu,
               help="Accelerator id (`kokuban gpus`) or one in --gpu-file."),
        click.option("--gpus", type=int, default=None,
                     help=f"Accelerators (default: fewest that hold batch {AUTO_GPUS_BATCH} at the context)."),
        click.option("--layout", type=click.Choice(["tp", "ep"]), default=None,
                     help="Default: ep for MoE, tp for dense."),
        option("--weights", default=None, help="Weights dtype (default: the checkpoint's)."),
        click.option("--kv", default=None, help="KV-cache dtype (default bf16)."),
        option("--price-per-hour", type=float, default=None, help="USD per accelerator-hour (default: catalog)."),
        option("--gpu-file", type=click.Path(), default=None, help="TOML/JSON file of extra accelerators."),
        *efficiency_option_list(),
        option("--context", type=TOKENS, default=8192, show_default=True, help="Tokens each request attends to."),
        option("--price-file", "files", type=click.Path(), help="Extra price file(s) in the prices.toml schema."),
        option("--json", "as_json", is_flag=True, help="Print JSON (SI units, stable keys)."),
    ]
    for decorate in reversed(options):
        func = decorate(func)
    return func


def _price_options(func: Callable[..., Any]) -> Callable[..., Any]:
    options = [
        click.argument("name", required=False),
        click.option("--input-price", type=float, default=None, help="USD per million input tokens (a price by hand)."),
        click.option("--output-price", type=float, default=None,
                     help="USD per million output tokens (a price by hand)."),
        click.option("--cached-price", type=float, default=None, help="USD per million cached input tokens (by hand)."),
    ]
    for decorate in reversed(options):
        func = decorate(func)
    return func


@click.group()
def prices() -> None:
    """API price sheets read backwards: list, explain, infer (逆算), compare, fleet."""


@prices.command("list")
@click.option("--provider", default=None, help="Only this provider.")
@option("--price-file", "files", type=click.Path(), help="Extra price file(s) in the same schema.")
@option("--json", "as_json", is_flag=True, help="Print JSON.")
def list_(**kw: Any) -> None:
    """The price sheet dataset (bundled data/prices.toml plus --file), validated on load."""
    from kokuban.usecases.prices import ListRequest, run_list

    result = run_list(request(ListRequest, kw))
    if kw["as_json"]:
        emit_json(result.as_dict(), key="prices")
        return
    from kokuban.present.prices import price_table

    price_table(result)


@prices.command()
@_price_options
@_hw_options
@option("--model", "model", default=None,
        help="Open model whose physics stands in for a closed one.")
@option("--prompt-tokens", "prompt", type=TOKENS, default=None,
        help="Prompt tokens for the prefill side (default: the context).")
@option("--speed", type=float, default=None,
        help="Standard lane tokens/s per user (default: sheet's, else memory-limited).")
def explain(**kw: Any) -> None:
    """Decompose each feature of a price sheet with the cost model (numbers + one sentence each)."""
    from kokuban.usecases.prices import ExplainRequest, run_explain

    result = run_explain(request(ExplainRequest, kw))
    if kw["as_json"]:
        emit_json(result.as_dict())
        return
    from kokuban.present.prices import explanation

    explanation(result)


@prices.command()
@_price_options
@_hw_options
@option("--speed", type=float, default=None, help="Measured output tokens/s per user (default: the sheet's).")
@option("--batch", type=int, default=None, help="Also report the margin at this batch (open models).")
@option("--prompt-tokens", "prompt", type=TOKENS, default=None,
        help="Prompt tokens for the input side (default: the context).")
@click.option("--closed", is_flag=True, help="Treat the model as closed: solve for active parameters and batch.")
@click.option("--kv-per-token", type=float, default=160e3, show_default=True,
              help="Closed: KV bytes per token (16-bit).")
@click.option("--total-over-active", type=float, default=1.0, show_default=True,
              help="Closed: total ÷ active parameters.")
@option("--plot", type=OutputPath(), default=None, help="Closed: save the feasible region as a PNG here.")
def infer(**kw: Any) -> None:
    """Back-calculate (逆算) what a price (and a speed) imply for the provider."""
    from kokuban.present import prices as present
    from kokuban.usecases.prices import ClosedPriceInference, InferRequest, run_infer

    result = run_infer(request(InferRequest, kw))
    closed = isinstance(result, ClosedPriceInference)
    if closed and result.plot:
        present.plot_closed(result.inference, result.plot)
    if kw["as_json"]:
        emit_json(result.as_dict())
    elif closed:
        present.closed_inference(result)
    else:
        present.open_inference(result)


@prices.command()
@click.argument("model")
@option("--prompt-tokens", "prompt", type=TOKENS, required=True, help="Prompt tokens per request.")
@option("--output-tokens", "output", type=TOKENS, required=True, help="Output tokens per request.")
@option("--requests", type=int, default=1, show_default=True, help="Number of requests.")
@click.option("--cache-hit", type=float, default=0.0, show_default=True,
              help="Share of prompt tokens served from a cache.")
@option("--speed", type=float, default=30.0, show_default=True, help="Self-hosted tokens/s per user to keep.")
@option("--api", "apis", help="Price rows to include (PROVIDER/MODEL; default: rows serving MODEL).")
@click.option("--all-apis", is_flag=True, help="Include every price row.")
@option("--lane", type=click.Choice(["standard", "batch", "flex", "priority"]), default="standard",
        show_default=True)
@option("--weights", default=None, help="Self-hosted weights dtype (default: the checkpoint's).")
@option("--price-file", "files", type=click.Path(), help="Extra price file(s).")
@efficiency_options
@option("--json", "as_json", is_flag=True, help="Print JSON.")
def compare(**kw: Any) -> None:
    """One workload's cost on each API beside self-hosting MODEL on each catalog accelerator."""
    from kokuban.usecases.prices import CompareRequest, run_compare

    result = run_compare(request(CompareRequest, kw))
    if kw["as_json"]:
        emit_json(result.as_dict())
        return
    from kokuban.present.prices import comparison

    comparison(result)


@prices.command()
@_price_options
@option("--model", "model", default=None, help="Open model served (default: the row's open model).")
@option("--gpu", default="h100-sxm", show_default=True, shell_complete=complete_gpu, help="Accelerator id.")
@option("--gpu-file", type=click.Path(), default=None, help="TOML/JSON file of extra accelerators.")
@option("--price-per-hour", type=float, default=None, help="USD per GPU-hour (default: the accelerator's).")
@option("--gpus-per-node", type=int, default=8, show_default=True)
@click.option("--prefill-gpus", type=int, default=32, show_default=True, help="GPUs of one prefill unit (EP).")
@click.option("--decode-gpus", type=int, default=144, show_default=True, help="GPUs of one decode unit (EP).")
@option("--input-tokens-per-day", "input_tokens", type=float, required=True,
        help="Input tokens per day (cached included).")
@option("--cached-tokens-per-day", "cached_tokens", type=float, default=0.0,
        help="Of which served from the prefix cache.")
@option("--output-tokens-per-day", "output_tokens", type=float, required=True, help="Output tokens per day.")
@option("--context", type=TOKENS, required=True, help="Mean KV length per output token.")
@option("--speed", type=float, required=True, help="Output tokens/s per user the decode keeps.")
@option("--prompt-tokens", "prompt", type=TOKENS, default=None,
        help="Prompt length for prefill (default: the context).")
@click.option("--prefill-tps", type=float, default=None, help="Use this measured prefill tokens/s per node instead.")
@click.option("--decode-tps", type=float, default=None, help="Use this measured decode tokens/s per node instead.")
@efficiency_options
@option("--price-file", "files", type=click.Path(), help="Extra price file(s).")
@option("--json", "as_json", is_flag=True, help="Print JSON (SI units, stable keys).")
def fleet(**kw: Any) -> None:
    """A day of a disaggregated EP fleet: node throughput (roofline), node-hours, cost, revenue, margin."""
    from kokuban.usecases.prices import FleetRequest, run_fleet

    result = run_fleet(request(FleetRequest, kw))
    if kw["as_json"]:
        emit_json(result.as_dict())
        return
    from kokuban.present.prices import fleet_account

    fleet_account(result)


commands = [prices]
