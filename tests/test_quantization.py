"""Quantized formats: bytes per weight by hand from each format's layout, the dequantising kernels' slower weight
read, and a checkpoint's format read from its quantization_config (field layouts as public checkpoints write them)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kokuban.cli import main
from kokuban.errors import KokubanError
from kokuban.notes import KokubanNote, KokubanWarning
from kokuban.present.jsonout import read_result
from kokuban.specs.catalog import load_accelerator, load_model
from kokuban.specs.deployment import Deployment
from kokuban.specs.dtypes import bytes_per_element, bytes_per_weight, check_dtype, dequantises, quant_format
from kokuban.specs.hardware import Efficiency
from kokuban.specs.model import ModelSpec, parse_config
from kokuban.specs.quantization import checkpoint_format


# ---- bytes per weight ------------------------------------------------------------------------------
def test_bytes_per_weight_by_hand():
    bits = {
        "int4": 4 + 16 / 128,  # one fp16 scale per 128: 4.125 (the old figure, kept)
        "int4-g128": 4 + 16 / 128,
        "int4-g128-zp": 4 + (16 + 4) / 128,  # AutoAWQ/AutoGPTQ: fp16 scale + packed 4-bit zero: 4.15625
        "int4-g64": 4 + 16 / 64,  # 4.25
        "int4-g32": 4 + 16 / 32,  # 4.5
        "int4-g32-zp16": 4 + (16 + 16) / 32,  # 16-bit scale and zero per 32: the 5.0 bits
        "fp4": 4 + 8 / 32,  # MXFP4: E8M0 per 32: 4.25
        "mxfp4": 4 + 8 / 32,
        "nvfp4": 4 + 8 / 16,  # E4M3 per 16: 4.5
        "fp8": 8, "fp8-ch": 8, "int8": 8,
        "fp8-block": 8 + 32 / (128 * 128),  # fp32 per 128×128 block: 8.001953125
        "nf4": 4 + 32 / 64,  # bitsandbytes: fp32 absmax per 64: 4.5
        "nf4-dq": 4 + 8 / 64 + 32 / (64 * 256),  # QLoRA double quantisation: 4.127
        "q8_0": 8 + 16 / 32, "q4_0": 4 + 16 / 32,  # ggml blocks: 8.5 and 4.5
        "int4-g256-zp": 4 + (16 + 4) / 256,  # any group: 4.078125
        "int8-g128": 8 + 16 / 128, "int4-ch": 4, "int3-g64": 3 + 16 / 64,
    }
    for name, b in bits.items():
        assert bytes_per_element(name) == pytest.approx(b / 8, rel=1e-15), name
    assert (bits["int4-g32-zp16"], bits["nvfp4"], bits["fp4"], bits["q8_0"]) == (5.0, 4.5, 4.25, 8.5)
    assert bytes_per_weight(4, 128, 16) == 0.515625 and bytes_per_weight(8) == 1.0


def test_old_names_keep_their_bytes_and_names():
    old = {"fp32": 4.0, "bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "int8": 1.0, "int4": 0.515625, "fp4": 0.53125,
           "q8_0": 1.0625, "q4_0": 0.5625}
    assert {k: bytes_per_element(k) for k in old} == old
    assert [check_dtype(k) for k in ("int4", "FP4", "MXFP4", "w4a16", "e4m3")] == ["int4", "fp4", "fp4", "int4", "fp8"]
    assert check_dtype("NVFP4") == "nvfp4"  # was an alias of MXFP4 (4.25 bits): NVFP4 is 4.5


def test_unknown_format_names_field():
    for bad in ("int4-g0", "int9-g128", "fp3", "int4-g128-zp99"):
        with pytest.raises(KokubanError) as err:
            check_dtype(bad, "weights")
        assert err.value.field == "weights" and "int<bits>-g<group>" in str(err.value)


@settings(derandomize=True, max_examples=60, deadline=None)
@given(st.integers(2, 8), st.integers(1, 4096), st.sampled_from(["", "-zp", "-zp16"]))
def test_group_bytes_property(bits, group, zp):
    name = f"int{bits}-g{group}{zp}"
    b = bytes_per_element(name)
    assert b > bits / 8  # a scale always costs something
    assert bytes_per_element(f"int{bits}-g{group * 2}{zp}") < b  # a larger group costs less
    assert b == (bits + (16 + (16 if zp == "-zp16" else bits if zp else 0)) / group) / 8


# ---- dequantising kernels --------------------------------------------------------------------------
def test_which_formats_dequantise():
    a100, h100, b200 = (load_accelerator(g) for g in ("a100-80gb", "h100-sxm", "b200"))
    m = load_model("llama-3.1-8b")

    def deq(acc, w):
        return Deployment.make(m, acc, 1, weights_dtype=w).dequantises_weights

    assert deq(h100, "int4") and deq(b200, "int4-g128-zp") and deq(h100, "nf4")  # weight-only: always
    assert not deq(h100, "fp8") and deq(a100, "fp8")  # A100 has no fp8 unit: Marlin-style W8A16
    assert not deq(b200, "nvfp4") and deq(h100, "nvfp4") and deq(h100, "fp4")  # fp4 units only on Blackwell
    assert not deq(a100, "int8") and not deq(h100, "bf16") and not deq(h100, "q4_0")  # GGUF: llama.cpp's own fit
    assert dequantises("fp8", "bf16") and not dequantises("fp8", "fp8")


def test_dequantised_weight_read_by_hand():
    from kokuban.core.roofline import decode_step

    m, a100 = load_model("llama-2-7b"), load_accelerator("a100-80gb")
    eff = Efficiency(step_overhead_s=0.0)
    dep = Deployment.make(m, a100, 1, weights_dtype="int4", efficiency=eff)
    head_params = 32000 * 4096  # untied LM head, read at 16 bits
    body = (m.params_dense_read - head_params) * (4 + 16 / 128) / 8
    head = head_params * 2
    rate = a100.memory_bandwidth_bytes_per_s * 0.84
    # the body streams at 0.6 of the rate (dequant_memory), the 16-bit head at the full rate
    expected = (body / 0.6 + head) / rate
    assert float(decode_step(dep, 1, 100).weights_s) == pytest.approx(expected, rel=1e-12)
    # fp8 on an H100 (native): no slowdown; on an A100 the same 0.6
    h100 = load_accelerator("h100-sxm")
    fp8_body = (m.params_dense_read - head_params) * 1.0
    native = Deployment.make(m, h100, 1, weights_dtype="fp8", efficiency=eff)
    assert float(decode_step(native, 1, 100).weights_s) == pytest.approx(
        (fp8_body + head) / (h100.memory_bandwidth_bytes_per_s * 0.84), rel=1e-12)
    emulated = Deployment.make(m, a100, 1, weights_dtype="fp8", efficiency=eff)
    assert float(decode_step(emulated, 1, 100).weights_s) == pytest.approx((fp8_body / 0.6 + head) / rate, rel=1e-12)


def test_dequant_memory_is_a_checked_fraction():
    assert Efficiency().dequant_memory == 0.6 and Efficiency.textbook().dequant_memory == 0.6
    with pytest.raises(KokubanError) as err:
        Efficiency(dequant_memory=1.5)
    assert err.value.field == "dequant_memory"


# ---- a checkpoint's quantization_config ----------------------------------------------------------------
#: A small Llama: 2 layers, d 256, 4 heads (MHA, head dim 64), MLP 512, vocab 1024, untied.
SMALL = {"model_type": "llama", "hidden_size": 256, "num_hidden_layers": 2, "num_attention_heads": 4,
         "num_key_value_heads": 4, "intermediate_size": 512, "vocab_size": 1024, "max_position_embeddings": 512,
         "tie_word_embeddings": False, "torch_dtype": "bfloat16"}

#: Qwen/Qwen2.5-7B-Instruct-AWQ config.json
AWQ = {"bits": 4, "group_size": 128, "modules_to_not_convert": None, "quant_method": "awq", "version": "gemm",
       "zero_point": True}
#: Qwen/Qwen2.5-7B-Instruct-GPTQ-Int4 config.json (trimmed to the keys that matter and a few others)
GPTQ = {"bits": 4, "damp_percent": 0.01, "desc_act": False, "group_size": 128, "quant_method": "gptq", "sym": True,
        "true_sequential": True, "use_exllama": True}
#: RedHatAI/Meta-Llama-3.1-8B-Instruct-quantized.w4a16 (llm-compressor, compressed-tensors)
CT_W4A16 = {"config_groups": {"group_0": {"input_activations": None, "output_activations": None, "targets": ["Linear"],
            "weights": {"actorder": None, "block_structure": None, "dynamic": False, "group_size": 128, "num_bits": 4,
                        "observer": "minmax", "observer_kwargs": {}, "strategy": "group", "symmetric": True,
                        "type": "int"}}},
            "format": "pack-quantized", "ignore": ["lm_head"], "kv_cache_scheme": None,
            "quant_method": "compressed-tensors", "quantization_status": "compressed"}
#: RedHatAI/Meta-Llama-3.1-8B-Instruct-FP8-dynamic
CT_FP8 = {"config_groups": {"group_0": {"input_activations": {"dynamic": True, "num_bits": 8, "strategy": "token",
                                                              "symmetric": True, "type": "float"},
                                        "output_activations": None, "targets": ["Linear"],
                                        "weights": {"dynamic": False, "group_size": None, "num_bits": 8,
                                                    "observer": "minmax", "strategy": "channel", "symmetric": True,
                                                    "type": "float"}}},
          "format": "float-quantized", "ignore": ["lm_head"], "quant_method": "compressed-tensors",
          "quantization_status": "compressed"}
#: RedHatAI/Meta-Llama-3.1-8B-Instruct-quantized.w8a8 (SmoothQuant + GPTQ, int8 W8A8)
CT_W8A8 = {"config_groups": {"group_0": {"input_activations": {"dynamic": True, "num_bits": 8, "strategy": "token",
                                                               "symmetric": True, "type": "int"},
                                         "targets": ["Linear"],
                                         "weights": {"num_bits": 8, "strategy": "channel", "symmetric": True,
                                                     "type": "int"}}},
           "format": "int-quantized", "quant_method": "compressed-tensors"}
#: RedHatAI/…-NVFP4 (compressed-tensors `nvfp4-pack-quantized`)
CT_NVFP4 = {"config_groups": {"group_0": {"input_activations": {"dynamic": "local", "group_size": 16, "num_bits": 4,
                                                                "strategy": "tensor_group", "type": "float"},
                                          "targets": ["Linear"],
                                          "weights": {"group_size": 16, "num_bits": 4, "strategy": "tensor_group",
                                                      "symmetric": True, "type": "float"}}},
            "format": "nvfp4-pack-quantized", "quant_method": "compressed-tensors"}
#: nvidia/Llama-3.3-70B-Instruct-FP4 (ModelOpt) config.json
MODELOPT_NVFP4 = {"quant_method": "modelopt", "quant_algo": "NVFP4", "kv_cache_quant_algo": "FP8", "group_size": 16,
                  "ignore": ["lm_head"], "producer": {"name": "modelopt", "version": "0.29.0"}}
#: unsloth/…-bnb-4bit
BNB = {"_load_in_4bit": True, "_load_in_8bit": False, "bnb_4bit_compute_dtype": "bfloat16",
       "bnb_4bit_quant_storage": "uint8", "bnb_4bit_quant_type": "nf4", "bnb_4bit_use_double_quant": True,
       "llm_int8_threshold": 6.0, "load_in_4bit": True, "load_in_8bit": False, "quant_method": "bitsandbytes"}
#: deepseek-ai/DeepSeek-V3
FP8_BLOCK = {"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8", "weight_block_size": [128, 128]}


@pytest.mark.parametrize(("quant", "dtype", "bits"), [
    (AWQ, "int4-g128-zp", 4 + 20 / 128),
    (GPTQ, "int4-g128-zp", 4 + 20 / 128),  # AutoGPTQ stores qzeros even when sym
    (CT_W4A16, "int4-g128", 4 + 16 / 128),  # symmetric: weight_scale only
    (CT_FP8, "fp8-ch", 8),
    (CT_W8A8, "int8", 8),
    (CT_NVFP4, "nvfp4", 4 + 8 / 16),
    (MODELOPT_NVFP4, "nvfp4", 4 + 8 / 16),
    (BNB, "nf4-dq", 4 + 8 / 64 + 32 / (64 * 256)),
    (FP8_BLOCK, "fp8-block", 8 + 32 / 16384),
    ({"quant_method": "mxfp4", "modules_to_not_convert": ["lm_head"]}, "fp4", 4 + 8 / 32),
    ({**AWQ, "group_size": 64, "zero_point": False}, "int4-g64", 4 + 16 / 64),
    ({**GPTQ, "group_size": -1}, "int4-ch-zp", 4 + 4 / 1e9),  # per channel: the scale's share is ignored
])
def test_checkpoint_formats(quant, dtype, bits):
    spec = parse_config(SMALL | {"quantization_config": quant}, name="small")
    assert spec.native_dtype == dtype and not spec.quantization_warning
    assert bytes_per_element(dtype) == pytest.approx(bits / 8, rel=1e-8)
    assert dtype in spec.quantization


def test_checkpoint_weight_bytes_by_hand():
    from kokuban.core.bytes import weight_bytes_stored

    spec = parse_config(SMALL | {"quantization_config": AWQ}, name="small")
    dep = Deployment.make(spec, load_accelerator("h100-sxm"), 1)
    # per layer: q, k, v, o 4·256·256 = 262,144 + MLP 3·256·512 = 393,216 + 2 norms 512 = 655,872; × 2 layers
    # + final norm 256 = 1,312,000 quantized params at 4.15625 bits; embedding and LM head 2·1024·256 at 2 bytes
    expected = 1_312_000 * 4.15625 / 8 + 2 * 1024 * 256 * 2  # 681,625 + 1,048,576 = 1,730,201 B
    assert weight_bytes_stored(dep) == pytest.approx(expected, rel=1e-12) == 1_730_201
    assert dep.weights_dtype == "int4-g128-zp" and dep.compute_dtype == "bf16"


def test_unknown_method_with_bits_is_priced_with_a_warning():
    quant = {"quant_method": "auto-round", "bits": 4, "group_size": 128, "sym": True}
    with pytest.warns(KokubanWarning, match="auto-round.*int4-g128"):
        spec = parse_config(SMALL | {"quantization_config": quant}, name="small")
    assert spec.native_dtype == "int4-g128" and spec.quantization_warning in spec.notes


def test_unknown_method_without_bits_needs_weights():
    quant = {"quant_method": "hqq", "quant_config": {"weight_quant_params": {"nbits": 4, "group_size": 64}}}
    with pytest.warns(KokubanWarning, match="hqq"):
        spec = parse_config(SMALL | {"quantization_config": quant}, name="small")
    assert spec.native_dtype == ""  # never bf16
    with pytest.raises(KokubanError) as err:
        Deployment.make(spec, load_accelerator("h100-sxm"), 1)
    assert err.value.field == "weights" and "hqq" in str(err.value)
    assert Deployment.make(spec, load_accelerator("h100-sxm"), 1, weights_dtype="int4-g64").weights_dtype == "int4-g64"
    assert checkpoint_format({"quantization_config": quant}).dtype is None


def test_unquantized_checkpoint_reads_its_torch_dtype():
    assert checkpoint_format({"torch_dtype": "float16"}).dtype == "fp16"
    assert checkpoint_format({}).dtype == "bf16" and checkpoint_format({"quantization_config": {}}).dtype == "bf16"


def test_local_folder_sidecar_files(tmp_path):
    awq_dir, mo_dir = tmp_path / "awq-model", tmp_path / "fp4-model"
    for d in (awq_dir, mo_dir):
        d.mkdir()
        (d / "config.json").write_text(json.dumps(SMALL))
    # an AutoAWQ quantize_config.json (older checkpoints: no quant_method, w_bit/q_group_size)
    (awq_dir / "quantize_config.json").write_text(json.dumps(
        {"zero_point": True, "q_group_size": 128, "w_bit": 4, "version": "GEMM"}))
    # ModelOpt's hf_quant_config.json (nvidia/…-FP4)
    (mo_dir / "hf_quant_config.json").write_text(json.dumps(
        {"producer": {"name": "modelopt", "version": "0.29.0"},
         "quantization": {"quant_algo": "NVFP4", "kv_cache_quant_algo": "FP8", "group_size": 16,
                          "exclude_modules": ["lm_head"]}}))
    assert load_model(str(awq_dir)).native_dtype == "int4-g128-zp"
    assert load_model(str(mo_dir)).native_dtype == "nvfp4"
    assert ModelSpec.from_file(mo_dir / "config.json").quantization == "quant_method 'modelopt' → nvfp4"


def test_cli_warns_and_refuses_unknown_format(tmp_path, capsys):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(SMALL | {"quantization_config": {"quant_method": "hqq"}}))
    code = main(["estimate", str(path), "--gpu", "h100-sxm", "--batch", "1", "--context", "128", "--json"])
    out, err = capsys.readouterr()
    # refused: one error line that carries the warning (notes are printed only when a command succeeds)
    assert code == 2 and err.count("\n") == 1 and err.startswith("error: --weights: model ")
    assert "the checkpoint's quantisation (quant_method 'hqq') is not one kokuban knows" in err
    assert read_result(out)["error"]["field"] == "weights"
    code = main(["estimate", str(path), "--gpu", "h100-sxm", "--weights", "int4-g64", "--batch", "1",
                 "--context", "128", "--json"])
    out, err = capsys.readouterr()
    assert code == 0 and read_result(out)["precision"]["weights"] == "int4-g64"
    assert "warning: the checkpoint's quantisation (quant_method 'hqq') is not one kokuban knows" in err
    assert read_result(out)["model"]["notes"][-1].startswith("the checkpoint's quantisation (quant_method 'hqq')")


def test_explicit_weights_override_a_quantized_checkpoint_with_a_note():
    from kokuban.usecases.estimate import EstimateRequest, run_estimate

    with pytest.warns(KokubanNote, match="weights priced as fp8, not the checkpoint's stored fp8-block"):
        result = run_estimate(EstimateRequest(model="deepseek-v3", gpu="h200", gpus=8, weights="fp8", batch=1,
                                              context=1024))
    assert result.as_dict()["precision"]["weights"] == "fp8"


def test_quant_format_fields():
    f = quant_format("int4-g128-zp")
    assert (f.value_bits, f.group_size, f.scale_bits, f.zero_bits, f.compute, f.weight_only) == (4, 128, 16, 4, "bf16",
                                                                                                 True)
    assert quant_format("nvfp4").compute == "fp4" and not quant_format("nvfp4").weight_only


def test_malformed_quantization_config_is_a_one_line_error():
    for bad, field in (({"quant_method": "gptq", "bits": "4"}, "bits"), ({"quant_method": "awq", "group_size": 0.5},
                                                                         "group_size"),
                       ({"quant_method": "fp8", "weight_block_size": [128, 0]}, "weight_block_size")):
        with pytest.raises(KokubanError) as err:
            parse_config(SMALL | {"quantization_config": bad}, name="small", source="bad.json")
        assert f"field 'quantization_config.{field}" in str(err.value) and "\n" not in str(err.value)
