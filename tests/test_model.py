"""Model specs from config.json: parameter counts against published figures, KV bytes by hand."""

from __future__ import annotations

import json

import pytest

from kokuban.errors import KokubanError
from kokuban.specs.catalog import DATA, load_model, model_catalog
from kokuban.specs.model import ModelSpec, parse_config

# (id, published total, published active, what the published figure is and where it comes from)
# "active" is compared with ModelSpec.params_active (all parameters except unused routed experts) unless the
# source counts without the input embedding, then with params_matmul (marked "matmul").
PUBLISHED = [
    ("llama-2-7b", 6_738_415_616, None, "HF safetensors parameter count, meta-llama/Llama-2-7b-hf"),
    ("llama-3.1-8b", 8_030_261_248, None, "HF safetensors parameter count, meta-llama/Llama-3.1-8B"),
    ("llama-3.1-70b", 70_553_706_496, None, "HF safetensors parameter count, meta-llama/Llama-3.1-70B"),
    ("llama-3.1-405b", 405.85e9, None, "HF safetensors parameter count (405,853,388,800)"),
    ("mistral-7b-v0.3", 7_248_023_552, None, "HF safetensors parameter count, mistralai/Mistral-7B-v0.3"),
    ("mixtral-8x7b", 46.7e9, 12.9e9, "Mistral AI, 'Mixtral of experts' blog: 46.7B total, 12.9B used per token"),
    ("mixtral-8x22b", 141e9, 39e9, "Mistral AI, 'Cheaper, Better, Faster, Stronger' blog: 39B active of 141B"),
    ("qwen2.5-7b", 7.61e9, None, "Qwen2.5-7B model card: Number of Parameters 7.61B"),
    ("qwen2.5-72b", 72.7e9, None, "Qwen2.5-72B model card: Number of Parameters 72.7B"),
    ("qwen3-8b", 8.2e9, None, "Qwen3-8B model card: Number of Parameters 8.2B"),
    ("qwen3-32b", 32.8e9, None, "Qwen3-32B model card: Number of Parameters 32.8B"),
    ("qwen3-30b-a3b", 30.5e9, 3.3e9, "Qwen3-30B-A3B model card: 30.5B in total and 3.3B activated"),
    ("qwen3-235b-a22b", 235e9, 22e9, "Qwen3-235B-A22B model card: 235B in total and 22B activated"),
    ("deepseek-v2", 236e9, 21e9, "DeepSeek-V2 paper abstract: 236B total parameters, 21B activated per token"),
    ("deepseek-v3", 671e9, 37e9, "DeepSeek-V3 technical report: 671B total, 37B activated (MTP module excluded)"),
    ("gpt-oss-120b", 116.83e9, ("matmul", 5.13e9), "gpt-oss model card, Table 1: 116.83B total, 5.13B active"),
    ("gpt-oss-20b", 20.91e9, ("matmul", 3.61e9), "gpt-oss model card, Table 1: 20.91B total, 3.61B active"),
    ("phi-3-mini", 3.8e9, None, "Phi-3 technical report: phi-3-mini, a 3.8 billion parameter language model"),
    ("phi-4", 14.7e9, None, "HF safetensors parameter count for microsoft/phi-4: 14.7B"),
    # Gemma 3 technical report, Table 1: embedding + non-embedding parameters (the vision encoder's 417M that the
    # '4B/12B/27B' names include is not part of the language model)
    ("gemma-3-1b", (302 + 698) * 1e6, None, "Gemma 3 report Table 1: 302M embedding + 698M non-embedding"),
    ("gemma-3-4b", (675 + 3209) * 1e6, None, "Gemma 3 report Table 1: 675M embedding + 3,209M non-embedding"),
    ("gemma-3-12b", (1012 + 10759) * 1e6, None, "Gemma 3 report Table 1: 1,012M + 10,759M"),
    ("gemma-3-27b", (1416 + 25600) * 1e6, None, "Gemma 3 report Table 1: 1,416M + 25,600M"),
]


@pytest.mark.parametrize("model_id,total,active,source", PUBLISHED, ids=[p[0] for p in PUBLISHED])
def test_parameter_counts_within_2_percent_of_published(model_id, total, active, source):
    m = load_model(model_id)
    assert m.params_total == pytest.approx(total, rel=0.02), source
    if active is None:  # dense: the card's figure is the total
        assert m.params_active == m.params_total
    elif isinstance(active, tuple):
        assert m.params_matmul == pytest.approx(active[1], rel=0.02), source
    else:
        assert m.params_active == pytest.approx(active, rel=0.02), source


def test_llama_31_8b_counts_by_hand():
    # d=4096, 32 layers, 32 heads, 8 KV heads, head 128, ffn 14336, vocab 128256, untied
    d, layers, kv, ffn, vocab = 4096, 32, 8 * 128, 14336, 128256
    attn = d * d + 2 * d * kv + d * d  # q, k, v, o
    mlp = 3 * d * ffn
    norms = 2 * d
    total = layers * (attn + mlp + norms) + d + 2 * vocab * d  # + final norm + embedding + LM head
    m = load_model("llama-3.1-8b")
    assert m.params_total == total == 8_030_261_248
    assert m.flops_per_token == 2 * (total - vocab * d)  # the embedding lookup is not a matmul
    assert m.kv_elements_per_token == layers * 2 * kv  # K and V, 8 heads × 128, every layer


def test_deepseek_v3_kv_is_mla_latent_not_gqa():
    m = load_model("deepseek-v3")
    # MLA caches the 512-dim compressed latent + the 64-dim decoupled RoPE key, per layer, 61 layers
    assert m.kv_elements_per_token == 61 * (512 + 64)
    # a GQA reading of the same config (128 heads × (128+64) K + 128 V per layer) would be ~70× larger
    gqa_guess = 61 * 128 * ((128 + 64) + 128)
    assert gqa_guess / m.kv_elements_per_token > 50
    assert not m.kv_shardable


def test_deepseek_v3_moe_structure():
    m = load_model("deepseek-v3")
    assert (m.num_experts, m.top_k, m.moe_layers) == (256, 8, 61 - 3)  # first 3 layers dense
    assert m.params_per_expert == 3 * 7168 * 2048
    assert m.native_dtype == "fp8-block"  # quantization_config weight_block_size [128, 128]


def test_sliding_windows_gpt_oss_and_gemma3():
    oss = load_model("gpt-oss-120b")
    assert sum(w == 128 for w in oss.layer_windows) == 18 and sum(w is None for w in oss.layer_windows) == 18
    per_layer = 2 * 8 * 64  # K and V, 8 KV heads × 64
    # at 100k tokens: 18 global layers keep 100k, 18 local layers keep 128
    assert float(oss.kv_elements(100_000)) == per_layer * (18 * 100_000 + 18 * 128)
    g = load_model("gemma-3-27b")
    # 5 local : 1 global over 62 layers → layers 6, 12, …, 60 are global: 10 of them
    assert sum(w is None for w in g.layer_windows) == 10
    assert float(g.kv_elements(500)) == g.kv_elements_per_token * 500  # below the 1024 window: every layer keeps all


def test_gemma3_multimodal_config_uses_text_defaults():
    m = load_model("gemma-3-4b")
    # text_config omits heads/head_dim/vocab: transformers' Gemma3TextConfig defaults 8 heads, 4 KV, 256, 262208
    assert (m.num_heads, m.num_kv_heads, m.vocab_size) == (8, 4, 262208)
    assert m.kv_elements_per_token_per_layer == 2 * 4 * 256


def test_missing_field_is_named():
    cfg = json.loads((DATA / "models" / "llama-3.1-8b.json").read_text())
    del cfg["num_hidden_layers"]
    with pytest.raises(KokubanError, match="missing the field 'num_hidden_layers'"):
        parse_config(cfg, name="x")


def test_unsupported_model_type():
    with pytest.raises(KokubanError, match="model_type 'bert'.*supported"):
        parse_config({"model_type": "bert"}, name="x")


def test_unreadable_config(tmp_path):
    bad = tmp_path / "config.json"
    bad.write_text("{not json")
    with pytest.raises(KokubanError, match="not valid JSON"):
        ModelSpec.from_file(bad)


def test_coarse_model():
    m = ModelSpec.coarse("x", 70e9, 70e9, 327680)
    assert m.params_total == 70e9 and m.params_active == 70e9
    assert m.kv_elements_per_token * 2 == 327680
    moe = ModelSpec.coarse("y", 671e9, 37e9, 70272, num_experts=256, top_k=8)
    # routed = (total − active)·E/(E − k) = 634e9·256/248
    assert moe.params_routed == pytest.approx(634e9 * 256 / 248, rel=1e-6)
    assert moe.params_active == pytest.approx(37e9, rel=1e-6)
    with pytest.raises(KokubanError, match="cannot exceed"):
        ModelSpec.coarse("z", 1e9, 2e9, 100)


def test_catalog_has_twenty_models_with_sources():
    cat = model_catalog()
    assert len(cat) >= 20
    for model_id, entry in cat.items():
        assert entry["source"].startswith("https://huggingface.co/"), model_id
        assert entry["retrieved"], model_id
        load_model(model_id)  # every bundled config parses


def test_unknown_model_suggests():
    with pytest.raises(KokubanError, match="did you mean llama-3.1-70b"):
        load_model("lama-3.1-70b")


def test_kv_bytes_per_token_by_dtype_and_window():
    g = load_model("gpt-oss-120b")
    # 36 layers × 2·8·64 elements; fp8 = 1 byte each; beyond the 128-token windows only the 18 global layers grow
    assert g.kv_bytes_per_token("fp8") == 36 * 2 * 8 * 64
    assert g.kv_bytes_per_token("bf16", beyond_windows=True) == 18 * 2 * 8 * 64 * 2
