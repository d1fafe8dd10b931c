"""The blackboard page's use case: one estimate, placed on the roofline picture, with output-vs-input cost and
a plain "why" built from the estimate's own terms (what bounds the step, and what would move it).

`run_blackboard(EstimateRequest)` returns `run_estimate`'s result unchanged under "estimate", so every number
the page shows beside the charts is the one `kokuban estimate --json` prints.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kokuban.usecases.estimate import Estimate, run_estimate
from kokuban.usecases.request import EstimateRequest


@dataclass(frozen=True)
class OperatingPoint:
    """A step on the roofline picture: FLOPs, HBM bytes (weights + KV), intensity, achieved FLOP/s, roof."""

    flops: float
    bytes_moved: float
    intensity_flop_per_byte: float
    achieved_flops_per_s: float
    attainable_flops_per_s: float
    bound: str


@dataclass(frozen=True)
class Blackboard:
    """An estimate, its roofline (deployment-wide roofs and the two operating points) and the why."""

    estimate: Estimate
    peak_flops_per_s: float
    bandwidth_bytes_per_s: float
    ridge_flop_per_byte: float
    roof_intensity_flop_per_byte: tuple[float, ...]  # the roof drawn: intensities (log-spaced, the ridge included)
    roof_attainable_flops_per_s: tuple[float, ...]  # and min(F, I × BW) at each
    decode: OperatingPoint
    prefill: OperatingPoint
    output_to_input_ratio: float
    crossover_batch: int | None
    why: tuple[str, ...]

    def as_dict(self) -> dict[str, Any]:
        from dataclasses import asdict

        return {
            "estimate": self.estimate.as_dict(),
            "roofline": {
                "peak_flops_per_s": self.peak_flops_per_s, "bandwidth_bytes_per_s": self.bandwidth_bytes_per_s,
                "ridge_flop_per_byte": self.ridge_flop_per_byte,
                "roof": {"intensity_flop_per_byte": list(self.roof_intensity_flop_per_byte),
                         "attainable_flops_per_s": list(self.roof_attainable_flops_per_s)},
                "decode": asdict(self.decode), "prefill": asdict(self.prefill),
            },
            "output_to_input_ratio": self.output_to_input_ratio,
            "crossover_batch": self.crossover_batch,
            "why": list(self.why),
        }


def _point(step: Any, peak: float, bw: float) -> OperatingPoint:
    from kokuban.core.intensity import arithmetic_intensity, attainable_flops_per_s

    flops, moved = float(step.flops), float(step.weight_bytes + step.kv_bytes)
    intensity = float(arithmetic_intensity(flops, moved))
    return OperatingPoint(flops=flops, bytes_moved=moved, intensity_flop_per_byte=intensity,
                          achieved_flops_per_s=flops / float(step.step_time_s),
                          attainable_flops_per_s=float(attainable_flops_per_s(intensity, peak, bw)),
                          bound=str(step.bound))


def _num(x: float) -> str:
    """A number for a sentence: whole with thousands separators from 100 up, else 3 significant digits."""
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.3g}"


def _why(est: Estimate, ratio: float, crossover: int | None) -> tuple[str, ...]:
    """Sentences from the estimate's terms: the bound and its share, the lever that moves it, prefill, memory."""
    d = est.as_dict()
    dec, pre, mem = d["decode"], d["prefill"], d["memory"]
    br = dec["breakdown"]
    b, ctx, step = dec["batch"], dec["context"], dec["step_time_s"]
    terms = {"multiply compute": br["multiply_compute_s"], "weight read": br["weights_s"],
             "attention compute": br["attention_compute_s"], "KV read": br["kv_s"], "communication": br["comm_s"],
             "TP barrier wait": br["sync_s"], "fixed overhead": br["overhead_s"]}
    listed = ", ".join(f"{k} {v * 1e3:.3g} ms" for k, v in terms.items() if v > 0)
    first = (f"Decode is {dec['bound']}-bound: one step of batch {b:,} at context {ctx:,} takes {step * 1e3:.3g} ms "
             f"({listed}), so each user gets {_num(dec['tokens_per_s_per_user'])} tokens/s and the deployment "
             f"{_num(dec['tokens_per_s'])} tokens/s.")
    out = [first]
    fit = mem["max_batch"]
    kv_gb = mem["kv_bytes_per_request"] / 1e9
    bound = dec["bound"]
    if bound == "weights":
        lever = (f"The weight read ({dec['weights_read_bytes'] / 1e9:.3g} GB a step) is shared by the batch: a larger "
                 f"batch spreads it over more tokens; {fit:,} requests fit at this context")
        within = crossover is not None and crossover <= fit
        lever += (f", and decode turns compute-bound from batch {crossover:,}." if within
                  else "; memory stops the batch before compute binds." if crossover is not None
                  else ", but each request's own KV read outlasts its compute, so compute never binds.")
    elif bound == "kv":
        lever = (f"Each request reads its own KV cache ({kv_gb:.3g} GB at this context) every step, which no batch "
                 "shares: a shorter context, a smaller KV dtype or more memory bandwidth moves it, a larger batch "
                 "does not.")
    elif bound == "compute":
        lever = ("The multipliers are busy: more FLOP/s (a lower-precision compute dtype, more or faster accelerators) "
                 "moves it; a larger batch no longer lowers the cost of a token.")
    elif bound == "comm":
        ep = " or expert parallelism" if est.deployment.model.is_moe and d["hardware"]["layout"] == "tp" else ""
        lever = (f"Communication between accelerators outlasts the kernels: fewer accelerators, a faster link{ep} "
                 "moves it.")
    else:
        lever = (f"The fixed overhead of {br['overhead_s'] * 1e3:.3g} ms a step outlasts the kernels: a larger batch "
                 f"spreads it over more tokens ({fit:,} fit).")
    out.append(lever)
    out.append(f"Prefill of {pre['batch']:,}×{pre['prompt_tokens']:,} tokens is {pre['bound']}-bound "
               f"({_num(pre['tokens_per_s'])} tokens/s): it pushes {pre['batch'] * pre['prompt_tokens']:,} tokens "
               "through "
               f"each weight read where decode pushes {b:,}, so an output token costs {ratio:.3g}× an input token "
               f"(${d['cost']['usd_per_m_output']:.3g} vs ${d['cost']['usd_per_m_input']:.3g} per million).")
    out.append(f"Memory: {mem['used_bytes'] / 1e9:.3g} GB of {mem['usable_bytes'] / 1e9:.3g} GB usable per accelerator "
               f"(weights {mem['weights_bytes'] / 1e9:.3g}, KV {mem['kv_bytes_per_gpu'] / 1e9:.3g}, activations "
               f"{mem['activation_bytes'] / 1e9:.3g}); the largest batch that fits is {fit:,}.")
    return tuple(out)


def run_blackboard(request: EstimateRequest) -> Blackboard:
    """`run_estimate`, then the roofline picture: roofs F = N × peak[compute dtype] × compute efficiency and
    BW = N × HBM bandwidth × memory efficiency; each step's intensity = FLOPs ÷ (weight + KV bytes) and its
    achieved FLOP/s = FLOPs ÷ step time (`core.intensity`). Bytes are the model's weight bytes read once
    (`roofline.weight_bytes_read`): under expert parallelism, where each GPU reads the always-read part for
    its own requests, the bytes moved are more and the point sits further left than drawn."""
    import numpy as np

    from kokuban.core import cost
    from kokuban.core.intensity import attainable_flops_per_s, ridge_intensity
    from kokuban.core.roofline import gemm_ceiling_fraction
    from kokuban.economics.batch import crossover_batch

    est = run_estimate(request)
    dep = est.deployment
    n, acc, eff = dep.num_gpus, dep.accelerator, dep.efficiency
    peak = n * acc.flops(dep.compute_dtype) * gemm_ceiling_fraction(dep)  # a large GEMM's ceiling in this dtype
    bw = n * acc.memory_bandwidth_bytes_per_s * eff.weight_memory_fraction
    dec, pre = est.decode, est.prefill
    ratio = float(cost.cost_ratio(cost.usd_per_m_output(dep, dec), cost.usd_per_m_input(dep, pre),
                                  dec.step_time_s / dec.batch, pre.step_time_s / pre.tokens))
    crossover = crossover_batch(dep, est.context)
    decode, prefill, ridge = _point(dec, peak, bw), _point(pre, peak, bw), ridge_intensity(peak, bw)
    lo = min(0.1, decode.intensity_flop_per_byte / 3)
    hi = max(1e5, prefill.intensity_flop_per_byte * 3) if np.isfinite(prefill.intensity_flop_per_byte) else 1e5
    xs = np.sort(np.append(np.geomspace(lo, hi, 61), ridge))
    return Blackboard(
        estimate=est, peak_flops_per_s=peak, bandwidth_bytes_per_s=bw, ridge_flop_per_byte=ridge,
        roof_intensity_flop_per_byte=tuple(float(x) for x in xs),
        roof_attainable_flops_per_s=tuple(float(y) for y in attainable_flops_per_s(xs, peak, bw)),
        decode=decode, prefill=prefill, output_to_input_ratio=ratio,
        crossover_batch=crossover, why=_why(est, ratio, crossover),
    )
