"""Serving economics read against price sheets: the small pure functions the `prices` commands share.

Everything physical comes from the core and the economics wing (`economics.batch.decode_columns` over
`economics.batch.fitting_batches`: the one decode curve; `roofline.prefill`; `memory.max_batch`), and every
money formula from `core.cost`; this module only chooses which batches to evaluate and compares their cost
with a price. Money in USD, speeds in tokens per second, per million tokens as `_per_m`.

Margins follow DeepSeek's "cost profit margin": (revenue − cost) ÷ cost, reported beside the
gross margin (revenue − cost) ÷ revenue.

Results are frozen dataclasses (`Record`s): `as_dict()` is their JSON.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, ClassVar

import numpy as np

from kokuban.core import cost, roofline
from kokuban.errors import KokubanError, require_positive
from kokuban.prices.sheets import PriceRow
from kokuban.specs.deployment import Deployment


# ---- typed results -----------------------------------------------------------------------------------
def plain(value: Any) -> Any:
    """A result's value as JSON-ready data: records as dicts, tuples as lists, NumPy scalars as numbers."""
    if isinstance(value, Record):
        return value.as_dict()
    if isinstance(value, PriceRow):
        return value.as_dict()
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, np.generic):
        return value.item()
    return value


class Record:
    """Mixin of the prices wing's frozen result dataclasses: `as_dict()` gives the fields in order (nested
    records as dicts); a field named in `OMIT_IF_NONE` is left out while it is None (a part the result lacks),
    one in `NOT_IN_JSON` always (data kept for a plot)."""

    OMIT_IF_NONE: ClassVar[tuple[str, ...]] = ()
    NOT_IN_JSON: ClassVar[tuple[str, ...]] = ()

    def as_dict(self) -> dict[str, Any]:
        return {f.name: plain(getattr(self, f.name)) for f in fields(self)  # type: ignore[arg-type]
                if f.name not in self.NOT_IN_JSON
                and not (f.name in self.OMIT_IF_NONE and getattr(self, f.name) is None)}


# ---- the decode curve --------------------------------------------------------------------------------
@dataclass(frozen=True)
class DecodePoint(Record):
    """One batch of a decode curve: step time, per-user and total speed, USD per million output tokens."""

    batch: int
    step_time_s: float
    tokens_per_s_per_user: float
    tokens_per_s: float
    usd_per_m_output: float
    bound: str


@dataclass(frozen=True)
class DecodeCurve:
    """Decode at one context over batches 1…max: per-user speed and USD per million output tokens."""

    context: int
    batch: np.ndarray
    step_time_s: np.ndarray
    usd_per_m_output: np.ndarray
    bound: np.ndarray
    tokens_per_s_per_user: np.ndarray
    tokens_per_s: np.ndarray

    @property
    def max_batch(self) -> int:
        return int(self.batch[-1]) if self.batch.size else 0

    def at(self, batch: int) -> DecodePoint:
        """The point at `batch` (above the dense grid: the next batch evaluated)."""
        i = int(np.searchsorted(self.batch, batch))
        return DecodePoint(batch=int(self.batch[i]), step_time_s=float(self.step_time_s[i]),
                           tokens_per_s_per_user=float(self.tokens_per_s_per_user[i]),
                           tokens_per_s=float(self.tokens_per_s[i]), usd_per_m_output=float(self.usd_per_m_output[i]),
                           bound=str(self.bound[i]))


def decode_curve(dep: Deployment, context: int) -> DecodeCurve:
    """`economics.batch.decode_columns` over `economics.batch.fitting_batches` (every batch that fits at
    `context`): the economics wing's decode curve, as arrays. Raises (naming the memory constraint) when not
    even one request fits."""
    # imported here: the economics wing's module loads pandas, which the prices wing's start-up does not need
    from kokuban.economics.batch import decode_columns, fitting_batches

    cols = decode_columns(dep, fitting_batches(dep, context), context)
    return DecodeCurve(context=int(context), batch=cols["batch"].astype(np.int64), step_time_s=cols["step_time_s"],
                       usd_per_m_output=cols["usd_per_m_output"], bound=cols["bound"],
                       tokens_per_s_per_user=cols["tokens_per_s_per_user"], tokens_per_s=cols["tokens_per_s"])


def batch_for_speed(curve: DecodeCurve, tokens_per_s_per_user: float) -> int:
    """Largest batch whose decode still gives each user `tokens_per_s_per_user` (speed falls with batch).

    Raises when even batch 1 is slower, naming the term that bounds batch 1.
    """
    ok = curve.tokens_per_s_per_user >= tokens_per_s_per_user
    if not ok.any():
        one = curve.at(1)
        raise KokubanError(
            f"infeasible: {tokens_per_s_per_user:g} tokens/s per user is above what batch 1 reaches "
            f"({one.tokens_per_s_per_user:.1f} tokens/s, bound by {one.bound}); more or faster accelerators needed",
            field="tokens_per_s_per_user", value=tokens_per_s_per_user)
    return int(curve.batch[np.flatnonzero(ok)[-1]])


def break_even_batch(curve: DecodeCurve, usd_per_m: float) -> int | None:
    """Smallest batch at which a million output tokens cost at most `usd_per_m` (None if none does)."""
    ok = np.flatnonzero(curve.usd_per_m_output <= usd_per_m)
    return int(curve.batch[ok[0]]) if ok.size else None


@dataclass(frozen=True)
class Margins(Record):
    """profit_over_cost = price ÷ cost − 1 (DeepSeek's "cost profit margin"); gross = 1 − cost ÷ price (None at a
    price of 0, where it has no value)."""

    profit_over_cost: float
    gross_margin: float | None


def margins(price_usd: float, cost_usd: float) -> Margins:
    """See `Margins`; the cost must be above 0 (a deployment's hourly price is)."""
    p, c = float(price_usd), float(cost_usd)
    require_positive("cost_usd", c)
    return Margins(profit_over_cost=p / c - 1.0, gross_margin=1.0 - c / p if p > 0 else None)


def usd_per_m_input(dep: Deployment, prompt_tokens: int, batch: int = 1) -> float:
    """Prefill cost of a million uncached prompt tokens (`cost.usd_per_m_input` of `batch` prompts)."""
    return float(cost.usd_per_m_input(dep, roofline.prefill(dep, batch, prompt_tokens)))


# ---- price of a request on an API sheet ------------------------------------------------------------
LANES = ("standard", "batch", "flex", "priority")


@dataclass(frozen=True)
class ApiPrice(Record):
    """What one request costs on a sheet, and how it was billed (tiers, lanes, a missing cached price)."""

    usd: float
    notes: tuple[str, ...]


def api_request_usd(row: PriceRow, prompt_tokens: int, output_tokens: int, cache_hit: float = 0.0,
                    lane: str = "standard") -> ApiPrice:
    """USD for one request on a sheet: multiplier × (uncached·input + cached·(cached or input) + output·output)
    tokens at the sheet's USD per million (`cost.usd_for_tokens`).

    Long-context tier: when the prompt exceeds the threshold, the whole request is billed at the long
    rates (Anthropic's rule). Lanes multiply everything by the sheet's multiplier; a lane or a cache
    price the sheet lacks is an error (never silently billed at the standard rate), except that a
    sheet without a cached price bills cached tokens as input (said in `notes`).
    """
    if lane not in LANES:
        raise KokubanError(f"'{lane}' is not a known lane; allowed: {', '.join(LANES)}", field="lane", value=lane)
    if not 0 <= cache_hit <= 1:
        raise KokubanError(f"must be in [0, 1], got {cache_hit!r}", field="cache_hit", value=cache_hit)
    notes: list[str] = []
    long = row.long_context_threshold_tokens is not None and prompt_tokens > row.long_context_threshold_tokens
    inp = (row.long_input_usd_per_m or row.input_usd_per_m) if long else row.input_usd_per_m
    out = (row.long_output_usd_per_m or row.output_usd_per_m) if long else row.output_usd_per_m
    if long:
        notes.append(f"long-context tier (prompt > {row.long_context_threshold_tokens:,})")
    cached = row.cached_input_usd_per_m
    if cached is None:
        cached = inp
        if cache_hit > 0:
            notes.append("no cached-input price on the sheet: cached tokens billed as input")
    elif long:
        cached *= inp / row.input_usd_per_m
    mult = 1.0
    if lane != "standard":
        mult = getattr(row, f"{lane}_multiplier")
        if mult is None:
            raise KokubanError(f"{row.key} has no {lane} lane on its sheet", field="lane", value=lane)
        notes.append(f"{lane} lane × {mult:g}")
    usd = mult * (cost.usd_for_tokens(prompt_tokens * (1 - cache_hit), inp)
                  + cost.usd_for_tokens(prompt_tokens * cache_hit, cached) + cost.usd_for_tokens(output_tokens, out))
    return ApiPrice(usd=usd, notes=tuple(notes))


# ---- self-hosting one request ------------------------------------------------------------------------
@dataclass(frozen=True)
class SelfHostPrice(Record):
    """One request on your own deployment: USD, GPU-seconds, and the two token prices and the decode speed."""

    usd: float
    gpu_s: float
    usd_per_m_input: float
    usd_per_m_output: float
    tokens_per_s_per_user: float
    bound: str


def self_host_request_usd(dep: Deployment, prompt_tokens: int, output_tokens: int, cache_hit: float,
                          batch: int) -> SelfHostPrice:
    """USD and GPU-seconds for one request on your own deployment, decoding at `batch`.

    prefill: the uncached (1 − hit) share of the prompt at the cost per token of prefilling the whole
      prompt once (cached tokens assumed free: their KV is already resident);
    decode: `output` tokens at the cost per token of a batch-`batch` step at the mean context
      prompt + output/2. Assumes the deployment stays busy (utilisation 1).
    seconds of the deployment = uncached prompt × prefill time ÷ prompt + output × step time ÷ batch;
    GPU-seconds = N × that; USD = `cost.usd_of_seconds` of it (= tokens at the two `cost.usd_per_m_*`).
    """
    pre = roofline.prefill(dep, 1, prompt_tokens)
    mean_ctx = prompt_tokens + max(output_tokens, 1) / 2
    step = roofline.decode_step(dep, batch, mean_ctx)
    seconds = (prompt_tokens * (1 - cache_hit) * float(pre.step_time_s / pre.tokens)
               + output_tokens * float(step.step_time_s / step.batch))
    return SelfHostPrice(usd=float(cost.usd_of_seconds(dep, seconds)), gpu_s=dep.num_gpus * seconds,
                         usd_per_m_input=float(cost.usd_per_m_input(dep, pre)),
                         usd_per_m_output=float(cost.usd_per_m_output(dep, step)),
                         tokens_per_s_per_user=float(1 / step.step_time_s), bound=str(step.bound))


# ---- a day of a fleet (DeepSeek's Day-6 account) -----------------------------------------------------
@dataclass(frozen=True)
class FleetDay(Record):
    """A day of serving: node-hours from tokens ÷ per-node throughput, then cost, revenue and margin.

    node-hours = input tokens ÷ (prefill tokens/s per node) ÷ 3600 + output tokens ÷ (decode tokens/s
    per node) ÷ 3600 (each node busy all the time it is counted, prefill and decode on separate nodes);
    average nodes = node-hours ÷ 24; cost = node-hours × GPUs per node × USD per GPU-hour;
    revenue = uncached·input + cached·cached + output·output prices (`cost.usd_for_tokens`).
    """

    input_tokens: float
    cached_input_tokens: float
    output_tokens: float
    prefill_tokens_per_s_per_node: float
    decode_tokens_per_s_per_node: float
    gpus_per_node: int
    usd_per_gpu_hour: float
    prefill_node_hours: float
    decode_node_hours: float
    average_nodes: float
    cost_usd_per_day: float
    revenue_usd_per_day: float
    profit_over_cost: float
    gross_margin: float | None


def fleet_day(row: PriceRow, input_tokens: float, cached_input_tokens: float, output_tokens: float,
              prefill_tokens_per_s_per_node: float, decode_tokens_per_s_per_node: float, *,
              gpus_per_node: int = 8, usd_per_gpu_hour: float) -> FleetDay:
    """See `FleetDay`. Prefill throughput counts cached tokens (DeepSeek's 'including cache hits')."""
    for name, v in (("input_tokens", input_tokens), ("output_tokens", output_tokens),
                    ("prefill_tokens_per_s_per_node", prefill_tokens_per_s_per_node),
                    ("decode_tokens_per_s_per_node", decode_tokens_per_s_per_node),
                    ("usd_per_gpu_hour", usd_per_gpu_hour)):
        require_positive(name, v)
    require_positive("gpus_per_node", gpus_per_node, integer=True)
    if not 0 <= cached_input_tokens <= input_tokens:
        raise KokubanError(f"cached input tokens must be between 0 and the input tokens ({input_tokens:g}), "
                           f"got {cached_input_tokens:g}", field="cached_input_tokens", value=cached_input_tokens)
    hp = input_tokens / prefill_tokens_per_s_per_node / 3600
    hd = output_tokens / decode_tokens_per_s_per_node / 3600
    cost_day = (hp + hd) * gpus_per_node * usd_per_gpu_hour
    cached_price = row.cached_input_usd_per_m if row.cached_input_usd_per_m is not None else row.input_usd_per_m
    revenue = (cost.usd_for_tokens(input_tokens - cached_input_tokens, row.input_usd_per_m)
               + cost.usd_for_tokens(cached_input_tokens, cached_price)
               + cost.usd_for_tokens(output_tokens, row.output_usd_per_m))
    m = margins(revenue, cost_day)
    return FleetDay(
        input_tokens=input_tokens, cached_input_tokens=cached_input_tokens, output_tokens=output_tokens,
        prefill_tokens_per_s_per_node=prefill_tokens_per_s_per_node,
        decode_tokens_per_s_per_node=decode_tokens_per_s_per_node, gpus_per_node=gpus_per_node,
        usd_per_gpu_hour=usd_per_gpu_hour, prefill_node_hours=hp, decode_node_hours=hd, average_nodes=(hp + hd) / 24,
        cost_usd_per_day=cost_day, revenue_usd_per_day=revenue, profit_over_cost=m.profit_over_cost,
        gross_margin=m.gross_margin,
    )


@dataclass(frozen=True)
class NodeThroughput(Record):
    """Per-node throughputs the roofline predicts for a disaggregated (prefill / decode) deployment."""

    decode_batch: int
    decode_step_time_s: float
    decode_bound: str
    decode_tokens_per_s_per_user: float
    decode_max_batch: int
    decode_tokens_per_s_per_node: float
    prefill_time_s: float
    prefill_bound: str
    prefill_computed_tokens_per_s_per_node: float
    prefill_tokens_per_s_per_node: float | None


def node_throughput(prefill_dep: Deployment, decode_dep: Deployment, *, context: int, prompt_tokens: int,
                    cache_hit: float, tokens_per_s_per_user: float, gpus_per_node: int = 8,
                    prefill_batch: int = 1) -> NodeThroughput:
    """Per-node throughputs the roofline predicts for a disaggregated (prefill / decode) deployment.

    decode: the largest batch that keeps `tokens_per_s_per_user` at `context` (and fits in memory);
      tokens/s per node = batch ÷ step time ÷ (decode GPUs ÷ GPUs per node).
    prefill: `prefill_batch` prompts per data-parallel rank (× GPUs under EP) of `prompt_tokens`;
      computed tokens/s per node = tokens ÷ time ÷ nodes. Cached prefix tokens are not computed, so the
      throughput counting cache hits is computed ÷ (1 − hit) (assumes a hit costs nothing; None at a hit rate
      of 1: the prefill then does no work, and that throughput has no finite value).
    """
    if not 0 <= cache_hit <= 1:
        raise KokubanError(f"must be in [0, 1], got {cache_hit!r}", field="cache_hit", value=cache_hit)
    curve = decode_curve(decode_dep, context)
    b = batch_for_speed(curve, tokens_per_s_per_user)
    d = curve.at(b)
    dec_nodes = decode_dep.num_gpus / gpus_per_node
    ranks = prefill_dep.parallel.data_parallel_ranks
    pre = roofline.prefill(prefill_dep, prefill_batch * ranks, prompt_tokens)
    computed = float(pre.tokens / pre.step_time_s) / (prefill_dep.num_gpus / gpus_per_node)
    return NodeThroughput(
        decode_batch=b, decode_step_time_s=d.step_time_s, decode_bound=d.bound,
        decode_tokens_per_s_per_user=d.tokens_per_s_per_user, decode_max_batch=curve.max_batch,
        decode_tokens_per_s_per_node=d.tokens_per_s / dec_nodes, prefill_time_s=float(pre.step_time_s),
        prefill_bound=str(pre.bound), prefill_computed_tokens_per_s_per_node=computed,
        prefill_tokens_per_s_per_node=computed / (1 - cache_hit) if cache_hit < 1 else None,
    )
