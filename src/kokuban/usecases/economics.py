"""Batch economics as use cases: `kokuban batch | io | lanes | frontier | context` below every face.

Each use case X has a request `XRequest` (frozen, checked; every default and policy decided here), a typed
frozen result whose `as_dict()` is the JSON, and `run_X(request)`. The wing (`kokuban.economics`) does the
arithmetic; this layer only decides what to evaluate:

- context, when not given: `DEFAULT_CONTEXT` (4096) or the model's maximum if smaller (batch, io, frontier);
- `batch="max"`: the largest batch that fits (batch: the curve's last point; io: at max(context, prompt));
- the efficiency set: the request's overrides on the shipped step model (`Efficiency.shipped()`);
- lists given as text (`counts="1,2,4,8"`, `layouts="tp,ep"`) are parsed and checked by the request.

Curves are pandas DataFrames (one row per point); `as_dict()` gives `{"summary": …, "rows": [...]}`, NaN as null.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import Field, InstanceOf, field_validator

from kokuban.errors import KokubanError
from kokuban.progress import Progress
from kokuban.specs.hardware import Accelerator
from kokuban.specs.model import ModelSpec
from kokuban.usecases.request import (
    DeploymentRequest,
    EfficiencyRequest,
    Positive,
    Price,
    Tokens,
    default_context,
)

if TYPE_CHECKING:
    import pandas as pd

    from kokuban.economics.batch import BatchSummary, InputOutput
    from kokuban.economics.context import ContextSummary
    from kokuban.economics.frontier import Skipped
    from kokuban.economics.lanes import LanePrices
    from kokuban.specs.deployment import Deployment

Points = Annotated[int, Field(gt=0, le=100_000)]
Count = Annotated[int, Field(gt=0, le=4096)]


def frame_records(df: pd.DataFrame) -> list[dict[str, Any]]:
    """A DataFrame's rows as JSON-ready dicts: NaN → null, NumPy scalars → Python numbers."""
    import numpy as np

    return [{k: (None if isinstance(v, float) and math.isnan(v) else v.item() if isinstance(v, np.generic) else v)
             for k, v in row.items()} for row in df.to_dict(orient="records")]


# ---- kokuban batch ---------------------------------------------------------------------------------
class BatchRequest(DeploymentRequest):
    """`kokuban batch`: every batch from `min_batch` to `max_batch` (default: the largest that fits) at
    `context`; `batch` is the operating point to mark and to price input against output (default "max":
    the curve's largest batch; it must lie on the curve)."""

    context: Tokens | None = None
    min_batch: Tokens = 1
    max_batch: Tokens | None = None
    batch: Tokens | Literal["max"] = "max"


@dataclass(frozen=True)
class BatchEconomics:
    """The batch curve (`economics.batch.batch_curve`), its summary, and input vs output at the operating batch."""

    deployment: Deployment
    context: int
    curve: pd.DataFrame  # one row per batch (`batch_curve`'s columns)
    summary: BatchSummary
    operating_batch: int
    input_output: InputOutput

    def summary_dict(self) -> dict[str, Any]:
        return self.summary.as_dict() | {
            "deployment": self.deployment.describe(),
            "operating_batch": self.operating_batch,
            "input_output": self.input_output.as_dict(),
        }

    def as_dict(self) -> dict[str, Any]:
        return {"summary": self.summary_dict(), "rows": frame_records(self.curve)}


def run_batch(request: BatchRequest) -> BatchEconomics:
    """The batch curve, its crossover and cheapest point, and the output ÷ input cost at the operating batch.
    Raises KokubanError naming the field when the range does not fit or the operating batch is off the curve."""
    from kokuban.economics.batch import batch_curve, batch_summary, input_output

    r = request
    context = default_context(r.model_spec(), r.context)
    dep = r.deployment(context)
    df = batch_curve(dep, context, max_batch=r.max_batch, min_batch=r.min_batch)
    lo, hi = int(df["batch"].min()), int(df["batch"].max())
    op = hi if r.batch == "max" else int(r.batch)
    if not lo <= op <= hi:
        raise KokubanError(f"{op} is outside the curve's range {lo}–{hi}", field="batch", value=op)
    return BatchEconomics(deployment=dep, context=context, curve=df, summary=batch_summary(dep, df), operating_batch=op,
                          input_output=input_output(dep, op, context))


# ---- kokuban io ------------------------------------------------------------------------------------
class IORequest(DeploymentRequest):
    """`kokuban io`: decode at (batch, context) against a prefill of the same batch of `prompt`-token prompts
    (default: `context`). `batch="max"`: the largest batch that fits at max(context, prompt) (at least 1)."""

    batch: Tokens | Literal["max"] = 1
    context: Tokens | None = None
    prompt: Tokens | None = None


@dataclass(frozen=True)
class InputOutputResult:
    """`economics.batch.InputOutput` for a deployment: its `as_dict()` is the JSON."""

    deployment: Deployment
    input_output: InputOutput

    def as_dict(self) -> dict[str, Any]:
        return self.input_output.as_dict()


def run_io(request: IORequest) -> InputOutputResult:
    """How many input tokens an output token costs, and why (prefill compute-bound, decode memory-bound)."""
    from kokuban.core import memory
    from kokuban.economics.batch import input_output

    r = request
    context = default_context(r.model_spec(), r.context)
    longest = max(context, r.prompt or 0)
    dep = r.deployment(longest)
    b = max(1, int(memory.max_batch(dep, longest))) if r.batch == "max" else int(r.batch)
    return InputOutputResult(deployment=dep, input_output=input_output(dep, b, context, r.prompt))


# ---- kokuban lanes ---------------------------------------------------------------------------------
class LanesRequest(DeploymentRequest):
    """`kokuban lanes`: requests of `prompt` in and `output` out arrive at `rate` per second; the timetable
    over windows from 0 to past a full train or `slow_window`, and (given `tpot` and/or `ttft`, in seconds)
    the fast lane priced against the slow lane."""

    # at least one request in ~30 years: below it 1/rate overflows the timetable's windows
    rate: Annotated[float, Field(ge=1e-9, le=1e12, allow_inf_nan=False)]
    prompt: Tokens = 1000
    output: Tokens = 500  # at least 2 (a time per output token): the wing says why
    tpot: Positive | None = None
    ttft: Positive | None = None
    slow_window: Positive = 3600.0


@dataclass(frozen=True)
class Lanes:
    """The train timetable (`economics.lanes.lane_table`) and, when targets were given, the lane prices."""

    deployment: Deployment
    rate_per_s: float
    prompt_tokens: int
    output_tokens: int
    table: pd.DataFrame  # one row per departure window (`lane_table`'s columns)
    prices: LanePrices | None = None  # None without a latency target

    def summary_dict(self) -> dict[str, Any]:
        return {"deployment": self.deployment.describe(), "rate_per_s": self.rate_per_s,
                "prompt_tokens": self.prompt_tokens, "output_tokens": self.output_tokens,
                "lanes": self.prices.as_dict() if self.prices is not None else None}

    def as_dict(self) -> dict[str, Any]:
        return {"summary": self.summary_dict(), "rows": frame_records(self.table)}


def run_lanes(request: LanesRequest) -> Lanes:
    """The timetable at `rate`, and the fast lane's price multiplier over the slow lane when targets are given.
    Raises KokubanError naming the target when not even a lone request meets it."""
    from kokuban.economics.lanes import default_windows, lane_prices, lane_table, max_batch_for

    r = request
    dep = r.deployment(r.prompt + r.output)
    prices = None
    if r.tpot is not None or r.ttft is not None:
        prices = lane_prices(dep, r.rate, r.prompt, r.output, tpot_target_s=r.tpot, ttft_target_s=r.ttft,
                             slow_window_s=r.slow_window)
    windows = default_windows(r.rate, max(1, max_batch_for(dep, r.prompt, r.output)), r.slow_window)
    table = lane_table(dep, r.rate, r.prompt, r.output, windows)
    return Lanes(deployment=dep, rate_per_s=r.rate, prompt_tokens=r.prompt, output_tokens=r.output, table=table,
                 prices=prices)


# ---- kokuban frontier ------------------------------------------------------------------------------
def _split(value: Any) -> Any:
    """'1, 2,4' → ('1', '2', '4'); other values as given."""
    return tuple(x.strip() for x in value.split(",") if x.strip()) if isinstance(value, str) else value


class FrontierRequest(EfficiencyRequest):
    """`kokuban frontier`: accelerators `gpu` (one or more) × `counts` × `layouts` (ep only for MoE models)
    × `weights` dtypes (default: the checkpoint's) × a grid of batches, at `context`; the Pareto frontier,
    and the cheapest point meeting `slo_tps` (tokens/s per user) and/or `slo_ttft` (seconds to the first
    token of a `prompt`-token prompt, default the context). `counts` and `layouts` may be comma-separated text."""

    model: str | InstanceOf[ModelSpec]
    gpu: Annotated[tuple[str | InstanceOf[Accelerator], ...], Field(min_length=1)]
    counts: tuple[Count, ...] = (1, 2, 4, 8)
    layouts: tuple[Literal["tp", "ep"], ...] = ("tp", "ep")
    weights: tuple[str, ...] = ()  # text: comma-separated
    kv: str | None = None
    context: Tokens | None = None
    prompt: Tokens | None = None
    slo_tps: Positive | None = None
    slo_ttft: Positive | None = None
    price_per_hour: Price | None = None
    gpu_file: str | None = None

    @field_validator("counts", mode="before")
    @classmethod
    def _counts(cls, value: Any) -> Any:
        values = _split(value)
        if isinstance(value, str):
            try:
                values = tuple(int(x) for x in values)
            except ValueError:
                raise ValueError("must be a comma-separated list of positive integers") from None
        if not values or min(values) < 1:
            raise ValueError("must list positive integers")
        return tuple(dict.fromkeys(values))  # a count listed twice is swept once (the work stays bounded)

    @field_validator("gpu", mode="before")
    @classmethod
    def _one_gpu(cls, value: Any) -> Any:
        return (value,) if isinstance(value, (str, Accelerator)) else value  # one id (it may hold commas: custom:…)

    @field_validator("weights", mode="before")
    @classmethod
    def _weights(cls, value: Any) -> Any:
        return _split(value)

    @field_validator("layouts", mode="before")
    @classmethod
    def _layouts(cls, value: Any) -> Any:
        values = _split(value)
        if not values or any(x not in ("tp", "ep") for x in values):
            raise ValueError("must list tp and/or ep")
        return values

    def check(self) -> None:
        from kokuban.specs.dtypes import check_dtype

        for name in self.weights:
            check_dtype(name, "weights")
        if self.kv is not None:
            check_dtype(self.kv, "kv")

    def model_spec(self) -> ModelSpec:
        from kokuban.specs.catalog import load_model

        return self.model if isinstance(self.model, ModelSpec) else load_model(self.model)

    def accelerators(self) -> list[Accelerator]:
        from kokuban.specs.catalog import load_accelerator

        return [g if isinstance(g, Accelerator) else load_accelerator(g, self.gpu_file) for g in self.gpu]


@dataclass(frozen=True)
class Frontier:
    """Every point of the sweep (`economics.frontier.frontier_sweep`), what it skipped, and the SLO's pick."""

    model: ModelSpec
    context: int
    table: pd.DataFrame  # one row per (configuration, batch) (`frontier_sweep`'s columns)
    skipped: tuple[Skipped, ...]
    slo_tps: float | None
    slo_ttft: float | None
    chosen: dict[str, Any] | None

    @property
    def configurations(self) -> int:
        return int(self.table["config"].nunique())

    def summary_dict(self) -> dict[str, Any]:
        return {"model": self.model.name, "context": self.context, "configurations": self.configurations,
                "points": len(self.table), "skipped": [s.__dict__ for s in self.skipped],
                "slo": {"tokens_per_s_per_user": self.slo_tps, "ttft_s": self.slo_ttft},
                "cheapest_meeting_slo": self.chosen}

    def as_dict(self) -> dict[str, Any]:
        return {"summary": self.summary_dict(), "rows": frame_records(self.table)}


def run_frontier(request: FrontierRequest, *, progress: Progress | None = None) -> Frontier:
    """The latency–throughput frontier over the request's configurations, and the cheapest point meeting
    the SLO (raises, naming the target and the shortfall, when none does); `progress` follows the sweep."""
    from kokuban.economics.frontier import cheapest_meeting, frontier_sweep

    r = request
    model = r.model_spec()
    context = default_context(model, r.context)
    df, skipped = frontier_sweep(model, r.accelerators(), context, counts=r.counts, layouts=r.layouts,
                                 weights=r.weights or (None,), prompt=r.prompt, efficiency=r.efficiency_spec(),
                                 price_per_hour=r.price_per_hour, kv=r.kv, progress=progress)
    chosen = None
    if r.slo_tps is not None or r.slo_ttft is not None:
        chosen = cheapest_meeting(df, min_tokens_per_s_per_user=r.slo_tps, max_ttft_s=r.slo_ttft)
    return Frontier(model=model, context=context, table=df, skipped=tuple(skipped), slo_tps=r.slo_tps,
                    slo_ttft=r.slo_ttft, chosen=chosen)


# ---- kokuban context -------------------------------------------------------------------------------
class ContextRequest(DeploymentRequest):
    """`kokuban context`: `points` contexts from `start` to `end` (default: the model's maximum; beyond it
    the rows extrapolate and a warning is returned) at the largest batch that fits; surcharges over the cost
    at `threshold` (default 200k, or a quarter of `end` if the range ends at or below 200k)."""

    start: Tokens = 1024
    end: Tokens | None = None
    points: Points = 40
    threshold: Tokens | None = None


@dataclass(frozen=True)
class ContextWall:
    """The context sweep (`economics.context.context_wall`), its walls and surcharges, and any warnings
    (text, e.g. a range beyond the model's maximum context; not part of the JSON, which flags such rows)."""

    deployment: Deployment
    table: pd.DataFrame  # one row per context (`context_wall`'s columns)
    summary: ContextSummary
    warnings: tuple[str, ...] = field(default=())

    def summary_dict(self) -> dict[str, Any]:
        return self.summary.as_dict() | {"deployment": self.deployment.describe()}

    def as_dict(self) -> dict[str, Any]:
        return {"summary": self.summary_dict(), "rows": frame_records(self.table)}


def run_context(request: ContextRequest) -> ContextWall:
    """Cost per token by context at the largest batch that fits; the capacity, bandwidth and hard walls."""
    from kokuban.economics.context import BeyondMaxContextWarning, context_summary, context_wall

    r = request
    dep = r.deployment(r.start)
    end = r.end or dep.model.max_context
    if r.threshold is not None and not r.start <= r.threshold <= end:  # the surcharges are costs over its cost
        raise KokubanError(f"must lie in the context range {r.start:,} … {end:,}, got {r.threshold:,}",
                           field="threshold", value=r.threshold)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", BeyondMaxContextWarning)
        df = context_wall(dep, r.start, r.end, r.points, r.threshold)
    return ContextWall(deployment=dep, table=df, summary=context_summary(dep, df),
                       warnings=tuple(str(w.message) for w in caught))
