"""An agent run's calls timed and priced on your own deployment, from the core.

Per call (deployment-seconds, then USD through `core.cost.usd_of_seconds`):

    prefill  = roofline.prefill(dep, 1, prompt, cached).step_time_s     cached = the KV that survived the gap
                                                                         (min(kv prefix, prompt − 1)), 0 if dropped
    decode   = Σ_t roofline.decode_step(dep, batch, prompt + t).step_time_s ÷ batch,  t = 0 … output − 1
               (the session's share of each step of a batch of `batch` sessions at about its context)
    hold     = keep: g / B;  offload: (2b/ℓ) / B;  drop: 0               (see `agents.survival`)
    USD      = usd_of_seconds(dep, prefill + decode + hold) + offload's host memory h·b·g
    GPU-s    = N GPUs × (prefill + decode + hold)

Survival per gap: "keep", "offload", "drop", or "best" (the cheapest of the three for that gap, so each call
says which it chose). Assumes the deployment stays busy with other sessions (utilisation 1) and prefill runs
alone (batch 1) on the whole deployment, as `prices.costing` prices input.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from kokuban.agents import survival
from kokuban.agents.compaction import Calls
from kokuban.core import cost, memory, roofline
from kokuban.errors import KokubanError
from kokuban.specs.deployment import Deployment

SURVIVALS = (*survival.OPTIONS, "best")
CHUNK_TOKENS = 1_000_000


def decode_seconds(dep: Deployment, batch: int, prompt_tokens: np.ndarray, output_tokens: np.ndarray) -> np.ndarray:
    """Per call, Σ over its output tokens of the decode step time at the growing context (one vectorised call)."""
    out = np.asarray(output_tokens, dtype=np.int64)
    prompt = np.asarray(prompt_tokens, dtype=np.int64)
    total = np.zeros(out.size)
    ends = np.cumsum(out)
    lo = 0
    while lo < out.size:  # chunks of about CHUNK_TOKENS output tokens keep the arrays small
        hi = max(lo + 1, int(np.searchsorted(ends, (ends[lo - 1] if lo else 0) + CHUNK_TOKENS, side="right")))
        o = out[lo:hi]
        starts = np.r_[0, np.cumsum(o)[:-1]]
        ctx = np.repeat(prompt[lo:hi], o) + (np.arange(int(o.sum())) - np.repeat(starts, o))
        step_s = np.asarray(roofline.decode_step(dep, batch, ctx).step_time_s, dtype=np.float64)
        total[lo:hi] = np.add.reduceat(step_s, starts)
        lo = hi
    return total


def selfhost_costs(calls: Calls, dep: Deployment, *, batch: int, survival_policy: str = "best",
                   host_bytes_per_s: float, host_usd_per_byte_s: float) -> dict[str, np.ndarray]:
    """Per call: cached tokens, prefill/decode/hold deployment-seconds, each survival option's USD, the choice,
    break-even gaps, USD and GPU-seconds (see module docstring)."""
    if survival_policy not in SURVIVALS:
        raise KokubanError(f"'{survival_policy}' is not known; allowed: {', '.join(SURVIVALS)}", field="survival",
                           value=survival_policy)
    prompt, out = calls.prompt_tokens, calls.output_tokens
    longest = int(calls.context_tokens.max())
    if int(memory.max_batch(dep, longest)) < 1:
        raise memory.no_fit_error(dep, memory.plan(dep, 1, longest), field="gpus", value=dep.num_gpus)
    held = np.where(calls.first, 0, np.minimum(calls.kv_prefix_tokens, prompt - 1))
    full_s = np.asarray(roofline.prefill(dep, 1, prompt).step_time_s, dtype=np.float64)
    cached_s = np.asarray(roofline.prefill(dep, 1, prompt, held).step_time_s, dtype=np.float64)
    recompute_s = full_s - cached_s
    kv_b = np.asarray(roofline.kv_bytes_per_request(dep, held), dtype=np.float64)
    slots = np.maximum(np.asarray(memory.max_batch(dep, np.maximum(held, 1)), dtype=np.float64), 1.0)
    u, g = dep.usd_per_s, calls.gap_before_s
    options = np.stack([
        survival.keep_usd(u, g, slots),
        survival.offload_usd(u, g, slots, kv_b, host_usd_per_byte_s, host_bytes_per_s),
        survival.drop_usd(u, recompute_s),
    ])
    choice = (
        np.argmin(options, axis=0)
        if survival_policy == "best"
        else np.full(len(calls), survival.OPTIONS.index(survival_policy))
    )
    choice = np.where(held > 0, choice, survival.OPTIONS.index("drop"))  # nothing to keep: a first call, or no prefix
    kept = choice != survival.OPTIONS.index("drop")
    prefill_s = np.where(kept, cached_s, full_s)
    hold_s = np.select([choice == 0, choice == 1], [g / slots, (2 * kv_b / host_bytes_per_s) / slots], 0.0)
    host_usd = np.where(choice == 1, host_usd_per_byte_s * kv_b * g, 0.0)
    decode_s = decode_seconds(dep, batch, prompt, out) / batch
    seconds = prefill_s + decode_s + hold_s
    return {
        "cached_tokens": np.where(kept, held, 0), "recomputed_tokens": np.where(kept, 0, held),
        "kv_held_bytes": np.where(held > 0, kv_b, 0.0), "slots": slots,
        "prefill_s": prefill_s, "decode_s": decode_s, "hold_s": hold_s,
        "keep_usd": np.where(held > 0, options[0], 0.0), "offload_usd": np.where(held > 0, options[1], 0.0),
        "drop_usd": np.where(held > 0, options[2], 0.0),
        "survival": np.where(held > 0, np.asarray(survival.OPTIONS)[choice], ""),
        "break_even_keep_drop_s": np.where(held > 0, survival.break_even_keep_drop_s(recompute_s, slots), np.nan),
        "break_even_keep_offload_s": np.where(held > 0, survival.break_even_keep_offload_s(
            u, slots, kv_b, host_usd_per_byte_s, host_bytes_per_s), np.nan),
        "break_even_offload_drop_s": np.where(held > 0, survival.break_even_offload_drop_s(
            u, recompute_s, slots, kv_b, host_usd_per_byte_s, host_bytes_per_s), np.nan),
        "prefill_usd": cost.usd_of_seconds(dep, prefill_s), "decode_usd": cost.usd_of_seconds(dep, decode_s),
        "hold_usd": cost.usd_of_seconds(dep, hold_s) + host_usd,
        "usd": cost.usd_of_seconds(dep, seconds) + host_usd, "gpu_s": dep.num_gpus * seconds,
    }


def selfhost_summary_terms(dep: Deployment, batch: int) -> dict[str, Any]:
    """The deployment's terms a self-hosted result quotes: GPUs, USD per GPU-hour and per hour, batch."""
    return {"deployment": dep.describe(), "gpus": dep.num_gpus, "usd_per_gpu_hour": dep.price_per_hour_usd,
            "usd_per_hour": cost.usd_of_seconds(dep, 3600.0), "decode_batch": batch}
