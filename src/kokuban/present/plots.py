"""Figures for talks: presentation only. Every number drawn comes from a DataFrame the economics
wing built (through the use cases' results); nothing is computed here but positions and labels.
Agg backend, files only.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.ticker import FuncFormatter

from kokuban.errors import KokubanError

FORMATS = (".png", ".svg", ".pdf")
COLORS = {"compute": "#DD8452", "kv": "#55A868", "comm_bytes": "#8172B3", "comm_latency": "#B5A8DA",
          "overhead": "#937860", "weights": "#4C72B0"}
LABELS = {"weights": "weight read (shared, ÷ batch)", "compute": "compute (per request)", "kv": "KV read (per request)",
          "comm_bytes": "communication bytes (per request)", "comm_latency": "collective latency (shared, ÷ batch)",
          "overhead": "fixed step overhead (shared, ÷ batch)"}
USD = FuncFormatter(lambda v, _: f"${v:,.3g}")


def check_plot_path(path: str | Path | None, field: str = "plot_path") -> None:
    """Reject a plot file name matplotlib would not write as a figure (before any work is done)."""
    if path is not None and Path(path).suffix.lower() not in FORMATS:
        raise KokubanError(f"plot file '{path}' must end in one of {', '.join(FORMATS)}", field=field, value=str(path))


def _save(fig: Any, path: str | Path) -> Path:
    path = Path(path)
    check_plot_path(path)
    fig.tight_layout()
    fig.savefig(path, dpi=150)
    plt.close(fig)
    return path


def plot_batch_curve(df: pd.DataFrame, summary: dict[str, Any], path: str | Path, title: str,
                     operating_batch: int | None = None) -> Path:
    """Top: the cost of an output token split into its parts, stacked (shared weight read first);
    bottom: tokens/s in total and per user. Crossover and operating point marked."""
    fig, (ax, ax2) = plt.subplots(2, 1, figsize=(9, 8), sharex=True, gridspec_kw={"height_ratios": [3, 2]})
    b = df["batch"]
    # per-request parts at the bottom (a flat floor), the shared weight read stacked on top (÷ B)
    parts = [p for p in COLORS if df[f"usd_per_m_output_{p}"].max() > 0]
    ax.stackplot(b, *[df[f"usd_per_m_output_{p}"] for p in parts], colors=[COLORS[p] for p in parts],
                 labels=[LABELS[p] for p in parts], alpha=0.85)
    ax.plot(b, df["usd_per_m_output_per_request"], color="black", lw=1, ls="--", label="per-request floor")
    ax.plot(b, df["usd_per_m_output"], color="black", lw=1.4, label="total")
    ax.set_ylim(bottom=0.3 * df["usd_per_m_output_per_request"].min())
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_ylabel("cost per million output tokens (USD)")
    ax.yaxis.set_major_formatter(USD)
    ax.set_title(title, fontsize=11)
    cross = summary.get("crossover_batch")
    if cross and summary.get("crossover_within_fit"):
        for a in (ax, ax2):
            a.axvline(cross, color="crimson", ls="--", lw=1)
        ax.annotate(f"compute-bound from batch {cross:,}", (cross, ax.get_ylim()[0]), xytext=(-4, 6),
                    textcoords="offset points", color="crimson", fontsize=9, ha="right")
    else:
        ax.text(0.98, 0.91, summary.get("reason", ""), transform=ax.transAxes, ha="right", va="top", fontsize=8.5,
                color="crimson", wrap=True)
    ax.text(0.98, 0.97, f"batch 1 costs ×{summary['cost_ratio_max_to_min']:.3g} the cheapest token",
            transform=ax.transAxes, ha="right", va="top", fontsize=9)
    ax.legend(loc="upper right", bbox_to_anchor=(1, 0.85), fontsize=8.5, framealpha=0.9)
    ax2.plot(b, df["tokens_per_s"], color="black", label="tokens/s, all users")
    ax2.set_ylabel("tokens/s, all users")
    ax3 = ax2.twinx()
    ax3.plot(b, df["tokens_per_s_per_user"], color="#C44E52", label="tokens/s per user")
    ax3.set_ylabel("tokens/s per user", color="#C44E52")
    ax2.set_xlabel(f"batch (requests decoded together, context {int(df['context'].iloc[0]):,} tokens)")
    if operating_batch is not None:
        row = df.loc[df["batch"] == operating_batch].iloc[0]
        ax.plot([operating_batch], [row["usd_per_m_output"]], "o", color="black", ms=8, mfc="gold", zorder=5,
                label="operating point")
        ax.annotate(
            f"batch {operating_batch}: ${row['usd_per_m_output']:.3g}/M",
            (operating_batch, row["usd_per_m_output"]),
            xytext=(-10, 12),
            textcoords="offset points",
            ha="right",
            fontsize=9,
        )
        ax2.plot([operating_batch], [row["tokens_per_s"]], "o", color="black", ms=7, mfc="gold", zorder=5)
    ax2.grid(alpha=0.3)
    ax.grid(alpha=0.3, which="both")
    return _save(fig, path)


def plot_lanes(table: pd.DataFrame, prices: dict[str, Any] | None, path: str | Path, title: str) -> Path:
    """Cost per output token and latency against the train's departure window; lanes marked."""
    fig, ax = plt.subplots(figsize=(9, 5.5))
    t = table[table["window_s"] > 0]
    ax.plot(t["window_s"], t["usd_per_m_output_all_in"], color="black", lw=1.8, label="cost per M output tokens")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("departure window W (s): a batch leaves every W seconds or when full")
    ax.set_ylabel("cost per million output tokens (USD, prefill + decode)")
    ax.yaxis.set_major_formatter(USD)
    ax2 = ax.twinx()
    ax2.plot(t["window_s"], t["ttft_s"], color="#C44E52", ls="--", label="time to first token (s)")
    ax2.plot(t["window_s"], t["tpot_s"], color="#4C72B0", ls=":", label="time per output token (s)")
    ax2.set_yscale("log")
    ax2.set_ylabel("latency (s)")
    full = t[t["full"]]
    if len(full):
        x_full = full["window_s"].iloc[0]
        ax.axvline(x_full, color="gray", ls=":", lw=1)
        ax.annotate("trains leave full", (x_full, ax.get_ylim()[1]), xytext=(4, -12), textcoords="offset points",
                    fontsize=8.5, color="gray")
    if prices:
        for lane, color in (("fast", "#DD8452"), ("slow", "#55A868")):
            r = prices[lane]
            x = max(r["window_s"], t["window_s"].min())
            ax.plot([x], [r["usd_per_m_output_all_in"]], "o", ms=10, color=color, mec="black", zorder=5)
            ax.annotate(f"{lane} lane: batch {r['batch']}, ${r['usd_per_m_output_all_in']:.3g}/M",
                        (x, r["usd_per_m_output_all_in"]), xytext=(8, 8) if lane == "fast" else (-8, 10),
                        ha="left" if lane == "fast" else "right", textcoords="offset points", fontsize=9)
        for key, color, name in (
            ("ttft_target_s", "#C44E52", "TTFT target"),
            ("tpot_target_s", "#4C72B0", "TPOT target"),
        ):
            if prices.get(key):
                ax2.axhline(prices[key], color=color, lw=0.8, alpha=0.6, label=f"{name} ({prices[key]:g} s)")
        title += f"\nfast lane costs ×{prices['price_multiplier']:.2f} the slow lane"
    ax.set_title(title, fontsize=11)
    lines = ax.get_legend_handles_labels()[0] + ax2.get_legend_handles_labels()[0]
    ax.legend(lines, [ln.get_label() for ln in lines], loc="lower left", bbox_to_anchor=(0.01, 0.1), fontsize=8.5)
    ax.grid(alpha=0.3, which="both")
    return _save(fig, path)


def plot_frontier(table: pd.DataFrame, path: str | Path, title: str, chosen: dict[str, Any] | None = None,
                  slo_tps: float | None = None) -> Path:
    """Tokens/s per GPU against tokens/s per user, one faint curve per configuration, the Pareto
    frontier in black, the cheapest configuration meeting the SLO starred."""
    fig, ax = plt.subplots(figsize=(9, 6))
    cmap = plt.get_cmap("tab20")
    for i, (config, g) in enumerate(table.groupby("config", sort=False)):
        ax.plot(g["tokens_per_s_per_user"], g["tokens_per_s_per_gpu"], ".-", ms=3, lw=0.8, alpha=0.7,
                color=cmap(i % 20), label=config)
    f = table[table["on_frontier"]].sort_values("tokens_per_s_per_user")
    ax.plot(f["tokens_per_s_per_user"], f["tokens_per_s_per_gpu"], color="black", lw=2.2, label="Pareto frontier")
    if slo_tps:
        ax.axvline(slo_tps, color="crimson", ls="--", lw=1, label=f"SLO: ≥ {slo_tps:g} tokens/s per user")
    if chosen:
        ax.plot([chosen["tokens_per_s_per_user"]], [chosen["tokens_per_s_per_gpu"]], "*", ms=18, color="gold",
                mec="black", zorder=6, label="cheapest meeting the SLO")
        ax.annotate(f"{chosen['config']}, batch {chosen['batch']}\n${chosen['usd_per_m_output']:.3g}/M output tokens",
                    (chosen["tokens_per_s_per_user"], chosen["tokens_per_s_per_gpu"]), xytext=(10, 10),
                    textcoords="offset points", fontsize=9)
    ax.set_xlabel("tokens/s per user (interactivity = 1 ÷ time per output token)")
    ax.set_ylabel("tokens/s per GPU (throughput)")
    ax.set_title(title, fontsize=11)
    ax.set_xlim(left=0)
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7.5, ncol=2, loc="upper right")
    return _save(fig, path)


def plot_context(df: pd.DataFrame, summary: dict[str, Any], path: str | Path, title: str) -> Path:
    """Top: cost per million output and input tokens against context, walls and threshold marked;
    bottom: the largest batch that fits and the total tokens/s."""
    fig, (ax, ax2) = plt.subplots(2, 1, figsize=(9, 8), sharex=True)
    ctx = df["context"]
    ax.plot(ctx, df["usd_per_m_output"], color="black", lw=1.8, label="output token (decode at the largest batch)")
    ax.plot(ctx, df["usd_per_m_input"], color="#4C72B0", lw=1.8, label="input token (prefill of one prompt)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_ylabel("cost per million tokens (USD)")
    ax.yaxis.set_major_formatter(USD)
    marks = (
        ("capacity_wall_context", "HBM capacity wall", "#DD8452"),
        ("bandwidth_wall_context", "HBM bandwidth wall", "#55A868"),
        ("threshold", "pricing threshold", "#8172B3"),
        ("max_context", "model's maximum context", "gray"),
    )
    lo, hi = ctx.min(), ctx.max()
    for key, label, color in marks:
        x = summary.get(key)
        if x and lo <= x <= hi:
            for a in (ax, ax2):
                a.axvline(x, color=color, ls="--", lw=1.2, label=f"{label} ({x:,} tokens)" if a is ax else None)
        elif x and key.endswith("wall_context") and x < lo:
            ax.text(0.01, 0.97 - 0.06 * (key[0] == "b"), f"{label} already at {x:,} tokens", transform=ax.transAxes,
                    color=color, fontsize=9, va="top")
    if summary.get("surcharge_output_at_end"):
        ax.set_title(
            f"{title}\nabove {summary['threshold']:,} tokens: ×{summary['surcharge_output_at_end']:.2f} output, "
            f"×{summary['surcharge_input_at_end']:.2f} input keeps the margin at {int(hi):,}",
            fontsize=11,
        )
    else:
        ax.set_title(title, fontsize=11)
    ax.legend(fontsize=8, loc="lower right")
    ax.grid(alpha=0.3, which="both")
    ax2.plot(ctx, df["max_batch"], color="black", label="largest batch that fits")
    ax2.set_yscale("log")
    ax2.set_ylabel("largest batch that fits")
    ax3 = ax2.twinx()
    ax3.plot(ctx, df["tokens_per_s"], color="#C44E52", label="tokens/s, all users")
    ax3.set_yscale("log")
    ax3.set_ylabel("tokens/s, all users", color="#C44E52")
    ax2.set_xlabel("context per request (tokens)")
    beyond = df[df["beyond_max_context"]]
    if len(beyond):
        ax.axvspan(summary.get("max_context", beyond["context"].min()), hi, color="gray", alpha=0.12)
    ax2.grid(alpha=0.3, which="both")
    return _save(fig, path)
