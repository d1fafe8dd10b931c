"""Back-calculation (逆算): from a price (and a speed) to what must hold for the provider.

Open model: given its price on a sheet (or by hand), an accelerator and its hourly price, solve for
the break-even batch, the margin at a batch (the one a measured per-user speed allows, or a given
one), and how the answer moves with the accelerator count. Inputs that are uncertain (achievable
fractions of peak, the measured speed) widen each result to a range: pessimistic / central /
optimistic (`efficiency_corners`).

Closed model: the sizes (active parameters) and batches consistent with a price and a speed. Each
(active, batch, GPU count) point is a coarse model on the roofline; it is consistent when its per-user
speed is within ±`speed_tolerance` of the measured one and a token costs at most the price.

Compare: one workload's cost on each API sheet beside self-hosting on each catalog accelerator.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from kokuban.core import cost, memory, roofline
from kokuban.errors import KokubanError, require_positive
from kokuban.prices.costing import (
    DecodePoint,
    Margins,
    Record,
    api_request_usd,
    batch_for_speed,
    break_even_batch,
    decode_curve,
    margins,
    self_host_request_usd,
    usd_per_m_input,
)
from kokuban.prices.sheets import PriceRow
from kokuban.specs.catalog import accelerator_catalog
from kokuban.specs.deployment import Deployment
from kokuban.specs.hardware import Accelerator, Efficiency
from kokuban.specs.model import ModelSpec

SPEED_SPREAD = 0.10  # a measured per-user speed is taken as ±10 %
#: The range's corners, in the order the range is shown.
CORNERS = ("pessimistic", "central", "optimistic")
#: Speed multiplier of each corner: the pessimistic one must reach a 10 % higher speed, the optimistic a 10 % lower.
SPEED_FACTOR = {"pessimistic": 1 + SPEED_SPREAD, "central": 1.0, "optimistic": 1 - SPEED_SPREAD}
#: Fields of `Efficiency` where a larger value makes every time term shorter (fractions of peak, overlap) …
FASTER_WHEN_LARGER = ("compute", "memory", "interconnect", "overlap")
#: … and where a larger value makes it longer (fixed latencies).
SLOWER_WHEN_LARGER = ("collective_latency_s", "step_overhead_s")
#: The node size `tokens_per_s_per_node_at_speed_batch` counts in (an HGX/DGX node).
GPUS_PER_NODE = 8


# ---- the efficiency corners -------------------------------------------------------------------------
def efficiency_corners(central: Efficiency, known: tuple[Efficiency, ...] | None = None) -> dict[str, Efficiency]:
    """pessimistic / central / optimistic efficiency sets from `central` and the sets there is evidence for
    (`known`, default: the scalar set `Efficiency.scalar()` and `Efficiency.textbook()`).

    Each achievable fraction (compute, memory, KV read, interconnect) and the overlap is, in the pessimistic
    corner, the lowest of the central and the known sets, in the optimistic corner the highest; each fixed
    latency (per collective, per step) the longest / the shortest. Every time term of the roofline step is
    monotone in each field (a fraction divides its time, an overlap hides part of the shorter time, a latency
    adds), so every term of the pessimistic step is ≥ the central's ≥ the optimistic's, at any batch, context
    and deployment. The KV-read fraction follows the memory fraction in a corner when it does in every set.
    """
    sets = (central, *((Efficiency.scalar(), Efficiency.textbook()) if known is None else known))

    def corner(worst: bool) -> Efficiency:
        low, high = (min, max) if worst else (max, min)
        values = {name: low(getattr(e, name) for e in sets) for name in FASTER_WHEN_LARGER}
        values |= {name: high(getattr(e, name) for e in sets) for name in SLOWER_WHEN_LARGER}
        follows = all(e.kv_memory is None for e in sets)
        values["kv_memory"] = None if follows else low(e.kv_memory_fraction for e in sets)
        return replace(central, **values)

    return {"pessimistic": corner(True), "central": central, "optimistic": corner(False)}


def describe_efficiency(e: Efficiency) -> str:
    """compute/memory/KV/link fractions, overlap and the fixed step time, on one line."""
    return (f"{e.compute:g}/{e.memory:g}/{e.kv_memory_fraction:g}/{e.interconnect:g}, overlap {e.overlap:g}, "
            f"{e.step_overhead_s * 1e3:g} ms per step")


# ---- open models ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class GivenBatch(Record):
    """The decode point at a batch the caller chose, and the margin on output there."""

    point: DecodePoint
    margin: Margins

    def as_dict(self) -> dict[str, object]:
        return self.point.as_dict() | {"margin": self.margin.as_dict()}


@dataclass(frozen=True)
class Corner(Record):
    """One corner of the range: break-even, cost and margins at the memory-limited batch, on input, and at the
    batch a speed allows or one given (those two only when asked)."""

    OMIT_IF_NONE = ("speed_batch", "usd_per_m_output_at_speed_batch", "margin_at_speed_batch",
                    "tokens_per_s_per_node_at_speed_batch", "given_batch")
    max_batch: int
    usd_per_m_output_at_max_batch: float
    break_even_batch: int | None
    break_even_tokens_per_s_per_user: float | None
    margin_at_max_batch: Margins
    batch1_tokens_per_s_per_user: float
    usd_per_m_input: float
    margin_on_input: Margins
    speed_batch: int | None = None
    usd_per_m_output_at_speed_batch: float | None = None
    margin_at_speed_batch: Margins | None = None
    tokens_per_s_per_node_at_speed_batch: float | None = None
    given_batch: GivenBatch | None = None


def corner(dep: Deployment, row: PriceRow, context: int, prompt: int, speed: float | None, batch: int | None) -> Corner:
    """Break-even batch and margins of `row`'s prices on `dep` (see `Corner`)."""
    curve = decode_curve(dep, context)
    top = curve.at(curve.max_batch)
    be = break_even_batch(curve, row.output_usd_per_m)
    cin = usd_per_m_input(dep, prompt)
    extra: dict[str, object] = {}
    if speed:
        at = curve.at(batch_for_speed(curve, speed))
        extra |= {"speed_batch": at.batch, "usd_per_m_output_at_speed_batch": at.usd_per_m_output,
                  "margin_at_speed_batch": margins(row.output_usd_per_m, at.usd_per_m_output),
                  "tokens_per_s_per_node_at_speed_batch": at.tokens_per_s * GPUS_PER_NODE / dep.num_gpus}
    if batch:
        if batch > curve.max_batch:
            raise KokubanError(f"infeasible: batch {batch} does not fit at context {context:,} on {dep.num_gpus}× "
                               f"{dep.accelerator.id} (memory allows {curve.max_batch})", field="batch", value=batch)
        at = curve.at(batch)
        extra["given_batch"] = GivenBatch(point=at, margin=margins(row.output_usd_per_m, at.usd_per_m_output))
    return Corner(
        max_batch=curve.max_batch, usd_per_m_output_at_max_batch=top.usd_per_m_output, break_even_batch=be,
        break_even_tokens_per_s_per_user=curve.at(be).tokens_per_s_per_user if be else None,
        margin_at_max_batch=margins(row.output_usd_per_m, top.usd_per_m_output),
        batch1_tokens_per_s_per_user=curve.at(1).tokens_per_s_per_user, usd_per_m_input=cin,
        margin_on_input=margins(row.input_usd_per_m, cin), **extra)  # type: ignore[arg-type]


@dataclass(frozen=True)
class GpuCountRow(Record):
    """The central corner at another accelerator count."""

    gpus: int
    max_batch: int
    break_even_batch: int | None
    break_even_tokens_per_s_per_user: float | None
    usd_per_m_output_at_max_batch: float
    batch1_tokens_per_s_per_user: float
    profit_over_cost_at_max_batch: float


@dataclass(frozen=True)
class OpenInference(Record):
    """`infer_open`'s answer: the range over the corners, the central corner by accelerator count, and why."""

    price: PriceRow
    deployment: str
    gpus: int
    usd_per_gpu_hour: float
    context: int
    prompt_tokens: int
    tokens_per_s_per_user: float | None  # the measured speed given (None: memory-limited batches)
    range: dict[str, Corner]
    by_gpu_count: tuple[GpuCountRow, ...]
    infeasible: str | None
    assumptions: tuple[str, ...]


def infer_open(row: PriceRow, dep: Deployment, *, context: int = 8192, prompt_tokens: int | None = None,
               speed: float | None = None, batch: int | None = None, max_gpus_factor: int = 8) -> OpenInference:
    """Break-even batch, margins and their range; then the same at other accelerator counts.

    Ranges: efficiencies at the `efficiency_corners` of the deployment's own, and a measured speed taken 10 %
    higher in the pessimistic corner and 10 % lower in the optimistic one.
    """
    prompt = prompt_tokens or context
    effs = efficiency_corners(dep.efficiency)
    corners = {name: corner(replace(dep, efficiency=e), row, context, prompt,
                            None if speed is None else speed * SPEED_FACTOR[name], batch) for name, e in effs.items()}
    c = corners["central"]
    infeasible = None
    if c.break_even_batch is None:
        infeasible = (f"even at the memory-limited batch {c.max_batch} a million output tokens cost "
                      f"${c.usd_per_m_output_at_max_batch:.3g} > the price ${row.output_usd_per_m:g}: memory "
                      f"(KV capacity) binds; more accelerators, cheaper hours or a lower-precision KV would be needed")
    counts = []
    for n in memory.GPU_COUNTS:
        if n < dep.num_gpus or n > dep.num_gpus * max_gpus_factor:
            continue
        try:
            r = corner(dep.with_gpus(n), row, context, prompt, None, None)
        except KokubanError:
            continue
        counts.append(GpuCountRow(gpus=n, max_batch=r.max_batch, break_even_batch=r.break_even_batch,
                                  break_even_tokens_per_s_per_user=r.break_even_tokens_per_s_per_user,
                                  usd_per_m_output_at_max_batch=r.usd_per_m_output_at_max_batch,
                                  batch1_tokens_per_s_per_user=r.batch1_tokens_per_s_per_user,
                                  profit_over_cost_at_max_batch=r.margin_at_max_batch.profit_over_cost))
    return OpenInference(
        price=row, deployment=dep.describe(), gpus=dep.num_gpus, usd_per_gpu_hour=dep.price_per_hour_usd,
        context=context, prompt_tokens=prompt, tokens_per_s_per_user=speed, range=corners, by_gpu_count=tuple(counts),
        infeasible=infeasible,
        assumptions=(
            (f"decode at context {context:,} tokens, every request at that context; prefill of one "
             f"{prompt:,}-token prompt"),
            ("efficiency range compute/memory/KV/link: pessimistic " + describe_efficiency(effs["pessimistic"])
             + " … central " + describe_efficiency(effs["central"]) + " … optimistic "
             + describe_efficiency(effs["optimistic"]) + " (each the worst/best of the central, scalar and "
             "textbook sets)"),
            "the fleet is busy all the time (utilisation 1); margins are on accelerator rent only",
            *([f"measured speed {speed:g} tokens/s per user taken as ±{SPEED_SPREAD:.0%}"] if speed else []),
        ),
    )


# ---- closed models -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class ClosedGrid:
    """The searched grid: best profit ÷ cost (NaN where inconsistent) and its GPU count per (active, batch)."""

    active_params: np.ndarray
    batch: np.ndarray
    profit_over_cost: np.ndarray
    gpus: np.ndarray


@dataclass(frozen=True)
class ClosedInference(Record):
    """`infer_closed`'s answer: the ranges of the consistent points (the grid is kept for plotting, not JSON)."""

    price_usd_per_m_output: float
    tokens_per_s_per_user: float
    accelerator: str
    usd_per_gpu_hour: float
    context: int
    active_params_range: tuple[float, float]
    batch_range: tuple[int, int]
    gpus_range: tuple[int, int]
    best_profit_over_cost: float
    grid: ClosedGrid
    assumptions: tuple[str, ...]

    NOT_IN_JSON = ("grid",)


def infer_closed(price_usd_per_m_output: float, tokens_per_s_per_user: float, accelerator: Accelerator, *,
                 usd_per_gpu_hour: float | None = None, context: int = 8192, kv_bytes_per_token: float = 160e3,
                 total_over_active: float = 1.0, weights_dtype: str = "fp8", efficiency: Efficiency | None = None,
                 active_params: np.ndarray | None = None, batches: np.ndarray | None = None,
                 speed_tolerance: float = 0.25) -> ClosedInference:
    """The (active parameters, batch) pairs consistent with a price and a per-user speed.

    For each active size A (a coarse model: total = A × `total_over_active`, `kv_bytes_per_token` at
    16-bit KV, `weights_dtype` weights), each GPU count N in memory.GPU_COUNTS that holds batch B, a
    point is consistent when speed ∈ [s ÷ (1 + tol), s × (1 + tol)] and cost (`cost.usd_per_m_output`)
    ≤ price; the best profit margin over N is kept. Raises, naming the binding constraint, when no point is
    consistent.
    """
    require_positive("price_usd_per_m_output", price_usd_per_m_output)
    require_positive("tokens_per_s_per_user", tokens_per_s_per_user)
    a_grid = np.geomspace(1e9, 2e12, 48) if active_params is None else np.asarray(active_params, float)
    b_grid = np.unique(np.geomspace(1, 4096, 49).astype(int)) if batches is None else np.asarray(batches, int)
    price_h = accelerator.price_per_hour_usd if usd_per_gpu_hour is None else usd_per_gpu_hour
    if not price_h > 0:
        raise KokubanError(f"accelerator '{accelerator.id}' has no hourly price; give one", field="usd_per_gpu_hour",
                           value=usd_per_gpu_hour)
    lo, hi = tokens_per_s_per_user / (1 + speed_tolerance), tokens_per_s_per_user * (1 + speed_tolerance)
    margin = np.full((a_grid.size, b_grid.size), np.nan)
    gpus = np.full_like(margin, np.nan)
    speed_ok = np.zeros(margin.shape, bool)
    best_cost_at_speed = np.inf
    for i, a in enumerate(a_grid):
        model = ModelSpec.coarse("closed-stand-in", a * total_over_active, a, kv_bytes_per_token)
        base = Deployment.make(model, accelerator, 1, weights_dtype=weights_dtype, efficiency=efficiency,
                               price_per_hour_usd=price_h)
        for n in memory.GPU_COUNTS:
            dep = base.with_gpus(n)
            fits = b_grid <= int(memory.max_batch(dep, context))
            if not fits.any():
                continue
            step = roofline.decode_step(dep, b_grid, context)
            speed = 1.0 / np.asarray(step.step_time_s)
            usd = np.asarray(cost.usd_per_m_output(dep, step), float)
            in_band = fits & (speed >= lo) & (speed <= hi)
            speed_ok |= in_band
            if in_band.any():
                best_cost_at_speed = min(best_cost_at_speed, float(usd[in_band].min()))
            m = price_usd_per_m_output / usd - 1
            ok = in_band & (usd <= price_usd_per_m_output) & ~(m <= np.nan_to_num(margin[i], nan=-np.inf))
            margin[i, ok] = m[ok]
            gpus[i, ok] = n
    feasible = ~np.isnan(margin)
    if not speed_ok.any():
        raise KokubanError(
            f"infeasible: no model of {a_grid[0]:.3g}–{a_grid[-1]:.3g} active parameters on up to "
            f"{memory.GPU_COUNTS[-1]}× {accelerator.id} decodes at {tokens_per_s_per_user:g} tokens/s per user "
            f"(±{speed_tolerance:.0%}) at context {context:,}: the speed constraint binds")
    if not feasible.any():
        raise KokubanError(
            f"infeasible: every configuration at {tokens_per_s_per_user:g} tokens/s per user costs at least "
            f"${best_cost_at_speed:.3g}/M output > the price ${price_usd_per_m_output:g}/M on {accelerator.id} at "
            f"${price_h:g}/h: the price constraint binds (by {best_cost_at_speed / price_usd_per_m_output:.2g}×)")
    ai, bi = np.nonzero(feasible)
    return ClosedInference(
        price_usd_per_m_output=price_usd_per_m_output, tokens_per_s_per_user=tokens_per_s_per_user,
        accelerator=accelerator.id, usd_per_gpu_hour=price_h, context=context,
        active_params_range=(float(a_grid[ai.min()]), float(a_grid[ai.max()])),
        batch_range=(int(b_grid[bi.min()]), int(b_grid[bi.max()])),
        gpus_range=(int(np.nanmin(gpus)), int(np.nanmax(gpus))),
        best_profit_over_cost=float(np.nanmax(margin)),
        grid=ClosedGrid(active_params=a_grid, batch=b_grid, profit_over_cost=margin, gpus=gpus),
        assumptions=(
            (f"coarse model: total = {total_over_active:g} × active parameters, {weights_dtype} weights, "
             f"{kv_bytes_per_token / 1e3:g} kB KV per token (16-bit), every request at context {context:,}"),
            (f"consistent = per-user speed within ±{speed_tolerance:.0%} of {tokens_per_s_per_user:g} tokens/s "
             f"and cost ≤ price"),
            "GPU count free in 1…1024 (tensor parallel); utilisation 1; accelerator rent is the only cost",
        ),
    )


# ---- compare one workload ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Workload(Record):
    model: str
    prompt_tokens: int
    output_tokens: int
    cache_hit: float
    requests: int
    tokens_per_s_per_user: float
    lane: str


@dataclass(frozen=True)
class ApiQuote(Record):
    """The workload on one sheet row, or why it cannot be billed there (`usd` None and `reason`)."""

    OMIT_IF_NONE = ("open_model", "usd_per_request", "notes", "source", "reason")
    key: str
    open_model: str | None = None
    usd: float | None = None
    usd_per_request: float | None = None
    notes: tuple[str, ...] | None = None
    source: str | None = None
    reason: str | None = None


@dataclass(frozen=True)
class SelfHostQuote(Record):
    """The workload self-hosted on one accelerator type (the cheapest count), or why not (`usd` None, `reason`)."""

    OMIT_IF_NONE = ("gpus", "batch", "weights", "usd_per_request", "gpu_hours", "tokens_per_s_per_user", "bound",
                    "reason")
    accelerator: str
    usd_per_gpu_hour: float
    gpus: int | None = None
    batch: int | None = None
    weights: str | None = None
    usd: float | None = None
    usd_per_request: float | None = None
    gpu_hours: float | None = None
    tokens_per_s_per_user: float | None = None
    bound: str | None = None
    reason: str | None = None


@dataclass(frozen=True)
class Comparison(Record):
    """`compare`'s answer: the workload, each sheet row and each accelerator (cheapest first), assumptions."""

    workload: Workload
    apis: tuple[ApiQuote, ...]
    self_host: tuple[SelfHostQuote, ...]
    assumptions: tuple[str, ...]


def _cheapest_first(quote: ApiQuote | SelfHostQuote) -> tuple[bool, float]:
    return quote.usd is None, quote.usd or 0.0


def self_host_quote(model: ModelSpec, acc: Accelerator, *, prompt_tokens: int, output_tokens: int, requests: int,
                    cache_hit: float, tokens_per_s_per_user: float, efficiency: Efficiency | None = None,
                    weights_dtype: str | None = None) -> SelfHostQuote:
    """The cheapest accelerator count of `acc` for the workload (see `compare`), or why there is none."""
    context = prompt_tokens + output_tokens
    if not acc.price_per_hour_usd:
        return SelfHostQuote(accelerator=acc.id, usd_per_gpu_hour=acc.price_per_hour_usd,
                             reason="no hourly price in the catalog")
    try:
        base = Deployment.make(model, acc, 1, weights_dtype=weights_dtype, efficiency=efficiency)
        n = memory.min_gpus_to_fit(base, 1, context)
        if n is None:
            raise KokubanError(f"does not fit on up to {memory.GPU_COUNTS[-1]} GPUs")
        best, last_error = None, None
        for count in (c for c in memory.GPU_COUNTS if n <= c <= n * 8):
            dep = base.with_gpus(count)
            try:
                b = batch_for_speed(decode_curve(dep, context), tokens_per_s_per_user)
            except KokubanError as exc:
                last_error = exc
                continue
            r = self_host_request_usd(dep, prompt_tokens, output_tokens, cache_hit, b)
            if best is None or r.usd < best[2].usd:
                best = (dep, b, r)
        if best is None:
            raise last_error  # type: ignore[misc]
    except KokubanError as exc:
        return SelfHostQuote(accelerator=acc.id, usd_per_gpu_hour=acc.price_per_hour_usd, reason=exc.reason)
    dep, b, r = best
    return SelfHostQuote(accelerator=acc.id, usd_per_gpu_hour=acc.price_per_hour_usd, gpus=dep.num_gpus, batch=b,
                         weights=dep.weights_dtype, usd=r.usd * requests, usd_per_request=r.usd,
                         gpu_hours=r.gpu_s * requests / 3600, tokens_per_s_per_user=r.tokens_per_s_per_user,
                         bound=r.bound)


def compare(model: ModelSpec, rows: list[PriceRow], *, prompt_tokens: int, output_tokens: int, requests: int,
            cache_hit: float = 0.0, tokens_per_s_per_user: float = 30.0,
            accelerators: dict[str, Accelerator] | None = None, efficiency: Efficiency | None = None,
            weights_dtype: str | None = None, lane: str = "standard") -> Comparison:
    """The workload's cost on each sheet row, and self-hosted on each accelerator.

    Self-hosting: of the accelerator counts from the fewest that hold batch 1 at prompt + output up to
    8× that, the cheapest, decoding at the largest batch that keeps `tokens_per_s_per_user` (see
    `costing.self_host_request_usd`; busy all the time). Accelerators without an hourly price, or on
    which the model does not fit or cannot reach the speed, are listed with the reason.
    """
    for name, value in (("prompt_tokens", prompt_tokens), ("output_tokens", output_tokens), ("requests", requests)):
        require_positive(name, value, integer=True)
    model.require_context(prompt_tokens + output_tokens, field="output_tokens")
    apis = []
    for row in rows:
        try:
            r = api_request_usd(row, prompt_tokens, output_tokens, cache_hit, lane)
        except KokubanError as exc:
            apis.append(ApiQuote(key=row.key, reason=exc.reason))
            continue
        apis.append(ApiQuote(key=row.key, open_model=row.open_model, usd=r.usd * requests, usd_per_request=r.usd,
                             notes=r.notes, source=row.source))
    hosts = [self_host_quote(model, acc, prompt_tokens=prompt_tokens, output_tokens=output_tokens, requests=requests,
                             cache_hit=cache_hit, tokens_per_s_per_user=tokens_per_s_per_user, efficiency=efficiency,
                             weights_dtype=weights_dtype)
             for acc in (accelerators or accelerator_catalog()).values()]
    return Comparison(
        workload=Workload(model=model.name, prompt_tokens=prompt_tokens, output_tokens=output_tokens,
                          cache_hit=cache_hit, requests=requests, tokens_per_s_per_user=tokens_per_s_per_user,
                          lane=lane),
        apis=tuple(sorted(apis, key=_cheapest_first)), self_host=tuple(sorted(hosts, key=_cheapest_first)),
        assumptions=(
            ("self-hosted: the cheapest accelerator count (fewest that fit … 8× that), at the largest batch keeping "
             "the per-user speed, busy all the time (no idle hours, no engineering or power beyond the rental price)"),
            ("cached prompt tokens cost nothing to self-host (their KV is resident); on an API they pay the cached "
             "price"),
        ),
    )
