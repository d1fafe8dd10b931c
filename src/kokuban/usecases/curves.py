"""The batch curve and the long-context wall, bounded for a web page: `run_batch` and `run_context`
(`usecases/economics.py`, what `kokuban batch` and `kokuban context` run) with a cap on the work and on the
rows returned.

The rows and summaries are the economics use cases' own (the same keys as `kokuban batch --json` and
`kokuban context --json`); this module only
- caps the batches a curve evaluates at `MAX_CURVE_BATCH` (every batch up to it is one vectorised decode step)
  and the rows returned at `points` ≤ `MAX_POINTS` (every batch to 16, then geometric steps:
  `economics.frontier.batch_grid`); a context wall computes `points` ≤ `MAX_POINTS` contexts;
- refuses a wall past the model's window unless `allow_beyond_max_context`, as `kokuban estimate` does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import Field

from kokuban.errors import KokubanError
from kokuban.usecases.economics import BatchRequest as EconomicsBatchRequest
from kokuban.usecases.economics import ContextRequest, frame_records, run_batch, run_context
from kokuban.usecases.request import DeploymentRequest, Tokens, default_context

#: The largest batch a curve evaluates (every batch up to it is one vectorised decode step).
MAX_CURVE_BATCH = 65_536
#: The most rows a curve returns, and the most contexts a wall computes.
MAX_POINTS = 64

Points = Annotated[int, Field(ge=20, le=MAX_POINTS)]


def _deployment_fields(request: DeploymentRequest) -> dict[str, Any]:
    """The deployment part of a request, as given (a ModelSpec stays a ModelSpec)."""
    return {name: getattr(request, name) for name in DeploymentRequest.model_fields}


# ---- the batch curve ------------------------------------------------------------------------------
class BatchCurveRequest(DeploymentRequest):
    """The cost of a decode token as the batch grows, at one context (default 4096 or the model's window).

    `max_batch` defaults to the largest batch that fits, capped at `MAX_CURVE_BATCH`; `points` rows are
    returned at most (every batch to 16, then geometric steps to `max_batch`)."""

    context: Tokens | None = None
    max_batch: Tokens | None = None
    points: Points = 48


@dataclass(frozen=True)
class BatchCurve:
    """`run_batch`'s rows at a chart's worth of batches, and its summary."""

    context: int
    max_batch: int
    capped: bool
    rows: tuple[dict[str, Any], ...]
    summary: dict[str, Any]

    def as_dict(self) -> dict[str, Any]:
        return {"context": self.context, "max_batch": self.max_batch, "capped": self.capped,
                "rows": [dict(r) for r in self.rows], "summary": dict(self.summary)}


def run_batch_curve(request: BatchCurveRequest) -> BatchCurve:
    """`run_batch` from batch 1 to `max_batch` (at most `MAX_CURVE_BATCH`), thinned to `points` rows."""
    from kokuban.core import memory
    from kokuban.economics.frontier import batch_grid

    r = request
    if r.max_batch is not None and r.max_batch > MAX_CURVE_BATCH:
        raise KokubanError(f"must be at most {MAX_CURVE_BATCH:,} (the curve evaluates every batch up to it), "
                           f"got {r.max_batch}", field="max_batch", value=r.max_batch)
    context = default_context(r.model_spec(), r.context)
    fit = int(memory.max_batch(r.deployment(context), context))
    capped = r.max_batch is None and fit > MAX_CURVE_BATCH
    result = run_batch(EconomicsBatchRequest(**_deployment_fields(r), context=context,
                                             max_batch=MAX_CURVE_BATCH if capped else r.max_batch))
    curve = result.curve
    hi = int(curve["batch"].max())
    grid = batch_grid(hi, r.points - 17)  # ≤ 16 dense + (points − 17) geometric + hi = points
    return BatchCurve(context=result.context, max_batch=hi, capped=capped,
                      rows=tuple(frame_records(curve[curve["batch"].isin(grid)])),
                      summary=result.summary_dict())


# ---- the long-context wall ------------------------------------------------------------------------
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
    """`run_context`'s rows and summary (the capacity, bandwidth and hard walls)."""

    rows: tuple[dict[str, Any], ...]
    summary: dict[str, Any]

    def as_dict(self) -> dict[str, Any]:
        return {"rows": [dict(r) for r in self.rows], "summary": dict(self.summary)}


def run_context_wall(request: ContextWallRequest) -> ContextWall:
    """`run_context` over `points` contexts, refused past the model's window unless allowed."""
    r = request
    if r.end is not None and not r.allow_beyond_max_context:
        r.model_spec().require_context(r.end, field="end")
    result = run_context(ContextRequest(**_deployment_fields(r), start=r.start, end=r.end, points=r.points,
                                        threshold=r.threshold))
    return ContextWall(rows=tuple(frame_records(result.table)), summary=result.summary_dict())
