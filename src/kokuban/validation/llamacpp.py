"""Validate kokuban against llama.cpp on this machine's CPU: a real serving engine with quantized kernels.

What it does (validation/llamacpp.sh runs the whole of it; see docs/validation.md):
1. writes random-weight GGUF models (F16) of catalog architectures at a few sizes with the `gguf` package:
   a catalog config with fewer layers and/or a smaller hidden size (`llama_config`), no download;
2. quantizes them with llama.cpp's own `llama-quantize` to Q8_0, Q4_0 and Q4_K_M;
3. runs llama.cpp's own benchmarks: `llama-bench` (prompt processing `-p` and token generation `-n` at
   several KV depths `-d`, batch 1) and `llama-batched-bench` (B sequences decoding together);
4. predicts each test with kokuban's roofline on the probed CPU (`kokuban probe`'s accelerator entry) and
   fits the efficiency fractions per GGUF type on some model sizes and depths, judging on the held-out rest.
On a shared machine `measure_clean` runs each test on its own, when the machine is quiet, and keeps it only if
no other process used the CPU meanwhile (`/proc/stat`); `measure` runs each model's tests in one llama-bench call.

Every test is turned into kokuban's terms (`predict_tests`):
- llama-bench `ppP @ dD`: one prefill of P new tokens after D cached ones: `prefill(dep, 1, D + P, D)`;
- llama-bench `tgN @ dD`: N decode steps at batch 1 whose contexts are D + 1 … D + N: Σ `decode_step`;
- batched-bench prompt (PP tokens, B sequences): `prefill(dep, B, PP)`; its generation (TG steps of B
  tokens at contexts PP + 1 … PP + TG): Σ `decode_step(dep, B, ·)`.
The deployment (`llamacpp_deployment`): weights in the GGUF type (F16 → fp16), the KV cache in fp16
(llama.cpp's default `-ctk/-ctv f16`), and every FLOP timed at the probed fp32 matmul rate: ggml's CPU
kernels multiply F16 weights in fp32 after conversion and the quantized ones as int8 dot products against
activations quantized to Q8 (ggml-cpu.c type_traits_cpu); the fitted compute fraction of each type says
what fraction of that one reference rate its kernels reach.

What the CPU does with a matmul depends on M, the rows of activations in it (`step_tokens`: the batch of a
generation step, every prompt token of a prefill), and kokuban prices the two paths apart (`step_efficiency`):
- M = 1 (llama-bench `tg`, batched-bench generation at batch 1): ggml's GEMV, the `vec_dot` kernels of
  `ggml_compute_forward_mul_mat` (or the repacked `gemv` of a repacked Q4_0/Q4_K tensor): llamafile's tinyBLAS
  refuses it (`GEMM_SOURCE`). One pass over the weights per token: the roofline's weight read at the fitted
  memory fraction, its FLOPs at the flat compute fraction.
- M ≥ 2 (`pp`, batched-bench prompts, batched generation at batch 2–8): which kernel depends on the weight
  tensor's own GGUF type and M, on this build (x86 AVX2, `KERNEL_SOURCE`): tinyBLAS for F16 and Q8_0 (M ≥ 2);
  Q4_0 and Q4_K repacked at load to 8×8 and run by the repacked GEMM on whole blocks of 4 rows (M ≥ 4), the
  repacked GEMV once per leftover row; Q6_K (the LM head of the Q4 files; attn_v and ffn_down of a Q4_K_M file
  in the layers `use_more_bits` picks: `body_tensor_type`) by the tiled K-quant matmul from 8 rows, the vec_dot
  loop below (`gemm_rows`). A GEMM kernel's rows are priced on the kernel profile's curve e·M ÷ (M + M_half)
  (`specs.kernels.gemm_fraction`, the form of the GPU kernel tables), with e the fitted compute fraction and M_half
  fitted with it (`fit_m_half`); a GEMV kernel's rows at the flat fraction e, each one a pass over the matrix's
  weights (`weight_passes`, `with_kernel_paths`). Every prompt here (M ≥ 32, one output row per sequence in
  llama-bench) runs a GEMM kernel on every body matrix, so this moves only steps of 2–7 rows in the Q4 types. A
  small M on a GEMM kernel pays nearly a whole fixed cost 2·params·M_half ÷ (peak·e) per step: the step grows
  with the batch, as measured.
The weight read is charged at the file's own bytes (`with_file_bytes`: each body matrix in its tensor type, so a
Q4_K_M file's 4.71–4.82 bits by shape rather than Llama-2-7B's 4.815).
Attention runs ggml's CPU flash-attention kernel (llama.cpp's default `-fa auto` turns it on for a CPU-only model;
`FLASH_ATTENTION_SOURCE`), not a GEMM: kokuban prices its FLOPs at its own rate, not at the matmul compute fraction
(`flash_attention_s`). Two paths, by the rows of queries of a sequence in the step (`flash_attention_path`): fewer
than 64 (every generation step, llama-bench's pp32) run row by row, a dot product and a vector multiply-add per
unmasked key (masked keys skipped), so the pairs computed are the causal ones; 64 or more run 64 × 64 tiles of
queries × keys (two small GEMMs, a softmax, and the K/V tiles converted F16 → F32 per tile), a tile skipped only
when every entry is masked (`flash_attention_pairs`). The kernel is the same for every GGUF type (the KV cache is
F16 in all of them), so its two rates (FLOP/s) are fitted once, across types, from what depth adds to a prompt on
the training rows: the same case, type and prompt at depth D and at depth 0 differ only in attention
(`fit_flash_attention`). The KV read stays the roofline's, at its own fitted fraction (`Efficiency.kv_memory`),
and the attention kernel takes the longer of the two. A generation step keeps the roofline's attention: its one
query per head uses each cached K/V row once (about 1 FLOP per byte of F16 cache), so the KV read at `kv_memory`
bounds it, where a prompt's queries reuse every K/V row they load (64 of them per tile on the tiled path); on the
training rows pricing generation steps at the row rate too had the higher training loss in F16 and Q4_0 and in the
joint fit, and the same in Q8_0 and Q4_K_M.

A prompt step computes less than the roofline's `prefill` charges (`pruned_step`): llama.cpp's graph keeps only
the rows whose output the batch requests after the last layer's attention (`ggml_get_rows(…, inp_out_ids)`), so
that layer's feed-forward block and the LM head run on one row per sequence (`OUTPUT_ROWS_SOURCE`): llama-bench's
prompt requests the last token only, batched-bench one token per sequence. The roofline already charges the LM
head for one row per sequence; the last layer's feed-forward FLOPs for the other M − B rows are taken out. In a
4-layer Llama-3.2-1B shape (MLP 8,192 wide) that block is 50.3 M of the 243.3 M body weights a prompt token is
multiplied through (21 %), in the 4-layer Llama-2 shape 8.7 M of 51.4 M (17 %), in the 8-layer one 8 %.
The vocabulary matrix itself is charged as the GGUF file stores it: the LM head (token_embd when the embeddings
are tied) in the file's output type (`dtypes.embedding_bytes_per_element`: F16, Q8_0, Q6_K for the Q4 types —
the record's `tensor_types` list the same), read once per step, multiplied for one row per sequence; the input
embedding is a row lookup and is neither read whole nor multiplied.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from kokuban.errors import KokubanError
from kokuban.specs.deployment import Deployment
from kokuban.specs.hardware import Efficiency
from kokuban.specs.kernels import KernelCurves
from kokuban.specs.model import ModelSpec

#: llama-quantize's type names and kokuban's dtype for each (F16 is the unquantized file).
GGUF_TYPES = {"F16": "fp16", "Q8_0": "q8_0", "Q4_0": "q4_0", "Q4_K_M": "q4_k_m"}
#: llama.cpp builds an F16 matmul in fp32 arithmetic on x86 and the quantized ones as int8 dot products: the
#: probed fp32 matmul rate is the one reference peak all of them are measured against.
REFERENCE_COMPUTE = "fp32"
#: K-quants need rows that are whole 256-weight super-blocks (QK_K, ggml-common.h line 89).
QK_K = 256
TOOLS = ("llama-bench", "llama-batched-bench", "llama-quantize")
#: The fewest rows of activations ggml's CPU backend hands to a GEMM kernel rather than its GEMV (`GEMM_SOURCE`).
GEMM_MIN_TOKENS = 2
GEMM_SOURCE = ("ggml-org/llama.cpp ggml/src/ggml-cpu/llamafile/sgemm.cpp at 8643c9d9b11b984238032a467689557f0eaee1a4 "
               "(read 2026-12-03), llamafile_sgemm: \"// only enable sgemm for prompt processing\" … "
               "\"if (n < 2) return false;\" (n: the columns of B, the activations' rows); ggml-cpu.c then falls back "
               "to the vec_dot loop. Repacked tensors (ggml/src/ggml-cpu/repack.cpp): \"If there are more than three "
               "rows in src1, use gemm; otherwise, use gemv.\"")

#: Where llama.cpp drops the rows that are not outputs, and which rows llama-bench and batched-bench request.
OUTPUT_ROWS_SOURCE = (
    "ggml-org/llama.cpp, read 2026-12-03 (whitespace compressed): src/models/llama.cpp at "
    "069be0ae22f391c64e26e8da4c7da0143ede8cf3, after the layer's attention (its output projection included) and "
    "before its feed-forward block: \"if (il == n_layer - 1 && inp_out_ids) { cur = ggml_get_rows(ctx0, cur, "
    "inp_out_ids); inpSA = ggml_get_rows(ctx0, inpSA, inp_out_ids); }\"; tools/llama-bench/llama-bench.cpp at "
    "050fc7f32de16858ac667d775b43a51ed8976e6f, test_prompt: \"llama_decode(ctx, llama_batch_get_one(tokens.data(), "
    "n_tokens))\" (no output flags set); src/llama-batch.cpp at 21e9bbe200715706b8788579f2248b4c0a9a84ab, when a "
    "batch has none: \"// return the output only for the last token\"; tools/batched-bench/batched-bench.cpp at "
    "2fb62f8f50fdc264199edab5a0d3175dc0229466, its prompts: \"common_batch_add(batch, get_token_rand(), i, { j }, "
    "i == pp - 1);\". These are the stored versions read, not the benchmarked build 0c1e570; the record holds no "
    "graph dump that would confirm it for that build.")


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


# ---- the models -----------------------------------------------------------------------------------
def llama_config(base: str | dict[str, Any], *, num_layers: int | None = None,
                 hidden_size: int | None = None) -> tuple[dict[str, Any], list[str]]:
    """A catalog config (id or dict) scaled as `validate` scales it (`harness.scaled_config`), with the MLP
    width then rounded up to a multiple of 256 so that every K-quant block is whole (no fallback types)."""
    from kokuban.specs.catalog import DATA
    from kokuban.validation.harness import scaled_config

    config = json.loads((DATA / "models" / f"{base}.json").read_text()) if isinstance(base, str) else dict(base)
    if config.get("model_type") != "llama":
        raise KokubanError(f"writes llama-architecture GGUF files only; got '{config.get('model_type')}'", field="base",
                           value=base if isinstance(base, str) else config.get("model_type"))
    cfg, changes = scaled_config(config, num_layers=num_layers, hidden_size=hidden_size)
    f = int(cfg["intermediate_size"])
    if f % QK_K:
        cfg["intermediate_size"] = -(-f // QK_K) * QK_K
        changes.append(f"MLP width {cfg['intermediate_size']} (multiple of 256 for K-quants)")
    return cfg, changes


def write_gguf(cfg: dict[str, Any], path: str | Path, *, seed: int = 0, context_length: int = 4096,
               name: str = "kokuban-random") -> int:
    """Write a llama-architecture F16 GGUF with N(0, 0.02²) random weights for `cfg`; returns its parameter count.

    Tensors as llama.cpp's loader names them (token_embd, blk.N.attn_q/k/v/output, ffn_gate/up/down, norms,
    output unless the embeddings are tied). The tokenizer is 'none' with `llama.vocab_size` set: llama.cpp
    then adds that many dummy tokens (src/llama-vocab.cpp), which is all its benchmarks need.
    """
    import gguf

    from kokuban.validation.harness import TorchShape

    s = TorchShape.from_config(cfg)
    rng = np.random.default_rng(seed)

    def rand(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape, dtype=np.float32) * 0.02).astype(np.float16)

    w = gguf.GGUFWriter(str(path), "llama")
    w.add_name(name)
    w.add_context_length(context_length)
    w.add_embedding_length(s.hidden)
    w.add_block_count(s.layers)
    w.add_feed_forward_length(s.mlp_width)
    w.add_head_count(s.heads)
    w.add_head_count_kv(s.kv_heads)
    w.add_key_length(s.head_dim)
    w.add_value_length(s.head_dim)
    w.add_rope_dimension_count(s.head_dim)
    w.add_rope_freq_base(s.rope_theta)
    w.add_layer_norm_rms_eps(float(cfg.get("rms_norm_eps", 1e-5)))
    w.add_vocab_size(s.vocab)
    w.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    w.add_tokenizer_model("none")
    ones = np.ones(s.hidden, dtype=np.float32)
    q_out, kv_out = s.heads * s.head_dim, s.kv_heads * s.head_dim
    count = 0

    def add(tensor_name: str, array: np.ndarray) -> None:
        nonlocal count
        count += array.size
        w.add_tensor(tensor_name, array)

    add("token_embd.weight", rand(s.vocab, s.hidden))
    for i in range(s.layers):
        add(f"blk.{i}.attn_norm.weight", ones)
        add(f"blk.{i}.attn_q.weight", rand(q_out, s.hidden))
        add(f"blk.{i}.attn_k.weight", rand(kv_out, s.hidden))
        add(f"blk.{i}.attn_v.weight", rand(kv_out, s.hidden))
        add(f"blk.{i}.attn_output.weight", rand(s.hidden, q_out))
        add(f"blk.{i}.ffn_norm.weight", ones)
        add(f"blk.{i}.ffn_gate.weight", rand(s.mlp_width, s.hidden))
        add(f"blk.{i}.ffn_up.weight", rand(s.mlp_width, s.hidden))
        add(f"blk.{i}.ffn_down.weight", rand(s.hidden, s.mlp_width))
    add("output_norm.weight", ones)
    if not s.tied:
        add("output.weight", rand(s.vocab, s.hidden))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return count


def gguf_bytes(path: str | Path) -> dict[str, Any]:
    """What a GGUF file stores, read back with `gguf.GGUFReader`: bytes and weights of the transformer body
    (blk.*), of token_embd and of output, the body's bits per weight, and the count of tensors per type."""
    import gguf

    reader = gguf.GGUFReader(str(path))
    parts = {"body": [0, 0], "token_embd": [0, 0], "output": [0, 0]}
    types: dict[str, int] = {}
    for t in reader.tensors:
        if t.name.endswith("norm.weight"):
            continue
        part = "body" if t.name.startswith("blk.") else t.name.split(".")[0]
        parts.setdefault(part, [0, 0])
        parts[part][0] += int(t.n_bytes)
        parts[part][1] += int(t.n_elements)
        key = f"{part}:{t.tensor_type.name}"
        types[key] = types.get(key, 0) + 1
    body_bytes, body_weights = parts["body"]
    return {"parts": {k: {"bytes": b, "weights": n} for k, (b, n) in parts.items()}, "tensor_types": types,
            "body_bits_per_weight": 8.0 * body_bytes / body_weights if body_weights else float("nan")}


# ---- the tools ---------------------------------------------------------------------------------------
def find_tools(bin_dir: str | Path | None = None) -> dict[str, Path] | None:
    """Paths of llama-bench, llama-batched-bench and llama-quantize in `bin_dir` or on PATH; None if any is missing."""
    import shutil

    found = {}
    for tool in TOOLS:
        path = Path(bin_dir) / tool if bin_dir else None
        if path is None or not path.is_file():
            which = shutil.which(tool)
            path = Path(which) if which else None
        if path is None:
            return None
        found[tool] = path
    return found


def quantize(tools: dict[str, Path], src: Path, dst: Path, gguf_type: str, threads: int = 2) -> list[str]:
    """`llama-quantize SRC DST TYPE THREADS`; returns the command line it ran."""
    cmd = [str(tools["llama-quantize"]), str(src), str(dst), gguf_type, str(threads)]
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    return cmd


def bench_command(tools: dict[str, Path], model: Path, *, prompts: Sequence[int], gens: Sequence[int],
                  depths: Sequence[int], repeats: int, threads: int = 2) -> list[str]:
    """The llama-bench command line: every -p and -n test at every -d depth, JSON output with the samples."""
    def csv(values: Sequence[int]) -> str:
        return ",".join(str(int(v)) for v in values)
    return [str(tools["llama-bench"]), "-m", str(model), "-t", str(threads), "-r", str(repeats), "-p", csv(prompts),
            "-n", csv(gens), "-d", csv(depths), "-o", "json"]


def batched_command(tools: dict[str, Path], model: Path, *, prompt: int, gen: int, batches: Sequence[int],
                    threads: int = 2) -> list[str]:
    """The llama-batched-bench command line (separate prompts per sequence; its markdown table, whose times have
    1 ms resolution: ≤ 2 % of the shortest batched row measured here. The committed run used its JSONL output.)"""
    ctx = max(batches) * (prompt + gen)
    return [str(tools["llama-batched-bench"]), "-m", str(model), "-t", str(threads), "-tb", str(threads),
            "-c", str(ctx), "-b", "2048", "-ub", "512", "-npp", str(prompt), "-ntg", str(gen),
            "-npl", ",".join(str(int(b)) for b in batches)]


def run_tool(cmd: Sequence[str], timeout_s: float = 3600) -> str:
    """Run a benchmark and return its stdout (stderr is the tool's log); a one-line error if it fails."""
    try:
        done = subprocess.run(list(cmd), check=True, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.CalledProcessError as exc:
        tail = (exc.stderr or "").strip().splitlines()[-3:]
        raise KokubanError(f"{Path(cmd[0]).name} failed (exit {exc.returncode}): {' | '.join(tail)}") from None
    return done.stdout + ("\n" + done.stderr if "batched" in Path(cmd[0]).name else "")


# ---- the parsers -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class BenchTest:
    """One llama-bench test: `n_prompt` tokens of prompt processing or `n_gen` generated tokens after a KV
    cache of `n_depth` tokens; `samples_s` the seconds of each repetition of the whole test."""

    n_prompt: int
    n_gen: int
    n_depth: int
    samples_s: tuple[float, ...]
    model_type: str = ""
    model_size_bytes: float = 0.0
    model_params: float = 0.0
    threads: int = 0
    build_commit: str = ""

    @property
    def kind(self) -> str:
        return "pp" if self.n_gen == 0 else ("tg" if self.n_prompt == 0 else "pg")

    @property
    def tokens(self) -> int:
        return self.n_prompt + self.n_gen

    @property
    def name(self) -> str:
        """The test as llama-bench's markdown names it: pp512, tg128, pp512+tg128, with ' @ dN' for a depth."""
        base = {"pp": f"pp{self.n_prompt}", "tg": f"tg{self.n_gen}"}.get(self.kind, f"pp{self.n_prompt}+tg{self.n_gen}")
        return base + (f" @ d{self.n_depth}" if self.n_depth else "")


def parse_llama_bench_json(text: str) -> list[BenchTest]:
    """Tests from `llama-bench -o json` (an array) or `-o jsonl` (one object a line): samples_ns → seconds."""
    text = text.strip()
    try:
        lines = [line for line in text.splitlines() if line.strip()]
        rows = json.loads(text) if text.startswith("[") else [json.loads(line) for line in lines]
    except json.JSONDecodeError as exc:
        raise KokubanError(f"llama-bench output is not JSON (line {exc.lineno}: {exc.msg})") from None
    tests = []
    for r in rows:
        try:
            samples = tuple(float(s) * 1e-9 for s in r.get("samples_ns") or [r["avg_ns"]])
            tests.append(BenchTest(
                n_prompt=int(r["n_prompt"]), n_gen=int(r["n_gen"]), n_depth=int(r.get("n_depth", 0)), samples_s=samples,
                model_type=str(r.get("model_type", "")), model_size_bytes=float(r.get("model_size", 0)),
                model_params=float(r.get("model_n_params", 0)), threads=int(r.get("n_threads", 0)),
                build_commit=str(r.get("build_commit", "")),
            ))
        except (KeyError, TypeError, ValueError) as exc:
            raise KokubanError(f"llama-bench JSON row lacks a usable field: {exc}") from None
    return tests


_TEST = re.compile(r"^(?:pp(?P<p>\d+))?\+?(?:tg(?P<n>\d+))?(?: @ d(?P<d>\d+))?$")
_MEAN_STD = re.compile(r"^(?P<mean>[\d.]+)\s*±\s*(?P<std>[\d.]+)$")


def parse_llama_bench_markdown(text: str) -> list[dict[str, Any]]:
    """Rows of llama-bench's default markdown table: the test (n_prompt, n_gen, n_depth) and the mean and standard
    deviation of tokens per second (the markdown has no per-repetition samples: use `-o json` for those)."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip().startswith("|")]
    if len(lines) < 2:
        raise KokubanError("no markdown table in the llama-bench output")
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    if "test" not in header or "t/s" not in header:
        raise KokubanError(f"llama-bench table has no 'test' and 't/s' columns: {header}")
    rows = []
    for line in lines[2:]:
        cells = dict(zip(header, (c.strip() for c in line.strip("|").split("|")), strict=False))
        test, rate = _TEST.match(cells.get("test", "")), _MEAN_STD.match(cells.get("t/s", ""))
        if not test or not rate:
            raise KokubanError(f"cannot read the llama-bench row '{line}'")
        rows.append({**cells, "n_prompt": int(test["p"] or 0), "n_gen": int(test["n"] or 0),
                     "n_depth": int(test["d"] or 0),
                     "tokens_per_s": float(rate["mean"]), "tokens_per_s_std": float(rate["std"])})
    return rows


@dataclass(frozen=True)
class BatchedTest:
    """One llama-batched-bench row: `batch` sequences of `prompt` tokens processed (t_pp_s), then `gen` steps of
    `batch` tokens each (t_tg_s)."""

    prompt: int
    gen: int
    batch: int
    t_pp_s: float
    t_tg_s: float
    n_kv: int = 0


_BATCHED_COLUMNS = ("PP", "TG", "B", "N_KV", "T_PP s", "S_PP t/s", "T_TG s", "S_TG t/s", "T s", "S t/s")


def parse_batched_bench(text: str) -> list[BatchedTest]:
    """Rows of llama-batched-bench's output, JSONL (`--output-format jsonl`) or its markdown table."""
    tests = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{") and '"pl"' in line:
            r = json.loads(line)
            tests.append(BatchedTest(int(r["pp"]), int(r["tg"]), int(r["pl"]), float(r["t_pp"]), float(r["t_tg"]),
                                     int(r.get("n_kv", 0))))
        elif line.startswith("|") and not line.startswith("|--") and not line.lstrip("| ").startswith("PP"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            if len(cells) != len(_BATCHED_COLUMNS) or not cells[0].isdigit():
                continue
            c = dict(zip(_BATCHED_COLUMNS, cells, strict=True))
            tests.append(BatchedTest(int(c["PP"]), int(c["TG"]), int(c["B"]), float(c["T_PP s"]), float(c["T_TG s"]),
                                     int(c["N_KV"])))
    if not tests:
        raise KokubanError("no llama-batched-bench rows in the output (neither JSONL nor its markdown table)")
    return tests


# ---- the prediction --------------------------------------------------------------------------------------
def llamacpp_deployment(spec: ModelSpec, accelerator_entry: dict[str, Any], gguf_type: str,
                        efficiency: Efficiency | None = None) -> Deployment:
    """One CPU, weights in the GGUF type, KV cache fp16, every FLOP at the probed `REFERENCE_COMPUTE` rate, at
    `efficiency` (None: the scalar set `Efficiency.scalar()`: the GPU kernel curves were fitted on GPU tables)."""
    from kokuban.validation.harness import validation_accelerator

    if gguf_type not in GGUF_TYPES:
        raise KokubanError(f"'{gguf_type}' is not one of {', '.join(GGUF_TYPES)}", field="gguf_type", value=gguf_type)
    acc = validation_accelerator(accelerator_entry, REFERENCE_COMPUTE)
    return Deployment.make(spec, acc, 1, weights_dtype=GGUF_TYPES[gguf_type], kv_dtype="fp16",
                           compute_dtype=REFERENCE_COMPUTE, efficiency=efficiency or Efficiency.scalar())


def predict_test(dep: Deployment, kind: str, *, tokens: int, depth: int = 0, batch: int = 1,
                 attention: FlashAttention | None = None) -> float:
    """Predicted seconds of one whole test (see the module docstring).

    kind 'pp': prefill(dep, batch, depth + tokens, cached=depth), less the last layer's feed-forward FLOPs of the
    rows that are not outputs (`pruned_step`, one output per sequence); kind 'tg': Σ_{i=1..tokens} decode_step(dep,
    batch, depth + i) — each generated token attends to the cache so far plus itself. With `attention`, a prompt's
    attention compute is the flash-attention kernel's (`flash_attention_s` of its `tokens` queries per sequence after
    `depth`) in place of the roofline's FLOPs at the compute fraction; a generation step keeps the roofline's
    attention, bound by its KV read (module docstring).
    """
    from kokuban.core.roofline import decode_step, prefill

    spec = dep.model
    if kind == "pp":
        step = prefill(dep, batch, depth + tokens, depth)
        m = step_tokens(kind, tokens, batch)
        step = with_file_bytes(dep, with_kernel_paths(dep, pruned_step(dep, step, m, batch), m, batch))
        if attention is not None:
            step = with_attention_s(step, flash_attention_s(spec, attention, tokens, depth, batch),
                                    flash_attention_flops(spec, tokens, depth, batch))
        return float(step.step_time_s)
    if kind == "tg":
        step = with_file_bytes(dep, with_kernel_paths(dep, decode_step(dep, batch, depth + np.arange(1, tokens + 1)),
                                                      batch, batch))
        return float(np.sum(step.step_time_s))
    raise KokubanError(f"'{kind}' is not a test kind; allowed: pp, tg", field="kind", value=kind)


def ffn_params_per_layer(spec: ModelSpec) -> int:
    """Weights of one layer's feed-forward block in the llama architecture: gate, up and down, 3·d·mlp_width."""
    return 3 * spec.hidden_size * spec.mlp_width


def skipped_ffn_flops(spec: ModelSpec, m: int, outputs: int) -> float:
    """FLOPs of the last layer's feed-forward block llama.cpp does not compute in a step of `m` rows of which
    `outputs` are requested (`OUTPUT_ROWS_SOURCE`): 2·(M − outputs)·3·d·mlp_width; 0 when every row is an output
    (a generation step)."""
    return 2.0 * max(int(m) - int(outputs), 0) * ffn_params_per_layer(spec)


def pruned_step(dep: Deployment, step: Any, m: int, outputs: int) -> Any:
    """`step` (a roofline Step of `m` rows) without `skipped_ffn_flops`: its FLOPs less those, its compute less their
    seconds at the rate its dense matmuls run, flops(compute dtype)·N·fraction with the fraction
    `roofline.linear_compute_fractions` gives at M (the GEMM curve, or the flat compute fraction). The weight read
    is unchanged: the block's weights are still read once, for the output rows, whose few FLOPs stay priced with
    the step's. Assumes a dense model (the llama architecture `write_gguf` writes)."""
    from kokuban.core.roofline import linear_compute_fractions

    skipped = skipped_ffn_flops(dep.model, m, outputs)
    if skipped == 0.0:
        return step
    dense_fraction, _ = linear_compute_fractions(dep, m)
    seconds = skipped / (dep.accelerator.flops(dep.compute_dtype) * dep.num_gpus * dense_fraction)
    return replace(step, flops=step.flops - skipped, compute_s=step.compute_s - seconds)


def step_tokens(kind: str, tokens: int, batch: int = 1) -> int:
    """M, the rows of activations each matmul of a test's steps multiplies: `batch` for a generation step (one
    token per sequence), batch·tokens for a prompt (every prompt of the batch in one step)."""
    return int(batch) if kind == "tg" else int(batch) * int(tokens)


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


# ---- which kernel each weight tensor runs, by its GGUF type and M ------------------------------------------
#: The weight matrices of a llama-architecture layer, as `write_gguf` names them.
LAYER_MATRICES = ("attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down")
#: The measured build: llama.cpp 0c1e570 (as vendored by llama-cpp-python 0.3.36's sdist) built by
#: validation/llamacpp.sh with -DGGML_NATIVE=ON and llama.cpp's default GGML_LLAMAFILE=ON on this machine's CPU,
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


# ---- the measurements as rows, and the calibration -----------------------------------------------------
@dataclass(frozen=True)
class Row:
    """One measured test in kokuban's terms; `samples_s` are whole-test seconds of each repetition."""

    id: str
    model: str  # the case name (architecture and size)
    gguf_type: str
    regime: str  # pp, tg (llama-bench, batch 1), batched-pp, batched-tg
    tokens: int
    depth: int
    batch: int
    samples_s: tuple[float, ...]

    @property
    def kind(self) -> str:
        return self.regime.split("-")[-1]

    @property
    def best_s(self) -> float:
        return float(min(self.samples_s))

    @property
    def median_s(self) -> float:
        return float(np.median(self.samples_s))


def rows_from_bench(model: str, gguf_type: str, tests: Sequence[BenchTest]) -> list[Row]:
    """llama-bench tests (pp and tg; pp+tg mixes are skipped) as rows."""
    out = []
    for t in tests:
        if t.kind == "pg":
            continue
        n = t.n_prompt or t.n_gen
        out.append(Row(f"{model}/{gguf_type}/{t.name}", model, gguf_type, t.kind, n, t.n_depth, 1, t.samples_s))
    return out


def rows_from_batched(model: str, gguf_type: str, runs: Sequence[Sequence[BatchedTest]]) -> list[Row]:
    """llama-batched-bench runs (each a list of rows; repeated runs give the samples) as batched-pp/tg rows."""
    by_key: dict[tuple[int, int, int], list[BatchedTest]] = {}
    for run in runs:
        for t in run:
            by_key.setdefault((t.prompt, t.gen, t.batch), []).append(t)
    out = []
    for (pp, tg, b), ts in sorted(by_key.items()):
        out.append(Row(f"{model}/{gguf_type}/batched-pp{pp}-b{b}", model, gguf_type, "batched-pp", pp, 0, b,
                       tuple(t.t_pp_s for t in ts)))
        out.append(Row(f"{model}/{gguf_type}/batched-tg{tg}-b{b}@d{pp}", model, gguf_type, "batched-tg", tg, pp, b,
                       tuple(t.t_tg_s for t in ts)))
    return out


#: What the per-type fit frees: compute (the GEMM curve's e, and the GEMV's and attention's flat fraction), the
#: weight read, the KV-cache read of the attention kernels and the per-step overhead; M_half besides (`fit_m_half`).
FIT_PARAMS = ("compute", "memory", "kv_memory", "step_overhead_s")
#: The previous model, reported beside it: one flat compute fraction for every M, the KV cache read at the weight
#: read's fraction.
FLAT_PARAMS = ("compute", "memory", "step_overhead_s")
#: M_half is searched as log10 in this range of tokens (1 token to 4,096).
M_HALF_BOUNDS = (1.0, 4096.0)


def _measured(rows: Sequence[Row], statistic: str) -> list[float]:
    if statistic not in ("best", "median"):
        raise KokubanError(f"'{statistic}' is not a statistic; allowed: best, median", field="statistic",
                           value=statistic)
    return [r.best_s if statistic == "best" else r.median_s for r in rows]


def _row_predictor(rows: Sequence[Row], deployment_of: Callable[[Row, Efficiency], Deployment],
                   attention: FlashAttention | None = None) -> Callable[[Efficiency, float | None], np.ndarray]:
    """predict(eff, M_half): every row's seconds, each step at `step_efficiency` of its M (and with `attention`,
    the flash-attention kernel's rates: `predict_test`)."""
    def predict(eff: Efficiency, m_half_tokens: float | None) -> np.ndarray:
        cache: dict[tuple[str, str, str], Deployment] = {}
        out = []
        for r in rows:
            m = step_tokens(r.kind, r.tokens, r.batch)
            key = (r.model, r.gguf_type, matmul_path(m))  # the two paths' deployments differ only in curves
            if key not in cache:
                cache[key] = deployment_of(r, step_efficiency(eff, m_half_tokens, m))
            out.append(predict_test(cache[key], r.kind, tokens=r.tokens, depth=r.depth, batch=r.batch,
                                    attention=attention))
        return np.array(out)
    return predict


def fit_m_half(rows: Sequence[Row], held_out: Sequence[bool],
               deployment_of: Callable[[Row, Efficiency], Deployment], *, params: Sequence[str] = FIT_PARAMS,
               start: Efficiency | None = None, statistic: str = "best",
               attention: FlashAttention | None = None) -> float:
    """M_half (tokens) of the GEMM curve, fitted jointly with `params` on the rows not held out.

    loss = mean over training rows of ln(predicted ÷ measured)² (`calibrate.log_loss`), Nelder–Mead over the
    fractions in logit space, the seconds and log10 M_half (bounded to `M_HALF_BOUNDS`), from four starts (the
    starting fractions and calibrate's three alternatives, each with its own M_half: 16, 4, 64, 16 tokens).
    Only M_half is kept: `calibrate_rows` refits the fractions at it and reports both sides."""
    from scipy.optimize import minimize

    from kokuban.validation.calibrate import FRACTIONS, decode_params, encode_params, log_loss

    train = [r for r, h in zip(rows, held_out, strict=True) if not h]
    measured = np.asarray(_measured(train, statistic))
    predict = _row_predictor(train, deployment_of, attention)
    start = start or Efficiency.scalar()
    lo, hi = np.log10(M_HALF_BOUNDS[0]), np.log10(M_HALF_BOUNDS[1])
    n = len(params)

    def loss(z: np.ndarray) -> float:
        return log_loss(predict(decode_params(z[:n], start, params), 10 ** float(np.clip(z[n], lo, hi))), measured)

    starts = []
    for (frac, secs), m_half in zip(((None, None), (0.9, 1e-4), (0.4, 1e-3), (0.7, 1e-2)), (16, 4, 64, 16),
                                    strict=True):
        eff = start if frac is None else start.updated(**{p: frac if p in FRACTIONS else secs for p in params})
        starts.append(np.append(encode_params(eff, params), np.log10(m_half)))
    best = min((minimize(loss, z0, method="Nelder-Mead", options={"xatol": 1e-3, "fatol": 1e-6,
                                                                   "maxiter": 400 * (n + 1)})
                for z0 in starts), key=lambda res: res.fun)
    return float(10 ** np.clip(best.x[n], lo, hi))


def fit_flash_attention(rows: Sequence[Row], held_out: Sequence[bool], specs: dict[str, ModelSpec], *,
                        statistic: str = "best") -> FlashAttention | None:
    """The flash-attention kernel's two rates from what depth adds to a prompt, on the rows not held out.

    Each training llama-bench prompt at depth D > 0 is paired with the training row of the same case, type and prompt
    length at depth 0: the two differ only in attention (the same weights, FLOPs and KV written), so
    Δt = t(D) − t(0) is priced as Δt = ΔW ÷ R with ΔW = `flash_attention_flops`(P, D) − (P, 0). Per path
    (`flash_attention_path` of P), 1 ÷ R = the median of Δt ÷ ΔW over its pairs (a median: a pair is the difference of
    two noisy rows, and one disturbed run moves a mean; pairs whose depth row is faster count too, as negative
    seconds). Every GGUF type is pooled: the kernel and the F16 KV cache are the same in all of them. None when a path
    has no pair or a median that is not positive."""
    measured = dict(zip((r.id for r in rows), _measured(rows, statistic), strict=True))
    base = {(r.model, r.gguf_type, r.tokens, r.batch): r for r, h in zip(rows, held_out, strict=True)
            if not h and r.regime == "pp" and r.depth == 0}
    per_path: dict[str, list[float]] = {"rows": [], "tiled": []}
    for r, h in zip(rows, held_out, strict=True):
        b = base.get((r.model, r.gguf_type, r.tokens, r.batch))
        if h or r.regime != "pp" or r.depth == 0 or b is None:
            continue
        spec = specs[r.model]
        added = (flash_attention_flops(spec, r.tokens, r.depth, r.batch)
                 - flash_attention_flops(spec, r.tokens, 0, r.batch))
        per_path[flash_attention_path(r.tokens)].append((measured[r.id] - measured[b.id]) / added)
    seconds_per_flop = {p: float(np.median(v)) if v else float("nan") for p, v in per_path.items()}
    if not all(x > 0 for x in seconds_per_flop.values()):
        return None
    return FlashAttention(rows_flops_s=1.0 / seconds_per_flop["rows"], tiled_flops_s=1.0 / seconds_per_flop["tiled"],
                          pairs_fitted=sum(len(v) for v in per_path.values()))


def calibrate_rows(rows: Sequence[Row], held_out: Sequence[bool],
                   deployment_of: Callable[[Row, Efficiency], Deployment],
                   *, params: Sequence[str] = FIT_PARAMS, start: Efficiency | None = None,
                   statistic: str = "best", m_half_tokens: float | None = None,
                   attention: FlashAttention | None = None) -> Any:
    """Fit `params` on the rows not held out (`calibrate.calibrate`, log-error least squares), report both sides.

    `deployment_of(row, efficiency)` builds the row's deployment; each row's steps run at `step_efficiency` of
    their M with this `m_half_tokens` (None: the flat model) and attention at `attention`'s rates (None: the
    roofline's); the regime labels are the rows' regimes.
    `statistic`: 'best' (fastest repetition) or 'median' of each row's samples is what is compared.
    """
    from kokuban.validation.calibrate import calibrate

    measured = _measured(rows, statistic)
    regimes = np.array([r.regime for r in rows])
    predict_rows_at = _row_predictor(rows, deployment_of, attention)

    def predict(eff: Efficiency) -> tuple[np.ndarray, np.ndarray]:
        return predict_rows_at(eff, m_half_tokens), regimes

    start = start or Efficiency.scalar()  # the scalar set: what the committed report starts from (no GPU curves)
    return calibrate("llama.cpp", [r.id for r in rows], measured, predict, params, start=start, held_out=held_out)


def row_dict(row: Row) -> dict[str, Any]:
    """A row as plain JSON (its samples, best and median)."""
    return {**asdict(row), "samples_s": list(row.samples_s), "best_s": row.best_s, "median_s": row.median_s}


def row_from_dict(d: dict[str, Any]) -> Row:
    return Row(id=d["id"], model=d["model"], gguf_type=d["gguf_type"], regime=d["regime"], tokens=int(d["tokens"]),
               depth=int(d["depth"]), batch=int(d["batch"]), samples_s=tuple(float(s) for s in d["samples_s"]))


# ---- the plan and the measurement -------------------------------------------------------------------------
@dataclass(frozen=True)
class Case:
    """One model: a catalog architecture scaled to `num_layers`/`hidden_size`; `held_out` cases are never fitted."""

    name: str
    base: str
    num_layers: int | None = None
    hidden_size: int | None = None
    held_out: bool = False
    batched: bool = False  # also run llama-batched-bench on it

    def config(self) -> tuple[dict[str, Any], list[str]]:
        return llama_config(self.base, num_layers=self.num_layers, hidden_size=self.hidden_size)


@dataclass(frozen=True)
class Plan:
    """What to measure. Rows at a `held_out_depths` depth, and every row of a held-out case, are never fitted."""

    cases: tuple[Case, ...]
    types: tuple[str, ...] = ("F16", "Q8_0", "Q4_0", "Q4_K_M")
    prompts: tuple[int, ...] = (32, 128)
    gens: tuple[int, ...] = (16,)
    depths: tuple[int, ...] = (0, 256, 512)
    held_out_depths: tuple[int, ...] = (256,)
    repeats: int = 3
    batched_prompt: int = 64
    batched_gen: int = 8
    batched_batches: tuple[int, ...] = (1, 2, 4, 8)
    batched_runs: int = 2
    threads: int = 2


#: The committed run (validation/cpu/llamacpp.*): Llama-2-7B's architecture (MHA, 32k vocabulary, untied) at three
#: sizes and Llama-3.2-1B's (GQA 32/8 heads, 128k tied vocabulary) at 4 of its 16 layers. The fit sees the smallest
#: and the largest Llama-2 shape at depths 0 and 512 (and the smallest one's batched-bench rows); the middle shape
#: (its batched-bench rows too), the Llama-3.2 shape and depth 256 are held out.
DEFAULT_PLAN = Plan(cases=(
    Case("llama2-h1024-L4", "llama-2-7b", 4, 1024, held_out=False, batched=True),
    Case("llama2-h1536-L6", "llama-2-7b", 6, 1536, held_out=True, batched=True),
    Case("llama2-h2048-L8", "llama-2-7b", 8, 2048, held_out=False),
    Case("llama3.2-1b-L4", "llama-3.2-1b", 4, None, held_out=True),
))


def run_batched(tools: dict[str, Path], model: Path, plan: Plan, attempts: int = 4) -> tuple[list[BatchedTest], list]:
    """llama-batched-bench over `plan.batched_batches`, rerunning the batch sizes whose row did not come out.

    Its results are printed through llama.cpp's asynchronous logger, which on this machine sometimes exits before
    printing every row (1 of 3 runs of the same command printed 0 of 2 rows); a missing row is measured again, up to
    `attempts` runs, and left out if it never appears."""
    tests: list[BatchedTest] = []
    cmds = []
    missing = list(plan.batched_batches)
    for _ in range(attempts):
        cmd = batched_command(tools, model, prompt=plan.batched_prompt, gen=plan.batched_gen, batches=missing,
                              threads=plan.threads)
        cmds.append(cmd)
        try:
            got = parse_batched_bench(run_tool(cmd))
        except KokubanError:
            got = []
        tests += [t for t in got if t.batch in missing]
        missing = [b for b in missing if b not in {t.batch for t in got}]
        if not missing:
            break
    return sorted(tests, key=lambda t: t.batch), cmds


def merge_records(first: dict[str, Any], second: dict[str, Any]) -> dict[str, Any]:
    """Two passes of `measure` over the same plan as one record: each row's samples are the two passes' together
    (a second pass at another time spreads the machine's busy spells over the rows); runs are listed in order."""
    rows = {r["id"]: dict(r) for r in first["rows"]}
    for r in second["rows"]:
        if r["id"] in rows:
            rows[r["id"]]["samples_s"] = list(rows[r["id"]]["samples_s"]) + list(r["samples_s"])
        else:
            rows[r["id"]] = dict(r)
    merged = [row_dict(row_from_dict(r)) for r in rows.values()]
    return {**first, "rows": merged, "runs": first["runs"] + second["runs"], "passes": passes(first) + passes(second)}


def passes(record: dict[str, Any]) -> list[dict[str, Any]]:
    """The passes a record holds: date, repetitions per llama-bench test and batched-bench runs of each."""
    return record.get("passes") or [{"date": record["date"], "repeats": record["plan"]["repeats"],
                                     "batched_runs": record["plan"]["batched_runs"]}]


def is_held_out(row: Row, plan: Plan) -> bool:
    """A row is held out when its case (model size) is, or when its depth is a held-out depth: the issue's split
    (the held-out sizes and depths never reach the fit). The fitted sizes' batched-bench rows (prompts at depth
    0, generation after the 64-token prompts) train; until 2026-12-03 every batched-bench row was held out."""
    held_cases = {c.name for c in plan.cases if c.held_out}
    return row.model in held_cases or row.depth in plan.held_out_depths


def _load() -> float | None:
    import os

    return os.getloadavg()[0] if hasattr(os, "getloadavg") else None


def measure(plan: Plan, tools: dict[str, Path], work_dir: str | Path, *,
            save: Callable[[dict[str, Any]], None] | None = None,
            log: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Write, quantize and benchmark every case × type of `plan`; the raw record (rows, commands, files, loads).

    `save(record)` is called after every (case, type) so that an interrupted run keeps what it measured."""
    import datetime
    import platform

    work = Path(work_dir)
    work.mkdir(parents=True, exist_ok=True)
    say = log or (lambda _msg: None)
    record: dict[str, Any] = {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"), "machine": platform.platform(),
        "cpu": platform.processor() or platform.machine(), "tools": {k: str(v) for k, v in tools.items()},
        "plan": asdict(plan), "cases": {}, "runs": [], "rows": [],
    }
    for case in plan.cases:
        cfg, changes = case.config()
        f16 = work / f"{case.name}-F16.gguf"
        if not f16.exists():
            say(f"writing {f16.name}")
            write_gguf(cfg, f16, name=case.name)
        record["cases"][case.name] = {**asdict(case), "config": cfg, "scaled": changes, "files": {}}
        for gguf_type in plan.types:
            path = f16 if gguf_type == "F16" else work / f"{case.name}-{gguf_type}.gguf"
            if not path.exists():
                say(f"quantizing {path.name}")
                quantize(tools, f16, path, gguf_type, plan.threads)
            record["cases"][case.name]["files"][gguf_type] = {"path": str(path), **gguf_bytes(path)}
            cmd = bench_command(tools, path, prompts=plan.prompts, gens=plan.gens, depths=plan.depths,
                                repeats=plan.repeats, threads=plan.threads)
            say(f"llama-bench {case.name} {gguf_type}")
            before = _load()
            tests = parse_llama_bench_json(run_tool(cmd))
            record["runs"].append({"case": case.name, "type": gguf_type, "command": cmd, "load_before": before,
                                   "load_after": _load(), "build_commit": tests[0].build_commit if tests else ""})
            record["rows"] += [row_dict(r) for r in rows_from_bench(case.name, gguf_type, tests)]
            if case.batched:
                runs = []
                for _ in range(plan.batched_runs):
                    say(f"llama-batched-bench {case.name} {gguf_type}")
                    before = _load()
                    tests, cmds = run_batched(tools, path, plan)
                    runs.append(tests)
                    record["runs"].append({"case": case.name, "type": gguf_type, "commands": cmds,
                                           "load_before": before, "load_after": _load()})
                record["rows"] += [row_dict(r) for r in rows_from_batched(case.name, gguf_type, runs)]
            if save:
                save(record)
    return record


# ---- the analysis -------------------------------------------------------------------------------------------
def plan_from_dict(d: dict[str, Any]) -> Plan:
    fields = {k: tuple(v) if isinstance(v, list) else v for k, v in d.items() if k != "cases"}
    return Plan(cases=tuple(Case(**c) for c in d["cases"]), **fields)


def phase(regime: str) -> str:
    """'decode' for generation rows (tg, batched-tg), 'prefill' for prompt rows (pp, batched-pp)."""
    return "decode" if regime.endswith("tg") else "prefill"


def analyse(record: dict[str, Any], accelerator_entry: dict[str, Any], *, statistic: str = "best",
            flat: bool = True) -> dict[str, Any]:
    """Calibrate on the fitted rows, judge on the held-out ones: per GGUF type (each its own compute, memory, KV-read
    and overhead fractions and GEMM half-point M_half) and once for all types together (one set, as kokuban's single
    Efficiency has), every prompt's attention at the flash-attention kernel's two rates, fitted first on the training
    rows of every type together (`fit_flash_attention`). With `flat`, also the earlier model per type (one flat
    compute fraction: `FLAT_PARAMS`, no curve, the roofline's attention), fitted and judged on the same rows, to
    report beside it.

    Returns {"per_type": {type: Calibration.as_dict() + m_half_tokens, phases}, "per_type_pooled": the held-out
    summary (overall and by phase) of every type's rows under its own fit together, "flat": {type: the same for the
    flat model}, "all_types": ..., "flash_attention": FlashAttention as a dict (None when it could not be fitted),
    "rows": [...]} where each row carries its measured and predicted seconds (defaults,
    per-type fit, flat per-type fit, joint fit), its matmul path and whether it was held out; `phases` are the
    held-out summaries by phase (`phase`: decode, prefill) and overall."""
    from kokuban.validation.accuracy import error_summary

    plan = plan_from_dict(record["plan"])
    rows = [row_from_dict(r) for r in record["rows"]]
    specs = {name: ModelSpec.from_config(c["config"], name=name) for name, c in record["cases"].items()}

    def deployment_of(row: Row, eff: Efficiency) -> Deployment:
        return llamacpp_deployment(specs[row.model], accelerator_entry, row.gguf_type, eff)

    held = np.array([is_held_out(r, plan) for r in rows])
    attention = fit_flash_attention(rows, held, specs, statistic=statistic)

    def fitted(sub: Sequence[Row], held_sub: np.ndarray, model: str) -> dict[str, Any]:
        if model == "flat":
            m_half, params, attn = None, FLAT_PARAMS, None
        else:
            m_half = fit_m_half(sub, held_sub, deployment_of, statistic=statistic, attention=attention)
            params, attn = FIT_PARAMS, attention
        cal = calibrate_rows(sub, held_sub, deployment_of, params=params, statistic=statistic,
                             m_half_tokens=m_half, attention=attn).as_dict()
        held_rows = [pr for pr in cal["rows"] if pr["held_out"]]
        phases = [phase(r.regime) for r, h in zip(sub, held_sub, strict=True) if h]
        cal["phases"] = error_summary([pr["measured"] for pr in held_rows], [pr["predicted_after"] for pr in held_rows],
                                      groups=phases)
        return {**cal, "m_half_tokens": m_half}

    per_type, flat_fits, predicted, skipped = {}, {}, {}, []
    for gguf_type in plan.types:
        sel = [i for i, r in enumerate(rows) if r.gguf_type == gguf_type]
        if not sel or held[sel].all() or not held[sel].any():
            skipped.append(gguf_type)  # nothing to fit on, or nothing to judge on
            continue
        sub = [rows[i] for i in sel]
        per_type[gguf_type] = fitted(sub, held[sel], "curve")
        if flat:
            flat_fits[gguf_type] = fitted(sub, held[sel], "flat")
        for k, i in enumerate(sel):
            pr = per_type[gguf_type]["rows"][k]
            predicted[i] = (pr["predicted_before"], pr["predicted_after"],
                            flat_fits[gguf_type]["rows"][k]["predicted_after"] if flat else float("nan"))
    joint = fitted(rows, held, "curve")
    out_rows = []
    for i, r in enumerate(rows):
        if i not in predicted:
            continue
        before, after, flat_after = predicted[i]
        out_rows.append({**row_dict(r), "held_out": bool(held[i]),
                         "path": matmul_path(step_tokens(r.kind, r.tokens, r.batch)), "predicted_default_s": before,
                         "predicted_fit_s": after, "predicted_flat_s": flat_after,
                         "predicted_joint_s": joint["rows"][i]["predicted_after"]})
    # every type's held-out rows under its own fit, pooled: the error of the per-type calibration as one figure
    pooled = [r for r in out_rows if r["held_out"]]
    per_type_pooled = error_summary([r["best_s" if statistic == "best" else "median_s"] for r in pooled],
                                    [r["predicted_fit_s"] for r in pooled],
                                    groups=[phase(r["regime"]) for r in pooled]) if pooled else {}
    return {"statistic": statistic, "per_type": per_type, "per_type_pooled": per_type_pooled, "flat": flat_fits,
            "all_types": joint, "rows": out_rows,
            "skipped": skipped, "flash_attention": None if attention is None else asdict(attention)}


# ---- measuring on a shared machine: one test per run, kept only when nothing else ran -----------------------
def cpu_busy_s() -> float:
    """Seconds of CPU time the whole machine has spent busy since boot (/proc/stat: user + nice + system + irq +
    softirq + steal, in USER_HZ = 100 ticks per second); 0 where /proc/stat does not exist."""
    try:
        fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    except OSError:
        return 0.0
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(x) for x in fields[:8])
    return (user + nice + system + irq + softirq + steal) / 100.0


def children_cpu_s() -> float:
    """CPU seconds used by this process's finished children (getrusage RUSAGE_CHILDREN, user + system)."""
    import resource

    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def others_cores(busy_s: float, ours_s: float, wall_s: float) -> float:
    """Average cores that other processes kept busy over a run: (machine busy − ours) ÷ wall seconds."""
    return max(busy_s - ours_s, 0.0) / wall_s if wall_s > 0 else float("inf")


def wait_for_quiet(max_cores: float, timeout_s: float, probe_s: float = 0.5) -> float:
    """Wait until other processes keep fewer than `max_cores` cores busy over `probe_s` (or `timeout_s` passes);
    returns the last reading."""
    import time

    deadline = time.monotonic() + timeout_s
    while True:
        b0 = cpu_busy_s()
        time.sleep(probe_s)
        cores = (cpu_busy_s() - b0) / probe_s
        if cores < max_cores or time.monotonic() > deadline:
            return cores
        time.sleep(1.0)


def run_watched(cmd: Sequence[str]) -> tuple[str, float, float]:
    """Run a benchmark; (its output, wall seconds, average cores other processes used meanwhile)."""
    import time

    b0, c0, t0 = cpu_busy_s(), children_cpu_s(), time.monotonic()
    out = run_tool(cmd)
    wall = time.monotonic() - t0
    return out, wall, others_cores(cpu_busy_s() - b0, children_cpu_s() - c0, wall)


def measure_clean(plan: Plan, tools: dict[str, Path], work_dir: str | Path, *, budget_s: float,
                  max_others: float = 0.15, save: Callable[[dict[str, Any]], None] | None = None,
                  log: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Like `measure`, but each llama-bench test (one prompt or generation length at one depth) is its own run,
    started when the machine is quiet, and its repetitions are kept only when other processes used fewer than
    `max_others` cores on average during it; a disturbed test is run again in a later round, until every test has
    one undisturbed run or `budget_s` seconds have passed. Every attempt is recorded (command, wall, others' cores).
    """
    import datetime
    import platform
    import time

    say = log or (lambda _msg: None)
    work = Path(work_dir)
    record = measure(replace(plan, types=()), tools, work, log=log)  # models and files only (no benchmarks)
    record.update(date=datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
                  machine=platform.platform(), plan=asdict(plan), method="clean", max_others_cores=max_others,
                  attempts=[], rows=[])
    pending = []
    for case in plan.cases:
        for gguf_type in plan.types:
            f16 = work / f"{case.name}-F16.gguf"
            path = f16 if gguf_type == "F16" else work / f"{case.name}-{gguf_type}.gguf"
            if not path.exists():
                say(f"quantizing {path.name}")
                quantize(tools, f16, path, gguf_type, plan.threads)
            record["cases"][case.name]["files"][gguf_type] = {"path": str(path), **gguf_bytes(path)}
            for depth in plan.depths:
                for p in plan.prompts:
                    pending.append((case.name, gguf_type, path, "pp", p, depth))
                for n in plan.gens:
                    pending.append((case.name, gguf_type, path, "tg", n, depth))
            if case.batched:
                pending.append((case.name, gguf_type, path, "batched", 0, 0))
    pending.sort(key=lambda item: plan.types.index(item[1]))  # every case of a type before the next type
    start, rounds = time.monotonic(), 0
    while pending and time.monotonic() - start < budget_s:
        rounds += 1
        still = []
        for item in pending:
            if time.monotonic() - start > budget_s:
                still.append(item)
                continue
            name, gguf_type, path, kind, n, depth = item
            quiet = wait_for_quiet(max_others, timeout_s=20)
            if kind == "batched":
                cmd = batched_command(tools, path, prompt=plan.batched_prompt, gen=plan.batched_gen,
                                      batches=plan.batched_batches, threads=plan.threads)
            else:
                cmd = bench_command(tools, path, prompts=[n if kind == "pp" else 0], gens=[n if kind == "tg" else 0],
                                    depths=[depth], repeats=plan.repeats, threads=plan.threads)
            out, wall, others = run_watched(cmd)
            clean = others <= max_others
            if clean and kind == "batched":
                try:
                    batched = parse_batched_bench(out)
                except KokubanError:  # the asynchronous logger printed no row (see run_batched)
                    batched, clean = [], False
            record["attempts"].append({"case": name, "type": gguf_type, "test": f"{kind}{n}@d{depth}", "round": rounds,
                                       "command": cmd, "wall_s": wall, "others_cores": others,
                                       "quiet_before_cores": quiet, "kept": clean})
            say(f"{name} {gguf_type} {kind}{n}@d{depth}: {wall:.1f} s, others {others:.2f} cores"
                + ("" if clean else " — disturbed, again later"))
            if not clean:
                still.append(item)
                continue
            if kind == "batched":
                record["rows"] += [row_dict(r) for r in rows_from_batched(name, gguf_type, [batched])]
            else:
                record["rows"] += [row_dict(r) for r in rows_from_bench(name, gguf_type, parse_llama_bench_json(out))]
            if save:
                save(record)
        pending = still
    record["not_measured"] = [f"{n}/{t}/{k}{x}@d{d}" for n, t, _p, k, x, d in pending]
    record["rounds"] = rounds
    if save:
        save(record)
    return record

