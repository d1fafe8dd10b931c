"""Memory: what one GPU holds (weights, KV cache, activation workspace), whether it fits, and what would.

    usable per GPU   = HBM capacity × memory_utilization            (vLLM's gpu_memory_utilization, 0.9),
                       or the engine's own rule (`memory_budget`, `Deployment.memory_rule`)
    weights per GPU  = bytes.weight_bytes_per_gpu
    activations      = chunk·2·(4·d + 2·mlp_width/N_tp)  + requests·vocab·4
                       (one prefill chunk's residual, qkv/attention-out and gated-MLP activations in
                       bf16 — a rule of thumb — plus fp32 logits of one sampled token per request)
    KV per GPU       = requests on the GPU × (attention KV per request ÷ KV shards
                                            + linear-attention state per request ÷ state shards)
    fits             ⇔ weights + activations + KV ≤ usable
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from kokuban.core.bytes import (
    attention_kv_bytes_per_request,
    kv_bytes_per_request,
    kv_bytes_per_request_per_gpu,
    state_bytes_per_request,
    weight_bytes_per_gpu,
    weight_bytes_stored,
)
from kokuban.errors import KokubanError
from kokuban.specs.deployment import Deployment

GPU_COUNTS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)
LOGIT_BYTES = 4.0  # fp32 logits of the sampled position


def activation_bytes_per_gpu(dep: Deployment, requests_per_gpu: Any) -> np.ndarray:
    """Activation workspace of one GPU (see module docstring); 0 for a coarse model without hidden size."""
    m = dep.model
    chunk = dep.parallel.prefill_chunk_per_gpu(dep.prefill_chunk_tokens)
    per_token = 2.0 * (4 * m.hidden_size + 2 * m.mlp_width / dep.dense_shards)
    return chunk * per_token + np.asarray(requests_per_gpu, dtype=np.float64) * m.vocab_size * LOGIT_BYTES


def memory_budget(dep: Deployment, activation_bytes: Any) -> tuple[Any, Any]:
    """(usable, KV) bytes per GPU by the engine's memory rule (`Deployment.memory_rule`): `usable` is what weights,
    activations and KV cache may take together, `KV` what is left for the KV cache beside the weights W and
    `activation_bytes` A. With f = memory_utilization, H = HBM capacity, X = the rule's non-torch bytes:

        utilization     usable = f·H − X,            KV = usable − W − A
                        vLLM: gpu_memory_utilization × total memory − the profiled peak (weights, activations,
                        non-torch allocations; vllm/v1/worker/gpu_worker.py determine_available_memory)
        static          usable = f·H + A,            KV = f·H − W
                        SGLang: mem_fraction_static × total memory holds weights + KV pool; activations and CUDA
                        graphs live in the reserve (python/sglang/srt/server_args.py, model_runner.py)
        free_fraction   KV = f·(H − W − A − X),      usable = W + A + KV
                        TensorRT-LLM: KvCacheConfig.free_gpu_memory_fraction of the memory still free once the
                        weights and the activation workspace are allocated

    Assumes the activation peak the engine profiles is `activation_bytes` (the rule of thumb of this module)."""
    rule, f, hbm = dep.memory_rule, dep.memory_utilization, dep.accelerator.memory_bytes
    weights = weight_bytes_per_gpu(dep)
    act = np.asarray(activation_bytes, dtype=np.float64) if np.ndim(activation_bytes) else float(activation_bytes)
    if rule.kind == "static":
        return hbm * f + act, hbm * f - weights
    if rule.kind == "free_fraction":
        kv = f * (hbm - weights - act - rule.non_torch_bytes)
        return weights + act + kv, kv
    usable = hbm * f - rule.non_torch_bytes if rule.non_torch_bytes else hbm * f
    return usable, usable - weights - act


def activation_share(dep: Deployment) -> float:
    """How much of one more byte of activations the KV budget of `memory_budget` loses: 1 (utilization),
    0 (static: activations are in the reserve), f (free_fraction)."""
    kind = dep.memory_rule.kind
    return 0.0 if kind == "static" else dep.memory_utilization if kind == "free_fraction" else 1.0


def requests_per_gpu(dep: Deployment, batch: Any) -> np.ndarray:
    """Under TP every GPU holds a slice of every request; under EP each GPU holds ⌈B/N⌉ whole requests."""
    return dep.parallel.requests_per_gpu(batch)


def max_batch(dep: Deployment, context: Any) -> np.ndarray:
    """Largest batch whose KV cache and workspace fit beside the weights at `context` (0 if none).

    TP: ⌊KV budget at the fixed activations (`memory_budget`: usable − weights − fixed activations by default)
    ÷ (KV per request per GPU + the budget's share of the logits per request, `activation_share`)⌋.
    EP: N × that, each GPU holding whole requests.
    """
    free = memory_budget(dep, activation_bytes_per_gpu(dep, 0))[1]
    logits = activation_share(dep) * dep.model.vocab_size * LOGIT_BYTES
    per_request = kv_bytes_per_request_per_gpu(dep, context) + logits
    per_gpu = np.floor(np.maximum(free, 0) / per_request)
    return (per_gpu * dep.parallel.data_parallel_ranks).astype(np.int64)


@dataclass(frozen=True)
class MemoryPlan:
    """Memory of a deployment for `batch` requests at `context` tokens. Bytes; per GPU unless `_total`."""

    batch: int
    context: int
    capacity_bytes: float
    usable_bytes: float
    weights_bytes: float
    weights_total_bytes: float
    activation_bytes: float
    kv_bytes_per_request: float
    kv_bytes_per_gpu: float
    kv_bytes: float
    fits: bool
    max_batch: int
    min_gpus: int | None

    @property
    def used_bytes(self) -> float:
        return self.weights_bytes + self.activation_bytes + self.kv_bytes_per_gpu

    def as_dict(self) -> dict[str, Any]:
        return asdict(self) | {"used_bytes": self.used_bytes}


def min_gpus_to_fit(dep: Deployment, batch: int, context: int) -> int | None:
    """Smallest count in 1, 2, 4, … 1024 of the same accelerator and layout that holds `batch` at `context`."""
    for n in GPU_COUNTS:
        if int(max_batch(dep.with_gpus(n), context)) >= batch:
            return n
    return None


def plan(dep: Deployment, batch: int, context: int) -> MemoryPlan:
    """The memory plan; `min_gpus` is filled only when the configuration does not fit."""
    kv_req = float(kv_bytes_per_request(dep, context))
    rpg = float(requests_per_gpu(dep, batch))
    # rpg × kv_bytes_per_request_per_gpu, multiplied in this order (float products depend on it; the figures
    # quoted for attention-only models are computed so)
    kv_gpu = rpg * float(attention_kv_bytes_per_request(dep, context)) / dep.kv_shards
    if dep.model.has_state:  # the constant recurrent state, split by its own heads
        kv_gpu += rpg * state_bytes_per_request(dep) / dep.state_shards
    weights = weight_bytes_per_gpu(dep)
    act = float(activation_bytes_per_gpu(dep, rpg))
    usable = float(memory_budget(dep, act)[0])
    fits = weights + act + kv_gpu <= usable
    return MemoryPlan(
        batch=int(batch), context=int(context), capacity_bytes=dep.accelerator.memory_bytes, usable_bytes=usable,
        weights_bytes=weights, weights_total_bytes=weight_bytes_stored(dep), activation_bytes=act,
        kv_bytes_per_request=kv_req, kv_bytes_per_gpu=kv_gpu, kv_bytes=batch * kv_req, fits=bool(fits),
        max_batch=int(max_batch(dep, context)), min_gpus=None if fits else min_gpus_to_fit(dep, batch, context),
    )


def no_fit_message(dep: Deployment, mp: MemoryPlan) -> str:
    """Why `mp` does not fit, in numbers, and what would: the largest batch, or the GPU count that holds it."""
    gb = 1e9
    need = mp.used_bytes
    text = (
        f"does not fit: {dep.model.name} batch {mp.batch} at context {mp.context} needs {need / gb:.1f} GB per GPU "
        f"(weights {mp.weights_bytes / gb:.1f} + KV {mp.kv_bytes_per_gpu / gb:.1f} + activations "
        f"{mp.activation_bytes / gb:.1f}) but {dep.num_gpus}× {dep.accelerator.id} offers {mp.usable_bytes / gb:.1f} "
        "GB usable"
    )
    if mp.max_batch >= 1:
        text += f"; the largest batch that fits is {mp.max_batch}"
    if mp.min_gpus:
        text += f"; {mp.min_gpus}× {dep.accelerator.id} would fit batch {mp.batch}"
    elif mp.max_batch < 1:
        text += f"; no count up to {GPU_COUNTS[-1]} of {dep.accelerator.id} fits"
    return text


def no_fit_error(dep: Deployment, mp: MemoryPlan, *, field: str | None = None, value: Any = None) -> KokubanError:
    """The refusal of a configuration that does not fit: `no_fit_message` as its reason and, as its `detail`
    (`--json`'s `error.detail.does_not_fit`), the same numbers, per GPU as in `MemoryPlan`: the batch and
    context asked, bytes needed (`used_bytes`) and usable, the largest batch that fits on these GPUs (0: none)
    and the GPU count that holds the batch (None: none up to 1024)."""
    detail = {"does_not_fit": {
        "batch": mp.batch, "context": mp.context, "gpus": dep.num_gpus, "gpu": dep.accelerator.id,
        "used_bytes": mp.used_bytes, "usable_bytes": mp.usable_bytes,
        "weights_bytes": mp.weights_bytes, "kv_bytes_per_gpu": mp.kv_bytes_per_gpu,
        "activation_bytes": mp.activation_bytes, "max_batch": max(mp.max_batch, 0), "min_gpus": mp.min_gpus,
    }}
    return KokubanError(no_fit_message(dep, mp), field=field, value=value, detail=detail)
