"""The blackboard: one configuration, every term. `estimate()` is what `kokuban estimate` prints.

Data flows one way: specs (model, accelerator, deployment) → roofline and memory → cost → this
summary. Nothing here computes physics of its own; it only decides which steps to evaluate.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kokuban.core import cost, memory, roofline
from kokuban.core.generation import Generation, generation
from kokuban.specs.deployment import Deployment
from kokuban.specs.hardware import Accelerator, Efficiency
from kokuban.specs.model import ModelSpec
from kokuban.usecases.request import EstimateRequest, default_context


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
                "state_bytes_per_request": roofline.state_bytes_per_request(dep),
                "experts": m.num_experts, "top_k": m.top_k, "notes": list(m.notes), "source": m.source,
            },
            "hardware": {
                "id": dep.accelerator.id, "name": dep.accelerator.name, "gpus": dep.num_gpus, "layout": dep.layout,
                "memory_bytes": dep.accelerator.memory_bytes,
                "memory_bandwidth_bytes_per_s": dep.accelerator.memory_bandwidth_bytes_per_s,
                "peak_flops": dep.accelerator.flops(dep.compute_dtype),
                "interconnect_bytes_per_s": dep.accelerator.interconnect_bytes_per_s,
                "usd_per_gpu_hour": dep.price_per_hour_usd,
                "sm_count": dep.accelerator.sm_count, "boost_clock_hz": dep.accelerator.boost_clock_hz,
                **dict(zip(("ggml_mmvq_bytes_per_s", "ggml_mmq_flops_per_s"), roofline.ggml_per_sm(dep),
                           strict=True)),
            },
            "precision": {"weights": dep.weights_dtype, "kv": dep.kv_dtype, "compute": dep.compute_dtype,
                          "experts": dep.expert_weights_dtype, "experts_compute": dep.expert_compute_dtype},
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
                "usd_per_hour": cost.usd_of_seconds(dep, 3600.0),
                "usd_per_m_input": float(cost.usd_per_m_input(dep, pre)),
                "usd_per_m_output": float(cost.usd_per_m_output(dep, dec)),
                "decode_split_usd_per_m": split,
            },
        }
        if self.generation:
            out["generation"] = self.generation.as_dict()
        return out


def run_estimate(request: EstimateRequest) -> Estimate:
    """Price and time one configuration (see `EstimateRequest` for the defaults).

    Prefill is of `prompt` tokens if given, else of `context` tokens; with prompt and output, the whole
    generation is timed too. Raises KokubanError (one line, naming the field) for a configuration that does
    not fit, saying what would.
    """
    r = request
    dep = r.deployment()
    spec = dep.model
    context = default_context(spec, r.context, r.prompt, r.output)
    longest = max(context, (r.prompt or 0) + (r.output or 0))
    if not r.allow_beyond_max_context:
        spec.require_context(longest, field="context" if longest == context else "output")
    if r.batch == "max":
        b = int(memory.max_batch(dep, longest))
        if b < 1:
            raise memory.no_fit_error(dep, memory.plan(dep, 1, longest), field="batch", value="max")
    else:
        b = int(r.batch)
    mp = memory.plan(dep, b, longest)
    if not mp.fits:
        raise memory.no_fit_error(dep, mp, field="batch", value=b)
    prefill_tokens = r.prompt if r.prompt is not None else context
    return Estimate(
        deployment=dep, batch=b, context=context, memory=mp,
        decode=roofline.decode_step(dep, b, context), prefill=roofline.prefill(dep, b, prefill_tokens),
        prefill_tokens=prefill_tokens,
        generation=generation(dep, b, r.prompt, r.output) if r.prompt is not None else None,
    )


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
    experts: str | None = None,
    layout: str = "tp",
    price_per_hour: float | None = None,
    efficiency: Efficiency | None = None,
    gpu_file: str | None = None,
    allow_beyond_max_context: bool = False,
) -> Estimate:
    """Price and time one configuration: `run_estimate(EstimateRequest(...))` with keyword arguments.

    `batch='max'` takes the largest batch that fits. Context: `context` if given, else prompt + output when
    both are given, else 4096 (or the model's maximum if smaller). Raises KokubanError (one line) for bad
    input or a configuration that does not fit.
    """
    return run_estimate(EstimateRequest(
        model=model, gpu=gpu, gpus=gpus, batch=batch, context=context, prompt=prompt, output=output,
        weights=weights, kv=kv, compute=compute, experts=experts, layout=layout, price_per_hour=price_per_hour,
        efficiency=efficiency, gpu_file=gpu_file, allow_beyond_max_context=allow_beyond_max_context))
