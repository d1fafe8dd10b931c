"""Batch economics for people: the tables, sentences, CSV files and figures of `kokuban batch | io | lanes |
frontier | context`, from the use cases' results (`kokuban.usecases.economics`). Nothing is computed here but
which rows to show and how to word them."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from kokuban.present.format import console, secs, si


def usd(x: float) -> str:
    return f"${x:.3g}"


def powers_of_two(hi: int) -> list[int]:
    """1, 2, 4, … up to `hi`: the batches a table shows."""
    return [2**i for i in range(int(math.log2(max(hi, 1))) + 1)]


def table(title: str, df: Any, columns: dict[str, Callable[[Any], str]], highlight: set[int] = frozenset()) -> None:
    """Print `df`'s rows as a rich table: one column per (header, formatter of a row); `highlight` rows bold."""
    from rich.table import Table

    t = Table(title=title, show_edge=False)
    for name in columns:
        t.add_column(name, justify="right")
    for i, row in df.iterrows():
        t.add_row(*[fmt(row) for fmt in columns.values()], style="bold" if i in highlight else None)
    console().print(t)


def write_csv(df: Any, path: str | None) -> None:
    """The rows of a curve as CSV (nothing when `path` is None)."""
    if path:
        df.to_csv(path, index=False)


def check_plot(path: str | None) -> None:
    """Refuse a figure file name matplotlib would not write, before any work is done."""
    if path:
        from kokuban.present.plots import check_plot_path

        check_plot_path(path)


# ---- batch -----------------------------------------------------------------------------------------
def batch_report(result: Any) -> None:
    """The batch curve at powers of two (plus the operating point, the crossover and the last batch), then
    the crossover, the most/least expensive token and the input/output sentence."""
    df, summary, op, dep = result.curve, result.summary_dict(), result.operating_batch, result.deployment
    hi = int(df["batch"].max())
    shown = sorted(set(powers_of_two(hi)) | {op, hi, summary["crossover_batch"] or 0})
    table(
        f"{dep.describe()} — decode at context {result.context:,} (per token, busiest GPU)",
        df[df["batch"].isin(shown)],
        {
            "batch": lambda r: f"{int(r['batch']):,}",
            "bound": lambda r: r["bound"],
            "weights (shared)": lambda r: secs(r["weights_s_per_token"]),
            "compute": lambda r: secs(r["compute_s_per_token"]),
            "KV": lambda r: secs(r["kv_s_per_token"]),
            "tok/s/user": lambda r: f"{r['tokens_per_s_per_user']:,.1f}",
            "tok/s total": lambda r: f"{r['tokens_per_s']:,.0f}",
            "$/M out": lambda r: usd(r["usd_per_m_output"]),
            "shared $": lambda r: usd(r["usd_per_m_output_shared"]),
            "per-request $": lambda r: usd(r["usd_per_m_output_per_request"]),
        },
        highlight=set(df.index[df["batch"] == op]),
    )
    con = console()
    con.print(
        f"crossover: {summary['reason']}. Blackboard at context 0 (F/BW × bytes/weight ÷ 2 × params read/active): "
        f"{summary['blackboard_crossover_batch']:.1f} (the KV read runs in its own kernels, paid per request, and does "
        "not move it)"
    )
    con.print(f"most / least expensive token on the curve: ×{summary['cost_ratio_max_to_min']:.3g} "
              f"(batch 1 {usd(summary['usd_per_m_output_batch_1'])}/M, batch {summary['cheapest_batch']:,} "
              f"{usd(summary['usd_per_m_output_cheapest'])}/M)")
    con.print(result.input_output.sentence)


def batch_plot(result: Any, path: str) -> None:
    from kokuban.present.plots import plot_batch_curve

    plot_batch_curve(
        result.curve,
        result.summary_dict(),
        path,
        f"{result.deployment.describe()}\ncost of an output token by batch",
        operating_batch=result.operating_batch,
    )


# ---- io --------------------------------------------------------------------------------------------
def io_report(result: Any) -> None:
    io = result.input_output
    con = console()
    con.print(
        f"{result.deployment.describe()}: input ${io.usd_per_m_input:.3g}/M tokens ({io.prefill_bound}-bound prefill), "
        f"output ${io.usd_per_m_output:.3g}/M tokens ({io.decode_bound}-bound decode) → ratio "
        f"{io.output_to_input_ratio:.3g}"
    )
    con.print(io.sentence)


# ---- lanes -----------------------------------------------------------------------------------------
def lanes_report(result: Any) -> None:
    dep = result.deployment
    table(
        f"{dep.describe()} — the train timetable at {result.rate_per_s:g} requests/s",
        result.table.iloc[::4],
        {
            "window": lambda r: secs(r["window_s"]),
            "arrivals": lambda r: f"{r['arrivals_per_departure']:.3g}",
            "batch": lambda r: f"{int(r['batch']):,}",
            "wait": lambda r: secs(r["queue_wait_s"]),
            "TTFT": lambda r: secs(r["ttft_s"]),
            "TPOT": lambda r: secs(r["tpot_s"]),
            "bound": lambda r: r["bound"],
            "deployments": lambda r: f"{r['deployments_busy']:.3g}",
            "$/M out": lambda r: usd(r["usd_per_m_output_all_in"]),
        },
    )
    if result.prices is not None:
        console().print(result.prices.sentence)
    else:
        console().print("give --tpot-slo and/or --ttft-slo to price a fast lane against the slow lane")


def lanes_plot(result: Any, path: str) -> None:
    from kokuban.present.plots import plot_lanes

    prices = result.prices.as_dict() if result.prices is not None else None
    plot_lanes(result.table, prices, path, f"{result.deployment.describe()}\n{result.rate_per_s:g} requests/s, "
               f"{result.prompt_tokens} in → {result.output_tokens} out")


# ---- frontier --------------------------------------------------------------------------------------
def frontier_report(result: Any) -> None:
    df, chosen = result.table, result.chosen
    f = df[df["on_frontier"]].sort_values("tokens_per_s_per_user", ascending=False)
    table(
        f"{result.model.name} — Pareto frontier at context {result.context:,} ({result.configurations} configurations, "
        f"{len(df):,} points)",
        f.iloc[:: max(1, len(f) // 24)],
        {
            "config": lambda r: r["config"],
            "batch": lambda r: f"{int(r['batch']):,}",
            "bound": lambda r: r["bound"],
            "tok/s/user": lambda r: f"{r['tokens_per_s_per_user']:,.1f}",
            "tok/s/GPU": lambda r: f"{r['tokens_per_s_per_gpu']:,.0f}",
            "$/M out": lambda r: usd(r["usd_per_m_output"]),
            "TTFT": lambda r: secs(r["ttft_s"]),
        },
    )
    con = console()
    for s in result.skipped:
        con.print(f"skipped {s.config}: {s.reason}")
    if chosen:
        con.print(
            f"cheapest meeting the SLO: {chosen['config']} at batch {chosen['batch']}: "
            f"{chosen['tokens_per_s_per_user']:.1f} tokens/s per user, {chosen['tokens_per_s_per_gpu']:,.0f} per GPU, "
            f"${chosen['usd_per_m_output']:.3g}/M output tokens, TTFT {secs(chosen['ttft_s'])}"
        )


def frontier_plot(result: Any, path: str) -> None:
    from kokuban.present.plots import plot_frontier

    plot_frontier(
        result.table,
        path,
        f"{result.model.name}, decode at context {result.context:,}: latency–throughput frontier",
        result.chosen,
        result.slo_tps,
    )


# ---- context ---------------------------------------------------------------------------------------
def context_report(result: Any) -> None:
    df = result.table
    table(f"{result.deployment.describe()} — cost by context (decode at the largest batch that fits)",
          df.iloc[:: max(1, len(df) // 16)], {
              "context": lambda r: f"{int(r['context']):,}", "KV/request": lambda r: si(r["kv_bytes_per_request"], "B"),
              "max batch": lambda r: f"{int(r['max_batch']):,}", "bound": lambda r: r["bound"],
              "tok/s total": lambda r: f"{r['tokens_per_s']:,.0f}", "$/M out": lambda r: usd(r["usd_per_m_output"]),
              "$/M in": lambda r: usd(r["usd_per_m_input"]), "surcharge out": lambda r: f"×{r['surcharge_output']:.2f}",
          })
    console().print(result.summary.note)


def context_plot(result: Any, path: str) -> None:
    from kokuban.present.plots import plot_context

    plot_context(result.table, result.summary_dict(), path, f"{result.deployment.describe()}\nthe long-context wall")
