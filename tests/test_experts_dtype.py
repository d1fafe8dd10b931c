"""Routed experts stored apart from the other weights (`Deployment.experts_dtype`): gpt-oss's MXFP4 experts beside
bf16 attention read from its quantization_config, and an engine that runs fp8 attention beside 16-bit experts.
Expected values derived by hand from the configs, not from the code."""

from __future__ import annotations

import pytest

from kokuban.cli import main
from kokuban.core import roofline
from kokuban.core.bytes import weight_bytes_stored
from kokuban.errors import KokubanError
from kokuban.present.jsonout import read_result
from kokuban.specs.catalog import load_accelerator, load_model
from kokuban.specs.deployment import Deployment
from kokuban.specs.hardware import Efficiency
from kokuban.specs.quantization import checkpoint_format

# gpt-oss-120b (config.json): 36 layers, hidden 2,880, 64 query heads and 8 KV heads of 64, 128 experts of
# intermediate 2,880 (gate_up fused 2,880 → 5,760, down 2,880 → 2,880, with biases), vocabulary 201,088, untied.
LAYERS, D, VOCAB = 36, 2_880, 201_088
ATTENTION = 2 * D * 64 * 64 + 2 * D * 8 * 64 + (64 * 64 + 2 * 8 * 64 + D)  # q, o, k, v weights + their biases
ROUTER = D * 128 + 128
PER_LAYER_REST = ATTENTION + ROUTER + 64 + 2 * D  # + attention sinks (one per head) + two norms
REST = LAYERS * PER_LAYER_REST + D  # + the final norm
EXPERT = 3 * D * D + 2 * D + D  # gate_up and down weights + their biases
ROUTED = LAYERS * 128 * EXPERT
EMBED = 2 * VOCAB * D  # input embedding and LM head
MXFP4 = (4 + 8 / 32) / 8  # 4-bit values + one 8-bit E8M0 scale per 32: 0.53125 B


def test_gpt_oss_reads_mxfp4_experts_beside_bf16_attention():
    m = load_model("gpt-oss-120b")
    assert (m.native_dtype, m.native_experts_dtype) == ("bf16", "fp4")
    assert "attention left bf16" in m.quantization
    assert (m.params_routed, m.params_total) == (ROUTED, REST + ROUTED + EMBED)
    dep = Deployment.make(m, load_accelerator("h100-sxm"))
    assert (dep.weights_dtype, dep.expert_weights_dtype, dep.compute_dtype) == ("bf16", "fp4", "bf16")
    assert dep.expert_compute_dtype == "bf16"  # no fp4 unit on an H100: dequantised
    assert dep.dequantises_experts and not dep.dequantises_weights
    hand = REST * 2 + ROUTED * MXFP4 + EMBED * 2
    assert weight_bytes_stored(dep) == pytest.approx(hand, rel=1e-12)
    assert round(hand / 1e9, 2) == 65.19
    all_fp4 = Deployment.make(m, load_accelerator("h100-sxm"), weights_dtype="fp4")
    assert weight_bytes_stored(all_fp4) == pytest.approx((REST + ROUTED) * MXFP4 + EMBED * 2, rel=1e-12)
    assert round(((REST + ROUTED) * MXFP4 + EMBED * 2) / 1e9, 2) == 63.77
    b200 = Deployment.make(m, load_accelerator("b200"))
    assert (b200.compute_dtype, b200.expert_compute_dtype, b200.dequantises_experts) == ("bf16", "fp4", False)


def test_an_explicit_weights_dtype_covers_the_experts_unless_they_are_named():
    m, acc = load_model("gpt-oss-120b"), load_accelerator("h100-sxm")
    fp8 = Deployment.make(m, acc, weights_dtype="fp8")
    assert (fp8.weights_dtype, fp8.expert_weights_dtype, fp8.experts_dtype) == ("fp8", "fp8", "")
    both = Deployment.make(m, acc, weights_dtype="fp8", experts_dtype="fp4")
    assert (both.weights_dtype, both.expert_weights_dtype) == ("fp8", "fp4")
    assert "experts fp4" in both.describe()


def test_only_attention_left_out_splits_the_checkpoint():
    q = {"quant_method": "mxfp4", "modules_to_not_convert": ["model.layers.*.mlp.router", "lm_head"]}
    assert checkpoint_format({"quantization_config": q}).unconverted_dtype == ""
    q["modules_to_not_convert"].append("model.layers.*.self_attn")
    assert checkpoint_format({"quantization_config": q, "torch_dtype": "float16"}).unconverted_dtype == "fp16"
    ct = {"quant_method": "compressed-tensors", "ignore": ["lm_head", "re:.*self_attn.*"],
          "config_groups": {"group_0": {"weights": {"num_bits": 4, "type": "float", "strategy": "tensor_group",
                                                    "group_size": 16}}}}
    got = checkpoint_format({"quantization_config": ct})
    assert (got.dtype, got.unconverted_dtype) == ("nvfp4", "bf16")


def test_a_dense_model_refuses_an_experts_dtype():
    with pytest.raises(KokubanError) as err:
        Deployment.make(load_model("llama-3.1-8b"), load_accelerator("h100-sxm"), experts_dtype="fp8")
    assert err.value.field == "experts" and "dense" in str(err.value)


# Mixtral 8x7B: 32 layers, 8 experts of 3 × 4,096 × 14,336 weights, top 2.
MIXTRAL_EXPERT = 3 * 4_096 * 14_336


def mixtral(experts: str | None, gpus: int = 2) -> Deployment:
    return Deployment.make(load_model("mixtral-8x7b"), load_accelerator("h100-sxm"), gpus, weights_dtype="fp8",
                           kv_dtype="fp8", experts_dtype=experts, efficiency=Efficiency.scalar())


def test_sixteen_bit_experts_read_twice_the_routed_bytes_at_batch_one():
    fp8, fp16 = mixtral(None), mixtral("fp16")
    assert (fp16.expert_compute_dtype, fp16.compute_dtype) == ("fp16", "fp8")
    # batch 1 touches 2 experts in each of 32 layers; under TP 2 each GPU reads half; 1 byte more per weight
    extra = 32 * 2 * MIXTRAL_EXPERT * (2.0 - 1.0) / 2
    rate = fp8.accelerator.memory_bandwidth_bytes_per_s * fp8.efficiency.memory
    a, b = roofline.decode_step(fp8, 1, 1_000), roofline.decode_step(fp16, 1, 1_000)
    assert float(b.weights_s - a.weights_s) == pytest.approx(extra / rate, rel=1e-9)


def test_sixteen_bit_experts_multiply_at_the_sixteen_bit_peak():
    fp8, fp16 = mixtral(None), mixtral("fp16")
    acc, eff = fp8.accelerator, fp8.efficiency
    tokens = 8_192  # a prefill chunk: the expert FLOPs are 2 · 32 layers · top-2 · expert weights per token
    expert_flops = tokens * 2 * 32 * 2 * MIXTRAL_EXPERT
    extra = expert_flops / (acc.flops("fp16") * 2 * eff.compute) - expert_flops / (acc.flops("fp8") * 2 * eff.compute)
    a, b = roofline.prefill(fp8, 1, tokens), roofline.prefill(fp16, 1, tokens)
    assert float(b.linear_compute_s - a.linear_compute_s) == pytest.approx(extra, rel=1e-9)


def test_cli_and_http_take_experts(capsys):
    args = ["estimate", "mixtral-8x7b", "--gpu", "h100-sxm", "--gpus", "2", "--weights", "fp8", "--experts", "fp16"]
    assert main([*args, "--json"]) == 0
    prec = read_result(capsys.readouterr()[0])["precision"]
    assert (prec["weights"], prec["experts"], prec["experts_compute"], prec["compute"]) == ("fp8", "fp16", "fp16",
                                                                                            "fp8")
    assert main(args) == 0 and "experts fp16 (compute fp16)" in capsys.readouterr()[0]
    assert main(["estimate", "llama-3.1-8b", "--gpu", "h100-sxm", "--experts", "fp8"]) == 2
    err = capsys.readouterr()[1]
    assert "experts" in err and "dense" in err and "Traceback" not in err
    assert main(["estimate", "mixtral-8x7b", "--gpu", "h100-sxm", "--gpus", "2", "--experts", "fp7"]) == 2
    assert "experts" in capsys.readouterr()[1]
    pytest.importorskip("fastapi")
    pytest.importorskip("httpx")
    from fastapi.testclient import TestClient

    from kokuban.web.app import create_app

    client = TestClient(create_app())
    body = {"model": "mixtral-8x7b", "gpu": "h100-sxm", "gpus": 2, "weights": "fp8", "experts": "fp16"}
    assert client.post("/api/estimate", json=body).json()["precision"]["experts"] == "fp16"
    r = client.post("/api/estimate", json=body | {"experts": "fp7"})
    assert r.status_code == 422 and r.json()["error"]["field"] == "experts"


def test_a_measurement_file_names_the_experts_dtype(tmp_path, capsys):
    from kokuban.usecases.validation import read_measurements
    from kokuban.validation.accuracy import predict_row

    header = "model,gpu,gpus,layout,weights,experts,batch,prompt,output,metric,value,unit,source"
    path = tmp_path / "moe.csv"
    path.write_text(header + "\n"
                    + "mixtral-8x7b,h100-sxm,2,tp,fp8,fp16,1,128,128,tokens_per_s_per_user,80,tokens/s,lab\n"
                    + "mixtral-8x7b,h100-sxm,2,tp,fp8,,1,128,128,tokens_per_s_per_user,80,tokens/s,lab\n")
    apart, together = read_measurements(str(path))
    assert (apart.experts_dtype, together.experts_dtype) == ("fp16", "")
    assert predict_row(apart).predicted < predict_row(together).predicted  # twice the expert bytes to read
    path.write_text(header + "\nmixtral-8x7b,h100-sxm,2,tp,fp8,fp5,1,128,128,tokens_per_s_per_user,80,tokens/s,x\n")
    assert main(["accuracy", "--file", str(path)]) == 2
    assert "row 2: experts:" in capsys.readouterr().err


def test_the_model_catalog_names_the_experts_format(capsys):
    assert main(["models", "--json"]) == 0
    rows = {r["id"]: r for r in read_result(capsys.readouterr()[0], "models")}
    assert (rows["gpt-oss-120b"]["native_dtype"], rows["gpt-oss-120b"]["native_experts_dtype"]) == ("bf16", "fp4")
    assert rows["deepseek-v3"]["native_experts_dtype"] == rows["deepseek-v3"]["native_dtype"] == "fp8-block"
    assert main(["models"]) == 0
    assert "bf16, experts fp4" in capsys.readouterr()[0]
