"""The random-weight GGUF models: a catalog config scaled for llama.cpp (`llama_config`), written as an F16
GGUF with the `gguf` package (`write_gguf`) and read back (`gguf_bytes`); the GGUF types measured and
kokuban's dtype for each (`GGUF_TYPES`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from kokuban.errors import KokubanError

#: llama-quantize's type names and kokuban's dtype for each (F16 is the unquantized file).
GGUF_TYPES = {"F16": "fp16", "Q8_0": "q8_0", "Q4_0": "q4_0", "Q4_K_M": "q4_k_m"}
#: K-quants need rows that are whole 256-weight super-blocks (QK_K, ggml-common.h line 89).
QK_K = 256


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
