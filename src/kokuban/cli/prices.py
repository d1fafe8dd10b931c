"""`kokuban prices list | explain | infer | compare | fleet`: API price sheets read backwards.

Presentation only: the numbers come from `kokuban.prices` (the dataset), `kokuban.pricing`,
`kokuban.prices_explain` and `kokuban.prices_infer` (the economics, on the core physics).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from kokuban.cli.options import efficiency_from_flags, efficiency_option_list, efficiency_options, emit_json
from kokuban.errors import KokubanError
from kokuban.present.format import console, si

#: Batch the automatic accelerator count must hold at the context (a plausible serving batch).
AUTO_GPUS_BATCH = 256


def _hw_options(func: Callable[..., Any]) -> Callable[..., Any]:
    options = [
        click.option("--gpu", default="h100-sxm", show_default=True, help="Accelerator id (`kokuban gpus`) or one in --gpu-file."),
        click.option("--gpus", type=int, default=None, help=f"Accelerators (default: fewest that hold batch {AUTO_GPUS_BATCH} at the context)."),
        click.option("--layout", type=click.Choice(["tp", "ep"]), default=None, help="Default: ep for MoE, tp for dense."),
        click.option("--weights", default=None, help="Weights dtype (default: the checkpoint's)."),
        click.option("--kv", default=None, help="KV-cache dtype (default bf16)."),
        click.option("--price-per-hour", type=float, default=None, help="USD per accelerator-hour (default: catalog)."),
        click.option("--gpu-file", type=click.Path(), default=None, help="TOML/JSON file of extra accelerators."),
        *efficiency_option_list(),
        click.option("--context", type=int, default=8192, show_default=True, help="Tokens each request attends to."),
        click.option("--file", "files", multiple=True, type=click.Path(), help="Extra price file(s) in the prices.toml schema."),
        click.option("--json", "as_json", is_flag=True, help="Print JSON (SI units, stable keys)."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def _price_options(func: Callable[..., Any]) -> Callable[..., Any]:
    options = [
        click.argument("name", required=False),
        click.option("--input-price", type=float, default=None, help="USD per million input tokens (a price by hand)."),
        click.option("--output-price", type=float, default=None, help="USD per million output tokens (a price by hand)."),
        click.option("--cached-price", type=float, default=None, help="USD per million cached input tokens (by hand)."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def _row(kw: dict[str, Any]):
    """The price row named by NAME, or the one typed by hand (NAME then names an open model)."""
    from kokuban.prices.sheets import find_price, hand_price, load_prices
    from kokuban.specs.catalog import model_catalog

    name, inp, out, cached = kw.pop("name"), kw.pop("input_price"), kw.pop("output_price"), kw.pop("cached_price")
    files = kw.pop("files")
    if out is not None or inp is not None:
        if out is None or inp is None:
            raise KokubanError("--input-price and --output-price go together")
        open_model = name.lower() if name and name.lower() in model_catalog() else ""
        return hand_price(inp, out, cached_input_usd_per_m=cached, open_model=open_model, name=name or "given")
    if not name:
        raise KokubanError("give PROVIDER/MODEL (see `kokuban prices list`) or --input-price and --output-price")
    return find_price(name, load_prices(files))


def _deployment(model_id: str, kw: dict[str, Any]):
    from kokuban.core.memory import min_gpus_to_fit
    from kokuban.specs.catalog import load_accelerator, load_model
    from kokuban.specs.deployment import Deployment

    eff = efficiency_from_flags(kw)
    acc = load_accelerator(kw.pop("gpu"), kw.pop("gpu_file"))
    model = load_model(model_id)
    layout = kw.pop("layout") or ("ep" if model.is_moe else "tp")
    dep = Deployment.make(model, acc, 1, layout=layout, weights_dtype=kw.pop("weights"),
                          kv_dtype=kw.pop("kv"), efficiency=eff, price_per_hour_usd=kw.pop("price_per_hour"))
    gpus = kw.pop("gpus")
    if gpus is None:
        gpus = min_gpus_to_fit(dep, AUTO_GPUS_BATCH, kw["context"]) or min_gpus_to_fit(dep, 1, kw["context"])
        if gpus is None:
            raise KokubanError(f"infeasible: {model_id} does not fit on up to 1024× {acc.id} at context {kw['context']:,}")
    if not dep.price_per_hour_usd:
        raise KokubanError(f"accelerator '{acc.id}' has no hourly price in the catalog; give --price-per-hour")
    return dep.with_gpus(gpus)


@click.group()
def prices() -> None:
    """API price sheets read backwards: list, explain, infer (逆算), compare, fleet."""


@prices.command("list")
@click.option("--provider", default=None, help="Only this provider.")
@click.option("--file", "files", multiple=True, type=click.Path(), help="Extra price file(s) in the same schema.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def list_(provider: str | None, files: tuple[str, ...], as_json: bool) -> None:
    """The price sheet dataset (bundled data/prices.toml plus --file), validated on load."""
    from kokuban.errors import unknown_name
    from kokuban.prices.sheets import load_prices

    rows = load_prices(files)
    if provider:
        known = {r.provider for r in rows}
        if provider.lower() not in known:
            raise KokubanError(str(unknown_name("provider", provider, known)).replace("`kokuban providers`", "`kokuban prices list`"))
        rows = [r for r in rows if r.provider == provider.lower()]
    if as_json:
        emit_json([r.as_dict() for r in rows])
        return
    from rich.table import Table

    table = Table(title="kokuban prices (USD per million tokens; see each row's source)")
    for col in ("provider/model", "open model", "input", "cached", "output", "out/in", "long ctx", "batch", "priority", "retrieved"):
        table.add_column(col, justify="left" if col in ("provider/model", "open model", "retrieved") else "right")
    f = lambda v: "-" if v is None else f"{v:g}"
    for r in rows:
        long = f"> {si(r.long_context_threshold_tokens)}: {f(r.long_input_usd_per_m)}/{f(r.long_output_usd_per_m)}" \
            if r.long_context_threshold_tokens else "-"
        table.add_row(r.key, r.open_model or "-", f(r.input_usd_per_m), f(r.cached_input_usd_per_m), f(r.output_usd_per_m),
                      f"{r.output_usd_per_m / r.input_usd_per_m:.2g}" if r.input_usd_per_m else "-", long,
                      f(r.batch_multiplier), f(r.priority_multiplier), r.retrieved)
    console().print(table)


@prices.command()
@_price_options
@_hw_options
@click.option("--stand-in", default=None, help="Open model whose physics stands in for a closed one.")
@click.option("--prompt", type=int, default=None, help="Prompt tokens for the prefill side (default: the context).")
@click.option("--speed", type=float, default=None, help="Standard lane tokens/s per user (default: sheet's, else memory-limited).")
def explain(**kw: Any) -> None:
    """Decompose each feature of a price sheet with the cost model (numbers + one sentence each)."""
    from kokuban.prices.explain import explain as run
    from kokuban.prices.explain import stand_in_model

    as_json = kw.pop("as_json")
    row = _row(kw)
    model_id, why = stand_in_model(row)
    stand = kw.pop("stand_in")
    if stand:
        model_id, why = stand, f"ASSUMPTION: physics of {stand} (given with --stand-in)"
    prompt, speed = kw.pop("prompt"), kw.pop("speed")
    dep = _deployment(model_id, kw)
    features = run(row, dep, context=kw["context"], prompt_tokens=prompt, speed=speed)
    result = {"price": row.as_dict(), "model": model_id, "stand_in": why, "deployment": dep.describe(),
              "gpus": dep.num_gpus, "usd_per_gpu_hour": dep.price_per_hour_usd, "context": kw["context"], "features": features}
    if as_json:
        emit_json(result)
        return
    con = console()
    con.print(f"[bold]{row.key}[/bold]: in ${row.input_usd_per_m:g}/M, out ${row.output_usd_per_m:g}/M  ({row.source}, read {row.retrieved})")
    con.print(f"{why}; {dep.describe()} at ${dep.price_per_hour_usd:g}/GPU-hour, context {kw['context']:,}")
    for feat in features:
        con.print(f"\n[bold]{feat['feature']}[/bold] — {feat['sentence']}")
        con.print(f"  sheet: {_fmt(feat['sheet'])}")
        con.print(f"  model: {_fmt(feat['model'])}")
        for a in feat["assumptions"]:
            con.print(f"  assumes: {a}")


def _fmt(d: dict[str, Any]) -> str:
    def one(v: Any) -> str:
        if isinstance(v, float):
            return f"{v:.4g}"
        if isinstance(v, list):
            return "[" + ", ".join(one(x) for x in v) + "]"
        if isinstance(v, dict):
            return "{" + ", ".join(f"{k}: {one(x)}" for k, x in v.items()) + "}"
        return str(v)

    return ", ".join(f"{k}={one(v)}" for k, v in d.items())


@prices.command()
@_price_options
@_hw_options
@click.option("--speed", type=float, default=None, help="Measured output tokens/s per user (default: the sheet's).")
@click.option("--batch", type=int, default=None, help="Also report the margin at this batch (open models).")
@click.option("--prompt", type=int, default=None, help="Prompt tokens for the input side (default: the context).")
@click.option("--closed", is_flag=True, help="Treat the model as closed: solve for active parameters and batch.")
@click.option("--kv-per-token", type=float, default=160e3, show_default=True, help="Closed: KV bytes per token (16-bit).")
@click.option("--total-over-active", type=float, default=1.0, show_default=True, help="Closed: total ÷ active parameters.")
@click.option("--plot", type=click.Path(), default=None, help="Closed: save the feasible region as a PNG here.")
def infer(**kw: Any) -> None:
    """Back-calculate (逆算) what a price (and a speed) imply for the provider."""
    from kokuban.prices.infer import infer_closed, infer_open, plot_closed

    as_json = kw.pop("as_json")
    row = _row(kw)
    speed = kw.pop("speed") or row.output_tokens_per_s
    if kw.pop("closed") or not row.open_model:
        from kokuban.specs.catalog import load_accelerator

        if not speed:
            raise KokubanError(f"{row.key} is closed: give its measured --speed (output tokens/s per user)")
        eff = efficiency_from_flags(kw)
        result = infer_closed(row.output_usd_per_m, speed, load_accelerator(kw["gpu"], kw["gpu_file"]),
                              usd_per_gpu_hour=kw["price_per_hour"], context=kw["context"], kv_bytes_per_token=kw["kv_per_token"],
                              total_over_active=kw["total_over_active"], weights_dtype=kw["weights"] or "fp8", efficiency=eff)
        if kw["plot"]:
            result["plot"] = plot_closed(result, kw["plot"])
        if as_json:
            emit_json({k: v for k, v in result.items() if k != "grid"} | {"price": row.as_dict()})
            return
        con = console()
        a, b, g = result["active_params_range"], result["batch_range"], result["gpus_range"]
        con.print(f"[bold]{row.key}[/bold] at ${row.output_usd_per_m:g}/M output and {speed:g} tokens/s per user on "
                  f"{result['accelerator']} at ${result['usd_per_gpu_hour']:g}/GPU-hour:")
        con.print(f"  consistent active parameters: {si(a[0])} … {si(a[1])}; batch {b[0]} … {b[1]}; {g[0]} … {g[1]} GPUs; "
                  f"best profit ÷ cost {result['best_profit_over_cost']:.0%}")
        for line in result["assumptions"]:
            con.print(f"  assumes: {line}")
        if kw["plot"]:
            con.print(f"  plot: {kw['plot']}")
        return
    prompt, batch = kw.pop("prompt"), kw.pop("batch")
    dep = _deployment(row.open_model, kw)
    result = infer_open(row, dep, context=kw["context"], prompt_tokens=prompt, speed=speed, batch=batch)
    if as_json:
        emit_json(result)
        return
    _print_open(result, row)


def _print_open(result: dict[str, Any], row: Any) -> None:
    from rich.table import Table

    con = console()
    con.print(f"[bold]{row.key}[/bold] (${row.input_usd_per_m:g} in / ${row.output_usd_per_m:g} out per M) on {result['deployment']} "
              f"at ${result['usd_per_gpu_hour']:g}/GPU-hour, context {result['context']:,}")
    t = Table(show_edge=False)
    t.add_column("")
    for c in ("pessimistic", "central", "optimistic"):
        t.add_column(c, justify="right")
    r = result["range"]
    pct = lambda x: "-" if x is None else f"{x:.0%}"
    rows = [
        ("max batch (memory)", lambda c: f"{c['max_batch']}"),
        ("break-even batch", lambda c: str(c["break_even_batch"] or "none")),
        ("$/M output at max batch", lambda c: f"{c['usd_per_m_output_at_max_batch']:.3g}"),
        ("profit÷cost at max batch", lambda c: pct(c["margin_at_max_batch"]["profit_over_cost"])),
        ("$/M input (prefill)", lambda c: f"{c['usd_per_m_input']:.3g}"),
        ("profit÷cost on input", lambda c: pct(c["margin_on_input"]["profit_over_cost"])),
    ]
    if result["speed"]:
        rows += [("batch at the speed", lambda c: str(c["speed_batch"])),
                 ("profit÷cost at that batch", lambda c: pct(c["margin_at_speed_batch"]["profit_over_cost"]))]
    for label, fn in rows:
        t.add_row(label, *(fn(r[c]) for c in ("pessimistic", "central", "optimistic")))
    con.print(t)
    if result["infeasible"]:
        con.print(f"[red]break-even infeasible[/red]: {result['infeasible']}")
    t = Table(title="by accelerator count (central)", show_edge=False)
    for c in ("GPUs", "max batch", "break-even batch", "tok/s/user there", "$/M out at max", "profit÷cost at max"):
        t.add_column(c, justify="right")
    for c in result["by_gpu_count"]:
        t.add_row(str(c["gpus"]), str(c["max_batch"]), str(c["break_even_batch"] or "none"),
                  f"{c['break_even_tokens_per_s_per_user']:.0f}" if c["break_even_tokens_per_s_per_user"] else "-",
                  f"{c['usd_per_m_output_at_max_batch']:.3g}", pct(c["profit_over_cost_at_max_batch"]))
    con.print(t)
    for a in result["assumptions"]:
        con.print(f"  assumes: {a}")


@prices.command()
@click.argument("model")
@click.option("--prompt", type=int, required=True, help="Prompt tokens per request.")
@click.option("--output", type=int, required=True, help="Output tokens per request.")
@click.option("--requests", type=int, default=1, show_default=True, help="Number of requests.")
@click.option("--cache-hit", type=float, default=0.0, show_default=True, help="Share of prompt tokens served from a cache.")
@click.option("--speed", type=float, default=30.0, show_default=True, help="Self-hosted tokens/s per user to keep.")
@click.option("--api", "apis", multiple=True, help="Price rows to include (PROVIDER/MODEL; default: rows serving MODEL).")
@click.option("--all-apis", is_flag=True, help="Include every price row.")
@click.option("--lane", type=click.Choice(["standard", "batch", "flex", "priority"]), default="standard", show_default=True)
@click.option("--weights", default=None, help="Self-hosted weights dtype (default: the checkpoint's).")
@click.option("--file", "files", multiple=True, type=click.Path(), help="Extra price file(s).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def compare(**kw: Any) -> None:
    """One workload's cost on each API beside self-hosting MODEL on each catalog accelerator."""
    from kokuban.prices.infer import compare as run
    from kokuban.prices.sheets import find_price, load_prices
    from kokuban.specs.catalog import load_model

    rows = load_prices(kw["files"])
    model = load_model(kw["model"])
    chosen = rows if kw["all_apis"] else [find_price(a, rows) for a in kw["apis"]] or \
        [r for r in rows if r.open_model == model.name]
    result = run(model, chosen, prompt_tokens=kw["prompt"], output_tokens=kw["output"], requests=kw["requests"],
                 cache_hit=kw["cache_hit"], tokens_per_s_per_user=kw["speed"], weights_dtype=kw["weights"], lane=kw["lane"])
    if kw["as_json"]:
        emit_json(result)
        return
    from rich.table import Table

    w = result["workload"]
    t = Table(title=f"{w['requests']:,} requests of {w['prompt_tokens']:,} in / {w['output_tokens']:,} out tokens, "
              f"{w['cache_hit']:.0%} cached, {model.name}", show_edge=False)
    for c in ("where", "USD total", "USD/request", "how"):
        t.add_column(c, justify="right" if c.startswith("USD") else "left")
    for a in result["apis"]:
        t.add_row(f"API {a['key']}", "-" if a["usd"] is None else f"{a['usd']:,.2f}",
                  "-" if a["usd"] is None else f"{a['usd_per_request']:.5f}", "; ".join(a.get("notes", [])) or a.get("reason", ""))
    for h in result["self_host"]:
        how = (f"{h['gpus']}× at ${h['usd_per_gpu_hour']:g}/h, batch {h['batch']}, {h['tokens_per_s_per_user']:.0f} tok/s/user, "
               f"{h['gpu_hours']:,.1f} GPU-h") if h["usd"] is not None else h["reason"]
        t.add_row(f"self-host {h['accelerator']}", "-" if h["usd"] is None else f"{h['usd']:,.2f}",
                  "-" if h["usd"] is None else f"{h['usd_per_request']:.5f}", how)
    console().print(t)
    for a in result["assumptions"]:
        console().print(f"  assumes: {a}")


@prices.command()
@_price_options
@click.option("--model", "model_id", default=None, help="Open model served (default: the row's open model).")
@click.option("--gpu", default="h100-sxm", show_default=True)
@click.option("--gpu-file", type=click.Path(), default=None)
@click.option("--price-per-hour", type=float, default=None, help="USD per GPU-hour (default: the accelerator's).")
@click.option("--gpus-per-node", type=int, default=8, show_default=True)
@click.option("--prefill-gpus", type=int, default=32, show_default=True, help="GPUs of one prefill unit (EP).")
@click.option("--decode-gpus", type=int, default=144, show_default=True, help="GPUs of one decode unit (EP).")
@click.option("--input-tokens", type=float, required=True, help="Input tokens per day (cached included).")
@click.option("--cached-tokens", type=float, default=0.0, help="Of which served from the prefix cache.")
@click.option("--output-tokens", type=float, required=True, help="Output tokens per day.")
@click.option("--context", type=int, required=True, help="Mean KV length per output token.")
@click.option("--speed", type=float, required=True, help="Output tokens/s per user the decode keeps.")
@click.option("--prompt", type=int, default=None, help="Prompt length for prefill (default: the context).")
@click.option("--prefill-tps", type=float, default=None, help="Use this measured prefill tokens/s per node instead.")
@click.option("--decode-tps", type=float, default=None, help="Use this measured decode tokens/s per node instead.")
@efficiency_options
@click.option("--file", "files", multiple=True, type=click.Path())
@click.option("--json", "as_json", is_flag=True)
def fleet(**kw: Any) -> None:
    """A day of a disaggregated EP fleet: node throughput (roofline), node-hours, cost, revenue, margin."""
    from kokuban.prices.costing import fleet_day, node_throughput
    from kokuban.specs.catalog import load_accelerator, load_model
    from kokuban.specs.deployment import Deployment

    row = _row(kw)
    model_id = kw["model_id"] or row.open_model
    if not model_id:
        raise KokubanError(f"{row.key} is closed: give --model (an open stand-in)")
    eff = efficiency_from_flags(kw)
    acc = load_accelerator(kw["gpu"], kw["gpu_file"])
    m = load_model(model_id)
    layout = "ep" if m.is_moe else "tp"
    mk = lambda n: Deployment.make(m, acc, n, layout=layout, efficiency=eff, price_per_hour_usd=kw["price_per_hour"])
    pre, dec = mk(kw["prefill_gpus"]), mk(kw["decode_gpus"])
    hit = kw["cached_tokens"] / kw["input_tokens"] if kw["input_tokens"] else 0.0
    tp = node_throughput(pre, dec, context=kw["context"], prompt_tokens=kw["prompt"] or kw["context"], cache_hit=hit,
                         tokens_per_s_per_user=kw["speed"], gpus_per_node=kw["gpus_per_node"])
    p_tps = kw["prefill_tps"] or tp["prefill_tokens_per_s_per_node"]
    d_tps = kw["decode_tps"] or tp["decode_tokens_per_s_per_node"]
    day = fleet_day(row, kw["input_tokens"], kw["cached_tokens"], kw["output_tokens"], p_tps, d_tps,
                    gpus_per_node=kw["gpus_per_node"], usd_per_gpu_hour=dec.price_per_hour_usd)
    result = {"price": row.as_dict(), "model": model_id, "accelerator": acc.id, "layout": layout,
              "throughput_model": tp, "throughput_used": {"prefill": "measured" if kw["prefill_tps"] else "roofline",
                                                          "decode": "measured" if kw["decode_tps"] else "roofline"},
              "day": day.as_dict(), "efficiency": dict(eff.__dict__)}
    if kw["as_json"]:
        emit_json(result)
        return
    con = console()
    con.print(f"[bold]{model_id}[/bold] on {acc.id}: prefill unit {kw['prefill_gpus']} GPUs, decode unit {kw['decode_gpus']} GPUs ({layout.upper()})")
    con.print(f"  roofline decode: batch {tp['decode_batch']} at context {kw['context']:,} → {tp['decode_tokens_per_s_per_user']:.1f} tok/s/user, "
              f"{tp['decode_tokens_per_s_per_node']:,.0f} tok/s per node (bound: {tp['decode_bound']})")
    con.print(f"  roofline prefill: {tp['prefill_computed_tokens_per_s_per_node']:,.0f} computed tok/s per node, "
              f"{tp['prefill_tokens_per_s_per_node']:,.0f} counting {hit:.1%} cache hits (bound: {tp['prefill_bound']})")
    con.print(f"  used: prefill {p_tps:,.0f} ({result['throughput_used']['prefill']}), decode {d_tps:,.0f} "
              f"({result['throughput_used']['decode']}) tokens/s per node")
    con.print(f"  node-hours/day: prefill {day.node_hours_prefill:,.0f} + decode {day.node_hours_decode:,.0f} "
              f"= {day.average_nodes:,.2f} nodes on average")
    con.print(f"  cost/day ${day.cost_usd_per_day:,.0f} at ${day.usd_per_gpu_hour:g}/GPU-hour; revenue/day at {row.key} "
              f"prices ${day.revenue_usd_per_day:,.0f}; profit ÷ cost {day.profit_over_cost:.0%} (gross margin {day.gross_margin:.1%})")


commands = [prices]
