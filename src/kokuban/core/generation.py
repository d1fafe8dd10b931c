"""A whole generation: B requests from the first prefill token to the last output token, timed by the
roofline's steps and priced by the deployment's hourly rate; and the steady-state step of in-flight batching,
where the prompts are prefilled inside the decode steps (`inflight_step`)."""

from __future__ import annotations

from dataclasses import dataclass, replace
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


@dataclass(frozen=True)
class InflightStep:
    """The steady-state step of in-flight batching (`inflight_step`): `terms` sums its work in one core `Step`
    (the weight multiplies of every token fused, the attention of both kinds added); `decode` and `prefill` are
    the attention work of its decodes and of its prompts.

    step time = kernel(linear compute, weights) + kernel(decode attention, decode KV)
                + kernel(prefill attention, prefill KV) + comm  (max(roofline, comm) if overlapped)
                + a TP group's barrier wait (`Step.sync_s`) + overhead
    — the two attention kernels run one after the other (TensorRT-LLM's context and generation attention are
    separate kernels), so a prompt's compute-bound attention does not hide under the decodes' KV read. (The
    simulator's mixed step, `sim.steptime.StepModel`, sums both kinds into one attention kernel; on the published
    rows the two-kernel form fitted better: 43 rows, kernel profile, 15.2 % against 17.6 % median, 2026-12-03.)"""

    terms: roofline.Step
    decode: roofline.Step
    prefill: roofline.Step

    @property
    def body_s(self) -> Any:
        """The kernels' part: roofline + comm (max of the two if overlapped), as `Step.body_s`."""
        t = self.terms
        roof = t.linear_s + self.decode.attention_s + self.prefill.attention_s
        return np.maximum(roof, t.comm_s) if t.comm_overlapped else roof + t.comm_s

    @property
    def sync_s(self) -> Any:
        """A TP group's barrier wait: sync loss × body (`Step.sync_s`)."""
        return self.terms.sync_loss * self.body_s

    @property
    def step_time_s(self) -> Any:
        """body·(1 + sync loss) + overhead (`Step.step_time_s`)."""
        return self.body_s * (1.0 + self.terms.sync_loss) + self.terms.overhead_s

    @property
    def bound(self) -> Any:
        """The bound of the summed terms (`terms.bound`)."""
        return self.terms.bound

    def as_dict(self) -> dict[str, Any]:
        """`Step.as_dict` of the summed terms, with this step's time."""
        out = self.terms.as_dict() | {"step_time_s": float(np.asarray(self.step_time_s))}
        out["breakdown"]["sync_s"] = float(np.asarray(self.sync_s))
        return out


def inflight_step(dep: Deployment, batch: Any, prompt_tokens: Any, output_tokens: Any) -> InflightStep:
    """The average step of in-flight (continuous) batching in steady state: `batch` requests of P prompt and
    O output tokens, each step emitting one token for each of the B requests, the prompts of new requests
    prefilled inside the same steps (chunked prefill fused with decode, as TensorRT-LLM, vLLM and SGLang do).

    A request puts P + O − 1 tokens through the weights (its prompt, then O − 1 decodes) and samples O tokens, so
    per step (B tokens out, B/O requests retiring and as many arriving):
        decode tokens  B·(O − 1)/O at the mean context P + O/2  → their attention and KV read
        prefill tokens B·P/O: B/O whole prompts of P             → their causal attention and KV write
        T = B·(O − 1 + P)/O tokens through the weights, B LM heads, one weight read, one set of collectives
        (for T tokens) and one step overhead.
    The weight multiplies of all T tokens are one pass: their FLOPs add, the weight read is shared; the
    attention of decodes and of prompts are two kernels (`InflightStep`). Throughput = B ÷ step time.
    Assumes a steady state (arrivals keep B requests in flight; ramp-up and drain are ignored), every prompt
    prefilled in one step's chunk (its cached-prefix re-reads of a multi-chunk prefill are left out), and the
    decodes all at the mean context (exact for attention that is linear in context, i.e. no sliding window).
    """
    b = np.asarray(batch, dtype=np.float64)
    p, o = np.asarray(prompt_tokens, dtype=np.float64), np.asarray(output_tokens, dtype=np.float64)
    decodes, prompts = b * (o - 1) / o, b / o
    tokens = decodes + prompts * p
    body = roofline.decode_step(dep, tokens, 0.0)  # token terms: weights, linear FLOPs, comm; `tokens` LM heads
    dec = roofline.decode_step(dep, decodes, p + o / 2)
    pre = roofline.prefill(dep, prompts, p)
    extra_heads = tokens - b
    linear_s = body.linear_compute_s - extra_heads * roofline.lm_head_time_s(dep)
    linear_flops = body.flops - body.attn_flops - extra_heads * 2.0 * dep.model.params_lm_head
    attn_s, attn_flops = dec.attn_compute_s + pre.attn_compute_s, dec.attn_flops + pre.attn_flops
    terms = replace(body, batch=b, flops=linear_flops + attn_flops, attn_flops=attn_flops, compute_s=linear_s + attn_s,
                    attn_compute_s=attn_s, kv_bytes=dec.kv_bytes + pre.kv_bytes, kv_s=dec.kv_s + pre.kv_s)
    return InflightStep(terms=terms, decode=dec, prefill=pre)
