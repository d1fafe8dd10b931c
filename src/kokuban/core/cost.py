"""Money: from the price of an accelerator-hour to the price of a token, and its three parts.

    USD per second     = N GPUs × price per GPU-hour ÷ 3600
    USD per M output   = USD/s × decode step time ÷ batch × 10⁶
    USD per M input    = USD/s × prefill time ÷ (batch × prompt tokens) × 10⁶

    USD of a span      = USD/s × seconds;   USD per M tokens = USD ÷ tokens × 10⁶
    USD of API tokens  = tokens × USD per M ÷ 10⁶

The three-part split of a decode token: the step is [max(linear compute, weights) + max(attention
compute, KV) + comm]·(1 + ℓ) + overhead, each max over two overlapping times (`Step.kernel_s`), ℓ a TP group's
barrier wait (`Step.sync_s`), which the first four parts share in proportion. Inside each
kernel, each part's share is its raw time scaled by the kernel's time ÷ (a + b). With communication
overlapped (`Step.comm_overlapped`: roof and comm run together, max(roof, comm)) the roof's parts and
comm are each scaled by max(roof, comm) ÷ (roof + comm); otherwise comm is charged as it is; overhead
always is. The parts add up to the token's cost exactly. Weight read is shared by the batch (÷ B),
compute and KV are per request.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from kokuban.core.roofline import Step
from kokuban.specs.deployment import Deployment

PER_MILLION = 1e6


def usd_of_seconds(dep: Deployment, seconds: Any) -> Any:
    """What `seconds` of the whole deployment cost: USD/s × seconds."""
    return dep.usd_per_s * seconds


def usd_per_m_tokens(usd: Any, tokens: Any) -> Any:
    """A cost spread over tokens, per million: USD ÷ tokens × 10⁶."""
    return usd / tokens * PER_MILLION


def usd_for_tokens(tokens: Any, usd_per_m: Any) -> Any:
    """What `tokens` cost at a price of `usd_per_m` per million tokens: tokens × price ÷ 10⁶."""
    return tokens * usd_per_m / PER_MILLION


def usd_per_m_output(dep: Deployment, step: Step) -> Any:
    """Cost of a million decode tokens at this step: USD/s × step time ÷ batch × 10⁶."""
    return usd_per_m_tokens(usd_of_seconds(dep, step.step_time_s), step.batch)


def usd_per_m_input(dep: Deployment, prefill_step: Step) -> Any:
    """Cost of a million prompt tokens at this prefill: USD/s × time ÷ tokens × 10⁶."""
    return usd_per_m_tokens(usd_of_seconds(dep, prefill_step.step_time_s), prefill_step.tokens)


def usd_per_byte_s(usd_per_gb_hour: Any) -> Any:
    """A memory price per GB-hour (GB = 10⁹ bytes) as USD per byte-second: price ÷ 10⁹ ÷ 3600."""
    return usd_per_gb_hour / 1e9 / 3600


def cost_ratio(usd: Any, usd_base: Any, seconds: Any, seconds_base: Any) -> Any:
    """A cost ÷ a base cost: usd ÷ usd_base. Each is USD/s × the seconds it is made of, so the price cancels;
    where usd_base is 0 (a free accelerator: 0 ÷ 0) the ratio of those seconds, the same number, is returned."""
    usd, usd_base = np.asarray(usd, dtype=np.float64), np.asarray(usd_base, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(usd_base > 0, usd / usd_base, np.asarray(seconds, dtype=np.float64) / seconds_base)


def decode_split_usd_per_m(dep: Deployment, step: Step, weights_first: bool = False) -> dict[str, Any]:
    """The cost of a decode token split into compute, weight read, KV read, comm and overhead (USD / M); a TP group's
    barrier wait (`Step.sync_s`, a share of the body) is spread over the first four in proportion.

    `weights_first` charges the weight multiplies' kernel differently: the weight read its whole time w, the
    linear compute only what the kernel takes beyond it, linear_s − w ((1 − overlap)·c while the read bounds the
    kernel, c − overlap·w once compute does; continuous where the bound flips). The in-proportion share moves
    wherever the hidden compute time c jumps while the kernel's time does not (the GEMV → tiled switch at
    M = gemv_max_tokens + 1, `specs.kernels.gemm_fraction`); this one moves only as the kernel's time does. The
    batch curve's shared / per-request split uses it (`economics.batch.batch_curve`)."""
    def scale(kernel_s: Any, a: Any, b: Any) -> np.ndarray:  # kernel time ÷ (a + b), 0 where both are 0
        raw = np.asarray(a + b, dtype=np.float64)
        if raw.size and raw.min() > 0:  # no zero to guard: the plain division, the same numbers
            return np.asarray(kernel_s, dtype=np.float64) / raw
        return np.divide(np.asarray(kernel_s, dtype=np.float64), raw, out=np.zeros_like(raw), where=raw > 0)

    lin = 1.0 if weights_first else scale(step.linear_s, step.linear_compute_s, step.weights_s)
    attn = scale(step.attention_s, step.attn_compute_s, step.kv_s)
    per_token_usd = usd_per_m_tokens(usd_of_seconds(dep, 1.0), np.asarray(step.batch, dtype=np.float64))
    body_usd = per_token_usd * (1.0 + step.sync_loss) if step.sync_loss else per_token_usd  # the barrier's share
    comm = body_usd * step.comm_s
    if step.comm_overlapped:  # otherwise the shared scale is 1 and multiplying by it would change nothing
        shared = scale(np.maximum(step.roof_s, step.comm_s), step.roof_s, step.comm_s)
        lin, attn, comm = lin * shared, attn * shared, comm * shared
    # weights first: the linear compute is what the kernel takes beyond the read, at the read's scale
    lin_compute = (step.linear_s - step.weights_s) * lin if weights_first else step.linear_compute_s * lin
    return {
        "compute": body_usd * (lin_compute + step.attn_compute_s * attn),
        "weights": body_usd * step.weights_s * lin,
        "kv": body_usd * step.kv_s * attn,
        "comm": comm,
        "overhead": per_token_usd * step.overhead_s,
    }
