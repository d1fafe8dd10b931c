"""Three ways a session's KV cache can survive a tool call of g seconds, each a deployment's cost.

Notation: u = the deployment's USD per second (N GPUs × price per GPU-hour ÷ 3600, `Deployment.usd_per_s`);
b = KV bytes the session holds (`core.roofline.kv_bytes_per_request` at the cached context L);
B = `core.memory.max_batch(dep, L)`, the requests of that context the deployment holds at once, so one
held session takes 1/B of it; ℓ = host-link bytes per second (GPU ↔ host, one direction); h = host memory
USD per byte-second; ΔP = prefill seconds of recomputing the L cached tokens (full prefill − prefill with
the prefix cached, both from `core.roofline.prefill`).

    keep     = u · g / B                    the HBM is a batch slot other requests could have used
    offload  = h · b · g + u · (2b/ℓ) / B   host memory for the gap, plus the slot held while copying out and in
    drop     = u · ΔP                       recompute the prefix at the next call (the deployment is busy for ΔP)

Break-even gaps (closed forms; ∞ where the first never becomes dearer than the second):

    keep = drop      at  g = ΔP · B
    keep = offload   at  g = (2b/ℓ)·(u/B) ÷ (u/B − h·b)          (∞ if u/B ≤ h·b: host memory is dearer than HBM)
    offload = drop   at  g = (u·ΔP − u·(2b/ℓ)/B) ÷ (h·b)          (0 if the copies alone cost more than recomputing)

Assumptions: the deployment would otherwise be full (what a held slot loses is a paying request); copies run
over a dedicated link, one direction at a time, at ℓ; the reload's latency b/ℓ and the recompute's ΔP delay
the next call but are priced only as the deployment time they take.
"""

from __future__ import annotations

from typing import Any

import numpy as np

OPTIONS = ("keep", "offload", "drop")


def keep_usd(usd_per_s: float, gap_s: Any, slots: Any) -> np.ndarray:
    """Keep resident: u · g / B."""
    return usd_per_s * np.asarray(gap_s, dtype=np.float64) / slots


def offload_usd(usd_per_s: float, gap_s: Any, slots: Any, kv_bytes: Any, host_usd_per_byte_s: float,
                host_bytes_per_s: float) -> np.ndarray:
    """Offload to host: h · b · g + u · (2b/ℓ) / B."""
    b = np.asarray(kv_bytes, dtype=np.float64)
    return (
        host_usd_per_byte_s * b * np.asarray(gap_s, dtype=np.float64) + usd_per_s * (2 * b / host_bytes_per_s) / slots
    )


def drop_usd(usd_per_s: float, recompute_s: Any) -> np.ndarray:
    """Drop and recompute: u · ΔP."""
    return usd_per_s * np.asarray(recompute_s, dtype=np.float64)


def break_even_keep_drop_s(recompute_s: Any, slots: Any) -> np.ndarray:
    """g at which keeping costs what recomputing does: ΔP · B."""
    return np.asarray(recompute_s, dtype=np.float64) * slots


def break_even_keep_offload_s(usd_per_s: float, slots: Any, kv_bytes: Any, host_usd_per_byte_s: float,
                              host_bytes_per_s: float) -> np.ndarray:
    """g at which keeping costs what offloading does: (2b/ℓ)·(u/B) ÷ (u/B − h·b); ∞ if u/B ≤ h·b."""
    b = np.asarray(kv_bytes, dtype=np.float64)
    slot_rate = usd_per_s / np.asarray(slots, dtype=np.float64)
    margin = slot_rate - host_usd_per_byte_s * b
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(margin > 0, (2 * b / host_bytes_per_s) * slot_rate / margin, np.inf)


def break_even_offload_drop_s(usd_per_s: float, recompute_s: Any, slots: Any, kv_bytes: Any,
                              host_usd_per_byte_s: float, host_bytes_per_s: float) -> np.ndarray:
    """g at which offloading costs what recomputing does: (u·ΔP − u·(2b/ℓ)/B) ÷ (h·b); 0 if that is negative."""
    b = np.asarray(kv_bytes, dtype=np.float64)
    spare = usd_per_s * (np.asarray(recompute_s, dtype=np.float64) - (2 * b / host_bytes_per_s) / slots)
    hb = host_usd_per_byte_s * b
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(hb > 0, np.maximum(spare, 0) / hb, np.where(spare > 0, np.inf, 0.0))
