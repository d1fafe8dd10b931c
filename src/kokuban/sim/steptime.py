"""The time of one serving step that mixes prefill chunks and decodes, from the core's step model.

A continuous-batching step runs, in one forward pass, T tokens in total: one token for each decoding
request and a chunk [c0, c1) of the prompt of each prefilling request. Its terms are the core's:

    token terms (weights read, linear FLOPs, communication, overhead)  = roofline.decode_step(dep, T, 0)
    a decode at context c                 adds the attention FLOPs and KV read of decode_step(dep, 1, c)
    a prefill chunk [c0, c1)              adds the attention FLOPs and KV traffic of
                                          prefill(dep, 1, c1, cached_tokens=c0): causal(c1) − causal(c0)
                                          query-key pairs, kv(c1) bytes (new KV written, cached KV read)
    step time = Step.step_time_s          (the core's max(compute, weights + KV) + comm + overhead)

Each of those per-request terms is linear in its own inputs, so the differences above are exact; the
table lookups (`StepModel`) are the core's functions evaluated once on every integer context and every
token count, so a simulated step costs a few array gathers, not a call into the physics. A batch of
decodes only reproduces `roofline.decode_step_mixed`, and one chunk [0, T) reproduces
`roofline.prefill(dep, 1, c1, c0)` (tests check both).
"""

from __future__ import annotations

import numpy as np

from ..deployment import Deployment
from ..roofline import Step, decode_step, prefill


class _Terms:
    """The four times a step's length depends on; `step_time_s` is the core's own `Step` property."""

    __slots__ = ("comm_overlapped", "comm_s", "compute_s", "kv_s", "overhead_s", "weights_s")
    memory_s = Step.memory_s
    step_time_s = Step.step_time_s

    def __init__(self, compute_s: float, weights_s: float, kv_s: float, comm_s: float, overhead_s: float,
                 comm_overlapped: bool) -> None:
        self.compute_s, self.weights_s, self.kv_s, self.comm_s, self.overhead_s = (
            compute_s, weights_s, kv_s, comm_s, overhead_s)
        self.comm_overlapped = comm_overlapped


class StepModel:
    """Lookup tables of the core's step terms for token counts 0…max_tokens and contexts 0…max_context."""

    def __init__(self, dep: Deployment, max_tokens: int, max_context: int) -> None:
        self.dep = dep
        t = np.arange(max_tokens + 1, dtype=np.float64)
        base = decode_step(dep, t, 0.0)  # token terms only: no context, no attention, no KV
        self.linear_compute_s = np.asarray(base.compute_s, dtype=np.float64)
        self.weights_s = np.asarray(base.weights_s, dtype=np.float64)
        self.comm_s = np.asarray(base.comm_s, dtype=np.float64)
        self.overhead_s = float(np.asarray(base.overhead_s).ravel()[0])
        c = np.arange(max_context + 1, dtype=np.float64)
        one = decode_step(dep, 1.0, c)
        self.decode_attn_s = np.asarray(one.compute_s - one.compute_s[0], dtype=np.float64)
        self.decode_kv_s = np.asarray(one.kv_s, dtype=np.float64)
        pre = prefill(dep, 1.0, c[1:])  # a whole prompt of c ≥ 1 tokens
        linear_c = decode_step(dep, c[1:], 0.0).compute_s  # the linear FLOPs of those c tokens
        self.prefill_attn_s = np.concatenate([[0.0], pre.compute_s - linear_c])  # causal attention of c tokens
        self.prefill_kv_s = np.concatenate([[0.0], pre.kv_s])  # KV traffic of a prompt reaching c tokens
        self.overlap = bool(dep.overlap_comm)
        self.max_tokens, self.max_context = int(max_tokens), int(max_context)
        self.weights_l, self.comm_l = self.weights_s.tolist(), self.comm_s.tolist()  # fast scalar lookups

    def terms(self, tokens: int, decode_ctx: np.ndarray, chunk_start: np.ndarray, chunk_end: np.ndarray
              ) -> tuple[float, float]:
        """(compute seconds, KV seconds) of a step's per-request work."""
        compute = self.linear_compute_s[tokens]
        kv = 0.0
        if decode_ctx.size:
            compute += self.decode_attn_s[decode_ctx].sum()
            kv += self.decode_kv_s[decode_ctx].sum()
        if chunk_start.size:
            compute += (self.prefill_attn_s[chunk_end] - self.prefill_attn_s[chunk_start]).sum()
            kv += self.prefill_kv_s[chunk_end].sum()
        return float(compute), float(kv)

    def step(self, tokens: int, decode_ctx: np.ndarray, chunk_start: np.ndarray, chunk_end: np.ndarray) -> Step:
        """The core's `Step` for T = `tokens` tokens: decodes at `decode_ctx`, chunks [start, end)."""
        compute, kv = self.terms(tokens, decode_ctx, chunk_start, chunk_end)
        return Step(
            tokens=float(tokens), batch=float(decode_ctx.size + chunk_start.size), flops=np.nan, weight_bytes=np.nan,
            kv_bytes=np.nan, comm_bytes=np.nan, experts_touched=np.nan, compute_s=compute,
            weights_s=float(self.weights_s[tokens]), kv_s=kv, comm_s=float(self.comm_s[tokens]),
            overhead_s=self.overhead_s, comm_overlapped=self.overlap,
        )

    def step_time_s(self, tokens: int, decode_ctx: np.ndarray, chunk_start: np.ndarray, chunk_end: np.ndarray
                    ) -> float:
        """Seconds of the step (the core's `Step.step_time_s` of `step(...)`)."""
        compute, kv = self.terms(tokens, decode_ctx, chunk_start, chunk_end)
        return float(_Terms(compute, self.weights_l[tokens], kv, self.comm_l[tokens], self.overhead_s,
                            self.overlap).step_time_s)
