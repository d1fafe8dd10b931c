"""The time of one serving step that mixes prefill chunks and decodes, from the core's step model.

A continuous-batching step runs, in one forward pass, T tokens in total: one token for each decoding
request and a chunk [c0, c1) of the prompt of each prefilling request. Its terms are the core's:

    token terms (weights read, linear FLOPs, communication, overhead — the fixed step cost, and under the kernel
    profile the MoE layers' dispatch time, which grows with T)        = roofline.decode_step(dep, T, 0)
                                          less the LM head of every token
    LM heads                              one per sampled position: each decode, each chunk that
                                          completes its prompt
    a decode at context c                 adds the attention FLOPs and KV read of decode_step(dep, 1, c)
    a prefill chunk [c0, c1)              adds the attention FLOPs and KV traffic of
                                          prefill(dep, 1, c1, cached_tokens=c0): causal(c1) − causal(c0)
                                          query-key pairs, kv(c1) bytes (new KV written, cached KV read)
    step time = Step.step_time_s          (the core's [max(linear, weights) + max(attention, KV)
                                          + comm]·(1 + ℓ) + overhead, ℓ a TP group's barrier wait)

Each of those per-request terms is linear in its own inputs, so the differences above are exact; the
table lookups (`StepModel`) are the core's functions evaluated once on every integer context and every
token count, so a simulated step costs a few array gathers, not a call into the physics. A batch of
decodes only reproduces `roofline.decode_step_mixed`, and one chunk [0, T) reproduces
`roofline.prefill(dep, 1, c1, c0)` (tests check both).

For speed the engine adds the terms itself (`decode_terms` + `chunk_terms`, or several decode steps at
once with `decode_run_s`, and a count of LM heads) and turns them into seconds with `seconds` — `Step.step_time_s` on
plain Python floats, with the token terms read from lists (a NumPy call on a scalar costs ~1 µs, the
float arithmetic ~0.1 µs; a test checks `seconds` against the core's `Step` on both communication modes).

The engine sees only `StepTimeModel`, the few methods it calls; `StepModel` (the core's roofline) is one
implementation. Another (a measured engine profile, a different cost model) implements the same methods: the
two per-request terms are whatever additive quantities it needs (for `StepModel`, attention seconds and KV
seconds), and `seconds` turns a step's token count, LM heads and summed terms into its duration.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from kokuban.core.roofline import Step, decode_step, lm_head_time_s, prefill, tp_sync_loss
from kokuban.specs.deployment import Deployment


class StepTimeModel(Protocol):
    """What the engine asks of a step-time model (see the module docstring). Terms are pairs of floats that add
    over requests; `seconds` combines them. Every call must be a pure function of its arguments."""

    def decode_terms(self, ctx: np.ndarray) -> tuple[float, float]:
        """Summed terms of decodes at contexts `ctx` (one token each, attending to c tokens)."""
        ...

    def chunk_terms(self, chunk_start: np.ndarray, chunk_end: np.ndarray) -> tuple[float, float]:
        """Summed terms of prefill chunks [start, end) (tokens start…end − 1 computed, start…end in the KV)."""
        ...

    def one_chunk_terms(self, chunk_start: int, chunk_end: int) -> tuple[float, float]:
        """`chunk_terms` of one chunk, on Python ints (the engine's scalar path)."""
        ...

    def seconds(self, tokens: int, heads: int, attn_s: float, kv_s: float) -> float:
        """Duration of a step of `tokens` tokens, `heads` of them sampled, with summed terms (attn_s, kv_s)."""
        ...

    def decode_run_s(self, ctx: np.ndarray) -> np.ndarray:
        """Durations of several pure-decode steps: `ctx` is (steps, requests), each row one step's contexts,
        every token sampled. Must equal `seconds(n, n, *decode_terms(row))` row by row, bit for bit."""
        ...


class StepModel:
    """Lookup tables of the core's step terms for token counts 0…max_tokens and contexts 0…max_context."""

    def __init__(self, dep: Deployment, max_tokens: int, max_context: int) -> None:
        self.dep = dep
        t = np.arange(max_tokens + 1, dtype=np.float64)
        base = decode_step(dep, t, 0.0)  # token terms only: no context, no attention, no KV; t LM heads
        self.lm_head_s = lm_head_time_s(dep)
        self.body_compute_s = np.asarray(base.linear_compute_s - t * self.lm_head_s, dtype=np.float64)
        self.weights_s = np.asarray(base.weights_s, dtype=np.float64)
        self.comm_s = np.asarray(base.comm_s, dtype=np.float64)
        # per token count: the fixed step overhead, plus the MoE layers' dispatch time under the kernel profile
        self.overhead_s = np.broadcast_to(np.asarray(base.overhead_s, dtype=np.float64), t.shape)
        c = np.arange(max_context + 1, dtype=np.float64)
        one = decode_step(dep, 1.0, c)
        self.decode_attn_s = np.asarray(one.attn_compute_s, dtype=np.float64)
        self.decode_kv_s = np.asarray(one.kv_s, dtype=np.float64)
        pre = prefill(dep, 1.0, c[1:])  # a whole prompt of c ≥ 1 tokens
        self.prefill_attn_s = np.concatenate([[0.0], pre.attn_compute_s])  # causal attention of c tokens
        self.prefill_kv_s = np.concatenate([[0.0], pre.kv_s])  # KV traffic of a prompt reaching c tokens
        self.comm_overlapped = bool(dep.overlap_comm)
        self.kernel_overlap = float(dep.efficiency.overlap)  # Step.kernel_s's overlap of compute and memory
        self.sync_loss = tp_sync_loss(dep)  # Step.sync_loss: a TP group's wait at its barriers
        self.max_tokens, self.max_context = int(max_tokens), int(max_context)
        # the token terms as lists: scalar lookups without NumPy's per-call cost
        self.body_l, self.weights_l = self.body_compute_s.tolist(), self.weights_s.tolist()
        self.comm_l, self.overhead_l = self.comm_s.tolist(), self.overhead_s.tolist()
        self.prefill_attn_l, self.prefill_kv_l = self.prefill_attn_s.tolist(), self.prefill_kv_s.tolist()

    def decode_terms(self, ctx: np.ndarray) -> tuple[float, float]:
        """(attention compute seconds, KV seconds) of decodes at contexts `ctx`: Σ attn[c], Σ kv[c]."""
        return float(self.decode_attn_s[ctx].sum()), float(self.decode_kv_s[ctx].sum())

    def decode_run_s(self, ctx: np.ndarray) -> np.ndarray:
        """Seconds of several decode steps at once: `ctx` is (steps, requests); the terms summed along each row
        (`decode_terms` of each step), then `run_seconds`."""
        return self.run_seconds(ctx.shape[1], self.decode_attn_s[ctx].sum(axis=1), self.decode_kv_s[ctx].sum(axis=1))

    def chunk_terms(self, chunk_start: np.ndarray, chunk_end: np.ndarray) -> tuple[float, float]:
        """(attention compute seconds, KV seconds) of prefill chunks [start, end):
        Σ (attn_prefill[end] − attn_prefill[start]), Σ kv_prefill[end]."""
        return (float((self.prefill_attn_s[chunk_end] - self.prefill_attn_s[chunk_start]).sum()),
                float(self.prefill_kv_s[chunk_end].sum()))

    def one_chunk_terms(self, chunk_start: int, chunk_end: int) -> tuple[float, float]:
        """`chunk_terms` of one chunk on Python ints: the table differences as floats (no NumPy call)."""
        return self.prefill_attn_l[chunk_end] - self.prefill_attn_l[chunk_start], self.prefill_kv_l[chunk_end]

    def terms(self, decode_ctx: np.ndarray, chunk_start: np.ndarray, chunk_end: np.ndarray) -> tuple[float, float]:
        """(attention compute seconds, KV seconds) of a step's per-request work."""
        attn = kv = 0.0
        if decode_ctx.size:
            attn, kv = self.decode_terms(decode_ctx)
        if chunk_start.size:
            attn_c, kv_c = self.chunk_terms(chunk_start, chunk_end)
            attn += attn_c
            kv += kv_c
        return attn, kv

    def seconds(self, tokens: int, heads: int, attn_s: float, kv_s: float) -> float:
        """Seconds of a step of `tokens` tokens, `heads` of them sampled (LM heads), with `attn_s` of
        attention compute and `kv_s` of KV traffic: the core's `Step.step_time_s` on floats,
        [kernel(body + heads·LM head, weights) + kernel(attention, KV) + comm]·(1 + sync loss) + overhead, or with
        overlapped communication max(that roofline part, comm)·(1 + sync loss) + overhead (kernel(c, m) = max +
        (1 − overlap)·min)."""
        lin, w = self.body_l[tokens] + heads * self.lm_head_s, self.weights_l[tokens]
        shown = 1.0 - self.kernel_overlap  # each kernel as `Step.kernel_s` rounds it: max + shown·min, then their sum
        roof = (max(lin, w) + shown * min(lin, w)) + (max(attn_s, kv_s) + shown * min(attn_s, kv_s))
        body = max(roof, self.comm_l[tokens]) if self.comm_overlapped else roof + self.comm_l[tokens]
        return body * (1.0 + self.sync_loss) + self.overhead_l[tokens]

    def run_seconds(self, tokens: int, attn_s: np.ndarray, kv_s: np.ndarray) -> np.ndarray:
        """Seconds of several decode steps of `tokens` requests each (every token sampled), with attention
        compute `attn_s` and KV traffic `kv_s` (arrays, one entry a step): the core's `Step.step_time_s`,
        vectorised."""
        return self._step(tokens, tokens, attn_s, kv_s).step_time_s

    def _step(self, tokens: int, heads: float, attn_s: object, kv_s: object) -> Step:
        linear = self.body_l[tokens] + heads * self.lm_head_s
        return Step(
            tokens=float(tokens), batch=float(heads), flops=np.nan, weight_bytes=np.nan, kv_bytes=np.nan,
            comm_bytes=np.nan, experts_touched=np.nan, compute_s=linear + attn_s, attn_compute_s=attn_s,
            weights_s=self.weights_l[tokens], kv_s=kv_s, comm_s=self.comm_l[tokens],
            overhead_s=self.overhead_l[tokens],
            comm_overlapped=self.comm_overlapped, overlap=self.kernel_overlap, sync_loss=self.sync_loss,
        )

    def step(self, tokens: int, decode_ctx: np.ndarray, chunk_start: np.ndarray, chunk_end: np.ndarray,
             finals: int | None = None) -> Step:
        """The core's `Step` for T = `tokens` tokens: decodes at `decode_ctx`, chunks [start, end), `finals`
        of which complete their prompt (default: all)."""
        heads = decode_ctx.size + (chunk_start.size if finals is None else finals)
        return self._step(tokens, heads, *self.terms(decode_ctx, chunk_start, chunk_end))

    def step_time_s(self, tokens: int, decode_ctx: np.ndarray, chunk_start: np.ndarray, chunk_end: np.ndarray,
                    finals: int | None = None) -> float:
        """Seconds of the step (the core's `Step.step_time_s` of `step(...)`)."""
        return float(self.step(tokens, decode_ctx, chunk_start, chunk_end, finals).step_time_s)
