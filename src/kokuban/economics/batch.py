"""Batch economics: what a token costs as the batch grows, where decode turns compute-bound, and
why an output token costs more than an input token.

Everything here is a thin, vectorised layer over the core: each row of a curve is one
`roofline.decode_step` priced by `cost`, so a row equals `estimate()` for the same configuration.
The only formula of its own is the blackboard crossover (`compute_bound_batch`), kept as a pure
function so the curve can be checked against it by hand.

    per-token cost = USD/s × step ÷ B,
    step = [max(B·c, w(B)) + max(B·a, B·k) + comm]·(1 + ℓ) + overhead   (the core's two kernels, overlap 1;
                                                                         ℓ a TP group's barrier wait on NVLink)
      w: weight read (shared by the batch, so ÷ B per token)
      c: multiply compute per request;  a, k: attention compute and KV read per request

The weight multiplies and the attention run one after the other, so the KV read never hides under the
multiplies: the crossover (c·B = w(B)) does not move with the context, and decode attention, a ≪ k, is
KV-bound at every batch. Communication splits into the collectives' fixed latency (shared, per step) and
their bytes (per request); with `Efficiency.overlap` < 1 each max also pays part of the shorter time.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd

from kokuban.core import cost, memory, roofline
from kokuban.core.intensity import ridge_intensity
from kokuban.errors import KokubanError, require_positive
from kokuban.specs.deployment import Deployment

#: The parts of a decode token (the core's split) and how a batch divides them: a shared part is paid
#: once per step (÷ B per token), a per-request part once per token.
PARTS = ("weights", "compute", "kv", "comm", "overhead")
SHARED = ("weights", "comm_latency", "overhead")
PER_REQUEST = ("compute", "kv", "comm_bytes")


# ---- one table for every decode point ------------------------------------------------------------
#: A sweep is priced this many points at a time: the dozens of temporaries of one block stay in the CPU's cache,
#: where those of a million points would each make a round trip to memory (element-wise arithmetic, so the same
#: numbers).
BLOCK_POINTS = 32768


def decode_columns(dep: Deployment, batch: Any, context: Any, tables: bool = True) -> dict[str, np.ndarray]:
    """The columns of a decode point (arrays broadcast): the core's step, per token, priced.

    `*_s_per_token` is that term's time on the busiest GPU divided by the batch (the raw term, before
    compute and memory overlap; `sync` a TP group's barrier wait, `Step.sync_s`); `usd_per_m_output_<part>` is the
    core's overlap-aware split, which sums to `usd_per_m_output`. Tokens/s: per user 1 ÷ step, in total B ÷ step,
    per GPU B ÷ step ÷ N.

    More than `BLOCK_POINTS` points are priced block by block. When the batches are whole numbers 1 … top
    with top at most half the number of points, a block of whole batches takes its step from
    `roofline.decode_table` (the token terms once per batch, looked up; attention and KV from `decode_step` at
    batch 1) instead of `roofline.decode_step`: equal to it up to rounding (a few ulp). `tables=False` always
    calls `roofline.decode_step`.
    """
    b, ctx = np.broadcast_arrays(np.asarray(batch, dtype=np.float64), np.asarray(context, dtype=np.float64))
    if b.size <= BLOCK_POINTS:
        cols = _priced(dep, b, roofline.decode_step(dep, b, ctx))
    else:
        cols = _priced_by_block(dep, b, ctx, _sweep_table(dep, b, ctx) if tables else None)
    cols["bound"] = np.asarray(roofline.bound_names(cols["bound"]))  # positions named once, for every point
    return {"batch": b, "context": ctx} | cols


def _priced_by_block(dep: Deployment, b: np.ndarray, ctx: np.ndarray,
                     table: roofline.DecodeTable | None) -> dict[str, np.ndarray]:
    """`_priced` of many points, `BLOCK_POINTS` at a time, each block's step from `table` when it can."""
    flat_b, flat_ctx = b.ravel(), ctx.ravel()
    cols: dict[str, np.ndarray] = {}
    for start in range(0, b.size, BLOCK_POINTS):
        part = slice(start, start + BLOCK_POINTS)
        bp, cp = flat_b[part], flat_ctx[part]
        step = None if table is None else table.step(bp, cp)
        step = roofline.decode_step(dep, bp, cp) if step is None else step
        if cols:
            _priced(dep, bp, step, {name: col[part] for name, col in cols.items()})
            continue
        for name, value in _priced(dep, bp, step).items():  # the first block sets each column's type
            cols[name] = np.empty(b.size, dtype=value.dtype)
            cols[name][part] = value
    return {name: value.reshape(b.shape) for name, value in cols.items()}


def _sweep_table(dep: Deployment, b: np.ndarray, ctx: np.ndarray) -> roofline.DecodeTable | None:
    """The core's decode table for a sweep, when it is worth building: batches ≥ 1, the largest at most half
    the number of points (a block whose batches are not whole numbers calls `decode_step` instead)."""
    top = b.max()
    if not (b.min() >= 1 and top <= b.size / 2):  # also False for NaN
        return None
    return roofline.decode_table(dep, int(top))


def _priced(dep: Deployment, b: np.ndarray, step: roofline.Step,
            out: dict[str, np.ndarray] | None = None) -> dict[str, np.ndarray]:
    """`decode_columns` but batch and context, of the points of batch `b` whose step is `step`: its times per
    token, tokens/s and prices. Written into `out`'s arrays (one block of a sweep's columns) when given."""
    cols: dict[str, np.ndarray] = {}

    def core(name: str, value: np.ndarray) -> None:  # a column the core computed: kept, or copied into its place
        if out is None:
            cols[name] = value
        else:
            np.copyto(out[name], value)

    def into(name: str) -> np.ndarray | None:  # where a column computed here goes (None: a new array)
        return None if out is None else out[name]

    t = np.asarray(step.step_time_s, dtype=np.float64)
    core("bound", step.bound_index)  # positions in roofline.BOUNDS: `decode_columns` names them
    core("step_time_s", t)
    for term, seconds in (("compute", step.compute_s), ("weights", step.weights_s), ("kv", step.kv_s),
                          ("comm", step.comm_s), ("sync", step.sync_s), ("overhead", step.overhead_s)):
        cols[f"{term}_s_per_token"] = np.divide(seconds, b, out=into(f"{term}_s_per_token"))
    cols["tokens_per_s_per_user"] = np.divide(1.0, t, out=into("tokens_per_s_per_user"))
    cols["tokens_per_s"] = np.divide(b, t, out=into("tokens_per_s"))
    cols["tokens_per_s_per_gpu"] = np.divide(cols["tokens_per_s"], dep.num_gpus, out=into("tokens_per_s_per_gpu"))
    core("usd_per_m_output", np.asarray(cost.usd_per_m_output(dep, step), dtype=np.float64))
    for part, value in cost.decode_split_usd_per_m(dep, step).items():
        core(f"usd_per_m_output_{part}", np.asarray(value, dtype=np.float64))
    return cols if out is None else out


def decode_frame(dep: Deployment, batch: Any, context: Any) -> pd.DataFrame:
    """`decode_columns` as a DataFrame (one row per point; batch and context as integers)."""
    cols = decode_columns(dep, batch, context)
    df = pd.DataFrame({k: np.ravel(v) for k, v in cols.items()})
    return df.astype({"batch": "int64", "context": "int64"})


#: A decode curve evaluates every batch up to this many; above it, `GEOMETRIC_BATCHES` geometric points.
DENSE_BATCHES = 65536
GEOMETRIC_BATCHES = 4096


def fitting_batches(dep: Deployment, context: int) -> np.ndarray:
    """The batches a decode curve over "every batch that fits" evaluates: 1 … `memory.max_batch(dep, context)`,
    each one up to `DENSE_BATCHES`, above that `GEOMETRIC_BATCHES` geometric points from 1 to the largest (both
    included), so a curve stays small. Raises `memory.no_fit_message` when not even batch 1 fits."""
    top = _fit_or_raise(dep, context)
    if top <= DENSE_BATCHES:
        return np.arange(1, top + 1)
    return np.unique(np.geomspace(1, top, GEOMETRIC_BATCHES).astype(np.int64))


# ---- the crossover batch -------------------------------------------------------------------------
def compute_bound_batch(
    peak_flops_per_s: float, bandwidth_bytes_per_s: float, bytes_per_weight: float = 2.0,
    read_per_active: float = 1.0, flops_per_param: float = 2.0,
) -> float:
    """The blackboard crossover: the batch at which a decode step's compute equals its weight read.

        B* = (peak FLOP/s ÷ bandwidth) × (bytes per weight ÷ FLOPs per param) × (params read ÷ params active)

    A step of B tokens does B·2·P_active FLOPs and reads P_read·b_w bytes; they take equal time when
    B·2·P_active ÷ F = P_read·b_w ÷ BW. Pass achieved (peak × efficiency) figures to get the batch the
    roofline model crosses at. Dense: P_read = P_active, so bf16 on an H100 at 0.6/0.8 efficiency
    gives 989.4e12·0.6 ÷ (3.35e12·0.8) × 1 = 221.5. MoE: a step reads every expert some token in the
    batch touched, so P_read/P_active grows with B (toward total ÷ active), pushing B* up.
    Assumes a context of zero: KV reads and attention FLOPs are left out (see `crossover_batch`).
    """
    for name, value in (("peak FLOP/s", peak_flops_per_s), ("bandwidth", bandwidth_bytes_per_s),
                        ("bytes per weight", bytes_per_weight), ("read per active", read_per_active),
                        ("FLOPs per param", flops_per_param)):
        require_positive(name, value)
    ridge = ridge_intensity(peak_flops_per_s, bandwidth_bytes_per_s)  # FLOP per byte where the roofs meet
    return ridge * bytes_per_weight / flops_per_param * read_per_active


def blackboard_crossover_batch(dep: Deployment) -> float:
    """`compute_bound_batch` for a deployment, with MoE touching solved as a fixed point.

    F = peak FLOP/s in the compute dtype × compute efficiency; BW = HBM bandwidth × memory efficiency.
    bytes per weight × params read = weight bytes the busiest GPU reads per step (from the core at
    context 0, so a 16-bit LM head under 8-bit weights counts at its real size), FLOPs per token per
    GPU = 2 × params active ÷ N. For MoE the read depends on B, so iterate B ← B*(B) from B = 1; the
    map is increasing and bounded, so this converges to the smallest crossover.
    """
    eff, acc = dep.efficiency, dep.accelerator
    peak = acc.flops(dep.compute_dtype) * eff.compute
    bw = acc.memory_bandwidth_bytes_per_s * eff.weight_memory_fraction
    b_w = dep.weight_bytes_per_param

    def crossover_at(batch: float) -> float:
        step = roofline.decode_step(dep, batch, 0)
        bytes_read = float(step.weights_s) * bw
        active_per_gpu = float(step.linear_compute_s) * peak / batch / 2.0
        return compute_bound_batch(peak, bw, b_w, bytes_read / b_w / active_per_gpu)

    b = 1.0
    for _ in range(10_000):
        nxt = crossover_at(b)
        if abs(nxt - b) < 1e-9 * nxt:
            return nxt
        b = nxt
    return b


def crossover_batch(dep: Deployment, context: int) -> int | None:
    """Smallest integer batch whose decode step at `context` is compute-bound in the core (its `bound`
    is 'compute': the weight multiplies are compute-bound, c·B ≥ w(B), and that compute outlasts the KV
    read, c·B ≥ k·B), or None when no batch is: that needs c > k, the linear compute per request above
    its own KV read (decode attention itself is always KV-bound). c·B − w(B) is convex in B (w is
    concave), so once positive it stays positive: a bisection finds the first integer. May exceed the
    largest batch that fits (compare with `memory.max_batch`). Communication is not part of the test.
    """
    def margin(b: float) -> float:
        s = roofline.decode_step(dep, b, context)
        return float(s.linear_compute_s - s.weights_s)

    one = roofline.decode_step(dep, 1.0, context)
    if float(one.linear_compute_s) <= float(one.attention_s):
        return None
    lo, hi = 0, 1
    while margin(hi) < 0:
        lo, hi = hi, hi * 2
        if hi > 2**50:
            return None
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if margin(mid) < 0 else (lo, mid)
    return hi


# ---- 1. the batch curve --------------------------------------------------------------------------
def _fit_or_raise(dep: Deployment, context: int) -> int:

    fit = int(memory.max_batch(dep, context))
    if fit < 1:
        raise memory.no_fit_error(dep, memory.plan(dep, 1, context))
    return fit


def batch_curve(dep: Deployment, context: int, max_batch: int | None = None, min_batch: int = 1) -> pd.DataFrame:
    """Every batch from `min_batch` to `max_batch` (default: the largest that fits) at `context`.

    One row per batch: `decode_columns`, the communication cost split into the collectives' fixed
    latency and their bytes, `usd_per_m_output_shared` (weight read + collective latency + fixed
    overhead: paid once per step, ÷ B per token) and `usd_per_m_output_per_request` (compute + KV read
    + communication bytes). These two charge the weight multiplies' kernel weights first
    (`cost.decode_split_usd_per_m(…, weights_first=True)`): the read at its whole time, shared; the linear compute
    only what the kernel takes beyond the read, per request. So they move only as the step does: the
    in-proportion `usd_per_m_output_weights` / `_compute` columns jump where the hidden compute does (the GEMV →
    tiled switch, batch 4 → 5 under the shipped kernel profile) although the step does not. Raises if the range
    is empty or reaches past what fits (never clamps).
    """
    dep.model.require_context(context)
    fit = _fit_or_raise(dep, context)
    hi = fit if max_batch is None else max_batch
    require_positive("min_batch", min_batch, integer=True)
    require_positive("max_batch", hi, integer=True)
    if hi > fit:
        raise KokubanError(
            f"{hi} does not fit: the largest batch that fits at context {context} is {fit}", field="max_batch", value=hi
        )
    if min_batch > hi:
        raise KokubanError(
            f"empty batch range: {min_batch} > the largest batch {hi}", field="min_batch", value=min_batch
        )
    df = decode_frame(dep, np.arange(min_batch, hi + 1), context)
    step = roofline.decode_step(dep, df["batch"].to_numpy(), context)
    # communication: the collectives' fixed latency (the core's comm time at 0 tokens) is per step,
    # so shared; the bytes grow with the batch, so per request
    comm_s = step.comm_s
    latency_s = roofline.comm_time_s(dep, 0.0)[0]
    latency_share = np.divide(latency_s, comm_s, out=np.zeros_like(comm_s), where=comm_s > 0)
    df["usd_per_m_output_comm_latency"] = df["usd_per_m_output_comm"] * latency_share
    df["usd_per_m_output_comm_bytes"] = df["usd_per_m_output_comm"] - df["usd_per_m_output_comm_latency"]
    # the weight multiplies' kernel charged weights first: its hidden compute moves nothing until it outlasts the read
    first = cost.decode_split_usd_per_m(dep, step, weights_first=True)
    parts = {p: df[f"usd_per_m_output_{p}"].to_numpy() for p in ("comm_latency", "comm_bytes", "overhead")}
    parts |= {p: np.asarray(first[p], dtype=np.float64) for p in ("weights", "compute", "kv")}
    df["usd_per_m_output_shared"] = sum(parts[p] for p in SHARED)
    df["usd_per_m_output_per_request"] = sum(parts[p] for p in PER_REQUEST)
    return df


@dataclass(frozen=True)
class BatchSummary:
    """The headline numbers of a batch curve (batches, USD per million output tokens)."""

    context: int
    max_batch_fits: int
    crossover_batch: int | None
    crossover_within_fit: bool
    blackboard_crossover_batch: float
    cheapest_batch: int
    usd_per_m_output_cheapest: float
    usd_per_m_output_batch_1: float
    cost_ratio_max_to_min: float
    reason: str

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def batch_summary(dep: Deployment, curve: pd.DataFrame) -> BatchSummary:
    """Crossover (core and blackboard), cheapest point and the most/least expensive ratio of `curve`."""
    context = int(curve["context"].iloc[0])
    fit = int(memory.max_batch(dep, context))
    cross = crossover_batch(dep, context)
    usd, per_token_s = curve["usd_per_m_output"], curve["step_time_s"] / curve["batch"]
    cheapest = curve.loc[per_token_s.idxmin()]  # the seconds per token: the cheapest even at a price of 0
    one = roofline.decode_step(dep, 1, context)
    if cross is None:
        reason = (f"never compute-bound at context {context}: each request's KV read "
                  f"({float(one.kv_s) * 1e6:.3g} µs) outlasts its compute ({float(one.linear_compute_s) * 1e6:.3g} µs)")
    elif cross > fit:
        reason = f"compute-bound from batch {cross}, beyond the {fit} that fit: HBM capacity stops the batch first"
    else:
        reason = f"compute-bound from batch {cross}; weight reads are amortised below that"
    return BatchSummary(
        context=context,
        max_batch_fits=fit,
        crossover_batch=cross,
        crossover_within_fit=cross is not None and cross <= fit,
        blackboard_crossover_batch=blackboard_crossover_batch(dep),
        cheapest_batch=int(cheapest["batch"]),
        usd_per_m_output_cheapest=float(cheapest["usd_per_m_output"]),
        usd_per_m_output_batch_1=float(cost.usd_per_m_output(dep, one)),
        cost_ratio_max_to_min=float(cost.cost_ratio(usd.max(), usd.min(), per_token_s.max(), per_token_s.min())),
        reason=reason,
    )


# ---- 5. input vs output --------------------------------------------------------------------------
@dataclass(frozen=True)
class InputOutput:
    """Cost of an output token against an input token at one configuration, and why."""

    batch: int
    context: int
    prompt_tokens: int
    usd_per_m_input: float
    usd_per_m_output: float
    output_to_input_ratio: float
    prefill_bound: str
    decode_bound: str
    tokens_per_weight_read_prefill: int
    tokens_per_weight_read_decode: int
    blackboard_crossover_batch: float
    sentence: str

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def input_output(dep: Deployment, batch: int, context: int, prompt_tokens: int | None = None) -> InputOutput:
    """Output-token cost ÷ input-token cost: decode at (batch, context) against a prefill of the same
    batch of `prompt_tokens` (default: `context`) prompts, both from the core's `cost` functions.

    Why: prefill pushes B·P tokens through each weight read, far above the crossover, so it runs at the
    compute roof; decode pushes B tokens and also reads every request's KV cache, so it waits on HBM.
    """
    dep.model.require_context(context)
    require_positive("batch", batch, integer=True)
    prompt = context if prompt_tokens is None else prompt_tokens
    require_positive("prompt_tokens", prompt, integer=True)
    fit = _fit_or_raise(dep, max(context, prompt))
    if batch > fit:
        raise KokubanError(
            f"{batch} does not fit: the largest batch that fits at context {max(context, prompt)} is {fit}",
            field="batch",
            value=batch,
        )
    dec, pre = roofline.decode_step(dep, batch, context), roofline.prefill(dep, batch, prompt)
    usd_in, usd_out = float(cost.usd_per_m_input(dep, pre)), float(cost.usd_per_m_output(dep, dec))
    star = blackboard_crossover_batch(dep)
    ratio = float(cost.cost_ratio(usd_out, usd_in, dec.step_time_s / batch, pre.step_time_s / pre.tokens))
    kv_gb = float(roofline.kv_bytes_per_request(dep, context)) / 1e9
    sentence = (
        f"An output token costs {ratio:.3g}× an input token: prefill pushes {batch * prompt:,} tokens through each "
        f"weight read ({pre.bound}-bound; about {star:.0f} saturate the compute), while decode pushes {batch:,} "
        f"and each also reads its own {kv_gb:.3g} GB KV cache ({dec.bound}-bound)."
    )
    return InputOutput(
        batch=int(batch),
        context=int(context),
        prompt_tokens=int(prompt),
        usd_per_m_input=usd_in,
        usd_per_m_output=usd_out,
        output_to_input_ratio=ratio,
        prefill_bound=str(pre.bound),
        decode_bound=str(dec.bound),
        tokens_per_weight_read_prefill=int(batch * prompt),
        tokens_per_weight_read_decode=int(batch),
        blackboard_crossover_batch=star,
        sentence=sentence,
    )
