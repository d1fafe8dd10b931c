"""The latency–throughput frontier: tokens/s per user against tokens/s per accelerator.

Sweep accelerator types × counts × layouts (TP, and EP for MoE) × weight precisions × batches; every
point is `economics.batch.decode_columns` (the core's decode step, priced). The Pareto frontier keeps the
points no other point beats on both axes — the curve serving benchmarks (vLLM, TensorRT-LLM, SGLang)
publish: few GPUs and large batches at the throughput end, many GPUs and small batches at the
interactive end. The cheapest point meeting an SLO (tokens/s per user, time to first token) is marked.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from kokuban.core import memory, roofline
from kokuban.economics.batch import decode_columns
from kokuban.errors import KokubanError, require_positive
from kokuban.progress import Progress, tick
from kokuban.specs.deployment import Deployment
from kokuban.specs.hardware import Accelerator, Efficiency
from kokuban.specs.model import ModelSpec

DEFAULT_COUNTS = (1, 2, 4, 8)


def batch_grid(max_batch: int, points: int = 48) -> np.ndarray:
    """Every batch up to 16, then `points` geometric steps to `max_batch` (included)."""
    dense = np.arange(1, min(max_batch, 16) + 1)
    geo = np.geomspace(1, max_batch, points) if max_batch > 1 else np.array([1.0])
    return np.unique(np.concatenate([dense, np.round(geo), [max_batch]]).astype(np.int64))


@dataclass(frozen=True)
class Skipped:
    """A configuration the sweep left out, and why (for the report, never silently)."""

    config: str
    reason: str


def frontier_sweep(
    model: ModelSpec,
    accelerators: Iterable[Accelerator],
    context: int,
    *,
    counts: Iterable[int] = DEFAULT_COUNTS,
    layouts: Iterable[str] = ("tp", "ep"),
    weights: Iterable[str | None] = (None,),
    prompt: int | None = None,
    efficiency: Efficiency | None = None,
    price_per_hour: float | None = None,
    kv: str | None = None,
    points: int = 48,
    progress: Progress | None = None,
) -> tuple[pd.DataFrame, list[Skipped]]:
    """All configurations that fit at `context`, each at a grid of batches up to the largest that fits
    (`progress(configurations tried, configurations)` after each).

    Columns: gpu, gpus, layout, weights, config, the `decode_columns`, `ttft_s` (prefill of one
    `prompt`-token prompt, default `context`), `on_frontier` (Pareto: tokens/s per user vs per GPU) and
    `on_cost_frontier` (tokens/s per user vs USD per million output tokens).
    """
    model.require_context(context)
    prompt = context if prompt is None else prompt
    require_positive("prompt", prompt, integer=True)
    frames, skipped = [], []
    configs = [(acc, wdt, layout, n) for acc in accelerators for wdt in weights for layout in layouts
               if layout != "ep" or model.is_moe for n in counts]
    for i, (acc, wdt, layout, n) in enumerate(configs):
        tick(progress, i, len(configs))
        experts = f"+{model.native_experts_dtype} experts" if model.native_experts_dtype else ""
        stored = wdt or model.native_dtype + experts
        label = f"{n}× {acc.id} {layout.upper()}{n} {stored}"
        try:
            dep = Deployment.make(model, acc, n, layout=layout, weights_dtype=wdt, kv_dtype=kv,
                                  efficiency=efficiency, price_per_hour_usd=price_per_hour)
        except KokubanError as exc:
            skipped.append(Skipped(label, str(exc)))
            continue
        fit = int(memory.max_batch(dep, max(context, prompt)))
        if fit < 1:
            skipped.append(Skipped(label, f"does not fit at context {context}"))
            continue
        b = batch_grid(fit, points)
        df = pd.DataFrame(decode_columns(dep, b, context)).astype({"batch": "int64", "context": "int64"})
        df.insert(0, "config", label)
        df.insert(0, "weights", dep.weights_dtype)
        df.insert(0, "layout", layout)
        df.insert(0, "gpus", n)
        df.insert(0, "gpu", acc.id)
        df["ttft_s"] = float(roofline.prefill(dep, 1, prompt).step_time_s)
        frames.append(df)
    tick(progress, len(configs), len(configs))
    if not frames:
        reasons = "; ".join(f"{s.config}: {s.reason}" for s in skipped[:4])
        raise KokubanError(f"no configuration fits {model.name} at context {context} ({reasons})",
                           detail={"skipped": [{"config": s.config, "reason": s.reason} for s in skipped]})
    table = pd.concat(frames, ignore_index=True)
    table["on_frontier"] = pareto(table["tokens_per_s_per_user"].to_numpy(), table["tokens_per_s_per_gpu"].to_numpy())
    table["on_cost_frontier"] = pareto(table["tokens_per_s_per_user"].to_numpy(), -table["usd_per_m_output"].to_numpy())
    return table, skipped


def pareto(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Mask of the points no other point beats on both x and y (larger is better on both)."""
    order = np.lexsort((-y, -x))  # x descending, ties: y descending
    ys = y[order]
    best_before = np.concatenate([[-np.inf], np.maximum.accumulate(ys)[:-1]])
    mask = np.zeros(len(x), dtype=bool)
    mask[order] = ys > best_before
    return mask


def cheapest_meeting(table: pd.DataFrame, *, min_tokens_per_s_per_user: float | None = None,
                     max_ttft_s: float | None = None) -> dict[str, Any]:
    """The row with the lowest USD per million output tokens among those meeting the SLO. Raises,
    naming the binding target and the shortfall, when none does."""
    ok = pd.Series(True, index=table.index)
    if min_tokens_per_s_per_user is not None:
        require_positive("min_tokens_per_s_per_user", min_tokens_per_s_per_user)
        best = table["tokens_per_s_per_user"].max()
        if best < min_tokens_per_s_per_user:
            row = table.loc[table["tokens_per_s_per_user"].idxmax()]
            raise KokubanError(
                f"no configuration reaches {min_tokens_per_s_per_user:g} tokens/s per user: the fastest, "
                f"{row['config']} at "
                f"batch {row['batch']}, gives {best:.4g} ({1 - best / min_tokens_per_s_per_user:.0%} short)",
                field="min_tokens_per_s_per_user",
                value=min_tokens_per_s_per_user,
            )
        ok &= table["tokens_per_s_per_user"] >= min_tokens_per_s_per_user
    if max_ttft_s is not None:
        require_positive("max_ttft_s", max_ttft_s)
        best = table.loc[ok, "ttft_s"].min()
        if best > max_ttft_s:
            raise KokubanError(
                f"no configuration meets a first-token target of {max_ttft_s:g} s"
                + (" together with the tokens/s target" if min_tokens_per_s_per_user is not None else "")
                + f": the quickest first token takes {best:.4g} s ({best / max_ttft_s - 1:.0%} over)",
                field="max_ttft_s", value=max_ttft_s)
        ok &= table["ttft_s"] <= max_ttft_s
    row = table.loc[table.loc[ok, "usd_per_m_output"].idxmin()]
    return {k: (v.item() if hasattr(v, "item") else v) for k, v in row.to_dict().items()}
