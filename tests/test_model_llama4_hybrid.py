"""Llama 4 (interleaved MoE, chunked local attention) and Qwen3-Next (Gated DeltaNet linear attention):
parameter counts against the published figures, KV and state bytes by hand, and the physics properties
(per-request bytes never shrink with context, are bounded when every layer is windowed, decode never
speeds up with context)."""

from __future__ import annotations

import copy
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kokuban.core import memory, roofline
from kokuban.errors import KokubanError
from kokuban.present.jsonout import read_result
from kokuban.sim import kvcache
from kokuban.specs.catalog import DATA, load_accelerator, load_model, model_catalog
from kokuban.specs.deployment import Deployment
from kokuban.specs.model import parse_config

SCOUT, MAVERICK, NEXT = "llama-4-scout", "llama-4-maverick", "qwen3-next-80b-a3b"


def dep(model: str, gpu: str = "h200", n: int = 1, **kw) -> Deployment:
    return Deployment.make(load_model(model), load_accelerator(gpu), n, **kw)


def config(model_id: str) -> dict:
    return json.loads((DATA / "models" / f"{model_id}.json").read_text())


# ---- parameter counts ------------------------------------------------------------------------------

# Llama 4 shapes (text_config of both): d = 5120, 48 layers, 40 heads, 8 KV heads, head 128, vocab 202048,
# expert / shared-expert width 8192, dense MLP width 16384 (Maverick's non-MoE layers), untied embeddings.
D, LAYERS, VOCAB, F, F_MLP = 5120, 48, 202048, 8192, 16384
ATTN = D * 40 * 128 + 2 * D * 8 * 128 + 40 * 128 * D  # q, k, v, o; the L2 qk-norm has no weights
NORMS = 2 * D
EXPERT = 3 * D * F  # gate, up, down
EMBED = VOCAB * D  # input embedding; the LM head is another VOCAB × D


def test_scout_counts_by_hand_and_published():
    # every layer MoE: 16 experts + 1 shared expert + router d·16
    total = LAYERS * (ATTN + NORMS + 16 * EXPERT + EXPERT + D * 16) + D + 2 * EMBED
    active = total - LAYERS * (16 - 1) * EXPERT  # top-1 of 16
    m = load_model(SCOUT)
    assert m.params_total == total == 107_769_861_120
    assert m.params_active == active == 17_172_894_720
    # Meta's model card: 109B total, 17B active. The 109B is the whole multimodal checkpoint: kokuban counts the
    # language model only (the 34-layer, 1408-wide vision encoder and its projector are left out), 1.1% under;
    # "17B" is a rounded label (+1.0%). Tolerance 2%, as for every catalog model.
    published = model_catalog()[SCOUT]
    assert m.params_total == pytest.approx(published["published_params_total"], rel=0.02)
    assert m.params_active == pytest.approx(published["published_params_active"], rel=0.02)
    assert published["published_params_total"] == 109e9 and published["published_params_active"] == 17e9


def test_maverick_interleaves_moe_and_dense_layers():
    # interleave_moe_layer_step 2: MoE on layers 1, 3, …, 47 (24 layers of 128 experts + shared + router),
    # a dense SwiGLU of 16384 on layers 0, 2, …, 46
    moe_layer = 128 * EXPERT + EXPERT + D * 128
    dense_layer = 3 * D * F_MLP
    total = LAYERS * (ATTN + NORMS) + 24 * moe_layer + 24 * dense_layer + D + 2 * EMBED
    active = total - 24 * (128 - 1) * EXPERT
    m = load_model(MAVERICK)
    assert (m.moe_layers, m.num_experts, m.top_k) == (24, 128, 1)
    assert m.params_total == total == 400_711_848_960
    assert m.params_active == active == 17_184_691_200
    # Meta's model card: 400B total (+0.18%), 17B active (+1.1%); vision encoder not counted; tolerance 2%
    assert m.params_total == pytest.approx(400e9, rel=0.02)
    assert m.params_active == pytest.approx(17e9, rel=0.02)
    assert m.mlp_width == F_MLP  # dense 16384 = top-1 expert 8192 + shared expert 8192


def test_qwen3_next_counts_by_hand_and_published():
    d, vocab = 2048, 151936
    # gated full attention (12 layers): q_proj d → 2·16·256 (query and gate), k, v d → 2·256, o 16·256 → d, qk-norms
    full = d * 2 * 16 * 256 + 2 * d * 2 * 256 + 16 * 256 * d + 2 * 256
    # Gated DeltaNet (36 layers): K = 16·128 = 2048, V = 32·128 = 4096, kernel 4
    key, value = 2048, 4096
    gdn = (d * (2 * key + 2 * value)  # in_proj_qkvz
           + d * 2 * 32  # in_proj_ba
           + (2 * key + value) * 4  # depthwise conv1d
           + 2 * 32 + 128  # dt_bias, A_log, gated RMSNorm over a head
           + value * d)  # out_proj
    expert = 3 * d * 512
    moe = 512 * expert + (expert + d) + d * 512  # routed, shared expert + its gate, router
    total = 12 * full + 36 * gdn + 48 * (moe + 2 * d) + d + 2 * vocab * d
    active = total - 48 * (512 - 10) * expert
    m = load_model(NEXT)
    assert m.params_total == total == 79_674_391_296
    assert m.params_active == active == 3_874_929_408
    # Qwen's card: "80B in total and 3B activated". Total within 2% (−0.4%). "3B" is a one-figure label: the
    # active count without the two embedding matrices (3.25B) rounds to it; with them it is 3.87B.
    assert m.params_total == pytest.approx(80e9, rel=0.02)
    non_embedding_active = m.params_active - 2 * vocab * d
    assert non_embedding_active == 3_252_599_552
    assert round(non_embedding_active / 1e9) == 3


# ---- layers: chunked attention, linear attention --------------------------------------------------

def test_llama4_chunked_and_global_layers():
    m = load_model(SCOUT)
    # no_rope_layers is empty in the config: transformers' default NoPE interval 4 → layers 3, 7, …, 47 global
    assert [i for i, w in enumerate(m.layer_windows) if w is None] == list(range(3, 48, 4))
    assert sum(w == 8192 for w in m.layer_windows) == 36
    explicit = copy.deepcopy(config(SCOUT))
    explicit["text_config"]["no_rope_layers"] = [1, 1, 1, 0] * 12
    assert parse_config(explicit).layer_windows == m.layer_windows


def test_scout_chunked_kv_at_4k_and_64k_by_hand():
    # KV per layer-token: K and V × 8 KV heads × 128 × 2 B (bf16) = 4096 B
    per_layer_token = 2 * 8 * 128 * 2
    d = dep(SCOUT)
    # 4k: every layer still holds all 4096 tokens (the chunk is 8192): 48 × 4096 × 4096 B
    assert float(roofline.kv_bytes_per_request(d, 4096)) == 48 * 4096 * per_layer_token == 805_306_368
    # 64k: 36 chunked layers hold one chunk (8192), 12 global layers the whole 65,536
    at_64k = (36 * 8192 + 12 * 65536) * per_layer_token
    assert float(roofline.kv_bytes_per_request(d, 65536)) == at_64k == 4_429_185_024
    # a model holding every token on all 48 layers would need 12.9 GB: chunking saves 66%
    assert at_64k / (48 * 65536 * per_layer_token) == pytest.approx(0.34375)
    assert d.model.kv_bytes_per_token("bf16", beyond_windows=True) == 12 * per_layer_token


def test_qwen3_next_layers_and_state_by_hand():
    m = load_model(NEXT)
    assert [i for i, w in enumerate(m.layer_windows) if w is None] == list(range(3, 48, 4))
    assert m.state_layers == 36 and m.kv_elements_per_token == 12 * 2 * 2 * 256
    d = dep(NEXT)
    # per Gated DeltaNet layer: conv (2·2048 + 4096)·(4 − 1) = 24,576 elements, recurrent 32·128·128 = 524,288,
    # both 16-bit: 49,152 + 1,048,576 = 1,097,728 B; × 36 layers
    state = 36 * ((2 * 2048 + 4096) * 3 * 2 + 32 * 128 * 128 * 2)
    assert roofline.state_bytes_per_request(d) == state == 39_518_208
    # attention KV: 12 layers × K and V × 2 KV heads × 256 × 2 B = 24,576 B per token
    kv_4k = 12 * 4096 * 2 * 2 * 256 * 2
    assert float(roofline.kv_bytes_per_request(d, 4096)) == kv_4k + state == 140_181_504
    # the state does not grow: 64k minus 4k is attention KV only
    grow = float(roofline.kv_bytes_per_request(d, 65536) - roofline.kv_bytes_per_request(d, 4096))
    assert grow == 12 * (65536 - 4096) * 2 * 2 * 256 * 2
    # fp8 KV halves the attention KV, not the state (engines keep it in the model's 16-bit type)
    d8 = dep(NEXT, kv_dtype="fp8")
    assert float(roofline.kv_bytes_per_request(d8, 4096)) == kv_4k / 2 + state


def test_qwen3_next_state_in_fp32_when_the_config_says_so():
    cfg = config(NEXT) | {"mamba_ssm_dtype": "float32"}
    m = parse_config(cfg, name="next-fp32")
    d = Deployment.make(m, load_accelerator("h200"), 1)
    assert roofline.state_bytes_per_request(d) == 36 * ((2 * 2048 + 4096) * 3 * 2 + 32 * 128 * 128 * 4)


def test_state_shards_by_its_heads_under_tp():
    d = dep(NEXT, "h100-sxm", 8)
    # KV splits over min(8, 2 KV heads) = 2 GPUs; the state over min(8, 16 key heads) = 8
    assert (d.kv_shards, d.state_shards) == (2, 8)
    per_gpu = 12 * 4096 * 2 * 2 * 256 * 2 / 2 + 39_518_208 / 8
    assert float(memory.kv_bytes_per_request_per_gpu(d, 4096)) == per_gpu == 55_271_424
    plan = memory.plan(d, 10, 4096)
    assert plan.kv_bytes_per_gpu == pytest.approx(10 * per_gpu)


def test_linear_attention_flops_and_decode_traffic_by_hand():
    d = dep(NEXT)
    # per Gated DeltaNet layer and token: 7·n_v·d_k·d_v (decay 1, k-read 2, rank-1 update 2, q-read 2 per element)
    # + 2·conv_dim·kernel = 7·32·128·128 + 2·8192·4 = 3,670,016 + 65,536
    assert d.model.state_flops_per_token == 36 * (7 * 32 * 128 * 128 + 2 * 8192 * 4) == 134_479_872
    step = roofline.decode_step(d, 1, 4096)
    # attention FLOPs: 12 layers × 4096 keys × 2·16·(256 + 256) + the recurrences, O(1) in context
    assert float(step.attn_flops) == 12 * 4096 * 2 * 16 * 512 + 134_479_872
    # cache traffic: the attention KV read once + the state read and written back
    assert float(step.kv_bytes) == 12 * 4096 * 2048 + 2 * 39_518_208


def test_sim_reserves_the_state_per_sequence_slot_and_counts_blocks_in_attention_kv():
    d = dep(NEXT, "h200", 2)
    usable = d.accelerator.memory_bytes * d.memory_utilization
    act = float(memory.activation_bytes_per_gpu(d, memory.requests_per_gpu(d, 64)))
    free = usable - memory.weight_bytes_per_gpu(d) - act - 64 * 39_518_208 / 2  # 64 slots, state over 2 GPUs
    per_block = 16 * 12 * 2 * 2 * 256 * 2 / 2  # 16 tokens of attention KV, KV over min(2, 2 heads) GPUs
    assert kvcache.capacity_blocks(d, 16, max_num_seqs=64) == int(free // per_block)


# ---- properties -----------------------------------------------------------------------------------

NEW = [SCOUT, MAVERICK, NEXT, "nemotron-h-8b"]
PROPS = settings(max_examples=50, deadline=None, derandomize=True)


@PROPS
@given(st.sampled_from(NEW), st.sampled_from(["bf16", "fp8"]), st.integers(1, 2_000_000), st.integers(1, 2_000_000))
def test_per_request_bytes_never_shrink_with_context(model_id, kv, c1, c2):
    lo, hi = sorted((c1, c2))
    d = dep(model_id, kv_dtype=kv)
    assert float(roofline.kv_bytes_per_request(d, lo)) <= float(roofline.kv_bytes_per_request(d, hi))


def _all_windowed() -> Deployment:
    """Scout with no NoPE layer (no_rope_layers all 1): all 48 layers chunked, none global."""
    cfg = copy.deepcopy(config(SCOUT))
    cfg["text_config"]["no_rope_layers"] = [1] * 48
    return Deployment.make(parse_config(cfg, name="scout-all-chunked"), load_accelerator("h200"), 1)


@PROPS
@given(st.integers(1, 10_000_000))
def test_all_windowed_model_bytes_are_bounded_by_the_windows(context):
    d = _all_windowed()
    bound = 48 * 8192 * 2 * 8 * 128 * 2  # every layer holds at most one chunk
    assert float(roofline.kv_bytes_per_request(d, context)) <= bound
    assert float(roofline.kv_bytes_per_request(d, max(context, 8192))) == bound


@PROPS
@given(st.sampled_from(NEW), st.integers(1, 512), st.integers(1, 1_000_000), st.integers(1, 1_000_000))
def test_decode_step_time_never_falls_with_context(model_id, batch, c1, c2):
    lo, hi = sorted((c1, c2))
    d = dep(model_id, "h200", 8, weights_dtype="fp8")
    slow, fast = roofline.decode_step(d, batch, hi), roofline.decode_step(d, batch, lo)
    assert float(fast.step_time_s) <= float(slow.step_time_s)


# ---- refusals and the faces -----------------------------------------------------------------------

def test_maverick_without_the_dense_width_is_refused():
    cfg = copy.deepcopy(config(MAVERICK))
    del cfg["text_config"]["intermediate_size_mlp"]
    with pytest.raises(KokubanError, match="intermediate_size_mlp"):
        parse_config(cfg, name="x")


def test_no_rope_layers_of_the_wrong_length_is_refused():
    cfg = copy.deepcopy(config(SCOUT))
    cfg["text_config"]["no_rope_layers"] = [1, 1, 1, 0]
    with pytest.raises(KokubanError, match="no_rope_layers"):
        parse_config(cfg, name="x")


def test_qwen3_next_without_linear_heads_is_refused():
    cfg = {k: v for k, v in config(NEXT).items() if k != "linear_num_value_heads"}
    with pytest.raises(KokubanError, match="linear_num_value_heads"):
        parse_config(cfg, name="x")


def test_estimate_and_models_list_the_new_families(capsys):
    from kokuban.cli import main

    main(["estimate", SCOUT, "--gpu", "h100-sxm", "--gpus", "8", "--batch", "16", "--context", "65536", "--json"])
    out = read_result(capsys.readouterr().out)
    assert out["model"]["family"] == "llama4_text"
    assert out["memory"]["kv_bytes_per_request"] == 4_429_185_024
    assert out["model"]["state_bytes_per_request"] == 0
    main(["estimate", NEXT, "--gpu", "h200", "--gpus", "2", "--json"])
    assert read_result(capsys.readouterr().out)["model"]["state_bytes_per_request"] == 39_518_208
    main(["models", "--json"])
    ids = {row["id"] for row in read_result(capsys.readouterr().out, "models")}
    assert {SCOUT, MAVERICK, NEXT} <= ids



def test_chunked_prefill_pairs_by_hand():
    m = load_model(SCOUT)
    # 20,000 tokens: chunks of 8192 → 2 full chunks + 3,616; each full chunk has 8192·8193/2 causal pairs
    chunked = 2 * 8192 * 8193 / 2 + 3616 * 3617 / 2
    global_ = 20000 * 20001 / 2
    assert float(m.causal_attended_tokens(20000)) == 36 * chunked + 12 * global_
    # a 8192-token sliding window would see 8192·8193/2 + (20000 − 8192)·8192 pairs: chunking sees fewer
    assert chunked < 8192 * 8193 / 2 + (20000 - 8192) * 8192
    # within one chunk, chunked = causal
    assert float(m.causal_attended_tokens(5000)) == 48 * 5000 * 5001 / 2


# ---- Mamba-2 hybrid: Nemotron-H-8B --------------------------------------------------------------------

NEMO = "nemotron-h-8b"


def test_nemotron_h_counts_by_hand_and_published():
    d, vocab, f = 4096, 131072, 21504
    # Mamba-2 block: 128 heads of 64 → inner 8192; conv dim 8192 + 2·8 groups·128 = 10240; kernel 4
    inner, conv = 128 * 64, 8192 + 2 * 8 * 128
    mamba = (d * (inner + conv + 128)  # in_proj: z, x·B·C, dt (no bias)
             + conv * 4 + conv  # depthwise conv1d + its bias
             + 3 * 128  # dt_bias, A_log, D
             + inner  # gated RMSNorm
             + inner * d)  # out_proj
    attention = d * 32 * 128 + 2 * d * 8 * 128 + 32 * 128 * d  # q, k, v, o; no bias
    mlp = 2 * d * f  # up, down (squared ReLU, not gated)
    # 52 blocks, each one norm; pattern: 24 M, 4 *, 24 -
    total = 24 * mamba + 4 * attention + 24 * mlp + 52 * d + d + 2 * vocab * d
    m = load_model(NEMO)
    assert m.params_total == m.params_active == total == 8_100_852_736
    # NVIDIA: Nemotron-H-8B, "8B" (+1.3%); tolerance 2% as for every catalog model
    assert m.params_total == pytest.approx(8e9, rel=0.02)


def test_nemotron_h_kv_only_on_attention_layers_and_mamba_state_by_hand():
    d = dep(NEMO, "h100-sxm")
    assert d.model.kv_elements_per_token == 4 * 2 * 8 * 128  # 4 attention layers × K, V × 8 KV heads × 128
    # per Mamba-2 layer: conv 10240·(4 − 1) = 30,720 + recurrent 128·64·128 = 1,048,576 elements, 16-bit
    state = 24 * (10240 * 3 * 2 + 128 * 64 * 128 * 2)
    assert roofline.state_bytes_per_request(d) == state == 51_806_208
    assert float(roofline.kv_bytes_per_request(d, 8192)) == 4 * 8192 * 4096 + state
    # FLOPs of the recurrences per token: 24 × (5·128·64·128 + 2·10240·4)
    assert d.model.state_flops_per_token == 24 * (5 * 128 * 64 * 128 + 2 * 10240 * 4) == 127_795_200


def test_nemotron_h_moe_pattern_and_a_bad_pattern_are_refused():
    cfg = config(NEMO)
    with pytest.raises(KokubanError, match="MoE layers"):
        parse_config(cfg | {"hybrid_override_pattern": "ME" * 26}, name="x")
    with pytest.raises(KokubanError, match="hybrid_override_pattern"):
        parse_config(cfg | {"hybrid_override_pattern": "M*-"}, name="x")
