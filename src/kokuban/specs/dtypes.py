"""Bytes per stored element for each precision kokuban knows.

Sub-byte formats carry their block scales: a 4-bit weight is never only 4 bits on the wire.
- int4: group-wise quantisation with one 16-bit scale per 128 weights (GPTQ/AWQ default):
  4 + 16/128 = 4.125 bits = 0.515625 bytes.
- fp4: MXFP4 (OCP Microscaling spec v1.0): blocks of 32 FP4 (E2M1) values share one 8-bit
  E8M0 scale: 4 + 8/32 = 4.25 bits = 0.53125 bytes. gpt-oss ships its experts in this format.
- fp8 / int8: per-channel or per-block scales add < 0.1 %, ignored.
"""

from __future__ import annotations

from kokuban.errors import KokubanError

BYTES_PER_ELEMENT: dict[str, float] = {
    "fp32": 4.0,
    "bf16": 2.0,
    "fp16": 2.0,
    "fp8": 1.0,
    "int8": 1.0,
    "int4": 0.5 + 2.0 / 128,
    "fp4": 0.5 + 1.0 / 32,
}

#: Compute dtype to use for the matrix multiplies of weights stored in a dtype, when the
#: accelerator has native support for it (W8A8 fp8, W4A4 fp4); weight-only int4 always
#: de-quantises to bf16 (W4A16, as Marlin/AWQ kernels do).
NATIVE_COMPUTE: dict[str, str] = {
    "fp32": "bf16", "bf16": "bf16", "fp16": "fp16", "fp8": "fp8", "int8": "int8", "int4": "bf16", "fp4": "fp4",
}


def check_dtype(name: str, field: str = "dtype") -> str:
    """Return the canonical dtype name or raise a one-line error about `field` listing the allowed ones."""
    key = name.lower().replace("float", "fp").replace("bfloat16", "bf16")
    aliases = {"fp16": "fp16", "half": "fp16", "mxfp4": "fp4", "nvfp4": "fp4", "e4m3": "fp8", "w4a16": "int4"}
    key = aliases.get(key, key)
    if key not in BYTES_PER_ELEMENT:
        allowed = ", ".join(BYTES_PER_ELEMENT)
        raise KokubanError(f"'{name}' is not supported; allowed: {allowed}", field=field, value=name)
    return key


def bytes_per_element(dtype: str) -> float:
    """Bytes one stored element of `dtype` occupies, block scales included."""
    return BYTES_PER_ELEMENT[check_dtype(dtype)]
