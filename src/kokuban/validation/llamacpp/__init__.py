"""Validate kokuban against llama.cpp on this machine's CPU: a real serving engine with quantized kernels.

What it does (evidence/llamacpp/llamacpp.sh runs the whole of it; see docs/history/validation-journal.md):
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

The package, one module a job:
    gguf_files       the random-weight models: scaled catalog configs, GGUF writing and reading back
    tools            llama.cpp's own tools: finding them, their command lines, running them
    parsing          llama-bench's and llama-batched-bench's output read back
    predict          a test in kokuban's terms: the deployment, the whole test's seconds, the pruned rows
    matmul           which kernel each weight matmul runs, by tensor type and M, and the file's own bytes
    flash_attention  ggml's CPU flash-attention kernel: pairs computed per path, seconds at fitted rates
    rows             the measurements as rows (and as plain JSON)
    plan             what to measure and which rows are held out
    fit              M_half, the flash-attention rates and the fractions, fitted on the training rows
    analysis         the report's analysis of a measured record (`analyse`)
    measure          the measurement itself (`measure`, `measure_clean`), records merged over passes
    machine_load     how busy the rest of a shared machine is while a benchmark runs
"""

from __future__ import annotations

from kokuban.validation.llamacpp.analysis import analyse
from kokuban.validation.llamacpp.fit import (
    FIT_PARAMS,
    FLAT_PARAMS,
    M_HALF_BOUNDS,
    calibrate_rows,
    fit_flash_attention,
    fit_m_half,
)
from kokuban.validation.llamacpp.flash_attention import (
    FLASH_ATTENTION_SOURCE,
    FLASH_ATTENTION_TILE,
    FlashAttention,
    flash_attention_flops,
    flash_attention_pairs,
    flash_attention_path,
    flash_attention_s,
    with_attention_s,
)
from kokuban.validation.llamacpp.gguf_files import GGUF_TYPES, QK_K, gguf_bytes, llama_config, write_gguf
from kokuban.validation.llamacpp.machine_load import (
    children_cpu_s,
    cpu_busy_s,
    load_average,
    others_cores,
    run_watched,
    wait_for_quiet,
)
from kokuban.validation.llamacpp.matmul import (
    GEMM_MIN_TOKENS,
    GEMM_SOURCE,
    KERNEL_SOURCE,
    LAYER_MATRICES,
    REPACK_GEMM_ROWS,
    REPACKED_TYPES,
    TILED_MIN_ROWS,
    TILED_TYPES,
    body_matmul_s,
    body_matrices,
    body_tensor_type,
    file_body_bytes,
    gemm_rows,
    gguf_type_of,
    lm_head_tensor_type,
    matmul_path,
    step_efficiency,
    tensor_bytes_per_weight,
    weight_passes,
    with_file_bytes,
    with_kernel_paths,
)
from kokuban.validation.llamacpp.measure import measure, measure_clean, merge_records, passes, run_batched
from kokuban.validation.llamacpp.parsing import (
    BatchedTest,
    BenchTest,
    parse_batched_bench,
    parse_llama_bench_json,
    parse_llama_bench_markdown,
)
from kokuban.validation.llamacpp.plan import DEFAULT_PLAN, Case, Plan, is_held_out, plan_from_dict
from kokuban.validation.llamacpp.predict import (
    OUTPUT_ROWS_SOURCE,
    REFERENCE_COMPUTE,
    ffn_params_per_layer,
    llamacpp_deployment,
    predict_test,
    pruned_step,
    skipped_ffn_flops,
    step_tokens,
)
from kokuban.validation.llamacpp.rows import Row, phase, row_dict, row_from_dict, rows_from_batched, rows_from_bench
from kokuban.validation.llamacpp.tools import (
    TOOLS,
    batched_command,
    bench_command,
    find_tools,
    quantize,
    run_tool,
)

__all__ = [
    "DEFAULT_PLAN", "FIT_PARAMS", "FLASH_ATTENTION_SOURCE", "FLASH_ATTENTION_TILE", "FLAT_PARAMS", "GEMM_MIN_TOKENS",
    "GEMM_SOURCE", "GGUF_TYPES", "KERNEL_SOURCE", "LAYER_MATRICES", "M_HALF_BOUNDS", "OUTPUT_ROWS_SOURCE", "QK_K",
    "REFERENCE_COMPUTE", "REPACKED_TYPES", "REPACK_GEMM_ROWS", "TILED_MIN_ROWS", "TILED_TYPES", "TOOLS",
    "BatchedTest", "BenchTest", "Case", "FlashAttention", "Plan", "Row",
    "analyse", "batched_command", "bench_command", "body_matmul_s", "body_matrices", "body_tensor_type",
    "calibrate_rows", "children_cpu_s", "cpu_busy_s", "ffn_params_per_layer", "file_body_bytes", "find_tools",
    "fit_flash_attention", "fit_m_half", "flash_attention_flops", "flash_attention_pairs", "flash_attention_path",
    "flash_attention_s", "gemm_rows", "gguf_bytes", "gguf_type_of", "is_held_out", "llama_config",
    "llamacpp_deployment", "lm_head_tensor_type", "load_average", "matmul_path", "measure", "measure_clean",
    "merge_records", "others_cores", "parse_batched_bench", "parse_llama_bench_json", "parse_llama_bench_markdown",
    "passes", "phase", "plan_from_dict", "predict_test", "pruned_step", "quantize", "row_dict", "row_from_dict",
    "rows_from_batched", "rows_from_bench", "run_batched", "run_tool", "run_watched", "skipped_ffn_flops",
    "step_efficiency", "step_tokens", "tensor_bytes_per_weight", "wait_for_quiet", "weight_passes",
    "with_attention_s", "with_file_bytes", "with_kernel_paths", "write_gguf",
]
