"""Bytes per stored element for each precision kokuban knows, and how its kernels run.

Every quantized format is a `QuantFormat`: bits of each stored value, the group (block) of weights that share a
scale, the bits of that scale and of a zero point; `bytes_per_weight` is the one formula
(value bits + (scale bits + zero bits) / group) / 8. A per-tensor or per-channel scale (one per row of thousands of
weights) adds < 0.4 % and is ignored (group 0). Sub-byte formats carry their block scales: a 4-bit weight is never
only 4 bits on the wire.

GPU formats (the figures and their sources):
- int4 (= int4-g128): group-wise int4 with one 16-bit scale per 128 weights and no zero point (symmetric: GPTQ
  sym in Marlin form, compressed-tensors W4A16 `pack-quantized` symmetric): 4 + 16/128 = 4.125 bits = 0.515625 bytes.
- int4-g128-zp: as AutoAWQ and AutoGPTQ store it: `qweight` int32 packing 8 nibbles, `qzeros` int32 packing one
  4-bit zero per group and output, `scales` fp16 per group and output (casper-hansen/AutoAWQ
  awq/modules/linear/gemm.py `WQLinear_GEMM`, commit 030fe2a; AutoGPTQ's `QuantLinear` adds a `g_idx` int32 per input
  row, 32/out_features bits, ignored): 4 + (16 + 4)/128 = 4.15625 bits.
- int<b>-g<G>[-zp[<z>]]: any group size G, a zero point of z bits (default b, packed like the values):
  int4-g64 = 4 + 16/64 = 4.25 bits; int4-g32 = 4.5 bits; int4-g32-zp16 (a 16-bit scale and a 16-bit zero per 32, as
  HQQ keeps them and ggml's Q4_1 block does: (2 + 2 + 16) B / 32) = 4 + 32/32 = 5.0 bits. int<b>-ch: one scale per
  output channel (compressed-tensors strategy "channel"): b bits.
- fp4 (= mxfp4): MXFP4 (OCP Microscaling Formats (MX) Specification v1.0, 2023: MXFP4 = block 32, E8M0 scale):
  blocks of 32 FP4 (E2M1) values share one 8-bit E8M0 scale: 4 + 8/32 = 4.25 bits = 0.53125 bytes. gpt-oss ships
  its experts in this format.
- nvfp4: 16 FP4 (E2M1) values share one FP8 (E4M3) scale, plus one fp32 scale per tensor (ignored): 4 + 8/16 =
  4.5 bits = 0.5625 bytes (NVIDIA, "Introducing NVFP4 for Efficient and Accurate Low-Precision Inference", 2025;
  Intel Neural Compressor's NVFP4 table: element E2M1 4 bits, block 16, scale UE4M3 8 bits, global FP32; ModelOpt's
  checkpoints say `group_size: 16`).
- fp8 (per tensor), fp8-ch (per channel): 8 bits. fp8-block: 128×128 blocks with an fp32 scale each (DeepSeek-V3's
  `weight_block_size: [128, 128]`, `weight_scale_inv` fp32): 8 + 32/16384 = 8.00195 bits.
- int8: SmoothQuant W8A8 (Xiao et al. 2023), one scale per output channel: 8 bits, int8 tensor cores.
- nf4 (bitsandbytes 4-bit, NF4 or FP4 codes): blocks of 64 with an fp32 absmax: 4 + 32/64 = 4.5 bits; nf4-dq (double
  quantisation): the absmax in 8 bits with one fp32 per 256 blocks: 4 + 8/64 + 32/(64·256) = 4.127 bits (Dettmers et
  al., "QLoRA", 2023, §3 "Double Quantization": 32/64 = 0.5 → 8/64 + 32/(64·256) = 0.127 bits per parameter).

Weight-only formats (int4/int8 groups, nf4: W4A16) dequantise to 16 bits inside the matmul kernel (`weight_only`);
fp8/int8/fp4 multiply natively where the accelerator has the unit and dequantise where it does not
(`dequantises`). Their kernels stream weights more slowly than a 16-bit GEMM: `Efficiency.dequant_memory`.

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

import re
from dataclasses import dataclass
from functools import cache

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


def bytes_per_weight(value_bits: float, group_size: int = 0, scale_bits: float = 0.0, zero_bits: float = 0.0) -> float:
    """Bytes one stored weight occupies, its share of the group's scale and zero point included:

        bytes = (value bits + (scale bits + zero bits) / group size) / 8

    group_size 0 means one scale per tensor or per output channel (thousands of weights): its share is ignored.
    E.g. int4 in groups of 128 with an fp16 scale: (4 + 16/128)/8 = 0.515625 B; NVFP4: (4 + 8/16)/8 = 0.5625 B."""
    share = (scale_bits + zero_bits) / group_size if group_size else 0.0
    return (value_bits + share) / 8


@dataclass(frozen=True)
class QuantFormat:
    """One stored weight format: its bits, the group that shares a scale, and how its kernels run.

    `compute` is the matmul dtype on an accelerator with that unit (W8A8 fp8, W4A4 fp4, int8 dot products);
    `weight_only` formats always dequantise to 16 bits in the kernel (W4A16, as Marlin/AWQ kernels do); `kind` is
    "float" (unquantised), "gpu" or "gguf" (llama.cpp's block types, priced by their own CPU validation).
    `average_bytes` is set only for a mix of block types (q4_k_m), which the block formula cannot give."""

    name: str
    value_bits: float
    group_size: int = 0
    scale_bits: float = 0.0
    zero_bits: float = 0.0
    compute: str = "bf16"
    weight_only: bool = False
    kind: str = "gpu"
    average_bytes: float | None = None

    @property
    def bytes(self) -> float:
        """Bytes per stored weight (`bytes_per_weight`, or the mix's average)."""
        if self.average_bytes is not None:
            return self.average_bytes
        return bytes_per_weight(self.value_bits, self.group_size, self.scale_bits, self.zero_bits)

    @property
    def family(self) -> str:
        """The value type stored ("int4", "fp4", "fp8", "int8"; the name itself for floats and GGUF types):
        int4-g32 and int4-g128-zp are both "int4", nvfp4 and MXFP4 both "fp4"."""
        if self.kind != "gpu":
            return self.name
        return f"{'fp' if self.compute in ('fp8', 'fp4') else 'int'}{self.value_bits:g}"

    @property
    def quantised(self) -> bool:
        """A GPU quantized format (not a 16/32-bit float, not a GGUF type)."""
        return self.kind == "gpu"


#: The named formats (the docstring gives each one's source). int<b>-g<G>[-zp[<z>]] and int<b>-ch are built by
#: `quant_format` for any group size; the names here are the common ones and the old aliases.
FORMATS: dict[str, QuantFormat] = {f.name: f for f in (
    QuantFormat("fp32", 32, compute="bf16", kind="float"),
    QuantFormat("bf16", 16, compute="bf16", kind="float"),
    QuantFormat("fp16", 16, compute="fp16", kind="float"),
    QuantFormat("fp8", 8, compute="fp8"),
    QuantFormat("fp8-ch", 8, compute="fp8"),
    QuantFormat("fp8-block", 8, 128 * 128, 32, compute="fp8"),
    QuantFormat("int8", 8, compute="int8"),
    QuantFormat("int4", 4, 128, 16, weight_only=True),
    QuantFormat("int4-g128", 4, 128, 16, weight_only=True),
    QuantFormat("int4-g128-zp", 4, 128, 16, 4, weight_only=True),
    QuantFormat("int4-g64", 4, 64, 16, weight_only=True),
    QuantFormat("int4-g32", 4, 32, 16, weight_only=True),
    QuantFormat("int4-g32-zp16", 4, 32, 16, 16, weight_only=True),
    QuantFormat("fp4", 4, 32, 8, compute="fp4"),
    QuantFormat("nvfp4", 4, 16, 8, compute="fp4"),
    QuantFormat("nf4", 4, 64, 32, weight_only=True),
    QuantFormat("nf4-dq", 4, 64, 8 + 32 / 256, weight_only=True),
    QuantFormat("q8_0", 8, 32, 16, compute="int8", kind="gguf"),
    QuantFormat("q4_0", 4, 32, 16, compute="int8", kind="gguf"),
    QuantFormat("q4_k_m", 4, compute="int8", kind="gguf", average_bytes=q4_k_m_body_bytes(**Q4_K_M_REFERENCE)),
)}

BYTES_PER_ELEMENT: dict[str, float] = {name: f.bytes for name, f in FORMATS.items()}

#: GGUF types: the block format llama-quantize gives the LM head (output.weight, and token_embd when tied):
#: Q8_0 files keep Q8_0; every other type gets Q6_K (src/llama-quant.cpp lines 488-510, "new_type != Q8_0 →
#: Q6_K"). An untied token_embd keeps the base type, which only makes the stored size a little smaller.
GGUF_OUTPUT_TYPE: dict[str, str] = {"q8_0": "Q8_0", "q4_0": "Q6_K", "q4_k_m": "Q6_K"}

#: Compute dtype to use for the matrix multiplies of weights stored in a dtype, when the accelerator has native
#: support for it (W8A8 fp8, W4A4 fp4); weight-only int4 always de-quantises to bf16 (W4A16, as Marlin/AWQ kernels
#: do). GGUF quantized types multiply against activations quantised to 8-bit integers (ggml-cpu.c
#: type_traits_cpu: vec_dot_type Q8_0 for Q4_0/Q8_0, Q8_K for the K-quants): int8 dot products.
NATIVE_COMPUTE: dict[str, str] = {name: f.compute for name, f in FORMATS.items()}

#: Other spellings of a format's name.
ALIASES = {"half": "fp16", "f16": "fp16", "mxfp4": "fp4", "e4m3": "fp8", "w4a16": "int4", "w8a8": "int8",
           "fp8-tensor": "fp8", "fp8-channel": "fp8-ch", "int8-w8a8": "int8", "fp4-e2m1": "fp4"}

_GROUPED = re.compile(r"int([2-8])-(?:g(\d{1,6})|ch)(?:-zp(\d{1,2})?)?")


@cache
def _grouped_format(name: str) -> QuantFormat | None:
    """int<b>-g<G>[-zp[<z>]] or int<b>-ch[-zp…]: b-bit weight-only groups of G (ch: one scale per channel) with a
    16-bit scale and, with -zp, a zero point of z bits (default b)."""
    match = _GROUPED.fullmatch(name)
    if match is None:
        return None
    bits, group, zp = match.groups()
    if group is not None and not 1 <= int(group) <= 65536:
        return None
    zero = 0.0 if "-zp" not in name else float(zp or bits)
    if not 0 <= zero <= 32:
        return None
    return QuantFormat(name, int(bits), int(group or 0), 16, zero, weight_only=True)


def check_dtype(name: str, field: str = "dtype") -> str:
    """Return the canonical dtype name or raise a one-line error about `field` listing the allowed ones."""
    key = str(name).lower().replace("float", "fp").replace("bfloat16", "bf16")
    key = ALIASES.get(key, key)
    if key not in FORMATS and _grouped_format(key) is None:
        allowed = ", ".join(FORMATS)
        raise KokubanError(f"'{name}' is not supported; allowed: {allowed}, or int<bits>-g<group>[-zp[<zero bits>]] "
                           "/ int<bits>-ch for any group size", field=field, value=name)
    return key


def quant_format(dtype: str) -> QuantFormat:
    """The `QuantFormat` of a dtype name (any spelling `check_dtype` accepts)."""
    key = check_dtype(dtype)
    return FORMATS.get(key) or _grouped_format(key)  # type: ignore[return-value]


def bytes_per_element(dtype: str) -> float:
    """Bytes one stored element of `dtype` occupies, block scales included."""
    return quant_format(dtype).bytes


def dequantises(weights_dtype: str, compute_dtype: str) -> bool:
    """Whether the weight matmuls dequantise the stored weights on the fly: a GPU quantized format that is
    weight-only (W4A16) or multiplied in another dtype than its own (fp8 on an A100, fp4 on an H100, fp8 with
    `compute_dtype` bf16). Unquantised floats and llama.cpp's GGUF types (their CPU kernels are fitted by
    `kokuban.validation.llamacpp`) never do."""
    fmt = quant_format(weights_dtype)
    return fmt.quantised and (fmt.weight_only or check_dtype(compute_dtype) != fmt.compute)


def embedding_bytes_per_element(weights_dtype: str) -> float:
    """Bytes per element of the embedding and LM head when the body is stored in `weights_dtype`.

    Serving engines leave them 16-bit (fp32 if everything is); llama.cpp's GGUF files store the LM head in
    `GGUF_OUTPUT_TYPE` (Q6_K = 0.8203 B for Q4 files, Q8_0 = 1.0625 B for Q8_0 files)."""
    key = check_dtype(weights_dtype)
    if key in GGUF_OUTPUT_TYPE:
        return GGML_BLOCK_BYTES[GGUF_OUTPUT_TYPE[key]]
    return 4.0 if key == "fp32" else 2.0
