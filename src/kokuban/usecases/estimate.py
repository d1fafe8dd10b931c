"""The blackboard: one configuration, every term. `estimate()` is what `kokuban estimate` prints.

Data flows one way: specs (model, accelerator, deployment) → roofline and memory → cost → this
summary. Nothing here computes physics of its own; it only decides which steps to evaluate.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from kokuban.core import cost, memory, roofline
from kokuban.errors import KokubanError, require_positive
from kokuban.specs.catalog import load_accelerator, load_model
from kokuban.specs.deployment import Deployment
from kokuban.specs.hardware import Accelerator, Efficiency
from kokuban.specs.model import ModelSpec

DEFAULT_CONTEXT = 4096


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
        usd_per_request=dep.usd_per_s * total / batch,
    )


@dataclass(frozen=True)
class Estimate:
    """Everything `kokuban estimate` reports, as typed objects. `as_dict()` gives the stable JSON."""

    deployment: Deployment
    batch: int
    context: int
    memory: memory.MemoryPlan
    decode: roofline.Step
    prefill: roofline.Step
    prefill_tokens: int
    generation: Generation | None

    def as_dict(self) -> dict[str, Any]:
        dep, m = self.deployment, self.deployment.model
        dec, pre = self.decode, self.prefill
        step_s = float(dec.step_time_s)
        split = {k: float(v) for k, v in cost.decode_split_usd_per_m(dep, dec).items()}
        out = {
            "model": {
                "name": m.name, "family": m.family, "params_total": m.params_total, "params_active": m.params_active,
                "flops_per_token": m.flops_per_token, "max_context": m.max_context, "attention": m.attention,
                "kv_bytes_per_token": m.kv_bytes_per_token(dep.kv_dtype),
                "kv_bytes_per_token_beyond_windows": m.kv_bytes_per_token(dep.kv_dtype, beyond_windows=True),
                "num_experts": m.num_experts, "top_k": m.top_k, "notes": list(m.notes), "source": m.source,
            },
            "hardware": {
                "id": dep.accelerator.id, "name": dep.accelerator.name, "num_gpus": dep.num_gpus, "layout": dep.layout,
                "memory_bytes": dep.accelerator.memory_bytes,
                "memory_bandwidth_bytes_per_s": dep.accelerator.memory_bandwidth_bytes_per_s,
                "peak_flops": dep.accelerator.flops(dep.compute_dtype),
                "interconnect_bytes_per_s": dep.accelerator.interconnect_bytes_per_s,
            },
            "precision": {"weights": dep.weights_dtype, "kv": dep.kv_dtype, "compute": dep.compute_dtype},
            "efficiency": dep.efficiency.as_dict(),
            "memory": self.memory.as_dict(),
            "decode": {
                "batch": self.batch, "context": self.context,
                **dec.as_dict(),
                "tokens_per_s": self.batch / step_s,
                "tokens_per_s_per_user": 1.0 / step_s,
            },
            "prefill": {
                "batch": self.batch, "prompt_tokens": self.prefill_tokens,
                **{k: v for k, v in pre.as_dict().items() if k != "step_time_s"},
                "time_s": float(pre.step_time_s),
                "tokens_per_s": float(pre.tokens / pre.step_time_s),
            },
            "cost": {
                "usd_per_hour": dep.usd_per_s * 3600,
                "usd_per_m_input": float(cost.usd_per_m_input(dep, pre)),
                "usd_per_m_output": float(cost.usd_per_m_output(dep, dec)),
                "decode_split_usd_per_m": split,
            },
        }
        if self.generation:
            out["generation"] = self.generation.as_dict()
        return out


def estimate(
    model: str | ModelSpec,
    gpu: str | Accelerator,
    *,
    gpus: int = 1,
    batch: int | str = 1,
    context: int | None = None,
    prompt: int | None = None,
    output: int | None = None,
    weights: str | None = None,
    kv: str | None = None,
    compute: str | None = None,
    layout: str = "tp",
    price_per_hour: float | None = None,
    efficiency: Efficiency | None = None,
    gpu_file: str | None = None,
    allow_beyond_max_context: bool = False,
) -> Estimate:
    """Price and time one configuration. `batch='max'` takes the largest batch that fits.

    Context: `context` if given, else prompt + output when both are given, else 4096 (or the model's
    maximum if smaller). Prefill is of `prompt` tokens if given, else of `context` tokens.
    Raises KokubanError (one line) for bad input or a configuration that does not fit.
    """
    spec = model if isinstance(model, ModelSpec) else load_model(model)
    acc = gpu if isinstance(gpu, Accelerator) else load_accelerator(gpu, gpu_file)
    dep = Deployment.make(spec, acc, gpus, layout=layout, weights_dtype=weights, kv_dtype=kv, compute_dtype=compute,
                          efficiency=efficiency, price_per_hour_usd=price_per_hour)
    if (prompt is None) != (output is None):
        raise KokubanError("--prompt and --output go together: give both or neither")
    for name, value in (("--prompt", prompt), ("--output", output), ("--context", context)):
        if value is not None:
            require_positive(name, value, integer=True)
    if context is None:
        context = prompt + output if prompt is not None else min(DEFAULT_CONTEXT, spec.max_context)
    longest = max(context, (prompt or 0) + (output or 0))
    if longest > spec.max_context and not allow_beyond_max_context:
        raise KokubanError(f"context {longest} exceeds {spec.name}'s maximum of {spec.max_context} tokens")

    if batch == "max":
        b = int(memory.max_batch(dep, longest))
        if b < 1:
            mp = memory.plan(dep, 1, longest)
            raise KokubanError(no_fit_message(dep, mp))
    else:
        require_positive("--batch", batch, integer=True)
        b = int(batch)
    mp = memory.plan(dep, b, longest)
    if not mp.fits:
        raise KokubanError(no_fit_message(dep, mp))
    prefill_tokens = prompt if prompt is not None else context
    return Estimate(
        deployment=dep, batch=b, context=context, memory=mp,
        decode=roofline.decode_step(dep, b, context), prefill=roofline.prefill(dep, b, prefill_tokens),
        prefill_tokens=prefill_tokens,
        generation=generation(dep, b, prompt, output) if prompt is not None else None,
    )


def no_fit_message(dep: Deployment, mp: memory.MemoryPlan) -> str:
    gb = 1e9
    need = mp.used_bytes
    text = (
        f"does not fit: {dep.model.name} batch {mp.batch} at context {mp.context} needs {need / gb:.1f} GB per GPU "
        f"(weights {mp.weights_bytes / gb:.1f} + KV {mp.kv_bytes_per_gpu / gb:.1f} + activations "
        f"{mp.activation_bytes / gb:.1f}) but {dep.num_gpus}× {dep.accelerator.id} offers {mp.usable_bytes / gb:.1f} GB usable"
    )
    if mp.max_batch >= 1:
        text += f"; the largest batch that fits is {mp.max_batch}"
    if mp.min_gpus:
        text += f"; {mp.min_gpus}× {dep.accelerator.id} would fit batch {mp.batch}"
    elif mp.max_batch < 1:
        text += f"; no count up to {memory.GPU_COUNTS[-1]} of {dep.accelerator.id} fits"
    return text
