"""One llama.cpp test predicted in kokuban's terms: the deployment (`llamacpp_deployment`), a whole test's
seconds (`predict_test`) and the feed-forward rows llama.cpp prunes (`pruned_step`); see the package
docstring, `kokuban.validation.llamacpp`."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from kokuban.errors import KokubanError
from kokuban.specs.deployment import Deployment
from kokuban.specs.hardware import Efficiency
from kokuban.specs.model import ModelSpec
from kokuban.validation.llamacpp.flash_attention import (
    FlashAttention,
    flash_attention_flops,
    flash_attention_s,
    with_attention_s,
)
from kokuban.validation.llamacpp.gguf_files import GGUF_TYPES
from kokuban.validation.llamacpp.matmul import with_file_bytes, with_kernel_paths

#: llama.cpp builds an F16 matmul in fp32 arithmetic on x86 and the quantized ones as int8 dot products: the
#: probed fp32 matmul rate is the one reference peak all of them are measured against.
REFERENCE_COMPUTE = "fp32"
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
    """Predicted seconds of one whole test (see the package docstring, `kokuban.validation.llamacpp`).

    kind 'pp': prefill(dep, batch, depth + tokens, cached=depth), less the last layer's feed-forward FLOPs of the
    rows that are not outputs (`pruned_step`, one output per sequence); kind 'tg': Σ_{i=1..tokens} decode_step(dep,
    batch, depth + i) — each generated token attends to the cache so far plus itself. With `attention`, a prompt's
    attention compute is the flash-attention kernel's (`flash_attention_s` of its `tokens` queries per sequence after
    `depth`) in place of the roofline's FLOPs at the compute fraction; a generation step keeps the roofline's
    attention, bound by its KV read (package docstring).
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
