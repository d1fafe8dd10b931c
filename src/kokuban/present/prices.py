"""Price sheets read backwards, for people: the tables and sentences of `kokuban prices list | explain | infer |
compare | fleet`, and the closed-model feasible-region figure, from the use cases' results
(`kokuban.usecases.prices`). Nothing is computed here but which numbers to show and how to word them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from kokuban.present.format import console, si

if TYPE_CHECKING:
    from kokuban.prices.infer import ClosedInference, Comparison
    from kokuban.usecases.prices import ClosedPriceInference, Explanation, FleetAccount, OpenPriceInference, PriceList


def _num(v: float | None) -> str:
    return "-" if v is None else f"{v:g}"


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x:.0%}"


def price_table(result: PriceList) -> None:
    """`prices list`: one row per sheet row (USD per million tokens)."""
    from rich.table import Table

    table = Table(title="kokuban prices (USD per million tokens; see each row's source)")
    columns = ("provider/model", "open model", "input", "cached", "output", "out/in", "long ctx", "batch", "priority",
               "retrieved")
    for col in columns:
        table.add_column(col, justify="left" if col in ("provider/model", "open model", "retrieved") else "right")
    for r in result.rows:
        long = "-"
        if r.long_context_threshold_tokens:
            tier = f"{_num(r.long_input_usd_per_m)}/{_num(r.long_output_usd_per_m)}"
            long = f"> {si(r.long_context_threshold_tokens)}: {tier}"
        ratio = f"{r.output_usd_per_m / r.input_usd_per_m:.2g}" if r.input_usd_per_m else "-"
        table.add_row(r.key, r.open_model or "-", _num(r.input_usd_per_m), _num(r.cached_input_usd_per_m),
                      _num(r.output_usd_per_m), ratio, long, _num(r.batch_multiplier), _num(r.priority_multiplier),
                      r.retrieved)
    console().print(table)


def fields_line(d: dict[str, Any]) -> str:
    """`k=v, …` with floats to 4 significant digits, lists and dicts inline."""
    def one(v: Any) -> str:
        if isinstance(v, float):
            return f"{v:.4g}"
        if isinstance(v, list):
            return "[" + ", ".join(one(x) for x in v) + "]"
        if isinstance(v, dict):
            return "{" + ", ".join(f"{k}: {one(x)}" for k, x in v.items()) + "}"
        return str(v)

    return ", ".join(f"{k}={one(v)}" for k, v in d.items())


def explanation(result: Explanation) -> None:
    """`prices explain`: the row, the physics it is read with, then each feature's sentence and numbers."""
    row, dep = result.price, result.deployment
    con = console()
    con.print(f"[bold]{row.key}[/bold]: in ${row.input_usd_per_m:g}/M, out ${row.output_usd_per_m:g}/M  "
              f"({row.source}, read {row.retrieved})")
    con.print(f"{result.stand_in}; {dep.describe()} at ${dep.price_per_hour_usd:g}/GPU-hour, "
              f"context {result.context:,}")
    for feat in result.features:
        con.print(f"\n[bold]{feat.feature}[/bold] — {feat.sentence}")
        con.print(f"  sheet: {fields_line(feat.sheet.as_dict())}")
        con.print(f"  model: {fields_line(feat.model.as_dict())}")
        for a in feat.assumptions:
            con.print(f"  assumes: {a}")


def open_inference(result: OpenPriceInference) -> None:
    """`prices infer` for an open model: the range table, then the central corner by accelerator count."""
    from rich.table import Table

    inf = result.inference
    row = inf.price
    con = console()
    con.print(f"[bold]{row.key}[/bold] (${row.input_usd_per_m:g} in / ${row.output_usd_per_m:g} out per M) "
              f"on {inf.deployment} at ${inf.usd_per_gpu_hour:g}/GPU-hour, context {inf.context:,}")
    t = Table(show_edge=False)
    t.add_column("")
    from kokuban.prices.infer import CORNERS as corners

    for c in corners:
        t.add_column(c, justify="right")
    rows = [
        ("max batch (memory)", lambda c: f"{c.max_batch}"),
        ("break-even batch", lambda c: str(c.break_even_batch or "none")),
        ("$/M output at max batch", lambda c: f"{c.usd_per_m_output_at_max_batch:.3g}"),
        ("profit÷cost at max batch", lambda c: _pct(c.margin_at_max_batch.profit_over_cost)),
        ("$/M input (prefill)", lambda c: f"{c.usd_per_m_input:.3g}"),
        ("profit÷cost on input", lambda c: _pct(c.margin_on_input.profit_over_cost)),
    ]
    if inf.tokens_per_s_per_user:
        rows += [("batch at the speed", lambda c: str(c.speed_batch)),
                 ("profit÷cost at that batch", lambda c: _pct(c.margin_at_speed_batch.profit_over_cost))]
    for label, fn in rows:
        t.add_row(label, *(fn(inf.range[c]) for c in corners))
    con.print(t)
    if inf.infeasible:
        con.print(f"[red]break-even infeasible[/red]: {inf.infeasible}")
    t = Table(title="by accelerator count (central)", show_edge=False)
    for c in ("GPUs", "max batch", "break-even batch", "tok/s/user there", "$/M out at max", "profit÷cost at max"):
        t.add_column(c, justify="right")
    for c in inf.by_gpu_count:
        t.add_row(str(c.gpus), str(c.max_batch), str(c.break_even_batch or "none"),
                  f"{c.break_even_tokens_per_s_per_user:.0f}" if c.break_even_tokens_per_s_per_user else "-",
                  f"{c.usd_per_m_output_at_max_batch:.3g}", _pct(c.profit_over_cost_at_max_batch))
    con.print(t)
    for a in inf.assumptions:
        con.print(f"  assumes: {a}")


def closed_inference(result: ClosedPriceInference) -> None:
    """`prices infer` for a closed model: the ranges of the consistent sizes, batches and GPU counts."""
    inf, row = result.inference, result.price
    con = console()
    a, b, g = inf.active_params_range, inf.batch_range, inf.gpus_range
    con.print(f"[bold]{row.key}[/bold] at ${row.output_usd_per_m:g}/M output and "
              f"{inf.tokens_per_s_per_user:g} tokens/s per user on {inf.accelerator} at "
              f"${inf.usd_per_gpu_hour:g}/GPU-hour:")
    con.print(f"  consistent active parameters: {si(a[0])} … {si(a[1])}; batch {b[0]} … {b[1]}; {g[0]} … {g[1]} GPUs; "
              f"best profit ÷ cost {inf.best_profit_over_cost:.0%}")
    for line in inf.assumptions:
        con.print(f"  assumes: {line}")
    if result.plot:
        con.print(f"  plot: {result.plot}")


def plot_closed(inference: ClosedInference, path: str) -> str:
    """Save the feasible region of a `prices.infer.ClosedInference` (profit ÷ cost over active parameters ×
    batch) as a PNG (matplotlib Agg)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    g = inference.grid
    fig, ax = plt.subplots(figsize=(7, 4.5))
    mesh = ax.pcolormesh(g.active_params, g.batch, np.asarray(g.profit_over_cost).T * 100, shading="nearest",
                         cmap="viridis")
    fig.colorbar(mesh, ax=ax, label="best profit ÷ cost (%)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("active parameters")
    ax.set_ylabel("decode batch")
    ax.set_title(f"consistent with ${inference.price_usd_per_m_output:g}/M output at "
                 f"{inference.tokens_per_s_per_user:g} tok/s/user on {inference.accelerator}", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def comparison(result: Comparison) -> None:
    """`prices compare`: each API row and each self-hosted accelerator, cheapest first, then the assumptions."""
    from rich.table import Table

    w = result.workload
    t = Table(title=f"{w.requests:,} requests of {w.prompt_tokens:,} in / {w.output_tokens:,} out tokens, "
              f"{w.cache_hit:.0%} cached, {w.model}", show_edge=False)
    for c in ("where", "USD total", "USD/request", "how"):
        t.add_column(c, justify="right" if c.startswith("USD") else "left")
    for a in result.apis:
        t.add_row(f"API {a.key}", "-" if a.usd is None else f"{a.usd:,.2f}",
                  "-" if a.usd is None else f"{a.usd_per_request:.5f}", "; ".join(a.notes or ()) or a.reason or "")
    for h in result.self_host:
        how = (f"{h.gpus}× at ${h.usd_per_gpu_hour:g}/h, batch {h.batch}, {h.tokens_per_s_per_user:.0f} tok/s/user, "
               f"{h.gpu_hours:,.1f} GPU-h") if h.usd is not None else h.reason
        t.add_row(f"self-host {h.accelerator}", "-" if h.usd is None else f"{h.usd:,.2f}",
                  "-" if h.usd is None else f"{h.usd_per_request:.5f}", how)
    con = console()
    con.print(t)
    for a in result.assumptions:
        con.print(f"  assumes: {a}")


def fleet_account(result: FleetAccount) -> None:
    """`prices fleet`: the roofline's node throughputs, those used, node-hours, cost, revenue and margin."""
    tp, day, row, pre, dec = result.throughput_model, result.day, result.price, result.prefill, result.decode
    used = result.throughput_used
    con = console()
    con.print(f"[bold]{result.model}[/bold] on {dec.accelerator.id}: prefill unit {pre.num_gpus} GPUs, decode unit "
              f"{dec.num_gpus} GPUs ({dec.layout.upper()})")
    con.print(f"  roofline decode: batch {tp.decode_batch} at context {result.context:,} → "
              f"{tp.decode_tokens_per_s_per_user:.1f} tok/s/user, {tp.decode_tokens_per_s_per_node:,.0f} tok/s per "
              f"node (bound: {tp.decode_bound})")
    counted = "-" if tp.prefill_tokens_per_s_per_node is None else f"{tp.prefill_tokens_per_s_per_node:,.0f}"
    con.print(f"  roofline prefill: {tp.prefill_computed_tokens_per_s_per_node:,.0f} computed tok/s per node, "
              f"{counted} counting {result.cache_hit:.1%} cache hits (bound: {tp.prefill_bound})")
    con.print(f"  used: prefill {day.prefill_tokens_per_s_per_node:,.0f} ({used['prefill']}), decode "
              f"{day.decode_tokens_per_s_per_node:,.0f} ({used['decode']}) tokens/s per node")
    con.print(f"  node-hours/day: prefill {day.prefill_node_hours:,.0f} + decode {day.decode_node_hours:,.0f} "
              f"= {day.average_nodes:,.2f} nodes on average")
    con.print(f"  cost/day ${day.cost_usd_per_day:,.0f} at ${day.usd_per_gpu_hour:g}/GPU-hour; revenue/day at "
              f"{row.key} prices ${day.revenue_usd_per_day:,.0f}; profit ÷ cost {day.profit_over_cost:.0%} "
              f"(gross margin {'-' if day.gross_margin is None else format(day.gross_margin, '.1%')})")
