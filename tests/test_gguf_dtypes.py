"""llama.cpp's GGUF types: bytes per weight derived by hand from ggml's block layouts; nothing else changes."""

from __future__ import annotations

import pytest

from kokuban.errors import KokubanError
from kokuban.specs.catalog import load_accelerator, load_model
from kokuban.specs.deployment import Deployment
from kokuban.specs.dtypes import (
    BYTES_PER_ELEMENT,
    bytes_per_element,
    check_dtype,
    embedding_bytes_per_element,
    q4_k_m_body_bytes,
    use_more_bits,
)


def test_block_formats_by_hand():
    # Q8_0: a block of 32 int8 weights + one fp16 scale = 32 + 2 = 34 bytes → 34/32 B = 8.5 bits
    assert bytes_per_element("q8_0") == 34 / 32 == 1.0625
    # Q4_0: 32 nibbles = 16 bytes + one fp16 scale = 18 bytes → 18/32 B = 4.5 bits
    assert bytes_per_element("q4_0") == 18 / 32 == 0.5625
    # F16 is fp16: 2 bytes
    assert check_dtype("F16") == "fp16" and bytes_per_element("f16") == 2.0
    assert check_dtype("Q4_K_M") == "q4_k_m" and check_dtype("Q8_0") == "q8_0"


def test_q4_k_m_mix_by_hand():
    # Llama-2-7B: 32 layers, d = 4096, KV width 4096 (MHA), MLP 11008.
    # use_more_bits(i, 32): i < 4 (0..3), i ≥ 28 (28..31), (i − 4) mod 3 = 2 (6, 9, …, 27: 8 layers) → 16 layers
    assert sum(use_more_bits(i, 32) for i in range(32)) == 16
    per_layer = 2 * 4096 * 4096 + 2 * 4096 * 4096 + 3 * 4096 * 11008  # q, o + k, v + gate, up, down = 202,375,168
    assert per_layer == 202_375_168
    mixed = 4096 * 4096 + 4096 * 11008  # attn_v + ffn_down = 61,865,984
    # Q4_K block: 2 fp16 (4 B) + 12 B scales + 128 B nibbles = 144 B per 256; Q6_K: 128 + 64 + 16 + 2 = 210 B per 256
    total = 32 * per_layer * 144 / 256 + 16 * mixed * (210 - 144) / 256  # = 3,643,004,928 + 255,197,184 B
    expected = total / (32 * per_layer)  # 3,898,202,112 B ÷ 6,476,005,376 weights = 0.601945... B
    assert q4_k_m_body_bytes(32, 4096, 4096, 11008) == pytest.approx(expected, rel=1e-12)
    assert expected == pytest.approx(0.6019, abs=1e-4)  # 4.8155 bits per weight
    assert bytes_per_element("q4_k_m") == pytest.approx(expected, rel=1e-12)
    # 8 layers: n/8 = 1 → layers 0, 7 and (i − 1) mod 3 = 2 → 3, 6
    assert [i for i in range(8) if use_more_bits(i, 8)] == [0, 3, 6, 7]


def test_other_dtypes_unchanged():
    old = {"fp32": 4.0, "bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "int8": 1.0, "int4": 0.515625, "fp4": 0.53125}
    assert {k: BYTES_PER_ELEMENT[k] for k in old} == old
    for dtype in old:
        assert embedding_bytes_per_element(dtype) == (4.0 if dtype == "fp32" else 2.0)


def test_lm_head_type_by_hand():
    # llama-quantize: output.weight → Q6_K unless the file is Q8_0 (then Q8_0): 210/256 B and 34/32 B
    assert embedding_bytes_per_element("q4_0") == embedding_bytes_per_element("q4_k_m") == 210 / 256
    assert embedding_bytes_per_element("q8_0") == 34 / 32


def test_unknown_dtype_names_field():
    with pytest.raises(KokubanError) as err:
        check_dtype("q3_k_s", "weights")
    assert err.value.field == "weights" and "q4_k_m" in str(err.value)


def test_deployment_weight_bytes_q4_0_by_hand():
    from kokuban.core.bytes import weight_bytes_read

    m = load_model("llama-2-7b")
    dep = Deployment.make(m, load_accelerator("h100-sxm"), 1, weights_dtype="q4_0")
    # read per pass = (always-read − LM head)·18/32 + LM head·210/256; LM head = 32000·4096 = 131,072,000
    head = 32000 * 4096
    expected = (m.params_dense_read - head) * 18 / 32 + head * 210 / 256
    assert float(weight_bytes_read(dep, 1)) == pytest.approx(expected, rel=1e-12)
    assert dep.compute_dtype == "int8"  # ggml multiplies against activations quantised to 8 bits
