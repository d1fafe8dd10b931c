"""The simulator's results as text: a run's summary, the max rate within an SLO, the cheapest-deployment table."""

from __future__ import annotations

from typing import Any

from kokuban.present.format import secs, si


def simulation(con: Any, sim: Any) -> None:
    """A `usecases.simulate.Simulation` as a few lines and a latency table (from its `as_dict()`)."""
    from rich.table import Table

    s = sim.as_dict()
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
        table.add_row(name.upper(), *(secs(row[k]) if row[k] is not None else "-"
                                      for k in ("mean", "p50", "p90", "p99")))
    con.print(table)
    con.print(f"throughput  {tp['requests_per_s']:.3g} req/s · input {si(tp['input_tokens_per_s'], 'tok/s')} · "
              f"output {si(tp['output_tokens_per_s'], 'tok/s')} "
              f"({si(tp['output_tokens_per_s_per_gpu'], 'tok/s')} per GPU)")
    con.print(f"busy {s['busy_fraction']:.1%} · mean batch {s['batch']['mean']:.1f} (max {s['batch']['max']}) · "
              f"KV occupancy mean {s['kv_cache']['mean_occupancy']:.1%} peak {s['kv_cache']['peak_occupancy']:.1%} · "
              f"preemptions {s['preemptions']:,} · prefix-cache hits {s['prefix_cache_hit_tokens']:,} tokens")
    engine(con, s)
    c = s["cost"]
    con.print(f"cost  ${c['usd_per_hour']:.2f}/h → ${c['usd_per_m_output']:.3g} per M output tokens, "
              f"${c['usd_per_m_total']:.3g} per M tokens (input + output)")
    if "slo" in s:
        g = s["slo"]
        con.print(f"SLO (TTFT ≤ {g['ttft_s']}, TPOT ≤ {g['tpot_s']} s): "
                  f"goodput {g['goodput_requests_per_s']:.3g} req/s, "
                  f"{g['fraction_good']:.1%} of requests; p99s within SLO: {'yes' if g['p99_within_slo'] else 'no'}")


def engine(con: Any, s: dict[str, Any]) -> None:
    """The engine profile's overheads and, behind a router, one line per data-parallel rank (from `as_dict()`)."""
    sched = s["scheduler"]
    if sched.get("engine"):
        o = sched.get("overheads") or {}
        con.print(f"engine profile {sched['engine']}: front end {secs(o.get('front_end_s', 0.0))} per request, "
                  f"{secs(o.get('per_seq_s', 0.0))} per sequence per step, "
                  f"{o.get('stream_tokens', 1)} token(s) per stream chunk"
                  + (f"; steps without a CUDA graph (decode batches above {o.get('graph_max_batch', 0)}, prefills) "
                     f"last at least {secs(o['eager_per_layer_s'])} per layer" if o.get("eager_per_layer_s") else ""))
    for i, rank in enumerate(s.get("ranks", ())):
        lat = rank["latency_s"]
        con.print(f"rank {i} ({s['router']}): {rank['requests']:,} requests · "
                  f"TTFT mean {secs(lat['ttft']['mean'])} · KV {rank['kv_cache']['capacity_blocks']:,} blocks · "
                  f"mean batch {rank['batch']['mean']:.1f}")


def max_rate(con: Any, cap: Any) -> None:
    """A `sim.capacity.Capacity` as one line."""
    con.print(f"max rate within SLO: [bold]{cap.max_rate_per_s:.3g} req/s[/] "
              f"(saturated throughput {cap.saturation_rate_per_s:.3g} req/s; {len(cap.trials)} runs)")


def cheapest(con: Any, result: Any) -> None:
    """A `usecases.simulate.CheapestDeployments` as a table, cheapest first."""
    from rich.table import Table

    slo = result.slo
    table = Table(title=f"deployments for {result.target_rate_per_s:g} req/s within TTFT p99 ≤ {slo.ttft_s} s, "
                        f"TPOT p99 ≤ {slo.tpot_s} s (cheapest first)")
    for col in ("gpu", "count", "max_num_seqs", "max req/s", "replicas", "$/hour", "note"):
        table.add_column(col, justify="left" if col in ("gpu", "note") else "right")
    for row in result.rows:
        c = row.candidate
        table.add_row(c.gpu, str(c.num_gpus), str(c.max_num_seqs or "default"), f"{row.max_rate_per_s:.3g}",
                      str(row.replicas or "-"), f"{row.usd_per_hour:.2f}" if row.replicas else "-",
                      (row.error or "")[:60])
    con.print(table)
