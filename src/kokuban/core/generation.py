"""A whole generation: B requests from the first prefill token to the last output token, timed by the
roofline's steps and priced by the deployment's hourly rate."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from kokuban.core import cost, roofline
from kokuban.specs.deployment import Deployment


@dataclass(frozen=True)
class Generation:
    """B requests of P prompt tokens and O output tokens run together from prefill to the last token.

    ttft = prefill(B, P); then O − 1 decode steps, step i attending to P + i tokens;
    total = ttft + Σ steps; output tokens/s = B·O ÷ total (all requests together).
    """

    batch: int
    prompt_tokens: int
    output_tokens: int
    ttft_s: float
    decode_time_s: float
    total_time_s: float
    output_tokens_per_s: float
    usd_per_request: float

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def generation(dep: Deployment, batch: int, prompt_tokens: int, output_tokens: int) -> Generation:
    """Time a batch from the first prefill token to the last output token (see `Generation`)."""
    ttft = float(roofline.prefill(dep, batch, prompt_tokens).step_time_s)
    contexts = prompt_tokens + np.arange(1, output_tokens)
    decode = float(np.sum(roofline.decode_step(dep, batch, contexts).step_time_s)) if output_tokens > 1 else 0.0
    total = ttft + decode
    return Generation(
        batch=batch, prompt_tokens=prompt_tokens, output_tokens=output_tokens, ttft_s=ttft, decode_time_s=decode,
        total_time_s=total, output_tokens_per_s=batch * output_tokens / total,
        usd_per_request=cost.usd_of_seconds(dep, total) / batch,
    )
