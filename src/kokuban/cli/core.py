"""`kokuban estimate | models | gpus`: the blackboard for one configuration, and the two catalogs.

Presentation only: parse → use case → present. Every number printed here was computed below the faces.
"""

from __future__ import annotations

from typing import Any

import click

from kokuban.cli.options import TOKENS, BatchType, deployment_options, emit_json, request
from kokuban.cli.vocabulary import option
from kokuban.present.format import console, gb, si


@click.command()
@deployment_options
@option("--batch", type=BatchType(), default=1, show_default=True, help="Requests decoded together, or 'max'.")
@option(
    "--context", type=TOKENS, default=None, help="Tokens each request attends to (default 4096, or prompt+output)."
)
@option("--prompt-tokens", "prompt", type=TOKENS, default=None,
        help="Prompt tokens per request (with --output-tokens: time a whole generation).")
@option("--output-tokens", "output", type=TOKENS, default=None, help="Output tokens per request.")
@click.option("--engine", default=None,
              help="Size memory by this engine's rule (vllm-v1, sglang, trtllm, …; default kokuban's: 0.9 of HBM).")
@click.option("--gpu-memory-utilization", type=float, default=None,
              help="The engine's memory fraction (default: the engine's; 0.9).")
def estimate(**kw: Any) -> None:
    """Time and price one configuration: the blackboard."""
    from kokuban.usecases.estimate import run_estimate
    from kokuban.usecases.request import EstimateRequest

    result = run_estimate(request(EstimateRequest, kw))
    if kw["as_json"]:
        emit_json(result.as_dict())
    else:
        from kokuban.present.blackboard import blackboard

        blackboard(console(), result)


@click.command()
@option("--json", "as_json", is_flag=True, help="Print JSON.")
def models(as_json: bool) -> None:
    """List the bundled model catalog."""
    from kokuban.usecases.catalog import run_models

    rows = [{k: v for k, v in r.items() if k != "hf_repo"} for r in run_models().as_dict()]
    if as_json:
        emit_json(rows, key="models")
        return
    from rich.table import Table

    table = Table(title="kokuban models (config.json from the Hugging Face Hub)")
    for col in (
        "id",
        "params total",
        "active",
        "KV/token (bf16)",
        "max ctx",
        "attention",
        "experts",
        "dtype",
        "verified",
    ):
        table.add_column(col, justify="left" if col in ("id", "attention", "dtype") else "right")
    for r in rows:
        table.add_row(
            r["id"], si(r["params_total"]), si(r["params_active"]), si(r["bf16_kv_bytes_per_token"], "B"),
            f"{r['max_context']:,}", r["attention"], f"{r['experts']}/{r['top_k']}" if r["experts"] else "-",
            r["native_dtype"] + (f", experts {r['native_experts_dtype']}"
                                 if r["native_experts_dtype"] != r["native_dtype"] else ""),
            "yes" if r["verified"] else "no",
        )
    console().print(table)


@click.command()
@option("--gpu-file", type=click.Path(), default=None, help="Also list accelerators from this file.")
@option("--json", "as_json", is_flag=True, help="Print JSON.")
def gpus(gpu_file: str | None, as_json: bool) -> None:
    """List the bundled accelerator catalog (dense FLOP/s, HBM, bandwidth, interconnect, price)."""
    from kokuban.usecases.catalog import run_gpus

    rows = run_gpus(gpu_file).as_dict()
    if as_json:
        emit_json(rows, key="gpus")
        return
    from rich.table import Table

    table = Table(title="kokuban accelerators (dense peak FLOP/s; memory in bytes, 1 GB = 1e9 B)")
    for col in ("id", "bf16", "fp8", "fp4", "HBM", "HBM BW", "link/dir", "$/h"):
        table.add_column(col, justify="left" if col == "id" else "right")
    for a in rows:
        flops = [si(a["peak_flops"][k], "FLOP/s") if a["peak_flops"].get(k) else "-" for k in ("bf16", "fp8", "fp4")]
        table.add_row(
            a["id"], *flops, gb(a["memory_bytes"]), si(a["memory_bandwidth_bytes_per_s"], "B/s"),
            si(a["interconnect_bytes_per_s"], "B/s") if a["interconnect_bytes_per_s"] else "-",
            f"{a['usd_per_gpu_hour']:.2f}" if a["usd_per_gpu_hour"] else "-",
        )
    console().print(table)


commands = [estimate, models, gpus]
