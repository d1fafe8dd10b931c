"""Which kernel each weight matmul runs on ggml's CPU backend, by the tensor's GGUF type and M (the rows of
activations), and what a step costs priced matrix by matrix: the GEMM/GEMV split (`gemm_rows`), the passes over
the weights (`weight_passes`), the file's own bytes (`with_file_bytes`) and the fractions a step runs at
(`step_efficiency`); see the package docstring, `kokuban.validation.llamacpp`."""

from __future__ import annotations

from dataclasses import replace
from functools import cache
from typing import Any

from kokuban.specs.deployment import Deployment
from kokuban.specs.hardware import Efficiency
from kokuban.specs.kernels import KernelCurves
from kokuban.specs.model import ModelSpec
from kokuban.validation.llamacpp.gguf_files import GGUF_TYPES

#: The fewest rows of activations ggml's CPU backend hands to a GEMM kernel rather than its GEMV (`GEMM_SOURCE`).
GEMM_MIN_TOKENS = 2
GEMM_SOURCE = ("ggml-org/llama.cpp ggml/src/ggml-cpu/llamafile/sgemm.cpp at 8643c9d9b11b984238032a467689557f0eaee1a4 "
               "(read 2026-12-03), llamafile_sgemm: \"// only enable sgemm for prompt processing\" … "
               "\"if (n < 2) return false;\" (n: the columns of B, the activations' rows); ggml-cpu.c then falls back "
               "to the vec_dot loop. Repacked tensors (ggml/src/ggml-cpu/repack.cpp): \"If there are more than three "
               "rows in src1, use gemm; otherwise, use gemv.\"")


def matmul_path(m: int) -> str:
    """'gemv' for M < `GEMM_MIN_TOKENS` (ggml's vec_dot kernels), else 'gemm' (tinyBLAS or repacked: `GEMM_SOURCE`)."""
    return "gemv" if m < GEMM_MIN_TOKENS else "gemm"


def step_efficiency(eff: Efficiency, m_half_tokens: float | None, m: int) -> Efficiency:
    """The fractions a step whose matmuls have `m` rows runs at.

    GEMV path (M = 1), or `m_half_tokens` None (the flat model): `eff` without curves: every FLOP at the flat compute
    fraction. GEMM path (M ≥ 2): `eff` with the kernel profile's curves set (`KernelCurves(m_half_tokens=…)`, without
    the GPU tables' shape term: no CPU table measures it), so the
    roofline prices the weight matmuls at `gemm_fraction(compute, M, M_half)`. On one CPU nothing else of the
    curves applies: no collective runs, and fp32 (the reference rate) has dtype ratio 1. The LM head and attention
    stay at the flat compute fraction, as the roofline's kernel profile keeps them. `gemv_max_tokens` is ggml's own
    bound (M < 2), so the GPU default of 4 does not turn this CPU's M = 2-4 GEMMs into GEMVs."""
    if m_half_tokens is None or matmul_path(m) == "gemv":
        return replace(eff, kernels=None)
    return replace(eff, kernels=KernelCurves(m_half_tokens=float(m_half_tokens), gemv_max_tokens=GEMM_MIN_TOKENS - 1,
                                             n_half_bf16=0.0, k_half_bf16=0.0, n_half_fp8=0.0, k_half_fp8=0.0))


#: The weight matrices of a llama-architecture layer, as `write_gguf` names them.
LAYER_MATRICES = ("attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down")
#: The measured build: llama.cpp 0c1e570 (as vendored by llama-cpp-python 0.3.36's sdist) built by
#: evidence/llamacpp/llamacpp.sh with -DGGML_NATIVE=ON and llama.cpp's default GGML_LLAMAFILE=ON on this machine's CPU,
#: whose /proc/cpuinfo flags list avx2, fma and f16c and no avx512 (the record itself stores no CPU flags: an
#: assumption that the measuring machine is this one, as its name "AMD EPYC" and the probe's say).
KERNEL_SOURCE = (
    "llama.cpp 0c1e57098bba43ac29e6e3b677cdceebdd22334f as vendored by llama-cpp-python 0.3.36's sdist (read "
    "2026-12-04; whitespace compressed). ggml/src/ggml-cpu/repack.cpp, ggml_repack_get_optimal_repack_type: "
    "\"if (cur->type == GGML_TYPE_Q4_0) { if (ggml_cpu_has_avx2() || …) { if (cur->ne[1] % 8 == 0) { return "
    "&q4_0_8x8_q8_0; } }\" and \"} else if (cur->type == GGML_TYPE_Q4_K) { if (ggml_cpu_has_avx2()) { if "
    "(cur->ne[1] % 8 == 0) { return &q4_K_8x8_q8_K; } }\" (Q6_K and Q8_0 are repacked only on NEON or RISC-V); "
    "forward_mul_mat_one_chunk: \"// If there are more than three rows in src1, use gemm; otherwise, use gemv. if "
    "(nrows > 3) { gemm<…>(…, nrows - (nrows % 4), ncols); } for (int iter = nrows - (nrows % 4); iter < nrows; "
    "iter++) { gemv<…>(…) }\". ggml/src/ggml-cpu/ggml-cpu.c, ggml_compute_forward_mul_mat: \"// If tiled is "
    "supported, it will execute the full op here and we return if (ggml_compute_forward_mul_mat_tiled(params, "
    "dst)) { return; }\", then llamafile_sgemm, then the chunked vec_dot loop; ggml/src/ggml-cpu/tiled/tiled.cpp: "
    "ggml_tiled_supported (built for __AVX2__) takes Q6_K, Q5_K, Q4_K, Q3_K, Q2_K and IQ types that are not "
    "repacked (\"if (src0->extra != NULL) { return false; }\"), and \"static bool ggml_tiled_min_batch(int64_t "
    "rows) { // Profitable at rows >= 8 … return rows >= 8 || ggml_tiled_matmul_forced(); }\"; "
    "ggml/src/ggml-cpu/llamafile/sgemm.cpp, llamafile_sgemm: \"if (n < 2) return false;\", \"case GGML_TYPE_F16: "
    "… #elif (defined(__AVX__) || defined(__AVX2__)) && defined(__F16C__) if (Btype == GGML_TYPE_F16) { "
    "tinyBLAS<8, __m256, __m256, ggml_fp16_t, ggml_fp16_t, float> …\", \"case GGML_TYPE_Q8_0: { if (Btype != "
    "GGML_TYPE_Q8_0) return false; #if defined(__AVX2__) … tinyBLAS_Q0_AVX<block_q8_0, block_q8_0, float>\" (no "
    "case for Q6_K or Q4_K). llama-bench: \"/* repack */ { llama_model_default_params().use_extra_bufts }\", "
    "src/llama-model.cpp: \"/*.use_extra_bufts =*/ true,\" (repacking on by default).")
#: Tensor types repacked at load on this build, and the fewest rows their repacked GEMM takes (4 rows at a time).
REPACKED_TYPES = ("Q4_0", "Q4_K")
REPACK_GEMM_ROWS = 4
#: Tensor types the tiled K-quant matmul takes, and the fewest rows it takes them at (`ggml_tiled_min_batch`).
TILED_TYPES = ("Q6_K",)
TILED_MIN_ROWS = 8


def gguf_type_of(dep: Deployment) -> str:
    """The GGUF file type a `llamacpp_deployment` was built for (the inverse of `GGUF_TYPES`)."""
    return {v: k for k, v in GGUF_TYPES.items()}[dep.weights_dtype]


def body_tensor_type(gguf_type: str, matrix: str, layer: int, num_layers: int) -> str:
    """The ggml type llama-quantize writes a body matrix in (src/llama-quant.cpp, `dtypes.q4_k_m_body_bytes`):
    Q4_K_M puts attn_v and ffn_down in Q6_K in the layers where `dtypes.use_more_bits` holds and every other matrix
    in Q4_K; F16, Q8_0 and Q4_0 files keep every body matrix in their own type."""
    from kokuban.specs.dtypes import use_more_bits

    if gguf_type != "Q4_K_M":
        return gguf_type
    return "Q6_K" if matrix in ("attn_v", "ffn_down") and use_more_bits(layer, num_layers) else "Q4_K"


@cache
def body_matrices(spec: ModelSpec, gguf_type: str) -> tuple[tuple[str, int, str], ...]:
    """(matrix, weights K·N, tensor type) of every body weight matrix of a llama-architecture `spec` in a file of
    `gguf_type`: q and o hidden × heads·head_dim, k and v hidden × kv_heads·head_dim, gate and up hidden × MLP width,
    down MLP width × hidden, per layer (`body_tensor_type`). Cached: every prediction of a step asks for it."""
    kv = spec.kv_elements_per_token_per_layer // 2
    q = spec.num_heads * (kv // spec.num_kv_heads)
    d, f = spec.hidden_size, spec.mlp_width
    sizes = {"attn_q": d * q, "attn_k": d * kv, "attn_v": d * kv, "attn_output": q * d, "ffn_gate": d * f,
             "ffn_up": d * f, "ffn_down": f * d}
    return tuple((name, sizes[name], body_tensor_type(gguf_type, name, layer, spec.num_layers))
                 for layer in range(spec.num_layers) for name in LAYER_MATRICES)


def gemm_rows(tensor_type: str, m: int) -> int:
    """Of a matmul's `m` rows of activations, the rows ggml's CPU backend multiplies with a GEMM kernel on the
    measured build (`KERNEL_SOURCE`); the others run a GEMV kernel, one row of activations at a time.

    Repacked types (Q4_0 → q4_0_8x8, Q4_K → q4_K_8x8): the repacked GEMM on the largest multiple of 4 rows when
    there are more than 3, the repacked GEMV on the rest: m − m mod 4 for m ≥ 4, else 0. Q6_K: the tiled K-quant
    matmul for m ≥ 8, else the vec_dot loop (0). F16 and Q8_0: tinyBLAS for m ≥ 2, vec_dot at m = 1."""
    m = int(m)
    if tensor_type in REPACKED_TYPES:
        return m - m % REPACK_GEMM_ROWS if m >= REPACK_GEMM_ROWS else 0
    if tensor_type in TILED_TYPES:
        return m if m >= TILED_MIN_ROWS else 0
    return m if m >= GEMM_MIN_TOKENS else 0


def body_matmul_s(spec: ModelSpec, gguf_type: str, m: int, peak_flops: float, compute: float,
                  m_half_tokens: float, *, by_kernel: bool = True) -> float:
    """Seconds of a step's body weight matmuls at `m` rows of activations, each matrix priced by the kernel it runs:

        Σ_matrices 2·K·N·[g ÷ gemm_fraction(e, g, M_half) + (m − g) ÷ e] ÷ peak,   g = `gemm_rows`(type, m)

    (the GEMM kernel's g rows on the kernel profile's curve at its own g rows, the GEMV kernel's rows at the flat
    compute fraction e, as `step_efficiency` prices a whole GEMV step). `by_kernel` False: g = m for every matrix,
    what the roofline's GEMM path charges. Norm weights are left out (a norm is not a matmul)."""
    from kokuban.specs.kernels import gemm_fraction

    total = 0.0
    for _name, weights, tensor_type in body_matrices(spec, gguf_type):
        g = gemm_rows(tensor_type, m) if by_kernel else int(m)
        gemm = g / float(gemm_fraction(compute, g, m_half_tokens)) if g else 0.0
        total += 2.0 * weights * (gemm + (int(m) - g) / compute)
    return total / peak_flops


def weight_passes(tensor_type: str, m: int) -> int:
    """Passes a step of `m` rows of activations makes over a weight matrix of `tensor_type` (`KERNEL_SOURCE`):
    one for the GEMM kernel when it takes any rows, one for each row a GEMV kernel takes,
    (1 if g > 0 else 0) + (m − g) with g = `gemm_rows`. The repacked GEMV is called once per leftover row, over the
    chunk's whole weights (forward_mul_mat_one_chunk); the vec_dot loop calls one vec_dot per (weight row,
    activation row) pair. Assumes a GEMV kernel consumes weights at one rate in bytes per second whether they come
    from memory or from cache: on this CPU a 1-row step is bound by the dequantise-and-dot work per weight more than
    by DRAM (the batched-bench generation step of 2 rows takes 2.0–2.1× the 1-row step in the repacked types'
    training rows, where one pass for both rows would take about 1×). The repacked GEMM's AVX2 kernels pass over
    the weights once per 16 rows and once per leftover 4 (arch/x86/repack.cpp: "int anr = nr - nr%16;", "for (;
    y < anr / 4; y += 4)", "for (; y < nr / 4; y ++)"); counting those passes too gave the same training loss (to
    5 digits, Q4_0 and Q4_K_M: every such step is compute-bound), so the simpler count is kept."""
    m = int(m)
    g = gemm_rows(tensor_type, m)
    return (1 if g else 0) + m - g


def lm_head_tensor_type(gguf_type: str) -> str:
    """The GGUF type of the LM head (output, or the tied token_embd) of a file of `gguf_type`
    (`dtypes.GGUF_OUTPUT_TYPE`; F16 in the F16 file)."""
    from kokuban.specs.dtypes import GGUF_OUTPUT_TYPE

    return GGUF_OUTPUT_TYPE.get(GGUF_TYPES[gguf_type], "F16")


def with_kernel_paths(dep: Deployment, step: Any, m: int, outputs: int) -> Any:
    """`step` (a roofline Step of `m` rows, `outputs` of them through the LM head) with its matmuls priced per
    matrix by the kernel its tensor type runs (`gemm_rows`): on the GEMM path (curves set) the body's compute is
    `body_matmul_s` in place of the GEMM curve at M for every matrix; and the weight read is charged once more for
    every extra pass a kernel makes over its matrix (`weight_passes`: Σ file bytes × (passes − 1), the LM head at
    `outputs` rows, at the step's read rate; the passes apply on either path, so to the flat model too). Unchanged
    at M = 1 (one pass, no curves) and for a prompt of one sequence (every body matrix on a GEMM kernel at M ≥ 32,
    the LM head one row): moves steps of 2–7 rows in the repacked and Q6_K types and the LM head of 2–7 outputs in
    the Q6_K heads (Q4_0, Q4_K_M)."""
    from kokuban.core.bytes import lm_head_bytes

    gguf_type = gguf_type_of(dep)
    compute = 0.0
    curves = dep.efficiency.kernels
    if curves is not None:
        peak = dep.accelerator.flops(dep.compute_dtype) * dep.num_gpus
        args = (dep.model, gguf_type, m, peak, dep.efficiency.compute, curves.m_half_tokens)
        compute = body_matmul_s(*args) - body_matmul_s(*args, by_kernel=False)
    extra = sum(w * tensor_bytes_per_weight(t) * (weight_passes(t, m) - 1)
                for _name, w, t in body_matrices(dep.model, gguf_type))
    extra += lm_head_bytes(dep) * (weight_passes(lm_head_tensor_type(gguf_type), outputs) - 1)
    if compute == 0.0 and extra == 0.0:
        return step
    rate = dep.accelerator.memory_bandwidth_bytes_per_s * dep.efficiency.memory * dep.num_gpus
    return replace(step, compute_s=step.compute_s + compute, weight_bytes=step.weight_bytes + extra,
                   weights_s=step.weights_s + extra / rate)


def tensor_bytes_per_weight(tensor_type: str) -> float:
    """Bytes per weight of a ggml tensor type: F16 2, the block formats' `dtypes.GGML_BLOCK_BYTES`."""
    from kokuban.specs.dtypes import GGML_BLOCK_BYTES

    return 2.0 if tensor_type == "F16" else GGML_BLOCK_BYTES[tensor_type]


def file_body_bytes(spec: ModelSpec, gguf_type: str) -> float:
    """Bytes of the body's weight matrices as the file stores them: Σ weights × `tensor_bytes_per_weight` of each
    matrix's own type (`body_matrices`). For Q4_K_M this depends on the shape (how many layers get Q6_K, how wide
    attn_v and ffn_down are), where kokuban's `q4_k_m` dtype is Llama-2-7B's average (4.815 bits)."""
    return sum(w * tensor_bytes_per_weight(t) for _name, w, t in body_matrices(spec, gguf_type))


def with_file_bytes(dep: Deployment, step: Any) -> Any:
    """`step` with its weight read at the bytes the file stores (`file_body_bytes`) instead of every body matrix at
    the deployment's bytes per weight: weight bytes and read seconds (at the same rate, bandwidth × memory fraction)
    move by file bytes − matrices × bytes per weight. Zero for F16, Q8_0 and Q4_0 (one type per body); norms and
    the LM head are as the roofline charges them (the LM head already in the file's own type)."""
    gguf_type = gguf_type_of(dep)
    matrices = sum(w for _name, w, _t in body_matrices(dep.model, gguf_type))
    delta = file_body_bytes(dep.model, gguf_type) - matrices * dep.weight_bytes_per_param
    if delta == 0.0:
        return step
    rate = dep.accelerator.memory_bandwidth_bytes_per_s * dep.efficiency.memory * dep.num_gpus
    return replace(step, weight_bytes=step.weight_bytes + delta, weights_s=step.weights_s + delta / rate)
