"""The weight format a checkpoint is stored in, read from its `quantization_config` (specs/dtypes.py formats).

`checkpoint_format(config)` reads the `quantization_config` of a Hugging Face config.json — or, in a local model
folder, the `quantize_config.json` (AutoGPTQ, AutoAWQ) or `hf_quant_config.json` (NVIDIA ModelOpt) beside it — and
names the kokuban dtype of its weights. The layouts it reads (field names as the producing libraries write them):

- awq (AutoAWQ): `bits` (or `w_bit`), `group_size` (or `q_group_size`), `zero_point` (default true): a 16-bit
  scale and a `bits`-bit zero per group → int<bits>-g<group>-zp (int4-g128-zp = 4.15625 bits).
- gptq (AutoGPTQ, GPTQModel): `bits`, `group_size` (−1: per channel); the checkpoint stores `qzeros` whether `sym`
  or not → int<bits>-g<group>-zp.
- fp8 (vLLM / DeepSeek): `weight_block_size` [128, 128] → fp8-block; else fp8 (per-tensor scale).
- mxfp4 (gpt-oss) → fp4 (MXFP4).
- compressed-tensors (llm-compressor): the `weights` of the first `config_groups` entry: `num_bits`, `type`
  ("int" or "float"), `strategy` ("tensor", "channel", "group", "tensor_group", "block"), `group_size`,
  `symmetric`; `input_activations` set means W8A8. int 4/8 bits in groups → int<b>-g<G> (asymmetric: -zp), channel
  → int<b>-ch, int 8 with 8-bit activations → int8 (W8A8); float 8 → fp8 / fp8-ch / fp8-block; float 4 in
  groups of 16 → nvfp4, of 32 → fp4 (MXFP4). Formats "pack-quantized", "int-quantized", "float-quantized",
  "naive-quantized", "nvfp4-pack-quantized", "mxfp4-pack-quantized" are read through their `config_groups`.
- modelopt (NVIDIA ModelOpt: `quant_algo`): FP8 → fp8, FP8_PER_CHANNEL_PER_TOKEN → fp8-ch, FP8_BLOCK_SCALES (or
  FP8_PB_WO) → fp8-block, NVFP4 / W4A16_NVFP4 → nvfp4, MXFP4 → fp4, W4A16_AWQ / W4A8_AWQ → int4-g<group_size,
  128> (scale only), INT8_SQ / W8A8_SQ_PER_CHANNEL → int8.
- bitsandbytes: `load_in_4bit` → nf4 (blocks of 64, fp32 absmax) or nf4-dq with `bnb_4bit_use_double_quant`;
  `load_in_8bit` → int8-ch (LLM.int8(): int8 rows with one scale each, weight-only).

Modules a checkpoint leaves unquantised (`modules_to_not_convert`, compressed-tensors' `ignore`, ModelOpt's
`exclude_modules`): when they name the attention (`self_attn`, `attn`), only the MLPs are quantised — gpt-oss keeps
attention and router in bf16 beside MXFP4 experts — and `CheckpointFormat.unconverted_dtype` is the config's
`torch_dtype`; a mixture-of-experts model then stores its routed experts in the quantised format and the rest in
that one (`ModelSpec.native_experts_dtype`).

A method or format this does not know is never priced silently as 16-bit: with a stated bit width (`bits`,
`w_bit`, `nbits`, `num_bits`) the weights are priced as int<bits>-g<group> (or -ch) and a warning says so; with
none the dtype is None and the checkpoint needs an explicit weights dtype (Deployment.make refuses it otherwise).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kokuban.errors import KokubanError
from kokuban.specs.dtypes import check_dtype

#: Files beside a config.json that carry the quantisation of older checkpoints (local model folders).
SIDECARS = ("quantize_config.json", "hf_quant_config.json")


@dataclass(frozen=True)
class CheckpointFormat:
    """What a checkpoint's quantisation reads as: `dtype` (a kokuban dtype, or None when it cannot be priced),
    the `method` as written, how it was read (`detail`) and a one-line `warning` when the format is not known."""

    dtype: str | None
    method: str = ""
    detail: str = ""
    warning: str = ""
    unconverted_dtype: str = ""  # the 16-bit dtype of attention left unquantised ("" when it is quantised too)


#: The keys under which producing libraries list the modules they leave unquantised.
UNCONVERTED_KEYS = ("modules_to_not_convert", "ignore", "exclude_modules")


def _torch_dtype(config: dict[str, Any]) -> str:
    """The config's 16-bit `torch_dtype` (or `dtype`): fp16 for float16, else bf16 (serving engines load float32
    checkpoints in bf16)."""
    return "fp16" if str(config.get("torch_dtype") or config.get("dtype")) == "float16" else "bf16"


def attention_unconverted(q: dict[str, Any]) -> bool:
    """Whether the quantisation config lists the attention among the modules it leaves unquantised: any entry of
    `UNCONVERTED_KEYS` naming `attn` (gpt-oss: "model.layers.*.self_attn"; llm-compressor: "re:.*self_attn.*")."""
    return any(isinstance(entries, list) and any("attn" in str(e) for e in entries)
               for entries in (q.get(key) for key in UNCONVERTED_KEYS))


def _int(value: Any, default: int | None = None) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _grouped(bits: int, group: int | None, zero: bool) -> str:
    """int<bits>-g<group>[-zp] (group ≤ 0 or None: per channel, int<bits>-ch)."""
    name = f"int{bits}-ch" if not group or group <= 0 else f"int{bits}-g{group}"
    return name + ("-zp" if zero else "")


def _known(name: str) -> str | None:
    try:
        return check_dtype(name)
    except KokubanError:  # a bit width or group size outside what dtypes.py builds
        return None


def _awq(q: dict[str, Any]) -> str | None:
    bits, group = _int(q.get("bits", q.get("w_bit"))), _int(q.get("group_size", q.get("q_group_size")), 128)
    return _known(_grouped(bits, group, bool(q.get("zero_point", True)))) if bits else None


def _gptq(q: dict[str, Any]) -> str | None:
    bits, group = _int(q.get("bits")), _int(q.get("group_size"), 128)
    return _known(_grouped(bits, group, True)) if bits else None


def _fp8(q: dict[str, Any]) -> str:
    return "fp8-block" if q.get("weight_block_size") else "fp8"


def _compressed_tensors(q: dict[str, Any]) -> str | None:
    groups = q.get("config_groups")
    if not isinstance(groups, dict) or not groups:
        return None
    scheme = next(iter(groups.values()))
    weights = scheme.get("weights") if isinstance(scheme, dict) else None
    if not isinstance(weights, dict):
        return None
    bits, kind = _int(weights.get("num_bits")), str(weights.get("type", "int"))
    strategy, group = str(weights.get("strategy", "tensor")), _int(weights.get("group_size"))
    acts = scheme.get("input_activations")
    if kind == "float" and bits == 8:
        return {"channel": "fp8-ch", "block": "fp8-block"}.get(strategy, "fp8")
    if kind == "float" and bits == 4:
        return {16: "nvfp4", 32: "fp4"}.get(group or 0)
    if kind == "int" and bits:
        if bits == 8 and isinstance(acts, dict) and acts.get("num_bits") == 8 and strategy in ("channel", "tensor"):
            return "int8"  # W8A8 (SmoothQuant-style): int8 tensor cores
        grouped = strategy in ("group", "tensor_group") and group
        return _known(_grouped(bits, group if grouped else None, weights.get("symmetric", True) is False))
    return None


#: ModelOpt's `quant_algo` names (modelopt.torch.export: QUANTIZATION_FP8, QUANTIZATION_NVFP4, …).
MODELOPT = {"FP8": "fp8", "FP8_PER_CHANNEL_PER_TOKEN": "fp8-ch", "FP8_BLOCK_SCALES": "fp8-block",
            "FP8_PB_WO": "fp8-block",
            "NVFP4": "nvfp4", "W4A16_NVFP4": "nvfp4", "MXFP4": "fp4", "W4A8_MXFP4_FP8": "fp4", "INT8_SQ": "int8",
            "W8A8_SQ_PER_CHANNEL": "int8"}


def _modelopt(q: dict[str, Any]) -> str | None:
    algo = str(q.get("quant_algo") or "").upper()
    if algo in ("W4A16_AWQ", "W4A8_AWQ", "INT4_AWQ"):
        return _known(_grouped(4, _int(q.get("group_size"), 128), False))
    return MODELOPT.get(algo)


def _bitsandbytes(q: dict[str, Any]) -> str | None:
    if q.get("load_in_4bit"):
        return "nf4-dq" if q.get("bnb_4bit_use_double_quant") else "nf4"
    if q.get("load_in_8bit"):
        return "int8-ch"
    return None


READERS = {"awq": _awq, "gptq": _gptq, "fp8": _fp8, "mxfp4": lambda q: "fp4", "compressed-tensors": _compressed_tensors,
           "modelopt": _modelopt, "bitsandbytes": _bitsandbytes}


def sidecar_quantization(name: str, data: Any) -> dict[str, Any] | None:
    """A `quantization_config` from a file beside config.json: hf_quant_config.json's `quantization` table (ModelOpt)
    as method "modelopt"; quantize_config.json as AutoAWQ's (it has `w_bit` or `zero_point`) or else AutoGPTQ's."""
    if not isinstance(data, dict):
        return None
    if name == "hf_quant_config.json":
        inner = data.get("quantization")
        return {"quant_method": "modelopt", **inner} if isinstance(inner, dict) else None
    method = data.get("quant_method") or ("awq" if "w_bit" in data or "zero_point" in data else "gptq")
    return {**data, "quant_method": str(method).lower()}


def checkpoint_format(config: dict[str, Any]) -> CheckpointFormat:
    """The stored weight format of a checkpoint from its config.json (see the module doc); no
    `quantization_config`: its `torch_dtype` (bf16 unless float16)."""
    q = config.get("quantization_config")
    if not isinstance(q, dict) or not q:
        return CheckpointFormat(_torch_dtype(config))
    method = str(q.get("quant_method") or "").lower()
    reader = READERS.get(method)
    dtype = reader(q) if reader else None
    where = f"quant_method '{method or '(none)'}'"
    if method == "compressed-tensors" and q.get("format"):
        where += f", format '{q['format']}'"
    if dtype is not None:
        if attention_unconverted(q):
            unconverted = _torch_dtype(config)
            return CheckpointFormat(dtype, method, f"{where} → {dtype}, attention left {unconverted}",
                                    unconverted_dtype=unconverted)
        return CheckpointFormat(dtype, method, f"{where} → {dtype}")
    bits = next((b for b in (_int(q.get(k)) for k in ("bits", "w_bit", "nbits", "num_bits")) if b), None)
    stated = _known(_grouped(bits, _int(q.get("group_size", q.get("q_group_size"))), False)) if bits else None
    if stated:
        return CheckpointFormat(stated, method, f"{where} → {stated}", warning=(
            f"the checkpoint's quantisation ({where}) is not one kokuban knows; its weights are priced as {stated} "
            f"from the {bits} bits it states (scales included, zero points not); give the weights dtype to choose"))
    return CheckpointFormat(None, method, where, warning=(
        f"the checkpoint's quantisation ({where}) is not one kokuban knows, so its bytes per weight are unknown; "
        "give the weights dtype"))
