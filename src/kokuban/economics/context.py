"""The long-context wall: what a token costs as every request's context grows.

At each context L the provider runs the largest batch that fits, B(L) = `memory.max_batch`. A decode
token then pays (per busiest GPU, the core's two kernels one after the other)
    max(c, w/B(L)) + max(a(L), k(L)) + (comm + overhead) ÷ B(L)    with
    c     compute per request of the weight multiplies (independent of L),
    w/B   the weight read shared by the batch: grows with L because B(L) ∝ 1/L   → the CAPACITY wall,
    a(L)  the request's attention compute ∝ L, below its KV read at every L (decode attention is KV-bound),
    k(L)  the request's own KV read ∝ L; no batch can share it                  → the BANDWIDTH wall.
Each wall is where its term first exceeds the multiply compute per request (`capacity_wall`,
`bandwidth_wall`); `hard_wall` is where not one request fits. Rows come from the core
(`economics.batch.decode_columns`, `roofline.prefill`, `cost`).
"""

from __future__ import annotations

import warnings
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd

from kokuban.core import cost, memory, roofline
from kokuban.economics.batch import decode_columns
from kokuban.errors import KokubanError, require_positive
from kokuban.specs.deployment import Deployment

DEFAULT_START = 1024
DEFAULT_THRESHOLD = 200_000


class BeyondMaxContextWarning(UserWarning):
    """A context sweep reaches past the model's trained maximum context."""


def context_grid(start: int, end: int, points: int, extra: tuple[int, ...] = ()) -> np.ndarray:
    """`points` contexts spaced geometrically from `start` to `end` (integers), plus `extra` inside it."""
    require_positive("start", start, integer=True)
    require_positive("end", end, integer=True)
    require_positive("points", points, integer=True)
    if start > end:
        raise KokubanError(f"empty context range: {start} > the end {end}", field="start", value=start)
    grid = np.geomspace(start, end, max(points, 2)) if end > start else np.array([start])
    inside = [x for x in extra if start <= x <= end]
    return np.unique(np.concatenate([np.round(grid), inside]).astype(np.int64))


def _first_true(condition, lo: int, hi: int) -> int | None:
    """Smallest integer L in [lo, hi] with condition(L), for a condition monotone in L; None if none."""
    if not condition(hi):
        return None
    if condition(lo):
        return lo
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if condition(mid) else (mid, hi)
    return hi


def hard_wall(dep: Deployment, end: int) -> int | None:
    """First context ≤ `end` at which not even one request fits beside the weights (None if all fit)."""
    return _first_true(lambda L: int(memory.max_batch(dep, L)) < 1, 1, end)


def capacity_wall(dep: Deployment, end: int) -> int | None:
    """First context at which the weight read per token at the largest batch that fits exceeds the
    compute per token: w ÷ B(L) > c(L), i.e. B(L) below the weights-only crossover. From here the
    batch is set by HBM capacity, not by the roofline, and the shared cost grows ∝ L."""
    def binds(L: int) -> bool:
        b = int(memory.max_batch(dep, L))
        if b < 1:
            return True
        s = roofline.decode_step(dep, b, L)
        return float(s.weights_s) > float(s.linear_compute_s)

    return _first_true(binds, 1, end)


def bandwidth_wall(dep: Deployment, end: int) -> int | None:
    """First context at which a request's own attention (its KV read) outlasts its multiply compute, k(L) > c(L):
    from here decode is memory-bound at every batch and each token pays ∝ L for KV no batch can share."""
    def binds(L: int) -> bool:
        s = roofline.decode_step(dep, 1, L)
        return float(s.attention_s) > float(s.linear_compute_s)

    return _first_true(binds, 1, end)


def default_threshold(end: int) -> int:
    """200k tokens (the tier Anthropic and Google price above), or a quarter of `end` when the range
    ends at or below 200k, so a surcharge is always shown."""
    return DEFAULT_THRESHOLD if end > DEFAULT_THRESHOLD else max(1, end // 4)


def context_wall(dep: Deployment, start: int = DEFAULT_START, end: int | None = None, points: int = 40,
                 threshold: int | None = None) -> pd.DataFrame:
    """One row per context from `start` to `end` (default: the model's maximum): KV bytes per request,
    the largest batch that fits, the decode point at that batch (`decode_columns`), the cost of an input
    token (prefill of one L-token prompt) and the surcharges over the cost at `threshold`.

    surcharge = cost(L) ÷ cost(threshold): the price multiplier that keeps a provider's margin on a
    request of L tokens if its base price is set at the threshold (the dearest request below the tier;
    the margin m cancels: price(L) = (1+m)·cost(L)). Contexts where nothing fits end the table.
    Beyond the maximum context: a `BeyondMaxContextWarning` and `beyond_max_context` = True.
    """
    m = dep.model
    end = m.max_context if end is None else end
    threshold = default_threshold(end) if threshold is None else threshold
    require_positive("threshold", threshold, integer=True)
    grid = context_grid(start, end, points, extra=(threshold, m.max_context))
    if end > m.max_context:
        warnings.warn(f"context up to {end} is beyond {m.name}'s maximum of {m.max_context} tokens: "
                      "those rows extrapolate the model", BeyondMaxContextWarning, stacklevel=2)
    fit = memory.max_batch(dep, grid)
    if fit[0] < 1:
        raise memory.no_fit_error(dep, memory.plan(dep, 1, int(grid[0])))
    grid, fit = grid[fit >= 1], fit[fit >= 1]
    cols = decode_columns(dep, fit, grid)
    df = pd.DataFrame(cols).astype({"batch": "int64", "context": "int64"})
    df.insert(1, "kv_bytes_per_request", roofline.kv_bytes_per_request(dep, grid))
    df.insert(2, "max_batch", fit)
    pre = roofline.prefill(dep, 1, grid)
    df["usd_per_m_input"] = cost.usd_per_m_input(dep, pre)
    df["beyond_max_context"] = grid > m.max_context
    seconds = {"output": (df["step_time_s"] / df["batch"]).to_numpy(), "input": np.asarray(pre.step_time_s) / grid}
    at = (df["context"] == threshold).to_numpy()
    for kind, per_token_s in seconds.items():
        usd = df[f"usd_per_m_{kind}"].to_numpy()
        base_usd, base_s = (usd[at][0], per_token_s[at][0]) if at.any() else (np.nan, np.nan)
        df[f"surcharge_{kind}"] = cost.cost_ratio(usd, base_usd, per_token_s, base_s)
    df.attrs.update(threshold=int(threshold), end=int(end))
    return df


@dataclass(frozen=True)
class ContextSummary:
    """The walls (contexts in tokens, None if not reached by `end`) and the surcharges at `end`."""

    start: int
    end: int
    max_context: int
    threshold: int
    capacity_wall_context: int | None
    bandwidth_wall_context: int | None
    hard_wall_context: int | None
    surcharge_output_at_end: float | None
    surcharge_input_at_end: float | None
    note: str

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def context_summary(dep: Deployment, table: pd.DataFrame, threshold: int | None = None,
                    end: int | None = None) -> ContextSummary:
    """Walls found by bisection over integer contexts in [1, end] (each condition is monotone in L);
    `threshold` and `end` as given to `context_wall` (defaults alike)."""
    end = int(table.attrs.get("end", table["context"].max())) if end is None else end
    threshold = int(table.attrs.get("threshold", default_threshold(end))) if threshold is None else threshold
    cap, bw, hard = capacity_wall(dep, end), bandwidth_wall(dep, end), hard_wall(dep, end)
    last = table.iloc[-1]
    has_threshold = bool((table["context"] == threshold).any())
    sur_out = float(last["surcharge_output"]) if has_threshold else None
    sur_in = float(last["surcharge_input"]) if has_threshold else None
    parts = []
    for name, wall in (("HBM capacity", cap), ("HBM bandwidth", bw)):
        parts.append(
            f"{name} is the wall from {wall:,} tokens" if wall else f"{name} is not the wall up to {end:,} tokens"
        )
    if has_threshold:
        parts.append(f"above {threshold:,} tokens a provider needs ×{sur_out:.2f} on output and ×{sur_in:.2f} on input "
                     f"at {int(last['context']):,} tokens to keep its margin")
    else:
        parts.append(f"threshold {threshold:,} is outside the range: no surcharge computed")
    return ContextSummary(
        start=int(table["context"].iloc[0]), end=end, max_context=dep.model.max_context, threshold=threshold,
        capacity_wall_context=cap, bandwidth_wall_context=bw, hard_wall_context=hard,
        surcharge_output_at_end=sur_out, surcharge_input_at_end=sur_in, note="; ".join(parts),
    )
