"""Plots of a simulated run (presentation only: every number comes from `SimResult`).

latency_cdfs   empirical CDFs of TTFT, TPOT, ITL and E2E
occupancy      batch size and KV-cache occupancy over time
step_timeline  each step as a bar: its duration, coloured by the share of decode tokens
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from kokuban.sim.metrics import SimResult


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def latency_cdfs(result: SimResult, path: str | Path) -> Path:
    plt = _plt()
    fig, axes = plt.subplots(1, 4, figsize=(16, 3.6))
    series = {"TTFT": result.ttft_s, "TPOT": result.tpot_s, "E2E": result.e2e_s}
    for ax, (name, values) in zip(axes, series.items(), strict=False):
        v = np.sort(values[~np.isnan(values)])
        ax.plot(v * 1e3, np.arange(1, v.size + 1) / max(v.size, 1))
        ax.set_xlabel(f"{name} (ms)")
        ax.set_ylabel("fraction of requests")
        ax.grid(alpha=0.3)
    order = np.argsort(result.itl_values_s)
    cum = np.cumsum(result.itl_weights[order])
    axes[3].plot(result.itl_values_s[order] * 1e3, cum / max(cum[-1] if cum.size else 1, 1))
    axes[3].set_xlabel("ITL (ms)")
    axes[3].set_ylabel("fraction of tokens")
    axes[3].grid(alpha=0.3)
    fig.suptitle(f"Latency CDFs — {result.description}", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return Path(path)


def occupancy(result: SimResult, path: str | Path) -> Path:
    plt = _plt()
    fig, ax1 = plt.subplots(figsize=(10, 3.6))
    t = result.step_start_s
    ax1.step(t, result.step_batch, where="post", lw=0.8, label="running requests")
    ax1.set_xlabel("time (s)")
    ax1.set_ylabel("batch (requests)")
    ax2 = ax1.twinx()
    ax2.step(t, result.step_kv_blocks / max(result.kv_capacity_blocks, 1), where="post", color="tab:red", lw=0.8)
    ax2.set_ylabel("KV occupancy (fraction of blocks)", color="tab:red")
    ax2.set_ylim(0, 1.05)
    ax1.set_title(f"Batch size and KV occupancy — {result.description}", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return Path(path)


def step_timeline(result: SimResult, path: str | Path, max_steps: int = 400) -> Path:
    plt = _plt()
    k = min(max_steps, result.step_s.size)
    fig, ax = plt.subplots(figsize=(10, 3.2))
    share = result.step_decodes[:k] / np.maximum(result.step_tokens[:k], 1)
    ax.bar(result.step_start_s[:k], result.step_s[:k] * 1e3, width=result.step_s[:k], align="edge",
           color=plt.cm.viridis(share), edgecolor="none")
    ax.set_xlabel("time (s)")
    ax.set_ylabel("step time (ms)")
    ax.set_title(f"First {k} steps (colour: share of decode tokens, yellow = all decode)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return Path(path)


def save_all(result: SimResult, directory: str | Path) -> list[Path]:
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    return [latency_cdfs(result, d / "latency_cdf.png"), occupancy(result, d / "occupancy.png"),
            step_timeline(result, d / "steps.png")]
