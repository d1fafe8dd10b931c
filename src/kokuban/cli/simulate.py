"""`kokuban simulate` and `kokuban capacity`: the serving simulator on the command line.

Presentation only: the numbers come from `kokuban.sim` (which times every step with the core).
"""

from __future__ import annotations

from typing import Any

import click

from kokuban.cli.options import deployment_kwargs, deployment_options, emit_json, make_deployment
from kokuban.errors import KokubanError
from kokuban.present.format import console, secs, si


def _rate(value: str) -> float:
    try:
        rate = float(value)
    except ValueError:
        raise KokubanError(f"--rate must be a number of requests per second or 'inf', got {value!r}") from None
    if not rate > 0:
        raise KokubanError(f"--rate must be > 0 requests/s (or 'inf' to send everything at once), got {value!r}")
    return rate


def workload_options(func: Any) -> Any:
    options = [
        click.option("--rate", default=None, help="Mean arrival rate, requests/s ('inf': all at t=0)."),
        click.option("--requests", "num_requests", default=1000, show_default=True, type=int, help="Requests to simulate."),
        click.option("--prompt", default="1000", show_default=True,
                     help="Prompt tokens: N, uniform:LO,HI, lognormal:MEDIAN,SIGMA or hist:V=W,…"),
        click.option("--output", default="200", show_default=True, help="Output tokens (same forms as --prompt)."),
        click.option("--arrival", type=click.Choice(["poisson", "gamma", "fixed"]), default="poisson", show_default=True),
        click.option("--burstiness", type=float, default=1.0, show_default=True,
                     help="Gamma shape for --arrival gamma (< 1: burstier than Poisson)."),
        click.option("--seed", type=int, default=0, show_default=True),
        click.option("--scheduler", type=click.Choice(["continuous", "prefill_first", "static"]), default="continuous",
                     show_default=True),
        click.option("--max-num-seqs", type=int, default=None, help="Running requests at most (default: vLLM's)."),
        click.option("--max-num-batched-tokens", type=int, default=None, help="Tokens per step (default: vLLM's)."),
        click.option("--block-size", type=int, default=16, show_default=True, help="KV block size, tokens."),
        click.option("--no-prefix-caching", is_flag=True, help="Disable prefix caching."),
        click.option("--batch-timeout", type=float, default=0.0, show_default=True, help="Static batching: max wait, s."),
        click.option("--max-concurrency", type=int, default=None, help="Client cap on requests in flight."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def _scheduler(kw: dict[str, Any]):
    from kokuban.sim import SchedulerConfig

    return SchedulerConfig(
        policy=kw.pop("scheduler"), max_num_seqs=kw.pop("max_num_seqs"),
        max_num_batched_tokens=kw.pop("max_num_batched_tokens"), block_size=kw.pop("block_size"),
        prefix_caching=not kw.pop("no_prefix_caching"), batch_timeout_s=kw.pop("batch_timeout"),
        max_concurrency=kw.pop("max_concurrency"),
    )


def _print_summary(s: dict[str, Any]) -> None:
    from rich.table import Table

    con = console()
    tp, lat = s["throughput"], s["latency_s"]
    con.print(f"[bold]{s['deployment']}[/] — {s['scheduler']['policy']} batching, max_num_seqs "
              f"{s['scheduler']['max_num_seqs']}, max_num_batched_tokens {s['scheduler']['max_num_batched_tokens']}")
    con.print(f"{s['requests']:,} requests in {secs(s['duration_s'])} ({s['steps']:,} steps); KV cache "
              f"{s['kv_cache']['capacity_tokens']:,} tokens ({s['kv_cache']['capacity_blocks']:,} blocks)")
    table = Table(title="latency per request")
    for col in ("metric", "mean", "p50", "p90", "p99"):
        table.add_column(col, justify="left" if col == "metric" else "right")
    for name in ("queue", "ttft", "tpot", "itl", "e2e"):
        row = lat[name]
        table.add_row(name.upper(), *(secs(row[k]) if row[k] == row[k] else "-" for k in ("mean", "p50", "p90", "p99")))
    con.print(table)
    con.print(f"throughput  {tp['requests_per_s']:.3g} req/s · input {si(tp['input_tokens_per_s'], 'tok/s')} · "
              f"output {si(tp['output_tokens_per_s'], 'tok/s')} ({si(tp['output_tokens_per_s_per_gpu'], 'tok/s')} per GPU)")
    con.print(f"busy {s['busy_fraction']:.1%} · mean batch {s['batch']['mean']:.1f} (max {s['batch']['max']}) · "
              f"KV occupancy mean {s['kv_cache']['mean_occupancy']:.1%} peak {s['kv_cache']['peak_occupancy']:.1%} · "
              f"preemptions {s['preemptions']:,} · prefix-cache hits {s['prefix_cache_hit_tokens']:,} tokens")
    c = s["cost"]
    con.print(f"cost  ${c['usd_per_hour']:.2f}/h → ${c['usd_per_m_output_tokens']:.3g} per M output tokens, "
              f"${c['usd_per_m_total_tokens']:.3g} per M tokens (input + output)")
    if "slo" in s:
        g = s["slo"]
        con.print(f"SLO (TTFT ≤ {g['ttft_s']}, TPOT ≤ {g['tpot_s']} s): goodput {g['goodput_requests_per_s']:.3g} req/s, "
                  f"{g['fraction_good']:.1%} of requests; p99s within SLO: {'yes' if g['p99_within_slo'] else 'no'}")


@click.command()
@deployment_options
@workload_options
@click.option("--trace", type=click.Path(), default=None, help="Replay a CSV/JSONL trace instead of a synthetic workload.")
@click.option("--shared-prefix", type=int, default=0, help="Tokens of a shared system prompt prepended to each prompt.")
@click.option("--num-prefixes", type=int, default=1, show_default=True, help="Distinct shared prefixes.")
@click.option("--ttft-slo", type=float, default=None, help="TTFT objective, s (goodput).")
@click.option("--tpot-slo", type=float, default=None, help="TPOT objective, s (goodput).")
@click.option("--records", type=click.Path(), default=None, help="Write per-request records to this CSV.")
@click.option("--plots", type=click.Path(), default=None, help="Write latency CDFs, occupancy and step plots here.")
def simulate(**kw: Any) -> None:
    """Serve a stream of requests with continuous (or static) batching; every step timed by the core."""
    from kokuban.sim import SLO, read_trace, synthetic
    from kokuban.sim import simulate as run

    as_json = kw.pop("as_json")
    dep = make_deployment(deployment_kwargs(kw))
    sched = _scheduler(kw)
    if kw["trace"]:
        wl = read_trace(kw["trace"])
    else:
        if kw["rate"] is None:
            raise KokubanError("give --rate (requests/s) or --trace FILE")
        wl = synthetic(kw["num_requests"], _rate(kw["rate"]), kw["prompt"], kw["output"], arrival=kw["arrival"],
                       burstiness=kw["burstiness"], seed=kw["seed"], shared_prefix_tokens=kw["shared_prefix"],
                       num_prefixes=kw["num_prefixes"])
    slo = SLO(kw["ttft_slo"], kw["tpot_slo"]) if kw["ttft_slo"] or kw["tpot_slo"] else None
    result = run(dep, wl, sched, progress=not as_json)
    summary = result.summary(slo)
    if kw["records"]:
        result.records().to_csv(kw["records"], index=False)
    if kw["plots"]:
        from kokuban.present.sim_plots import save_all

        summary["plots"] = [str(p) for p in save_all(result, kw["plots"])]
    if as_json:
        emit_json(summary)
    else:
        _print_summary(summary)


@click.command()
@deployment_options
@workload_options
@click.option("--ttft-p99", type=float, default=None, help="SLO: p99 time to first token, s.")
@click.option("--tpot-p99", type=float, default=None, help="SLO: p99 time per output token, s.")
@click.option("--target-rate", type=float, default=None,
              help="Find the cheapest deployment serving this many requests/s (searches --candidates).")
@click.option("--candidates", default=None,
              help="GPU ids to try with --target-rate, comma-separated (default: --gpu).")
@click.option("--counts", default="1,2,4,8", show_default=True, help="GPU counts to try with --target-rate.")
@click.option("--seqs", default=None, help="max_num_seqs values to try with --target-rate (default: vLLM's).")
@click.option("--workers", type=int, default=None, help="Local processes (default: all cores).")
@click.option("--ray", "ray_address", default=None, help="Run the sweep on a Ray cluster at this address.")
def capacity(**kw: Any) -> None:
    """Highest request rate within an SLO; with --target-rate, the cheapest deployment that serves it."""
    from kokuban.sim import SLO
    from kokuban.sim.capacity import Candidate, WorkloadShape, cheapest, max_rate
    from kokuban.specs.catalog import load_accelerator

    as_json = kw.pop("as_json")
    common = deployment_kwargs(kw)
    sched = _scheduler(kw)
    if kw["rate"] is not None:
        raise KokubanError("capacity searches the rate itself; drop --rate")
    slo = SLO(kw["ttft_p99"], kw["tpot_p99"])
    shape = WorkloadShape(kw["num_requests"], kw["prompt"], kw["output"], kw["arrival"], kw["burstiness"], kw["seed"])
    if kw["target_rate"] is None:
        cap = max_rate(make_deployment(common), slo, shape, sched, workers=kw["workers"], ray_address=kw["ray_address"])
        if as_json:
            emit_json(cap.as_dict())
        else:
            console().print(f"max rate within SLO: [bold]{cap.max_rate_per_s:.3g} req/s[/] "
                            f"(saturated throughput {cap.saturation_rate_per_s:.3g} req/s; {len(cap.trials)} runs)")
        return
    if kw["target_rate"] <= 0:
        raise KokubanError(f"--target-rate must be > 0 requests/s, got {kw['target_rate']!r}")
    gpus = [g.strip() for g in (kw["candidates"] or common["gpu"].id).split(",") if g.strip()]
    try:
        counts = [int(c) for c in kw["counts"].split(",")]
        seqs = [int(c) for c in kw["seqs"].split(",")] if kw["seqs"] else [sched.max_num_seqs]
    except ValueError:
        raise KokubanError("--counts and --seqs take comma-separated integers") from None
    cands = [Candidate(g, n, common["layout"], s) for g in gpus for n in counts for s in seqs]

    def make(gpu: str, n: int, layout: str):
        return make_deployment(common | {"gpu": load_accelerator(gpu), "gpus": n, "layout": layout,
                                         "price_per_hour": common["price_per_hour"] if gpu == common["gpu"].id else None})

    rows = cheapest(make, cands, kw["target_rate"], slo, shape, sched, workers=kw["workers"],
                    ray_address=kw["ray_address"])
    if as_json:
        emit_json(rows)
        return
    from rich.table import Table

    table = Table(title=f"deployments for {kw['target_rate']:g} req/s within TTFT p99 ≤ {slo.ttft_s} s, "
                        f"TPOT p99 ≤ {slo.tpot_s} s (cheapest first)")
    for col in ("gpu", "count", "max_num_seqs", "max req/s", "replicas", "$/hour", "note"):
        table.add_column(col, justify="left" if col in ("gpu", "note") else "right")
    for r in rows:
        table.add_row(r["gpu"], str(r["num_gpus"]), str(r["max_num_seqs"] or "default"), f"{r['max_rate_per_s']:.3g}",
                      str(r["replicas"] or "-"), f"{r['usd_per_hour']:.2f}" if r["replicas"] else "-",
                      (r.get("error") or "")[:60])
    console().print(table)


commands = [simulate, capacity]
