"""The roofline step model: how long one decode step or one prefill takes, and why.

    step time = [max(linear compute, weight read) + max(attention compute, KV read) + comm]·(1 + ℓ) + overhead

(each max with `Efficiency.overlap` = 1; below 1 part of the shorter time shows: see `Step.kernel_s`; ℓ the barrier wait
of a tensor-parallel group on NVLink, `tp_sync_loss`, 0 otherwise).

A step runs two kinds of kernels one after the other in every layer: the matrix multiplies against
the weights (QKV/output projections, MLP or experts, LM head) and attention over the KV cache. Inside
each kind compute and memory traffic overlap (a kernel streams its operand while the tensor cores
run), so each kind takes the larger of its two times; the two kinds do not overlap each other, so
their times add. (A single max over everything would let a long context's KV read hide under a large
batch's weight-multiply compute, which no engine that runs the kernels in sequence achieves.)
Communication (tensor-parallel all-reduces, expert-parallel all-to-alls) sits on the critical path
between layers and is added. Every time is per GPU, for the busiest GPU of a balanced deployment.

Every function is pure and vectorised: `batch` and `context` may be NumPy arrays that broadcast,
so a sweep over a million configurations is one call.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from kokuban.core.bytes import (  # noqa: F401  (re-exported: the byte counts the steps are built from)
    attention_kv_bytes_per_request,
    decode_kv_read_factor,
    expected_experts_touched,
    kv_bytes_per_request,
    lm_head_bytes,
    routed_weight_bytes_read,
    state_bytes_per_request,
    weight_bytes_per_gpu,
    weight_bytes_read,
    weight_bytes_read_per_gpu,
    weight_bytes_stored,
)
from kokuban.errors import KokubanError
from kokuban.specs.deployment import Deployment

ACTIVATION_BYTES = 2.0  # activations travel between GPUs in bf16

BOUNDS = ("compute", "weights", "kv", "comm", "overhead")
_LABELS = np.array(BOUNDS)  # the labels as one string array, indexed by their positions


def bound_names(index: Any) -> Any:
    """The labels of `Step.bound_index` positions: a string array (a str for a single position)."""
    index = np.asarray(index)
    return _LABELS.take(index) if index.ndim else BOUNDS[int(index)]


def _cached(method: Any) -> property:
    """A read-only property computed once per instance (kept in its __dict__): functools.cached_property without
    the per-call lock Python 3.11 takes, which costs a scalar step more than the arithmetic it saves."""
    name = method.__name__

    def get(self: Any) -> Any:
        cache = self.__dict__
        if name not in cache:
            cache[name] = method(self)
        return cache[name]

    return property(get, doc=method.__doc__)


def _pick(cond: Any, label: str, otherwise: Any) -> np.ndarray:
    """np.where(cond, label, otherwise) on positions in `BOUNDS` (int8): otherwise + cond·(label − otherwise),
    branch-free (np.where on a mixed mask costs as much as the step's arithmetic)."""
    other = np.asarray(BOUNDS.index(otherwise) if isinstance(otherwise, str) else otherwise, dtype=np.int8)
    return other + np.asarray(cond, dtype=np.int8) * (np.int8(BOUNDS.index(label)) - other)


@dataclass(frozen=True)
class Step:
    """The terms of one step (arrays when the inputs were arrays). Seconds, FLOPs and bytes are per step.

    `flops`, `weight_bytes`, `kv_bytes` and `comm_bytes` are totals for the deployment; the times are
    those of one GPU (totals ÷ the ways each is split).
    """

    tokens: Any
    batch: Any
    flops: Any
    weight_bytes: Any
    kv_bytes: Any
    comm_bytes: Any
    experts_touched: Any
    compute_s: Any  # linear + attention compute
    attn_compute_s: Any  # the attention part of compute_s
    weights_s: Any
    kv_s: Any
    comm_s: Any
    overhead_s: Any
    comm_overlapped: bool = False
    attn_flops: Any = np.nan  # the attention part of `flops`
    overlap: float = 1.0  # the fraction of the shorter of a kernel's compute and memory times hidden under the longer
    sync_loss: float = 0.0  # the share of the step's body a tensor-parallel group adds at its barriers (`tp_sync_loss`)

    @property
    def memory_s(self) -> Any:
        return self.weights_s + self.kv_s

    # The derived times are computed once (a sweep's step is read by the price, the split and the bound): a Step
    # is frozen, and `dataclasses.replace` builds a new one without the cache.
    @_cached
    def linear_compute_s(self) -> Any:
        """Compute of the weight matrix multiplies (compute_s − attention)."""
        return self.compute_s - self.attn_compute_s

    def kernel_s(self, compute_s: Any, memory_s: Any) -> Any:
        """A kernel's time from its compute and memory times: max(c, m) + (1 − overlap)·min(c, m).

        overlap = 1 (the default) is the roofline: the shorter time hides entirely under the longer.
        Kernels that cannot stream operands and multiply at once (small-batch GEMMs on CPUs) have
        overlap < 1; 0 means the two times add."""
        if self.overlap == 1.0:  # the term (1 − 1)·min is 0: max alone, the same number, one pass fewer
            return np.maximum(compute_s, memory_s)
        return np.maximum(compute_s, memory_s) + (1.0 - self.overlap) * np.minimum(compute_s, memory_s)

    @_cached
    def linear_s(self) -> Any:
        """The weight-multiply kernels: kernel_s(linear compute, weight read)."""
        return self.kernel_s(self.linear_compute_s, self.weights_s)

    @_cached
    def attention_s(self) -> Any:
        """The attention kernels: kernel_s(attention compute, KV read)."""
        return self.kernel_s(self.attn_compute_s, self.kv_s)

    @_cached
    def roof_s(self) -> Any:
        """The roofline part of the step: linear_s + attention_s (the two kinds run one after the other)."""
        return self.linear_s + self.attention_s

    @_cached
    def body_s(self) -> Any:
        """The kernels' part of the step: roof + comm; with overlapped communication (two micro-batches
        ping-ponging, as DeepSeek's dual-batch overlap does) max(roof, comm)."""
        if self.comm_overlapped:
            return np.maximum(self.roof_s, self.comm_s)
        return self.roof_s + self.comm_s

    @_cached
    def sync_s(self) -> Any:
        """The time a tensor-parallel group waits at its barriers: sync_loss × body (0 on one GPU)."""
        return self.sync_loss * self.body_s

    @_cached
    def step_time_s(self) -> Any:
        """body·(1 + sync_loss) + overhead = body + sync + overhead (`body_s`, `sync_s`); the simulator's
        `StepModel.seconds` and the in-flight step write the same expression, so their floats agree bit for bit."""
        if self.sync_loss:
            return self.body_s * (1.0 + self.sync_loss) + self.overhead_s
        return self.body_s + self.overhead_s

    @_cached
    def bound_index(self) -> Any:
        """Which resource sets the step, as its position in `BOUNDS` (int8; `bound` names it): of the roofline
        time, the seconds spent compute-bound (each kind whose compute is the larger of its two times),
        weight-bound and KV-bound are compared and the largest names the step ('compute', 'weights', 'kv');
        'comm' if communication exceeds the roofline part, 'overhead' if the fixed cost exceeds both (× 1 + the TP
        group's barrier wait, `sync_loss`, which scales them alike)."""
        lin_c = np.asarray(self.linear_compute_s >= self.weights_s)
        attn_c = np.asarray(self.attn_compute_s >= self.kv_s)
        # x·[cond] is where(cond, x, 0) for the finite times a step has, without where's branch per element
        compute = self.linear_compute_s * lin_c + self.attn_compute_s * attn_c
        weights = self.weights_s * ~lin_c
        kv = self.kv_s * ~attn_c
        code = _pick((compute >= weights) & (compute >= kv), "compute", _pick(weights >= kv, "weights", "kv"))
        roof = self.roof_s
        code = _pick(self.comm_s > roof, "comm", code)
        kernels = np.maximum(roof, self.comm_s)
        if self.sync_loss:  # a TP group's barrier wait is the kernels' time too
            kernels = kernels * (1.0 + self.sync_loss)
        return _pick(np.asarray(self.overhead_s) > kernels, "overhead", code)

    @property
    def bound(self) -> Any:
        """Which resource sets the step (`bound_index` named): 'compute', 'weights', 'kv', 'comm' or 'overhead';
        a string array when the step's terms are arrays."""
        return bound_names(self.bound_index)

    def as_dict(self) -> dict[str, Any]:
        """Scalar step as plain floats (for JSON)."""
        def f(x: Any) -> float:
            return float(np.asarray(x))
        return {
            "step_time_s": f(self.step_time_s),
            "bound": self.bound,
            "breakdown": {
                "compute_s": f(self.compute_s),
                "multiply_compute_s": f(self.linear_compute_s),
                "attention_compute_s": f(self.attn_compute_s),
                "weights_s": f(self.weights_s),
                "kv_s": f(self.kv_s),
                "comm_s": f(self.comm_s),
                "sync_s": f(self.sync_s),
                "overhead_s": f(self.overhead_s),
            },
            "flops": f(self.flops),
            "multiply_flops": f(self.flops - self.attn_flops),
            "attention_flops": f(self.attn_flops),
            "weights_read_bytes": f(self.weight_bytes),
            "kv_read_bytes": f(self.kv_bytes),
            "comm_bytes_per_gpu": f(self.comm_bytes),
            "experts_touched_per_layer": f(self.experts_touched),
        }


def off_node_bytes(sent: Any, n: int, gpus_per_node: int, crosses_node: bool) -> Any:
    """Of the bytes one GPU of an all-to-all group of `n` sends to its n − 1 peers, those bound for other nodes:
    sent·(n − g)/(n − 1) with g GPUs per node (a group larger than one node); 0 when the group stays in its node."""
    sent = np.asarray(sent, dtype=np.float64)
    return sent * (n - gpus_per_node) / (n - 1) if crosses_node else np.zeros_like(sent)


def comm_time_s(dep: Deployment, tokens: Any) -> tuple[np.ndarray, np.ndarray]:
    """Communication per step for `tokens` tokens in flight: (seconds, bytes sent per GPU).

    TP, N > 1: 2 all-reduces per layer of tokens·d·2 bytes; a ring all-reduce sends 2(N−1)/N of the
      message per GPU: time = 2·layers·(latency + 2(N−1)/N · tokens·d·2 / (link·eff)).
    EP, N > 1: per MoE layer a dispatch and a combine all-to-all; each GPU sends its tokens/N tokens to
      top_k experts, (N−1)/N of them remote: time = 2·moe_layers·(latency + (N−1)/N · (tokens/N)·k·d·2
      / (link·eff)). Attention and dense layers are data-parallel and exchange nothing.
    link is the scale-up link (NVLink) at the `interconnect` fraction; under the kernel profile a PCIe card's
      all-reduce within its node runs on the PCIe curve instead (`KernelCurves.pcie_allreduce_time_s`). A group
      larger than the accelerator's node (`gpus_per_node`) waits on the scale-out NIC at the same fraction
      (`specs.kernels.collective_link`): a ring all-reduce moves every GPU's bytes at the pace of its slowest hop,
      the NIC; an all-to-all sends the (N − g)/(N − 1) of its remote bytes bound for other nodes over the NIC and
      the rest over NVLink, the two added (`specs.kernels.alltoall_time_s`).
    A coarse model without hidden size or on one GPU: 0.
    """
    from kokuban.specs.kernels import alltoall_time_s, collective_link

    m, n, eff, acc = dep.model, dep.num_gpus, dep.efficiency, dep.accelerator
    t = np.asarray(tokens, dtype=np.float64)
    if n == 1 or m.hidden_size == 0:
        return np.zeros_like(t), np.zeros_like(t)
    if eff.kernels is not None and eff.kernels.covers(acc):
        return kernel_comm_time_s(dep, t)
    if acc.interconnect_bytes_per_s * eff.interconnect <= 0:
        raise KokubanError(f"accelerator '{acc.id}' has no interconnect bandwidth; cannot run on {n} GPUs")
    link = collective_link(n, acc.gpus_per_node, acc.interconnect_bytes_per_s, acc.scaleout_bytes_per_s, 0.0,
                           eff.interconnect, eff.interconnect)
    count, kind = dep.parallel.collectives(m.num_layers, m.moe_layers)
    if kind == "all-reduce":
        per_gpu = 2 * (n - 1) / n * t * m.hidden_size * ACTIVATION_BYTES
        if eff.kernels is not None and eff.kernels.covers_pcie(acc) and not link.crosses_node:
            one = eff.kernels.pcie_allreduce_time_s(t * m.hidden_size * ACTIVATION_BYTES, n, link.bytes_per_s)
            return count * one, count * per_gpu
        return count * (eff.collective_latency_s + per_gpu / (link.bytes_per_s * eff.interconnect)), count * per_gpu
    per_gpu = (n - 1) / n * (t / n) * m.top_k * m.hidden_size * ACTIVATION_BYTES
    off = off_node_bytes(per_gpu, n, acc.gpus_per_node, link.crosses_node)
    one = alltoall_time_s(per_gpu - off, off, eff.collective_latency_s, acc.interconnect_bytes_per_s,
                          eff.interconnect, acc.scaleout_bytes_per_s, eff.interconnect)
    return count * one, count * per_gpu


def kernel_comm_time_s(dep: Deployment, tokens: Any) -> tuple[np.ndarray, np.ndarray]:
    """`comm_time_s` under the kernel profile (`Efficiency.kernels`): the same collectives and bytes, timed by
    the latency–bandwidth curves of `specs.kernels` on the group's link (`collective_link`: NVLink within a
    node, the scale-out NIC when the group is larger than a node).

    TP: per all-reduce a message of S = tokens·d·2 bytes: `allreduce_time_s` (one-shot or two-shot within a
      node, or NCCL's ring for an engine without a custom kernel: `KernelCurves.allreduce_latency_s`; across
      nodes two-shot only, at the scale-out bandwidth, plus its latency).
    EP: per all-to-all each GPU sends (N−1)/N·(tokens/N)·k·d·2 bytes to the other ranks, of which the
      (N − g)/N bound for other nodes (g GPUs per node, N > g) cross the network: `alltoall_time_s`.
    Returns (seconds per step, bytes sent per GPU per step) as `comm_time_s` does.
    """
    from kokuban.specs.kernels import allreduce_time_s, alltoall_time_s, collective_link

    m, n, acc, k = dep.model, dep.num_gpus, dep.accelerator, dep.efficiency.kernels
    if acc.interconnect_bytes_per_s <= 0:
        raise KokubanError(f"accelerator '{acc.id}' has no interconnect bandwidth; cannot run on {n} GPUs")
    count, kind = dep.parallel.collectives(m.num_layers, m.moe_layers)
    fraction = k.allreduce_fraction if kind == "all-reduce" else k.alltoall_fraction
    link = collective_link(n, acc.gpus_per_node, acc.interconnect_bytes_per_s, acc.scaleout_bytes_per_s,
                           acc.scaleout_latency_s, fraction, k.scaleout_fraction)
    if kind == "all-reduce":
        message = tokens * m.hidden_size * ACTIVATION_BYTES
        if link.crosses_node:
            one = allreduce_time_s(message, n, link.bytes_per_s, np.inf, k.allreduce_two_shot_s, link.fraction)
        else:
            fraction = k.nccl_allreduce_fraction if k.plain_nccl else link.fraction
            one = allreduce_time_s(message, n, link.bytes_per_s, *k.allreduce_latency_s(n), fraction)
        return count * (one + link.extra_latency_s), count * 2 * (n - 1) / n * message
    sent = (n - 1) / n * (tokens / n) * m.top_k * m.hidden_size * ACTIVATION_BYTES
    off = off_node_bytes(sent, n, acc.gpus_per_node, link.crosses_node)
    one = alltoall_time_s(sent - off, off, k.alltoall_s + link.extra_latency_s, acc.interconnect_bytes_per_s,
                          k.alltoall_fraction, acc.scaleout_bytes_per_s, k.scaleout_fraction)
    return count * one, count * sent


def tp_sync_loss(dep: Deployment) -> float:
    """The share of a step's body (roofline + collectives) a tensor-parallel group on NVLink adds waiting at its
    per-layer all-reduces (`KernelCurves.tp_sync_loss`): a step = body·(1 + loss) + overhead (`Step.step_time_s`).

    Every layer ends in an all-reduce that no GPU leaves before the slowest arrives, so each layer takes its slowest
    GPU's time, and the all-reduce kernels share the GPU with the GEMMs around them; ASSUMED proportional to the body,
    whatever the TP degree (the development rows show no trend with it: evidence/changes/tp_barrier_wait/). 0 on one
    GPU, under expert parallelism (all-to-alls), off NVLink (the PCIe curves' fitted fractions and the MI300X's own
    weight stream absorb their servers' losses) and under the scalar profile."""
    k = dep.efficiency.kernels
    if k is None or dep.num_gpus <= 1 or not k.tp_sync_loss or not k.covers(dep.accelerator):
        return 0.0
    kind = dep.parallel.collectives(dep.model.num_layers, dep.model.moe_layers)[1]
    return k.tp_sync_loss if kind == "all-reduce" else 0.0


def gemm_ceiling_fraction(dep: Deployment, dtype: str | None = None) -> float:
    """The fraction of dense peak a large GEMM in `dtype` (default: the compute dtype) reaches (M → ∞):
    `Efficiency.compute` under the scalar set; under the kernel curves compute × the dtype's ratio × the
    accelerator's attainable factor, at most 1."""
    eff, dtype = dep.efficiency, dtype or dep.compute_dtype
    if eff.kernels is None:
        return eff.compute
    k = eff.kernels
    return min(eff.compute * k.dtype_ratio(dtype) * k.attainable_factor(dep.accelerator, dtype), 1.0)


def linear_compute_fractions(dep: Deployment, tokens: Any) -> tuple[Any, Any]:
    """(fraction of peak for the dense matrix multiplies, for the routed experts') of a pass over `tokens`.

    Scalar profile (no curves): `Efficiency.compute` for both. Kernel profile (`Efficiency.kernels`): `gemm_fraction`
    of compute × the compute dtype's ratio × the accelerator's attainable factor (`KernelCurves.attainable_factor`:
    1 unless its vendor measured its GEMMs, e.g. MI300X) × the shape factor of the GEMMs one GPU runs
    (`KernelCurves.shape_factor` of `Deployment.gemm_shapes`: narrow N and shallow K after a tensor-parallel split
    reach less of the ceiling, fp8 far more than bf16), at M = the tokens one GPU's dense GEMMs see (tokens ÷
    data-parallel ranks; up to `KernelCurves.gemv_max_tokens` a matrix-vector kernel, unpadded) and, for the
    experts, at M = the tokens one touched expert receives (tokens·k ÷ experts touched; always tiled: the grouped
    GEMM of the MoE kernels pads each expert's rows to its tile, as the MoE tables the MoE constants are fitted on
    measured)."""
    eff = dep.efficiency
    if eff.kernels is None:
        return eff.compute, eff.compute
    from kokuban.specs.kernels import gemm_fraction

    m, k = dep.model, eff.kernels
    dense_shapes, expert_shapes = dep.gemm_shapes
    peak = gemm_ceiling_fraction(dep) * k.shape_factor(dense_shapes, dep.compute_dtype)
    dense = gemm_fraction(peak, tokens / dep.parallel.data_parallel_ranks, k.m_half_tokens, k.gemv_max_tokens)
    if not m.is_moe:
        return dense, dense
    touched = np.maximum(expected_experts_touched(m.num_experts, m.top_k, tokens), 1.0)
    dtype = dep.expert_compute_dtype
    peak = gemm_ceiling_fraction(dep, dtype) * k.shape_factor(expert_shapes, dtype)
    return dense, gemm_fraction(peak, tokens * m.top_k / touched, k.m_half_tokens)


def moe_overhead_s(dep: Deployment, tokens: Any) -> Any:
    """Seconds the MoE layers add to a pass over `tokens` beside their expert GEMMs: under the kernel profile
    `kernels.moe_dispatch_time_s` at P = tokens·top-k ÷ data-parallel ranks (the pairs one GPU's experts receive:
    all of them under TP, 1/N under EP), with the experts' compute dtype's constants (`KernelCurves.moe_constants`:
    fp4's own table, else the fp8/bf16 median); 0 for a dense model or the scalar profile (whose fitted scalars absorb
    it)."""
    m, k = dep.model, dep.efficiency.kernels
    if k is None or not m.is_moe:
        return 0.0
    from kokuban.specs.kernels import moe_dispatch_time_s

    pairs = np.asarray(tokens, dtype=np.float64) * m.top_k / dep.parallel.data_parallel_ranks
    return moe_dispatch_time_s(pairs, m.moe_layers, *k.moe_constants(dep.expert_compute_dtype))


def attention_dtype(dep: Deployment) -> str:
    """Attention (QK^T, AV) runs in 16-bit whatever the weights are (FlashAttention/FlashMLA in bf16),
    except when the whole deployment computes in fp32 or fp16, then in that dtype."""
    return dep.compute_dtype if dep.compute_dtype in ("fp32", "fp16") else "bf16"


def lm_head_time_s(dep: Deployment) -> float:
    """Seconds of the LM head for one position: 2·vocab·d FLOP ÷ (peak[compute dtype]·N·eff). A step pays it
    once per sequence (the sampled position), not once per token."""
    acc = dep.accelerator
    return 2.0 * dep.model.params_lm_head / (acc.flops(dep.compute_dtype) * dep.num_gpus * dep.efficiency.compute)


def ggml_per_sm(dep: Deployment) -> tuple[float, float]:
    """(bytes/s, FLOP/s) of llama.cpp's quantized CUDA kernels on the deployment's GPU, each 0 where it does not apply.

    ggml's kernels for its GGUF block formats launch the same way on every NVIDIA GPU (ggml-cuda mmvq.cu, mmq.cuh at
    ggml-org/ggml ac0c8be4; evidence/sources/llamacpp_sm/inclusion_rule.md), so their limits are per SM:

        MMVQ (decode) weight stream ≤ n_SM · (b_SM + c_SM · f_boost)    one 128-thread block per matrix row: the
                                                            bytes an SM keeps in flight are the kernel's (b_SM = that ÷
                                                            the latency), or its work per byte is (c_SM a cycle)
        MMQ (a prompt) linear FLOP/s = n_SM · f_boost · r   nibbles unpacked to int8 in shared memory, then int8 MMA:
                                                            a rate per SM per cycle, not the tensor cores' peak

    with b_SM = `KernelCurves.ggml_sm_stream_bytes_per_s`, c_SM = `ggml_sm_stream_bytes_per_cycle`,
    r = `ggml_mmq_ops_per_cycle` and the accelerator's
    `sm_count` and `boost_clock_hz`. Applies to GGUF quantized weights (`dtypes.quant_format(...).kind` "gguf")
    under the kernel curves, on an accelerator whose catalog entry states its SMs (and clock, for MMQ)."""
    from kokuban.specs.dtypes import quant_format

    k, acc = dep.efficiency.kernels, dep.accelerator
    if k is None or acc.sm_count <= 0 or quant_format(dep.weights_dtype).kind != "gguf":
        return 0.0, 0.0
    per_sm_bytes_per_s = k.ggml_sm_stream_bytes_per_s + k.ggml_sm_stream_bytes_per_cycle * acc.boost_clock_hz
    return acc.sm_count * per_sm_bytes_per_s, acc.sm_count * acc.boost_clock_hz * k.ggml_mmq_ops_per_cycle


def weight_read_s(dep: Deployment, tokens: Any) -> np.ndarray:
    """Seconds the busiest GPU spends reading weights for a pass over `tokens` tokens:

        t = [(always-read per GPU − LM head per GPU) ÷ f_w + routed per GPU ÷ f_e + LM head per GPU]
            ÷ (HBM bandwidth·memory eff·the accelerator's weight stream ratio: `Efficiency.weight_memory_fraction`)

    f_w = `Efficiency.dequant_memory` when the kernels dequantise the quantized weights on the fly
    (`Deployment.dequantises_weights`: weight-only int4, fp8/fp4 without the native unit), else 1; f_e the same for
    the routed experts' own format (`Deployment.dequantises_experts`); the 16-bit LM head streams at the plain rate
    either way. llama.cpp's MMVQ takes at least read ÷ (n_SM·b_SM) (`ggml_per_sm`)."""
    eff = dep.efficiency
    read = weight_bytes_read_per_gpu(dep, tokens)
    rate = dep.accelerator.memory_bandwidth_bytes_per_s * eff.weight_memory_fraction
    if not (dep.dequantises_weights or dep.dequantises_experts):
        t = read / rate
    else:
        head = lm_head_bytes(dep) / dep.dense_shards
        routed = routed_weight_bytes_read(dep, tokens) / dep.parallel.expert_shards
        f_w = eff.dequant_memory if dep.dequantises_weights else 1.0
        f_e = eff.dequant_memory if dep.dequantises_experts else 1.0
        t = ((read - head - routed) / f_w + routed / f_e + head) / rate
    sm_stream = ggml_per_sm(dep)[0]
    return np.maximum(t, read / sm_stream) if sm_stream > 0 else t


def _step(dep: Deployment, batch: Any, tokens: Any, attended: Any, attn_flops_per_pair: int, kv_bytes: Any,
          state_bytes: Any = 0.0) -> Step:
    """Assemble a step from the work it does.

    tokens: tokens through the weights this step; attended: Σ query-key pairs (over layers);
    kv_bytes: attention KV bytes moved (read in decode, written in prefill); state_bytes: linear-attention
    state bytes moved (0 without linear attention).
    Only the last position of each of the `batch` sequences goes through the LM head (engines compute
    logits for the sampled token only), so
    linear compute = [tokens·2·(matmul params − LM head − routed active) ÷ (peak[compute dtype]·eff_dense)
                      + tokens·2·routed active ÷ (peak[experts' compute dtype]·eff_experts)
                      + batch·2·LM head ÷ (peak[compute dtype]·eff)] ÷ N  (`linear_compute_fractions`)
    attention compute = [attended·attn_flops + tokens·state FLOPs per token] ÷ peak[attention dtype] ÷ (N·eff)
      (the linear-attention recurrences are the attention kernel of their layers: O(d_k·d_v) per head per token)
    weights = weight bytes read(tokens) ÷ N ÷ (HBM bandwidth·weight memory eff), slower when dequantised
      (`weight_read_s`: memory eff × the accelerator's weight stream ratio, 1 unless its catalog entry sets one)
    kv      = [kv bytes ÷ kv read ways + state bytes ÷ state read ways] ÷ (HBM bandwidth·kv_memory eff)
    overhead = step overhead + the MoE layers' routing/permute time under the kernel profile (`moe_overhead_s`)
    Under EP each GPU reads the whole always-read part for its own requests, so that part is divided
    by the dense shards only; routed experts and everything under TP are divided by N.
    """
    m, acc, eff, n = dep.model, dep.accelerator, dep.efficiency, dep.num_gpus
    tokens = np.asarray(tokens, dtype=np.float64)
    logits = np.asarray(batch, dtype=np.float64)
    body_flops = tokens * (m.flops_per_token - 2 * m.params_lm_head)
    linear_flops = body_flops + logits * 2 * m.params_lm_head
    attn_flops = np.asarray(attended, dtype=np.float64) * attn_flops_per_pair
    if m.has_state:
        attn_flops = attn_flops + tokens * m.state_flops_per_token
    attn_compute_s = attn_flops / acc.flops(attention_dtype(dep)) / (n * eff.compute)
    dense_f, expert_f = linear_compute_fractions(dep, tokens)
    expert_flops = tokens * 2.0 * m.moe_layers * m.top_k * m.params_per_expert if m.is_moe else 0.0
    body_s = ((body_flops - expert_flops) / (acc.flops(dep.compute_dtype) * dense_f)
              + expert_flops / (acc.flops(dep.expert_compute_dtype) * expert_f)) / n
    if (mmq_flops_per_s := ggml_per_sm(dep)[1]) > 0:
        body_s = body_flops / mmq_flops_per_s / n  # llama.cpp's MMQ: a rate per SM per cycle (`ggml_per_sm`)
    compute_s = body_s + logits * lm_head_time_s(dep) + attn_compute_s
    read = weight_bytes_read(dep, tokens)
    weights_s = weight_read_s(dep, tokens)
    kv_bw = acc.memory_bandwidth_bytes_per_s * eff.kv_memory_fraction
    kv_s = np.asarray(kv_bytes, dtype=np.float64) / dep.kv_read_ways / kv_bw
    if m.has_state:
        kv_s = kv_s + np.asarray(state_bytes, dtype=np.float64) / dep.state_read_ways / kv_bw
        kv_bytes = np.asarray(kv_bytes, dtype=np.float64) + state_bytes
    comm_s, comm_bytes = comm_time_s(dep, tokens)
    return Step(
        tokens=tokens,
        batch=batch,
        flops=linear_flops + attn_flops,
        weight_bytes=read,
        kv_bytes=kv_bytes,
        comm_bytes=comm_bytes,
        experts_touched=expected_experts_touched(m.num_experts, m.top_k, tokens),
        compute_s=compute_s,
        attn_compute_s=attn_compute_s,
        weights_s=weights_s,
        kv_s=kv_s,
        comm_s=comm_s,
        overhead_s=np.full_like(weights_s, eff.step_overhead_s) + moe_overhead_s(dep, tokens),
        comm_overlapped=dep.overlap_comm,
        attn_flops=attn_flops,
        overlap=eff.overlap,
        sync_loss=tp_sync_loss(dep),
    )


def floor_time_s(step: Step) -> Any:
    """The least time any schedule of a step's work can take on the busiest GPU:

        floor = max(compute, weight read + KV read)

    every FLOP at the dense peak and every byte at the full HBM bandwidth, the two fully overlapped, nothing else (no
    fixed time, communication, re-reads) — when the step was built on a deployment at `Efficiency.ideal()`. A run
    measured faster than its floor did less work than kokuban counts: fewer bytes per weight, fewer experts
    touched, fewer GPUs' worth of traffic per GPU (validation/accuracy.floor_row)."""
    return np.maximum(step.compute_s, step.weights_s + step.kv_s)


def decode_step(dep: Deployment, batch: Any, context: Any) -> Step:
    """One decode step: `batch` requests each generate one token while attending to `context` tokens.

    Work: batch tokens through the active weights; batch × Σ_layers min(context, window) query-key
    pairs of attention; the KV cache of every request read once: batch × attention KV(context) (× the engine's
    `decode_kv_read_factor`, 1 unless its kernel loads a KV head once per query head); a
    linear-attention state read and written back once per request: batch × 2 × state bytes (constant in
    context). `batch` and `context` broadcast (arrays welcome).
    """
    b = np.asarray(batch, dtype=np.float64)
    attended = b * dep.model.attended_tokens(context)
    kv = b * attention_kv_bytes_per_request(dep, context) * decode_kv_read_factor(dep)
    state = b * 2 * state_bytes_per_request(dep)
    return _step(dep, b, b, attended, dep.model.attn_flops_per_ctx_token_per_layer_decode, kv, state)


def _whole(values: np.ndarray, lo: int, hi: int) -> np.ndarray | None:
    """`values` as intp indices when every one is a whole number in [lo, hi]; None otherwise."""
    if not (values.min() >= lo and values.max() <= hi):  # also False for NaN
        return None
    index = values.astype(np.intp)
    return index if np.array_equal(index, values) else None


@dataclass(frozen=True)
class DecodeTable:
    """`decode_step`'s token terms tabulated for every whole batch 1 … max (`decode_table`; row 0 unused)."""

    dep: Deployment
    linear_compute_s: np.ndarray
    weights_s: np.ndarray
    comm_s: np.ndarray
    overhead_s: np.ndarray

    def step(self, batch: np.ndarray, context: np.ndarray) -> Step | None:
        """The decode step at each (batch, context) point (arrays of one shape): the token terms looked up, the
        attention and KV read `decode_step(dep, 1, context)` × batch; None when a batch is not a whole number in
        1 … max. Only the times are filled (all a price, its split and the bound read); flops, attn_flops,
        weight_bytes, kv_bytes, comm_bytes and experts_touched are NaN."""
        ib = _whole(batch, 1, self.weights_s.size - 1)
        if ib is None:
            return None
        one = decode_step(self.dep, 1.0, context)
        attn_s = batch * one.attn_compute_s
        return Step(
            tokens=batch, batch=batch, flops=np.nan, weight_bytes=np.nan, kv_bytes=np.nan, comm_bytes=np.nan,
            experts_touched=np.nan, compute_s=self.linear_compute_s[ib] + attn_s, attn_compute_s=attn_s,
            weights_s=self.weights_s[ib], kv_s=batch * one.kv_s, comm_s=self.comm_s[ib],
            overhead_s=self.overhead_s[ib], comm_overlapped=self.dep.overlap_comm, overlap=self.dep.efficiency.overlap,
            sync_loss=tp_sync_loss(self.dep),
        )


def decode_table(dep: Deployment, max_batch: int) -> DecodeTable:
    """`decode_step` split into what depends on the batch alone, evaluated once per batch 1 … `max_batch`, and
    what depends on the context.

    A decode step of B requests at context c is its token terms at B — `decode_step(dep, B, 0)`: multiply
    compute, weight read (MoE touching), communication, overhead, none of which depends on the context — plus B
    times one request's attention compute and KV read at c — `decode_step(dep, 1, c)` — since decode_step's
    attended pairs and KV bytes are B × a function of c. `DecodeTable.step` looks the first up for many points
    (the MoE touching's power and the kernel curves once per batch, not per point) and adds the second: equal to
    `decode_step` up to rounding (B·(a·x) against (B·a)·x: a few ulp)."""
    token = decode_step(dep, np.arange(1, max_batch + 1, dtype=np.float64), 0.0)

    def by_batch(x: Any) -> np.ndarray:
        return np.concatenate(([np.nan], np.broadcast_to(np.asarray(x, dtype=np.float64), (max_batch,))))

    return DecodeTable(dep=dep, linear_compute_s=by_batch(token.linear_compute_s), weights_s=by_batch(token.weights_s),
                       comm_s=by_batch(token.comm_s), overhead_s=by_batch(token.overhead_s))


def decode_step_mixed(dep: Deployment, contexts: Sequence[int]) -> Step:
    """One decode step of len(contexts) requests, each at its own context (continuous batching)."""
    ctx = np.asarray(contexts, dtype=np.float64)
    if ctx.ndim != 1 or ctx.size == 0:
        raise KokubanError("contexts must be a non-empty list of token counts")
    b = float(ctx.size)
    attended = dep.model.attended_tokens(ctx).sum()
    kv = attention_kv_bytes_per_request(dep, ctx).sum() * decode_kv_read_factor(dep)
    state = b * 2 * state_bytes_per_request(dep)
    return _step(dep, b, b, attended, dep.model.attn_flops_per_ctx_token_per_layer_decode, kv, state)


def prefill(dep: Deployment, batch: Any, prompt_tokens: Any, cached_tokens: Any = 0) -> Step:
    """Prefill `batch` prompts of `prompt_tokens` tokens, the first `cached_tokens` of which already have
    their KV cache (a prefix-cache hit, or the earlier chunks of a chunked prefill).

    New tokens n = T − C per prompt. Work: batch·n tokens through the active weights (MoE: experts
    touched by batch·n tokens, all of them for any real prompt); causal attention of the new queries:
    Σ_layers Σ_{C<t≤T} min(t, window) pairs per prompt; KV traffic: the new tokens' KV written plus the
    cached prefix's KV read once: kv(T) − kv(C) + kv(C) = kv(T) per prompt; a linear-attention state
    written once per prompt (read too when a cached prefix resumes it: C > 0). Long prompts make this
    compute-bound.
    """
    b = np.asarray(batch, dtype=np.float64)
    t = np.asarray(prompt_tokens, dtype=np.float64)
    c = np.asarray(cached_tokens, dtype=np.float64)
    if np.any(c < 0) or np.any(c >= t):
        raise KokubanError(f"cached tokens must be in [0, prompt tokens): got {cached_tokens} of {prompt_tokens}")
    m = dep.model
    attended = b * (m.causal_attended_tokens(t) - m.causal_attended_tokens(c))
    kv = b * attention_kv_bytes_per_request(dep, t)
    state = b * np.where(c > 0, 2.0, 1.0) * state_bytes_per_request(dep)
    return _step(dep, b, b * (t - c), attended, m.attn_flops_per_ctx_token_per_layer_prefill, kv, state)
