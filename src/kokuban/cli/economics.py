"""Commands `kokuban batch | lanes | frontier | context | io`: batch economics on the command line.

Presentation only: each command calls one function of `economics`, `lanes`, `frontier` or `context`
and prints its DataFrame (rich table), or `--json` ({"summary": …, "rows": [one per point]}),
`--csv PATH` (the rows) and `--plot PATH` (.png/.svg/.pdf).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from kokuban.cli.options import (
    BatchType,
    deployment_kwargs,
    deployment_options,
    efficiency_from_flags,
    efficiency_options,
    emit_json,
    make_deployment,
)
from kokuban.present.format import console, secs, si

if TYPE_CHECKING:
    import pandas as pd


def output_options(func: Callable[..., Any]) -> Callable[..., Any]:
    for option in reversed([
        click.option("--csv", "csv_path", type=click.Path(dir_okay=False), default=None, help="Write the rows as CSV."),
        click.option("--plot", "plot_path", type=click.Path(dir_okay=False), default=None, help="Write a figure (.png, .svg or .pdf)."),
    ]):
        func = option(func)
    return func


def records(df: pd.DataFrame) -> list[dict[str, Any]]:
    """Rows as JSON-ready dicts: NaN → null, NumPy scalars → Python."""
    import numpy as np

    out = []
    for row in df.to_dict(orient="records"):
        out.append({k: (None if isinstance(v, float) and math.isnan(v) else v.item() if isinstance(v, np.generic) else v)
                    for k, v in row.items()})
    return out


def _emit(df: pd.DataFrame, summary: dict[str, Any], as_json: bool, csv_path: str | None) -> None:
    if csv_path:
        df.to_csv(csv_path, index=False)
    if as_json:
        emit_json({"summary": summary, "rows": records(df)})


def _table(title: str, df: pd.DataFrame, columns: dict[str, Callable[[Any], str]], highlight: set[int] = frozenset()) -> None:
    from rich.table import Table

    t = Table(title=title, show_edge=False)
    for name in columns:
        t.add_column(name, justify="right")
    for i, row in df.iterrows():
        cells = [fmt(row) for fmt in columns.values()]
        t.add_row(*cells, style="bold" if i in highlight else None)
    console().print(t)


def _check_plot(path: str | None) -> None:
    if path:
        from kokuban.present.plots import check_plot_path

        check_plot_path(path)


def _usd(x: float) -> str:
    return f"${x:.3g}"


def _pick(df: pd.DataFrame, column: str, values: list[int]) -> pd.DataFrame:
    return df[df[column].isin(values)]


def _powers(hi: int) -> list[int]:
    return [2**i for i in range(int(math.log2(max(hi, 1))) + 1)]


# ---- kokuban batch -------------------------------------------------------------------------------------
@click.command()
@deployment_options
@click.option("--context", type=int, default=None, help="Tokens each request attends to (default 4096 or the model's maximum).")
@click.option("--min-batch", type=int, default=1, show_default=True)
@click.option("--max-batch", type=int, default=None, help="Largest batch (default: the largest that fits).")
@click.option("--batch", type=BatchType(), default="max", show_default=True, help="Operating point to mark and to price input vs output.")
@output_options
def batch(**kw: Any) -> None:
    """Cost per output token and tokens/s for every batch that fits: the three parts, the crossover."""
    from kokuban.economics.batch import batch_curve, batch_summary, input_output
    from kokuban.usecases.estimate import DEFAULT_CONTEXT

    as_json, csv_path, plot_path = kw.pop("as_json"), kw.pop("csv_path"), kw.pop("plot_path")
    _check_plot(plot_path)
    dep = make_deployment(deployment_kwargs(kw))
    context = kw["context"] or min(DEFAULT_CONTEXT, dep.model.max_context)
    df = batch_curve(dep, context, max_batch=kw["max_batch"], min_batch=kw["min_batch"])
    summary = batch_summary(dep, df).as_dict()
    op = int(df["batch"].max()) if kw["batch"] == "max" else int(kw["batch"])
    if op not in set(df["batch"]):
        from kokuban.errors import KokubanError

        raise KokubanError(f"--batch {op} is outside the curve's range {int(df['batch'].min())}–{int(df['batch'].max())}")
    io = input_output(dep, op, context)
    summary |= {"deployment": dep.describe(), "operating_batch": op, "input_output": io.as_dict()}
    _emit(df, summary, as_json, csv_path)
    if plot_path:
        from kokuban.present.plots import plot_batch_curve

        plot_batch_curve(df, summary, plot_path, f"{dep.describe()}\ncost of an output token by batch", operating_batch=op)
    if as_json:
        return
    shown = sorted(set(_powers(int(df["batch"].max()))) | {op, int(df["batch"].max()), summary["crossover_batch"] or 0})
    _table(f"{dep.describe()} — decode at context {context:,} (per token, busiest GPU)", _pick(df, "batch", shown), {
        "batch": lambda r: f"{int(r['batch']):,}", "bound": lambda r: r["bound"],
        "weights (shared)": lambda r: secs(r["weights_s_per_token"]), "compute": lambda r: secs(r["compute_s_per_token"]),
        "KV": lambda r: secs(r["kv_s_per_token"]), "tok/s/user": lambda r: f"{r['tokens_per_s_per_user']:,.1f}",
        "tok/s total": lambda r: f"{r['tokens_per_s']:,.0f}", "$/M out": lambda r: _usd(r["usd_per_m_output"]),
        "shared $": lambda r: _usd(r["usd_per_m_output_shared"]), "per-request $": lambda r: _usd(r["usd_per_m_output_per_request"]),
    }, highlight=set(df.index[df["batch"] == op]))
    con = console()
    con.print(f"crossover: {summary['reason']}. Blackboard at context 0 (F/BW × bytes/weight ÷ 2 × params read/active): "
              f"{summary['blackboard_crossover_batch']:.1f} (the KV read runs in its own kernels, paid per request, and does not move it)")
    con.print(f"most / least expensive token on the curve: ×{summary['cost_ratio_max_to_min']:.3g} "
              f"(batch 1 {_usd(summary['usd_per_m_output_batch_1'])}/M, batch {summary['cheapest_batch']:,} {_usd(summary['usd_per_m_output_cheapest'])}/M)")
    con.print(io.sentence)


# ---- kokuban io ----------------------------------------------------------------------------------------
@click.command()
@deployment_options
@click.option("--batch", type=BatchType(), default=1, show_default=True, help="Requests decoded (and prefilled) together, or 'max'.")
@click.option("--context", type=int, default=None, help="Decode context (default 4096 or the model's maximum).")
@click.option("--prompt", type=int, default=None, help="Prompt tokens per request (default: the context).")
def io(**kw: Any) -> None:
    """How many input tokens an output token costs, and why (prefill compute-bound, decode memory-bound)."""
    from kokuban.core import memory
    from kokuban.economics.batch import input_output
    from kokuban.usecases.estimate import DEFAULT_CONTEXT

    as_json = kw.pop("as_json")
    dep = make_deployment(deployment_kwargs(kw))
    context = kw["context"] or min(DEFAULT_CONTEXT, dep.model.max_context)
    b = kw["batch"]
    if b == "max":
        b = max(1, int(memory.max_batch(dep, max(context, kw["prompt"] or 0))))
    result = input_output(dep, int(b), context, kw["prompt"])
    if as_json:
        emit_json(result.as_dict())
        return
    con = console()
    con.print(f"{dep.describe()}: input ${result.usd_per_m_input:.3g}/M tokens ({result.prefill_bound}-bound prefill), "
              f"output ${result.usd_per_m_output:.3g}/M tokens ({result.decode_bound}-bound decode) → ratio {result.output_to_input_ratio:.3g}")
    con.print(result.sentence)


# ---- kokuban lanes -------------------------------------------------------------------------------------
@click.command()
@deployment_options
@click.option("--rate", type=float, required=True, help="Requests arriving per second (λ).")
@click.option("--prompt", type=int, default=1000, show_default=True, help="Prompt tokens per request.")
@click.option("--output", type=int, default=500, show_default=True, help="Output tokens per request.")
@click.option("--tpot", type=float, default=None, help="Fast-lane target: seconds per output token.")
@click.option("--ttft", type=float, default=None, help="Fast-lane target: seconds to the first token (queueing + prefill).")
@click.option("--slow-window", type=float, default=3600.0, show_default=True, help="Slow lane: seconds a batch may wait to fill.")
@output_options
def lanes(**kw: Any) -> None:
    """Fast and slow lanes: trains depart every W seconds or when full; the price of speed."""
    from kokuban.economics.lanes import default_windows, lane_prices, lane_table, max_batch_for

    as_json, csv_path, plot_path = kw.pop("as_json"), kw.pop("csv_path"), kw.pop("plot_path")
    _check_plot(plot_path)
    dep = make_deployment(deployment_kwargs(kw))
    rate, prompt, output = kw["rate"], kw["prompt"], kw["output"]
    prices = None
    if kw["tpot"] is not None or kw["ttft"] is not None:
        prices = lane_prices(dep, rate, prompt, output, tpot_target_s=kw["tpot"], ttft_target_s=kw["ttft"],
                             slow_window_s=kw["slow_window"]).as_dict()
    windows = default_windows(rate, max(1, max_batch_for(dep, prompt, output)), kw["slow_window"])
    df = lane_table(dep, rate, prompt, output, windows)
    summary = {"deployment": dep.describe(), "rate_per_s": rate, "prompt_tokens": prompt, "output_tokens": output,
               "lanes": prices}
    _emit(df, summary, as_json, csv_path)
    if plot_path:
        from kokuban.present.plots import plot_lanes

        plot_lanes(df, prices, plot_path, f"{dep.describe()}\n{rate:g} requests/s, {prompt} in → {output} out")
    if as_json:
        return
    _table(f"{dep.describe()} — the train timetable at {rate:g} requests/s", df.iloc[::4], {
        "window": lambda r: secs(r["window_s"]), "arrivals": lambda r: f"{r['arrivals_per_departure']:.3g}",
        "batch": lambda r: f"{int(r['batch']):,}", "wait": lambda r: secs(r["queue_wait_s"]), "TTFT": lambda r: secs(r["ttft_s"]),
        "TPOT": lambda r: secs(r["tpot_s"]), "bound": lambda r: r["bound"], "deployments": lambda r: f"{r['deployments_busy']:.3g}",
        "$/M out": lambda r: _usd(r["usd_per_m_output_all_in"]),
    })
    if prices:
        console().print(prices["sentence"])
    else:
        console().print("give --tpot and/or --ttft to price a fast lane against the slow lane")


# ---- kokuban frontier ----------------------------------------------------------------------------------
def _ints(text: str) -> tuple[int, ...]:
    from kokuban.errors import KokubanError

    try:
        values = tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise KokubanError(f"--counts must be a comma-separated list of integers, got {text!r}") from None
    if not values or min(values) < 1:
        raise KokubanError(f"--counts must list positive integers, got {text!r}")
    return values


@click.command()
@click.argument("model")
@click.option("--gpu", "gpu_ids", multiple=True, required=True, help="Accelerator id; repeat to compare types.")
@click.option("--counts", default="1,2,4,8", show_default=True, help="Accelerator counts to try.")
@click.option("--layouts", default="tp,ep", show_default=True, help="Layouts to try (ep only for MoE models).")
@click.option("--weights", "weights_dtypes", multiple=True, help="Weights dtype; repeat to compare (default: the checkpoint's).")
@click.option("--kv", default=None, help="KV-cache dtype (default bf16).")
@click.option("--context", type=int, default=None, help="Decode context (default 4096 or the model's maximum).")
@click.option("--prompt", type=int, default=None, help="Prompt tokens for TTFT (default: the context).")
@click.option("--slo-tps", type=float, default=None, help="SLO: at least this many tokens/s per user.")
@click.option("--slo-ttft", type=float, default=None, help="SLO: first token within this many seconds.")
@click.option("--price-per-hour", type=float, default=None, help="USD per accelerator-hour (default: catalog's).")
@click.option("--gpu-file", type=click.Path(), default=None, help="Extra accelerators (catalog schema).")
@efficiency_options
@click.option("--json", "as_json", is_flag=True, help="Print JSON (SI units, stable keys).")
@output_options
def frontier(**kw: Any) -> None:
    """Latency–throughput frontier over batch, GPU count, layout, accelerator and precision."""
    from kokuban.economics.frontier import cheapest_meeting, frontier_sweep
    from kokuban.errors import KokubanError
    from kokuban.specs.catalog import load_accelerator, load_model
    from kokuban.usecases.estimate import DEFAULT_CONTEXT

    _check_plot(kw["plot_path"])
    model = load_model(kw["model"])
    accs = [load_accelerator(g, kw["gpu_file"]) for g in kw["gpu_ids"]]
    layouts = tuple(x.strip() for x in kw["layouts"].split(",") if x.strip())
    bad = [x for x in layouts if x not in ("tp", "ep")]
    if bad or not layouts:
        raise KokubanError(f"--layouts must list tp and/or ep, got {kw['layouts']!r}")
    eff = efficiency_from_flags(kw)
    context = kw["context"] or min(DEFAULT_CONTEXT, model.max_context)
    df, skipped = frontier_sweep(model, accs, context, counts=_ints(kw["counts"]), layouts=layouts,
                                 weights=kw["weights_dtypes"] or (None,), prompt=kw["prompt"], efficiency=eff,
                                 price_per_hour=kw["price_per_hour"], kv=kw["kv"])
    chosen = None
    if kw["slo_tps"] is not None or kw["slo_ttft"] is not None:
        chosen = cheapest_meeting(df, min_tokens_per_s_per_user=kw["slo_tps"], max_ttft_s=kw["slo_ttft"])
    summary = {"model": model.name, "context": context, "configurations": int(df["config"].nunique()), "points": len(df),
               "skipped": [s.__dict__ for s in skipped], "slo": {"tokens_per_s_per_user": kw["slo_tps"], "ttft_s": kw["slo_ttft"]},
               "cheapest_meeting_slo": chosen}
    _emit(df, summary, kw["as_json"], kw["csv_path"])
    if kw["plot_path"]:
        from kokuban.present.plots import plot_frontier

        plot_frontier(df, kw["plot_path"], f"{model.name}, decode at context {context:,}: latency–throughput frontier",
                      chosen, kw["slo_tps"])
    if kw["as_json"]:
        return
    f = df[df["on_frontier"]].sort_values("tokens_per_s_per_user", ascending=False)
    _table(f"{model.name} — Pareto frontier at context {context:,} ({summary['configurations']} configurations, {len(df):,} points)",
           f.iloc[:: max(1, len(f) // 24)], {
               "config": lambda r: r["config"], "batch": lambda r: f"{int(r['batch']):,}", "bound": lambda r: r["bound"],
               "tok/s/user": lambda r: f"{r['tokens_per_s_per_user']:,.1f}", "tok/s/GPU": lambda r: f"{r['tokens_per_s_per_gpu']:,.0f}",
               "$/M out": lambda r: _usd(r["usd_per_m_output"]), "TTFT": lambda r: secs(r["ttft_s"]),
           })
    for s in skipped:
        console().print(f"skipped {s.config}: {s.reason}")
    if chosen:
        console().print(f"cheapest meeting the SLO: {chosen['config']} at batch {chosen['batch']}: "
                        f"{chosen['tokens_per_s_per_user']:.1f} tokens/s per user, {chosen['tokens_per_s_per_gpu']:,.0f} per GPU, "
                        f"${chosen['usd_per_m_output']:.3g}/M output tokens, TTFT {secs(chosen['ttft_s'])}")


# ---- kokuban context -----------------------------------------------------------------------------------
@click.command()
@deployment_options
@click.option("--from", "start", type=int, default=1024, show_default=True, help="Shortest context (tokens).")
@click.option("--to", "end", type=int, default=None, help="Longest context (default: the model's maximum; beyond it warns).")
@click.option("--points", type=int, default=40, show_default=True, help="Contexts in the sweep (geometric).")
@click.option("--threshold", type=int, default=None, help="Pricing tier threshold (default 200k, or a quarter of --to if shorter).")
@output_options
def context(**kw: Any) -> None:
    """The long-context wall: KV per request, batch that fits, cost per token, walls and surcharge."""
    from kokuban.economics.context import BeyondMaxContextWarning, context_summary, context_wall

    as_json, csv_path, plot_path = kw.pop("as_json"), kw.pop("csv_path"), kw.pop("plot_path")
    _check_plot(plot_path)
    dep = make_deployment(deployment_kwargs(kw))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", BeyondMaxContextWarning)
        df = context_wall(dep, kw["start"], kw["end"], kw["points"], kw["threshold"])
    for w in caught:
        click.echo(f"warning: {w.message}", err=True)
    summary = context_summary(dep, df).as_dict() | {"deployment": dep.describe()}
    _emit(df, summary, as_json, csv_path)
    if plot_path:
        from kokuban.present.plots import plot_context

        plot_context(df, summary, plot_path, f"{dep.describe()}\nthe long-context wall")
    if as_json:
        return
    _table(f"{dep.describe()} — cost by context (decode at the largest batch that fits)", df.iloc[:: max(1, len(df) // 16)], {
        "context": lambda r: f"{int(r['context']):,}", "KV/request": lambda r: si(r["kv_bytes_per_request"], "B"),
        "max batch": lambda r: f"{int(r['max_batch']):,}", "bound": lambda r: r["bound"],
        "tok/s total": lambda r: f"{r['tokens_per_s']:,.0f}", "$/M out": lambda r: _usd(r["usd_per_m_output"]),
        "$/M in": lambda r: _usd(r["usd_per_m_input"]), "surcharge out": lambda r: f"×{r['surcharge_output']:.2f}",
    })
    console().print(summary["note"])


commands = [batch, lanes, frontier, context, io]
