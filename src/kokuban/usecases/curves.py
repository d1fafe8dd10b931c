"""Batch curve and long-context wall as bounded use cases (for the web page; the CLI's `kokuban batch` and
`kokuban context` still call the economics wing directly).

Interim: when the economics use cases (`usecases/economics.py`) land, these two should become calls of
theirs. Both are thin: the rows come from `economics.batch.batch_curve` / `economics.context.context_wall`
unchanged; this module only bounds the work (`MAX_CURVE_BATCH`, `MAX_POINTS`), thins the rows to a
chart's worth (`economics.frontier.batch_grid`) and gives a cost ratio with nothing to divide by (a free
accelerator's 0 ÷ 0) as None rather than NaN.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Annotated, Any

import numpy as np
from pydantic import Field

from kokuban.errors import KokubanError
from kokuban.usecases.request import DeploymentRequest, Tokens

#: The largest batch a curve evaluates (every batch up to it is one vectorised decode step).
MAX_CURVE_BATCH = 65_536
#: The most rows a curve or a wall returns.
MAX_POINTS = 64

Points = Annotated[int, Field(ge=20, le=MAX_POINTS)]


#: Ratios of two costs: 0 ÷ 0 (NaN) on a free accelerator (price 0), or with no base row to divide by.
RATIOS = ("surcharge_output", "surcharge_input", "cost_ratio_max_to_min", "surcharge_output_at_end",
          "surcharge_input_at_end")


def _plain(key: str, value: Any) -> Any:
    """A NumPy scalar as a Python one; a ratio with nothing to divide by (NaN) as None, never NaN."""
    value = value.item() if hasattr(value, "item") else value
    if key in RATIOS and isinstance(value, float) and math.isnan(value):
        return None
    return value


def _records(df: Any, columns: tuple[str, ...]) -> list[dict[str, Any]]:
    """Rows of `df` restricted to `columns`, as plain Python numbers (JSON)."""
    return [{k: _plain(k, v) for k, v in row.items()} for row in df.loc[:, list(columns)].to_dict(orient="records")]


def _summary(summary: Any) -> dict[str, Any]:
    return {k: _plain(k, v) for k, v in summary.as_dict().items()}


# ---- the batch curve ------------------------------------------------------------------------------
BATCH_COLUMNS = (
    "batch", "step_time_s", "bound", "tokens_per_s", "tokens_per_s_per_user", "usd_per_m_output",
    "usd_per_m_output_shared", "usd_per_m_output_per_request",
    "usd_per_m_output_weights", "usd_per_m_output_compute", "usd_per_m_output_kv", "usd_per_m_output_comm",
    "usd_per_m_output_overhead",
)


class BatchCurveRequest(DeploymentRequest):
    """The cost of a decode token as the batch grows, at one context (default 4096 or the model's window).

    `max_batch` defaults to the largest batch that fits, capped at `MAX_CURVE_BATCH`; `points` rows are
    returned at most (every batch to 16, then geometric steps to `max_batch`)."""

    context: Tokens | None = None
    max_batch: Tokens | None = None
    points: Points = 48


@dataclass(frozen=True)
class BatchCurve:
    """Rows of the batch curve (USD per million output tokens, split shared / per request) and its summary."""

    context: int
    max_batch: int
    capped: bool
    rows: tuple[dict[str, Any], ...]
    summary: dict[str, Any]

    def as_dict(self) -> dict[str, Any]:
        return {"context": self.context, "max_batch": self.max_batch, "capped": self.capped,
                "rows": [dict(r) for r in self.rows], "summary": dict(self.summary)}


def run_batch_curve(request: BatchCurveRequest) -> BatchCurve:
    """`economics.batch.batch_curve` from batch 1 to `max_batch`, thinned to `points` rows, with its summary."""
    from kokuban.core import memory
    from kokuban.economics.batch import batch_curve, batch_summary
    from kokuban.economics.frontier import batch_grid
    from kokuban.usecases.estimate import DEFAULT_CONTEXT

    r = request
    dep = r.deployment(r.context)
    context = r.context if r.context is not None else min(DEFAULT_CONTEXT, dep.model.max_context)
    dep.model.require_context(context, field="context")
    fit = int(memory.max_batch(dep, context))
    if fit < 1:
        raise KokubanError(memory.no_fit_message(dep, memory.plan(dep, 1, context)), field="context", value=context)
    if r.max_batch is not None and r.max_batch > MAX_CURVE_BATCH:
        raise KokubanError(f"must be at most {MAX_CURVE_BATCH:,} (the curve evaluates every batch up to it), "
                           f"got {r.max_batch}", field="max_batch", value=r.max_batch)
    hi = r.max_batch if r.max_batch is not None else min(fit, MAX_CURVE_BATCH)
    with np.errstate(invalid="ignore"):  # a free accelerator's 0 ÷ 0 ratio: None in the result (`_plain`)
        curve = batch_curve(dep, context, max_batch=hi)
        summary = _summary(batch_summary(dep, curve))
    grid = set(batch_grid(hi, r.points - 17).tolist())  # ≤ 16 dense + (points − 17) geometric + hi = points
    rows = curve[curve["batch"].isin(grid)]
    return BatchCurve(context=int(context), max_batch=int(hi), capped=r.max_batch is None and fit > MAX_CURVE_BATCH,
                      rows=tuple(_records(rows, BATCH_COLUMNS)), summary=summary)


# ---- the long-context wall ------------------------------------------------------------------------
WALL_COLUMNS = (
    "context", "kv_bytes_per_request", "max_batch", "step_time_s", "bound", "tokens_per_s", "tokens_per_s_per_user",
    "usd_per_m_output", "usd_per_m_input", "surcharge_output", "surcharge_input", "beyond_max_context",
)


class ContextWallRequest(DeploymentRequest):
    """What a token costs as every request's context grows from `start` to `end` (default: the model's
    window) at the largest batch that fits; `points` contexts, geometric. `end` past the window needs
    `allow_beyond_max_context`."""

    start: Tokens = 1024
    end: Tokens | None = None
    points: Points = 40
    threshold: Tokens | None = None
    allow_beyond_max_context: bool = False


@dataclass(frozen=True)
class ContextWall:
    """Rows of the long-context wall and its summary (the capacity, bandwidth and hard walls)."""

    rows: tuple[dict[str, Any], ...]
    summary: dict[str, Any]

    def as_dict(self) -> dict[str, Any]:
        return {"rows": [dict(r) for r in self.rows], "summary": dict(self.summary)}


def run_context_wall(request: ContextWallRequest) -> ContextWall:
    """`economics.context.context_wall` and `context_summary` over `points` contexts."""
    from kokuban.economics.context import BeyondMaxContextWarning, context_summary, context_wall

    r = request
    spec = r.model_spec()
    end = r.end if r.end is not None else spec.max_context
    if not r.allow_beyond_max_context:
        spec.require_context(end, field="end")
    dep = r.deployment(end)
    if r.start > end:
        raise KokubanError(f"must not exceed the end {end:,}, got {r.start:,}", field="start", value=r.start)
    with warnings.catch_warnings(), np.errstate(invalid="ignore"):  # 0 ÷ 0 surcharges: None (`_plain`)
        warnings.simplefilter("ignore", BeyondMaxContextWarning)  # rows say so: `beyond_max_context`
        table = context_wall(dep, r.start, end, r.points, r.threshold)
        summary = context_summary(dep, table, r.threshold, end)
    return ContextWall(rows=tuple(_records(table, WALL_COLUMNS)), summary=_summary(summary))
