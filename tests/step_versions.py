"""Superseded step models rebuilt from explicit fields, for the tests that reproduce figures docs/validation.md quotes
at them. kokuban ships one step model (`specs.hardware.STEP_MODEL`); these are the current code with the terms a
version lacked switched off by explicit `KernelCurves` fields and with the global fractions it was fitted to.

    step-v2   the kernel curves without the GEMM shape term or any accelerator's own constants (`V3_CURVES`) at
              compute 0.74, memory 0.89, 2.15 ms a step (`V2_FRACTIONS`)
    step-v3   the same curves at the fractions of validation/profiles.py's procedure on seed 0's training rows of
              the published set of its time: 0.70 / 0.63 / 0.36 ms (`V3_FRACTIONS`); with the KV re-read rule
              (`V3_KV_REREAD_FRACTIONS`); with fitted fused-dequantising and decode-loop terms
              (`V3_LOOP_FRACTIONS`)
    step-v7   the shipped model without a tensor-parallel group's barrier wait (`step_v7`)

Up to step-v4 TensorRT-LLM's rows held 0.6e9 bytes per GPU outside the KV pool (`V4_NON_TORCH_BYTES`); the engine
profile's fitted 3.0e9 came after.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from kokuban.specs.hardware import Efficiency

#: The kernel curves of step-v2 and step-v3: no GEMM shape term (halves 0), M_half 70, fp8 and int8 at 0.71 of bf16,
#: fp4 at 0.54, the MoE layer fitted at that form (39 µs + 15.3 ns a pair; fp4 49.9 µs + 21.4 ns), no accelerator's
#: own constants, no llama.cpp per-SM bound, no barrier wait (specs/kernels.py's module docstring: the shape-free fits)
V3_CURVES: dict[str, Any] = {
    "m_half_tokens": 70.0, "fp8_ratio": 0.71, "fp4_ratio": 0.54, "int8_ratio": 0.71, "n_half_bf16": 0.0,
    "k_half_bf16": 0.0, "n_half_fp8": 0.0, "k_half_fp8": 0.0, "moe_layer_s": 39e-6, "moe_pair_s": 15.3e-9,
    "moe_layer_fp4_s": 49.9e-6, "moe_pair_fp4_s": 21.4e-9, "per_accelerator": False, "ggml_mmq_ops_per_cycle": 0.0,
    "ggml_sm_stream_bytes_per_cycle": 0.0, "tp_sync_loss": 0.0}
#: step-v2's fractions: memory and step overhead fitted with the curves on seed 0's two thirds of 43 published rows,
#: compute held at the scalar set's 0.74
V2_FRACTIONS = {"compute": 0.74, "memory": 0.89, "step_overhead_s": 2.15e-3}
#: step-v3's first fractions: compute 0.6984, memory 0.6333, 0.363 ms fitted on seed 0's 33 training rows of 48
V3_FRACTIONS = {"compute": 0.70, "memory": 0.63, "step_overhead_s": 0.36e-3}
#: step-v3 with the KV re-read rule (`kv_reread`) and Huber's loss, fitted on seed 0's 55 training rows of 77
V3_KV_REREAD_FRACTIONS = {"compute": 0.69, "memory": 0.84, "step_overhead_s": 2.6e-3, "kv_reread": 0.49}
#: step-v3 with the fused dequantising rate and the decode loop's step fitted too, on seed 0's 71 training rows of 100
V3_LOOP_FRACTIONS = {"compute": 0.72, "memory": 0.89, "step_overhead_s": 4.6e-3, "kv_reread": 0.76,
                     "dequant_memory": 1.0, "loop_overhead_s": 1.2e-3}
#: the bytes per GPU TensorRT-LLM held outside its KV pool in the rows priced up to step-v4 (assumed, not fitted)
V4_NON_TORCH_BYTES = 0.6e9


def step_v3(fractions: dict[str, float] = V3_FRACTIONS) -> Efficiency:
    """step-v2 or step-v3 (`fractions`): `V3_CURVES` and TensorRT-LLM's memory rule of those versions."""
    return replace(Efficiency.kernel_calibrated(fractions, V3_CURVES), engine_non_torch_bytes=V4_NON_TORCH_BYTES)


def step_v7() -> Efficiency:
    """The shipped step model without a tensor-parallel group's barrier wait (`KernelCurves.tp_sync_loss` 0)."""
    return Efficiency.shipped().with_kernels(tp_sync_loss=0.0)
