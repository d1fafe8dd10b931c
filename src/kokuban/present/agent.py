"""`kokuban agent` for people: the policy comparison, one run step by step, the survival break-evens, and the
figure (context and cost per step, cumulative cost per policy, policy comparison). Presentation only: every
number comes from an `AgentResult`."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from kokuban.present.format import secs, si


def _usd(x: float) -> str:
    return f"${x:,.4f}" if abs(x) < 10 else f"${x:,.2f}"


def agent_tables(console: Any, result: Any, max_rows: int = 24) -> None:
    """Print the policies, the first run's calls (head and tail when long), and the notes."""
    from rich.table import Table

    api = result.mode == "api"
    terms = result.terms
    where = terms["price"]["key"] if api else terms["deployment"]
    console.print(f"[bold]agent run[/bold] on {where} — {result.source}, {result.runs} run(s), seed {result.seed}")
    if api:
        cache = terms["cache"]
        ttl = "no expiry known" if cache["ttl_s"] is None else secs(cache["ttl_s"])
        console.print(f"cache: {cache['retention']}, TTL {ttl}, write ${cache['write_usd_per_m']:g}/M, "
                      f"read ${cache['read_usd_per_m']:g}/M; lane {terms['lane']}")
    else:
        console.print(
            f"{_usd(terms['usd_per_hour'])}/h, decode batch {terms['decode_batch']}, survival {terms['survival']}, "
            f"host link {si(terms['host_link_bytes_per_s'], 'B/s')}, host memory "
            f"${terms['host_usd_per_gb_hour']:.4g}/GB-h"
        )
    table = Table(title="cost of a run, by compaction policy")
    cols = ["policy", "mean", "p50", "p90", "calls", "summaries", "input", "output"]
    cols += (
        ["written", "read", "read share", "expiries"] if api else ["cached", "recomputed", "GPU-s", "keep/offload/drop"]
    )
    for c in cols:
        table.add_column(c, justify="left" if c == "policy" else "right", no_wrap=c == "policy")
    for p in result.policies:
        s = result.policy_summary(p)
        m = s["mean_per_run"]
        cells = [("* " if p is result.cheapest else "  ") + s["policy"], _usd(s["usd"]["mean"]), _usd(s["usd"]["p50"]),
                 _usd(s["usd"]["p90"]), f"{m['calls']:.1f}", f"{m['summary_calls']:.1f}", si(m["input_tokens"]),
                 si(m["output_tokens"])]
        if api:
            cells += [si(m["input_written_tokens"]), si(m["input_read_tokens"]), f"{s['cache_read_share']:.1%}",
                      f"{m['cache_expiries']:.2f}"]
        else:
            ch = s["survival_choices"]
            cells += [si(m["cached_tokens"]), si(m["recomputed_tokens"]), f"{m['gpu_s']:.3g}",
                      f"{ch['keep']}/{ch['offload']}/{ch['drop']}"]
        table.add_row(*cells)
    console.print(table)
    console.print(f"* cheapest: {result.cheapest.policy.spec}")
    df = result.steps_frame()
    steps = Table(title=f"run 0 under {result.chosen.policy.spec}, call by call")
    names = ["step", "kind", "gap", "prompt", "output"]
    names += ["written", "read", "expired", "long tier", "USD", "cumulative"] if api else [
        "cached", "survival", "keep $", "offload $", "drop $", "prefill", "decode", "USD", "cumulative"]
    for c in names:
        steps.add_column(c, justify="left" if c in ("kind", "survival") else "right")
    rows = list(df.itertuples())
    shown = rows if len(rows) <= max_rows else rows[: max_rows // 2] + [None] + rows[-max_rows // 2:]
    for row in shown:
        if row is None:
            steps.add_row(*["…"] * len(names))
            continue
        cells = [f"{row.step}" + (f".{row.child}" if row.child else ""), row.kind, secs(row.gap_before_s),
                 f"{row.prompt_tokens:,}", f"{row.output_tokens:,}"]
        if api:
            cells += [f"{row.input_written_tokens:,}", f"{row.input_read_tokens:,}", "yes" if row.cache_expired else "",
                      "yes" if row.long_context_tier else "", _usd(row.usd), _usd(row.cumulative_usd)]
        else:
            cells += [
                f"{row.cached_tokens:,}",
                row.survival,
                _usd(row.keep_usd),
                _usd(row.offload_usd),
                _usd(row.drop_usd),
                secs(row.prefill_s),
                secs(row.decode_s),
                _usd(row.usd),
                _usd(row.cumulative_usd),
            ]
        steps.add_row(*cells)
    console.print(steps)
    if not api:
        held = df[df["cached_tokens"] + df["recomputed_tokens"] > 0]
        if len(held):
            last = held.iloc[-1]
            console.print(
                f"break-even gaps at the last held context ({int(last.cached_tokens + last.recomputed_tokens):,} "
                "tokens): "
                f"keep = drop at {_gap(last.break_even_keep_drop_s)}, keep = offload at "
                f"{_gap(last.break_even_keep_offload_s)}, offload = drop at {_gap(last.break_even_offload_drop_s)}"
            )
    for note in result.notes:
        console.print(f"note: {note}")


def plot_agent(result: Any, path: str | Path) -> Path:
    """Four panels: context per call; cost per call by part; cumulative cost of each policy (run 0); the
    policies' mean cost with p50–p90 bars."""
    from kokuban.present.plots import USD, _save, check_plot_path

    check_plot_path(path)
    import matplotlib.pyplot as plt

    api = result.mode == "api"
    df = result.steps_frame()
    fig, axes = plt.subplots(2, 2, figsize=(12, 8))
    ax = axes[0][0]
    x = range(len(df))
    ax.plot(x, df["prompt_tokens"], marker=".", label="prompt")
    ax.plot(x, df["context_tokens"], lw=0.8, ls="--", label="context after the call")
    for i in df.index[df["kind"] == "summary"]:
        ax.axvline(i, color="grey", lw=0.6)
    if api:
        for i in df.index[df["long_context_tier"]][:1]:
            ax.axvline(i, color="red", lw=0.8, label="long-context tier from here")
        for i in df.index[df["cache_expired"]]:
            ax.axvline(i, color="orange", lw=0.8, ls=":")
    ax.set_xlabel("call")
    ax.set_ylabel("tokens")
    ax.set_title(f"context per call (run 0, {result.chosen.policy.spec})", fontsize=10)
    ax.legend(fontsize=8)
    ax = axes[0][1]
    parts = ["input_written_usd", "input_read_usd", "output_usd"] if api else ["prefill_usd", "decode_usd", "hold_usd"]
    bottom = 0
    for p in parts:
        ax.bar(x, df[p], bottom=bottom, label=p.removeprefix("usd_").replace("_", " "))
        bottom = bottom + df[p]
    ax.yaxis.set_major_formatter(USD)
    ax.set_xlabel("call")
    ax.set_title("cost per call", fontsize=10)
    ax.legend(fontsize=8)
    ax = axes[1][0]
    for p in result.policies:
        d = result.steps_frame(p.policy.spec)
        ax.plot(range(len(d)), d["cumulative_usd"], label=p.policy.spec)
    ax.yaxis.set_major_formatter(USD)
    ax.set_xlabel("call")
    ax.set_title("cumulative cost (run 0)", fontsize=10)
    ax.legend(fontsize=8)
    ax = axes[1][1]
    names = [p.policy.spec for p in result.policies]
    dist = [p.distribution() for p in result.policies]
    mean = [d["mean"] for d in dist]
    ax.bar(names, mean, color=["#55A868" if p is result.cheapest else "#4C72B0" for p in result.policies])
    ax.errorbar(names, [d["p50"] for d in dist], yerr=[[0] * len(dist), [d["p90"] - d["p50"] for d in dist]], fmt="k.",
                capsize=3, label="p50 → p90")
    ax.yaxis.set_major_formatter(USD)
    ax.tick_params(axis="x", labelrotation=20, labelsize=8)
    ax.set_title(f"cost per run over {result.runs} run(s), by policy", fontsize=10)
    ax.legend(fontsize=8)
    return _save(fig, path)


def agent_sim_tables(console: Any, result: Any) -> None:
    """`kokuban agent simulate`: the sessions (run latency, queueing, TTFT, cache, cost per run), the per-request
    view, and the capacity search when there was one. Every number from an `AgentSimulation.as_dict()`."""
    from rich.table import Table

    d = result.as_dict()
    s, req = d["sessions"], d["requests"]
    cache = s["cache"]
    console.print(f"[bold]{s['sessions']} agent sessions[/bold] on {d['deployment']} — {s['calls']} calls, "
                  f"retention {s['retention']}, KV {d['kv_blocks']:,} blocks")
    table = Table(title="per session and per call")
    for c in ("", "mean", "p50", "p90", "p99"):
        table.add_column(c, justify="left" if not c else "right")
    rows = (("run latency", "run_latency_s", secs), ("queue per call", "queue_per_call_s", secs),
            ("TTFT per call", "ttft_per_call_s", secs), ("USD per run", "usd_per_run", lambda x: f"${x:.3g}"))
    for label, key, fmt in rows:
        st = s[key]
        table.add_row(label, *(fmt(st[k]) for k in ("mean", "p50", "p90", "p99")))
    console.print(table)
    rate = "n/a" if cache["hit_rate"] is None else f"{cache['hit_rate']:.1%}"
    console.print(f"cache: {cache['hit_calls']} of {cache['reusable_calls']} calls hit their whole context ({rate}); "
                  f"{cache['cached_token_share']:.1%} of prompt tokens from cache; "
                  f"{si(cache['recomputed_tokens'])} tokens recomputed after preemption; "
                  f"{cache['reloads']} reloads ({secs(cache['reload_s'])})")
    console.print(f"busy {secs(s['busy_s'])} of {secs(s['duration_s'])}; "
                  f"{req['throughput']['output_tokens_per_s']:.4g} output tokens/s; "
                  f"batch mean {req['batch']['mean']:.3g}, KV peak {req['kv_cache']['peak_occupancy']:.0%}; "
                  f"{req['preemptions']} preemptions")
    cap = d["capacity"]
    if cap:
        console.print(f"capacity: {cap['max_sessions']} sessions within p{cap['percentile']:g} run latency "
                      f"{secs(cap['run_latency_target_s'])} (searched up to {cap['limit']})")


def _gap(value: float) -> str:
    """A break-even gap; none exists (infinite: the first option is cheaper at every gap, e.g. a free host tier
    makes offloading always cheaper than dropping) reads "never", never "inf s"."""
    return secs(value) if math.isfinite(float(value)) else "never"
