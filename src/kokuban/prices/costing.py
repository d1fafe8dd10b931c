"""Serving economics read against price sheets: the small pure functions the `prices` commands share.

Everything physical comes from the core (`roofline.decode_step`/`prefill` vectorised over batch,
`memory.max_batch`, `cost.*`); this module only chooses which batches to evaluate and compares
their cost with a price. Money in USD, speeds in tokens per second, per million tokens as `_per_m`.

Margins follow DeepSeek's "cost profit margin": (revenue − cost) ÷ cost, reported beside the
gross margin (revenue − cost) ÷ revenue.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from kokuban.core import cost, memory, roofline
from kokuban.errors import KokubanError
from kokuban.prices.sheets import PriceRow
from kokuban.specs.deployment import Deployment

PER_MILLION = 1e6
MAX_GRID = 65536


def batch_grid(max_batch: int) -> np.ndarray:
    """Every batch 1…max_batch (geometric above 65,536 to stay small)."""
    if max_batch < 1:
        return np.zeros(0, dtype=np.int64)
    if max_batch <= MAX_GRID:
        return np.arange(1, max_batch + 1)
    return np.unique(np.geomspace(1, max_batch, 4096).astype(np.int64))


@dataclass(frozen=True)
class DecodeCurve:
    """Decode at one context over batches 1…max: per-user speed and USD per million output tokens."""

    context: int
    batch: np.ndarray
    step_time_s: np.ndarray
    usd_per_m_output: np.ndarray
    bound: np.ndarray

    @property
    def max_batch(self) -> int:
        return int(self.batch[-1]) if self.batch.size else 0

    @property
    def tokens_per_s_per_user(self) -> np.ndarray:
        return 1.0 / self.step_time_s

    def at(self, batch: int) -> dict[str, Any]:
        i = int(np.searchsorted(self.batch, batch))
        return {"batch": int(self.batch[i]), "step_time_s": float(self.step_time_s[i]),
                "tokens_per_s_per_user": float(1.0 / self.step_time_s[i]),
                "tokens_per_s": float(self.batch[i] / self.step_time_s[i]),
                "usd_per_m_output": float(self.usd_per_m_output[i]), "bound": str(self.bound[i])}


def decode_curve(dep: Deployment, context: int) -> DecodeCurve:
    """One vectorised `roofline.decode_step` over every batch that fits in memory at `context`.

    Raises (naming the memory constraint) when not even one request fits.
    """
    top = int(memory.max_batch(dep, context))
    if top < 1:
        mp = memory.plan(dep, 1, context)
        more = f"; {mp.min_gpus}× would" if mp.min_gpus else ""
        raise KokubanError(
            f"infeasible: {dep.model.name} does not fit on {dep.num_gpus}× {dep.accelerator.id} at context {context:,} "
            f"(memory: weights {mp.weights_bytes / 1e9:.1f} GB + one request's KV {mp.kv_bytes_per_gpu / 1e9:.2f} GB "
            f"per GPU > {mp.usable_bytes / 1e9:.1f} GB usable{more})")
    b = batch_grid(top)
    step = roofline.decode_step(dep, b, context)
    return DecodeCurve(context=int(context), batch=b, step_time_s=np.asarray(step.step_time_s, float),
                       usd_per_m_output=np.asarray(cost.usd_per_m_output(dep, step), float),
                       bound=np.asarray(step.bound))


def batch_for_speed(curve: DecodeCurve, tokens_per_s_per_user: float) -> int:
    """Largest batch whose decode still gives each user `tokens_per_s_per_user` (speed falls with batch).

    Raises when even batch 1 is slower, naming the term that bounds batch 1.
    """
    ok = curve.tokens_per_s_per_user >= tokens_per_s_per_user
    if not ok.any():
        one = curve.at(1)
        raise KokubanError(
            f"infeasible: {tokens_per_s_per_user:g} tokens/s per user is above what batch 1 reaches "
            f"({one['tokens_per_s_per_user']:.1f} tokens/s, bound by {one['bound']}); more or faster accelerators needed")
    return int(curve.batch[np.flatnonzero(ok)[-1]])


def break_even_batch(curve: DecodeCurve, usd_per_m: float) -> int | None:
    """Smallest batch at which a million output tokens cost at most `usd_per_m` (None if none does)."""
    ok = np.flatnonzero(curve.usd_per_m_output <= usd_per_m)
    return int(curve.batch[ok[0]]) if ok.size else None


def margins(price_usd: Any, cost_usd: Any) -> dict[str, Any]:
    """profit_over_cost = price ÷ cost − 1 (DeepSeek's "cost profit margin"); gross = 1 − cost ÷ price."""
    p, c = np.asarray(price_usd, float), np.asarray(cost_usd, float)
    return {"profit_over_cost": p / c - 1.0, "gross_margin": 1.0 - c / p}


def usd_per_m_input(dep: Deployment, prompt_tokens: int, batch: int = 1) -> float:
    """Prefill cost of a million uncached prompt tokens (`cost.usd_per_m_input` of `batch` prompts)."""
    return float(cost.usd_per_m_input(dep, roofline.prefill(dep, batch, prompt_tokens)))


# ---- price of a request on an API sheet ------------------------------------------------------------
LANES = ("standard", "batch", "flex", "priority")


def api_request_usd(row: PriceRow, prompt_tokens: int, output_tokens: int, cache_hit: float = 0.0,
                    lane: str = "standard") -> dict[str, Any]:
    """USD for one request on a sheet: uncached·input + cached·(cached or input) + output·output, ÷ 10⁶.

    Long-context tier: when the prompt exceeds the threshold, the whole request is billed at the long
    rates (Anthropic's rule). Lanes multiply everything by the sheet's multiplier; a lane or a cache
    price the sheet lacks is an error (never silently billed at the standard rate), except that a
    sheet without a cached price bills cached tokens as input (said in `notes`).
    """
    if lane not in LANES:
        raise KokubanError(f"lane '{lane}' is not known; allowed: {', '.join(LANES)}")
    if not 0 <= cache_hit <= 1:
        raise KokubanError(f"cache hit rate must be in [0, 1], got {cache_hit!r}")
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
            raise KokubanError(f"{row.key} has no {lane} lane on its sheet")
        notes.append(f"{lane} lane × {mult:g}")
    usd = mult * (prompt_tokens * ((1 - cache_hit) * inp + cache_hit * cached) + output_tokens * out) / PER_MILLION
    return {"usd": usd, "notes": notes}


# ---- self-hosting one request ------------------------------------------------------------------------
def self_host_request_usd(dep: Deployment, prompt_tokens: int, output_tokens: int, cache_hit: float,
                          batch: int) -> dict[str, Any]:
    """USD and GPU-seconds for one request on your own deployment, decoding at `batch`.

    prefill: the uncached (1 − hit) share of the prompt at the cost per token of prefilling the whole
      prompt once (cached tokens assumed free: their KV is already resident);
    decode: `output` tokens at the cost per token of a batch-`batch` step at the mean context
      prompt + output/2. Assumes the deployment stays busy (utilisation 1).
    """
    inp = usd_per_m_input(dep, prompt_tokens)
    mean_ctx = prompt_tokens + max(output_tokens, 1) / 2
    step = roofline.decode_step(dep, batch, mean_ctx)
    out = float(cost.usd_per_m_output(dep, step))
    usd = (prompt_tokens * (1 - cache_hit) * inp + output_tokens * out) / PER_MILLION
    gpu_s = usd / (dep.price_per_hour_usd / 3600) if dep.price_per_hour_usd else float("nan")
    return {"usd": usd, "gpu_seconds": gpu_s, "usd_per_m_input": inp, "usd_per_m_output": out,
            "tokens_per_s_per_user": float(1 / step.step_time_s), "bound": step.bound}


# ---- a day of a fleet (DeepSeek's Day-6 account) -----------------------------------------------------
@dataclass(frozen=True)
class FleetDay:
    """A day of serving: node-hours from tokens ÷ per-node throughput, then cost, revenue and margin.

    node-hours = input tokens ÷ (prefill tokens/s per node) ÷ 3600 + output tokens ÷ (decode tokens/s
    per node) ÷ 3600 (each node busy all the time it is counted, prefill and decode on separate nodes);
    average nodes = node-hours ÷ 24; cost = node-hours × GPUs per node × USD per GPU-hour;
    revenue = uncached·input + cached·cached + output·output prices.
    """

    input_tokens: float
    cached_input_tokens: float
    output_tokens: float
    prefill_tokens_per_s_per_node: float
    decode_tokens_per_s_per_node: float
    gpus_per_node: int
    usd_per_gpu_hour: float
    node_hours_prefill: float
    node_hours_decode: float
    average_nodes: float
    cost_usd_per_day: float
    revenue_usd_per_day: float
    profit_over_cost: float
    gross_margin: float

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def fleet_day(row: PriceRow, input_tokens: float, cached_input_tokens: float, output_tokens: float,
              prefill_tokens_per_s_per_node: float, decode_tokens_per_s_per_node: float, *,
              gpus_per_node: int = 8, usd_per_gpu_hour: float) -> FleetDay:
    """See `FleetDay`. Prefill throughput counts cached tokens (DeepSeek's 'including cache hits')."""
    for name, v in (("input tokens", input_tokens), ("output tokens", output_tokens),
                    ("prefill tokens/s per node", prefill_tokens_per_s_per_node),
                    ("decode tokens/s per node", decode_tokens_per_s_per_node), ("USD per GPU-hour", usd_per_gpu_hour)):
        if not v > 0:
            raise KokubanError(f"{name} must be > 0, got {v!r}")
    if not 0 <= cached_input_tokens <= input_tokens:
        raise KokubanError(f"cached input tokens must be between 0 and the input tokens ({input_tokens:g}), got {cached_input_tokens:g}")
    hp = input_tokens / prefill_tokens_per_s_per_node / 3600
    hd = output_tokens / decode_tokens_per_s_per_node / 3600
    cost_day = (hp + hd) * gpus_per_node * usd_per_gpu_hour
    cached_price = row.cached_input_usd_per_m if row.cached_input_usd_per_m is not None else row.input_usd_per_m
    revenue = ((input_tokens - cached_input_tokens) * row.input_usd_per_m + cached_input_tokens * cached_price
               + output_tokens * row.output_usd_per_m) / PER_MILLION
    m = margins(revenue, cost_day)
    return FleetDay(
        input_tokens=input_tokens, cached_input_tokens=cached_input_tokens, output_tokens=output_tokens,
        prefill_tokens_per_s_per_node=prefill_tokens_per_s_per_node,
        decode_tokens_per_s_per_node=decode_tokens_per_s_per_node, gpus_per_node=gpus_per_node,
        usd_per_gpu_hour=usd_per_gpu_hour, node_hours_prefill=hp, node_hours_decode=hd, average_nodes=(hp + hd) / 24,
        cost_usd_per_day=cost_day, revenue_usd_per_day=revenue, profit_over_cost=float(m["profit_over_cost"]),
        gross_margin=float(m["gross_margin"]),
    )


def node_throughput(prefill_dep: Deployment, decode_dep: Deployment, *, context: int, prompt_tokens: int,
                    cache_hit: float, tokens_per_s_per_user: float, gpus_per_node: int = 8,
                    prefill_batch: int = 1) -> dict[str, Any]:
    """Per-node throughputs the roofline predicts for a disaggregated (prefill / decode) deployment.

    decode: the largest batch that keeps `tokens_per_s_per_user` at `context` (and fits in memory);
      tokens/s per node = batch ÷ step time ÷ (decode GPUs ÷ GPUs per node).
    prefill: `prefill_batch` prompts per data-parallel rank (× GPUs under EP) of `prompt_tokens`;
      computed tokens/s per node = tokens ÷ time ÷ nodes. Cached prefix tokens are not computed, so the
      throughput counting cache hits is computed ÷ (1 − hit) (assumes a hit costs nothing).
    """
    curve = decode_curve(decode_dep, context)
    b = batch_for_speed(curve, tokens_per_s_per_user)
    d = curve.at(b)
    dec_nodes = decode_dep.num_gpus / gpus_per_node
    ranks = prefill_dep.parallel.data_parallel_ranks
    pre = roofline.prefill(prefill_dep, prefill_batch * ranks, prompt_tokens)
    computed = float(pre.tokens / pre.step_time_s) / (prefill_dep.num_gpus / gpus_per_node)
    return {
        "decode_batch": b, "decode_step_time_s": d["step_time_s"], "decode_bound": d["bound"],
        "decode_tokens_per_s_per_user": d["tokens_per_s_per_user"], "decode_max_batch": curve.max_batch,
        "decode_tokens_per_s_per_node": d["tokens_per_s"] / dec_nodes,
        "prefill_time_s": float(pre.step_time_s), "prefill_bound": pre.bound,
        "prefill_computed_tokens_per_s_per_node": computed,
        "prefill_tokens_per_s_per_node": computed / (1 - cache_hit) if cache_hit < 1 else float("inf"),
    }
