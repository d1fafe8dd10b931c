"""Bytes per stored element for each precision kokuban knows.

Sub-byte formats carry their block scales: a 4-bit weight is never only 4 bits on the wire.
- int4: group-wise quantisation with one 16-bit scale per 128 weights (GPTQ/AWQ default):
  4 + 16/128 = 4.125 bits = 0.515625 bytes.
- fp4: MXFP4 (OCP Microscaling spec v1.0): blocks of 32 FP4 (E2M1) values share one 8-bit
  E8M0 scale: 4 + 8/32 = 4.25 bits = 0.53125 bytes. gpt-oss ships its experts in this format.
- fp8 / int8: per-channel or per-block scales add < 0.1 %, ignored.

llama.cpp's GGUF types (ggml's block formats; bytes per block ÷ weights per block, from the ggml vendored in
llama-cpp-python 0.3.36 = llama.cpp commit 0c1e570, 2026-10-01). `blck_size` and `type_size` are in
ggml/src/ggml.c `type_traits` (F16 line 669, Q4_0 line 693, Q8_0 line 737, Q4_K line 784, Q6_K line 800);
the block structs are checked by static_asserts in ggml/src/ggml-common.h:
- f16: 2 bytes (ggml_fp16_t); an alias of fp16.
- q8_0: 32 int8 + one fp16 scale: (2 + 32) B / 32 = 1.0625 B = 8.5 bits (ggml-common.h line 256).
- q4_0: 32 nibbles + one fp16 scale: (2 + 16) B / 32 = 0.5625 B = 4.5 bits (ggml-common.h line 199).
- q4_k_m: a mix that llama-quantize writes (`llama_tensor_get_type_impl`, src/llama-quant.cpp lines 452-454,
  590-591, 646-652): Q4_K everywhere (2 fp16 + 12 scale bytes + 128 nibble bytes per 256 = 144/256 B = 4.5
  bits, ggml-common.h line 338), but attn_v and ffn_down in Q6_K (210/256 B = 6.5625 bits, line 368) in the
  layers where use_more_bits(i, n) = i < n/8 or i ≥ 7n/8 or (i − n/8) mod 3 = 2 holds (16 of 32 layers).
  The transformer body's average is `q4_k_m_body_bytes` for a shape; the figure here is that of Llama-2-7B
  (see `Q4_K_M_REFERENCE`): 0.6019 B = 4.815 bits (whole file with embeddings: ≈ 4.84 bits, 4.08 GB).
Embedding and LM head are not the body's type in GGUF: `embedding_bytes_per_element`.
"""

from __future__ import annotations

from kokuban.errors import KokubanError

#: ggml block formats: bytes per block ÷ weights per block (ggml/src/ggml.c type_traits, ggml-common.h).
GGML_BLOCK_BYTES: dict[str, float] = {
    "Q8_0": (2 + 32) / 32,  # fp16 scale + 32 int8
    "Q4_0": (2 + 16) / 32,  # fp16 scale + 32 nibbles
    "Q4_K": (2 * 2 + 12 + 256 // 2) / 256,  # fp16 d, dmin + 12 bytes of 6-bit scales/mins + 256 nibbles
    "Q6_K": (256 // 2 + 256 // 4 + 256 // 16 + 2) / 256,  # low nibbles + high 2 bits + int8 scales + fp16 d
}


def use_more_bits(layer: int, num_layers: int) -> bool:
    """llama-quantize's rule for the layers that get more bits (src/llama-quant.cpp line 452-454):
    i < n/8 or i ≥ 7n/8 or (i − n/8) mod 3 = 2, with C integer division (n/8 rounds down)."""
    eighth = num_layers // 8
    return layer < eighth or layer >= 7 * num_layers // 8 or (layer - eighth) % 3 == 2


def q4_k_m_body_bytes(num_layers: int, hidden: int, kv_width: int, mlp_width: int) -> float:
    """Average bytes per weight of the transformer body (attention + gated MLP) that llama-quantize writes for
    Q4_K_M: attn_v (hidden × kv_width) and ffn_down (mlp_width × hidden) in Q6_K where `use_more_bits`, every
    other matrix (q, o: hidden²; k: hidden × kv_width; gate, up: hidden × mlp_width) in Q4_K.

        bytes = Σ_layers [v·(Q6_K if more bits else Q4_K) + down·(same) + (q + k + o + gate + up)·Q4_K] ÷ params
    """
    q4k, q6k = GGML_BLOCK_BYTES["Q4_K"], GGML_BLOCK_BYTES["Q6_K"]
    per_layer = 2 * hidden * hidden + 2 * hidden * kv_width + 3 * hidden * mlp_width
    mixed = hidden * kv_width + hidden * mlp_width  # attn_v + ffn_down
    more = sum(use_more_bits(i, num_layers) for i in range(num_layers))
    total = num_layers * per_layer * q4k + more * mixed * (q6k - q4k)
    return total / (num_layers * per_layer)


#: The shape the q4_k_m figure is taken at: Llama-2-7B (32 layers, hidden 4096, MHA: KV width 4096, MLP 11008).
Q4_K_M_REFERENCE = {"num_layers": 32, "hidden": 4096, "kv_width": 4096, "mlp_width": 11008}

BYTES_PER_ELEMENT: dict[str, float] = {
    "fp32": 4.0,
    "bf16": 2.0,
    "fp16": 2.0,
    "fp8": 1.0,
    "int8": 1.0,
    "int4": 0.5 + 2.0 / 128,
    "fp4": 0.5 + 1.0 / 32,
    "q8_0": GGML_BLOCK_BYTES["Q8_0"],
    "q4_0": GGML_BLOCK_BYTES["Q4_0"],
    "q4_k_m": q4_k_m_body_bytes(**Q4_K_M_REFERENCE),
}

#: GGUF types: the block format llama-quantize gives the LM head (output.weight, and token_embd when tied):
#: Q8_0 files keep Q8_0; every other type gets Q6_K (src/llama-quant.cpp lines 488-510, "new_type != Q8_0 →
#: Q6_K"). An untied token_embd keeps the base type, which only makes the stored size a little smaller.
GGUF_OUTPUT_TYPE: dict[str, str] = {"q8_0": "Q8_0", "q4_0": "Q6_K", "q4_k_m": "Q6_K"}

#: Compute dtype to use for the matrix multiplies of weights stored in a dtype, when the
#: accelerator has native support for it (W8A8 fp8, W4A4 fp4); weight-only int4 always
#: de-quantises to bf16 (W4A16, as Marlin/AWQ kernels do). GGUF quantized types multiply against
#: activations quantised to 8-bit integers (ggml-cpu.c type_traits_cpu: vec_dot_type Q8_0 for Q4_0/Q8_0,
#: Q8_K for the K-quants): int8 dot products.
NATIVE_COMPUTE: dict[str, str] = {
    "fp32": "bf16", "bf16": "bf16", "fp16": "fp16", "fp8": "fp8", "int8": "int8", "int4": "bf16", "fp4": "fp4",
    "q8_0": "int8", "q4_0": "int8", "q4_k_m": "int8",
}


def check_dtype(name: str, field: str = "dtype") -> str:
    """Return the canonical dtype name or raise a one-line error about `field` listing the allowed ones."""
    key = name.lower().replace("float", "fp").replace("bfloat16", "bf16")
    aliases = {"fp16": "fp16", "half": "fp16", "f16": "fp16", "mxfp4": "fp4", "nvfp4": "fp4", "e4m3": "fp8",
               "w4a16": "int4"}
    key = aliases.get(key, key)
    if key not in BYTES_PER_ELEMENT:
        allowed = ", ".join(BYTES_PER_ELEMENT)
        raise KokubanError(f"'{name}' is not supported; allowed: {allowed}", field=field, value=name)
    return key


def bytes_per_element(dtype: str) -> float:
    """Bytes one stored element of `dtype` occupies, block scales included."""
    return BYTES_PER_ELEMENT[check_dtype(dtype)]


def embedding_bytes_per_element(weights_dtype: str) -> float:
    """Bytes per element of the embedding and LM head when the body is stored in `weights_dtype`.

    Serving engines leave them 16-bit (fp32 if everything is); llama.cpp's GGUF files store the LM head in
    `GGUF_OUTPUT_TYPE` (Q6_K = 0.8203 B for Q4 files, Q8_0 = 1.0625 B for Q8_0 files)."""
    key = check_dtype(weights_dtype)
    if key in GGUF_OUTPUT_TYPE:
        return GGML_BLOCK_BYTES[GGUF_OUTPUT_TYPE[key]]
    return 4.0 if key == "fp32" else 2.0
