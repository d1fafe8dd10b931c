"""ggml's CPU flash-attention kernel: the query-key pairs each of its two paths computes and the seconds at its
fitted rates (see the package docstring, `kokuban.validation.llamacpp`)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from kokuban.specs.model import ModelSpec

#: ggml's CPU flash attention: the query and key tiles of its tiled path (GGML_FA_TILE_Q = GGML_FA_TILE_KV = 64).
FLASH_ATTENTION_TILE = 64
FLASH_ATTENTION_SOURCE = (
    "llama.cpp 0c1e570 as vendored by llama-cpp-python 0.3.36's sdist (read 2026-12-03; whitespace compressed): "
    "src/llama-context.cpp, llama_context_default_params: \"/*.flash_attn_type =*/ LLAMA_FLASH_ATTN_TYPE_AUTO\", "
    "and AUTO resolves to on when the fused op sits on the layer's device (resolve_fused_ops; one CPU here); "
    "tools/llama-bench/llama-bench.cpp: \"/* flash_attn */ { LLAMA_FLASH_ATTN_TYPE_AUTO }\"; "
    "ggml/src/ggml-cpu/common.h: \"#define GGML_FA_TILE_Q 64\" \"#define GGML_FA_TILE_KV 64\"; "
    "ggml/src/ggml-cpu/ops.cpp, ggml_compute_forward_flash_attn_ext_f16: \"bool use_tiled = !use_ref && (q->type == "
    "GGML_TYPE_F32 && kv_is_f32_or_f16 && k->type == v->type && neq1 >= Q_TILE_SZ);\"; its row path "
    "(ggml_compute_forward_flash_attn_ext_f16_one_chunk): \"if (mv == -INFINITY) { continue; }\" then "
    "\"kq_vec_dot(DK, &s, 0, k_data, 0, Q_q, 0, 1);\" and \"ggml_vec_mad_f16(DV, VKQ16, (const ggml_fp16_t *) "
    "v_data, vs);\"; its tiled path (ggml_compute_forward_flash_attn_ext_tiled): \"// skip the tile entirely if all "
    "the masks are -inf\", \"simd_gemm(KQ, (const float *)Q_q, K_f32, Q_TILE_SZ, DK, KV_TILE_SZ);\" and "
    "\"simd_gemm(VKQ32, KQ, V32, Q_TILE_SZ, KV_TILE_SZ, DV);\" (a partial query tile is zero-padded to 64 rows).")


@dataclass(frozen=True)
class FlashAttention:
    """The CPU flash-attention kernel's rates, FLOP/s of the model's attention FLOPs (4·heads·head_dim per query-key
    pair per layer): `rows_flops_s` on its row-by-row path, `tiled_flops_s` on its tiled path
    (`FLASH_ATTENTION_SOURCE`)."""

    rows_flops_s: float
    tiled_flops_s: float
    pairs_fitted: int = 0  # the (depth D, depth 0) row pairs the rates come from


def flash_attention_path(queries: int) -> str:
    """'rows' when a sequence brings fewer than `FLASH_ATTENTION_TILE` queries to the step (every generation step),
    else 'tiled' (`FLASH_ATTENTION_SOURCE`: use_tiled needs neq1 >= Q_TILE_SZ)."""
    return "rows" if queries < FLASH_ATTENTION_TILE else "tiled"


def flash_attention_pairs(queries: int, depth: int, batch: int = 1) -> float:
    """Query-key pairs the CPU flash-attention kernel computes per layer and head for `batch` sequences, each bringing
    `queries` new tokens after `depth` cached ones.

    Row path (Q = queries < 64): masked keys are skipped, so the causal pairs Σ_{i=1..Q} (D + i) = Q·D + Q(Q+1)/2.
    Tiled path (Q ≥ 64): query tiles of T = 64 rows (the last zero-padded to 64) against key tiles of 64, a key tile
    skipped only when all its entries are masked: Σ over query tiles starting at q of T·T·⌈(D + min(q + T, Q)) ÷ T⌉.
    Assumes each sequence's keys are its own (a batch's other sequences are masked out, whole tiles at a time)."""
    q, d, t = int(queries), int(depth), FLASH_ATTENTION_TILE
    if flash_attention_path(q) == "rows":
        return float(batch) * (q * d + q * (q + 1) / 2)
    tiles = sum(-(-(d + min(q0 + t, q)) // t) for q0 in range(0, q, t))
    return float(batch) * t * t * tiles


def flash_attention_flops(spec: ModelSpec, queries: int, depth: int, batch: int = 1) -> float:
    """FLOPs the kernel computes in a step: `flash_attention_pairs` × layers × the model's attention FLOPs per pair per
    layer (`attn_flops_per_ctx_token_per_layer_prefill`, 4·heads·head_dim for QKᵀ and AV). Assumes every layer is
    global (the llama architecture `write_gguf` writes)."""
    return (flash_attention_pairs(queries, depth, batch) * spec.num_layers
            * spec.attn_flops_per_ctx_token_per_layer_prefill)


def flash_attention_s(spec: ModelSpec, attention: FlashAttention, queries: int, depth: int, batch: int = 1) -> float:
    """Seconds of the kernel: `flash_attention_flops` ÷ the rate of its path (`flash_attention_path`)."""
    rate = attention.rows_flops_s if flash_attention_path(queries) == "rows" else attention.tiled_flops_s
    return flash_attention_flops(spec, queries, depth, batch) / rate


def with_attention_s(step: Any, seconds: Any, flops: Any) -> Any:
    """`step` with its attention compute replaced: `seconds` and `flops` in place of the roofline's attention compute
    and FLOPs (the linear compute unchanged; the attention kernel is still max(compute, KV read))."""
    return replace(step, compute_s=step.compute_s - step.attn_compute_s + seconds, attn_compute_s=seconds,
                   flops=step.flops - step.attn_flops + flops, attn_flops=flops)
