"""Engine memory rules (issue 13 item 4, the engine profiles of issue 12): how vLLM, SGLang and TensorRT-LLM size
their KV pool, one rule (`core.memory.memory_budget`) for the simulator's pool and `estimate`'s largest batch.

Every expected value is worked out by hand below for Llama-3.1-8B in bf16 on one L4 (a 24 GB card):
    H = 24.15e9 bytes (the catalog's nvidia-smi figure); W = 8,030,261,248 parameters × 2 = 16,060,522,496 bytes
    KV per token = 32 layers × 8 KV heads × 128 × 2 (K and V) × 2 bytes = 131,072 bytes
    activations A(S) = 8192-token chunk × 2 bytes × (4·4096 + 2·14336) + S × 128,256 vocab × 4 bytes
                     = 738,197,504 + S × 513,024;  A(256) = 869,531,648
"""

from __future__ import annotations

import pytest

from kokuban.core import memory
from kokuban.errors import KokubanError
from kokuban.sim.kvcache import capacity_blocks
from kokuban.sim.profiles import load_profile, sglang_mem_fraction_static
from kokuban.specs.deployment import MemoryRule
from kokuban.usecases.estimate import run_estimate
from kokuban.usecases.request import EstimateRequest
from kokuban.usecases.simulate import SimulateRequest

H, W = 24.15e9, 8_030_261_248 * 2
A256 = 8192 * 2 * (4 * 4096 + 2 * 14336) + 256 * 128_256 * 4
BLOCK16 = 16 * 131_072


def pool_blocks(engine: str, **kw) -> int:
    r = SimulateRequest(model="llama-3.1-8b", gpu="l4", rate=1, engine=engine, **kw)
    dep, cfg = r.deployment(), r.scheduler_config().resolve(r.accelerator())
    return capacity_blocks(dep, cfg.block_size, cfg.max_num_seqs)


def test_hand_constants():
    """The hand figures the rules below start from: Llama-3.1-8B's 8,030,261,248 parameters (Meta's model card)
    in bf16, and the activations of 256 sequences (a 8,192-token step through the widest layer, plus 256 rows of
    fp32 logits), against what the core computes for the same deployment."""
    assert A256 == 869_531_648 and W == 16_060_522_496
    dep = SimulateRequest(model="llama-3.1-8b", gpu="l4", rate=1).deployment()
    assert dep.model.params_total == 8_030_261_248
    assert memory.weight_bytes_per_gpu(dep) == W and memory.activation_bytes_per_gpu(dep, 256) == A256


def test_kokuban_default_rule_unchanged():
    # 0.9 × H − W − A(256) = 21,735,000,000 − 16,060,522,496 − 869,531,648 = 4,804,945,856 → ⌊÷ 2,097,152⌋ = 2,291
    assert pool_blocks("kokuban") == 2291


def test_vllm_rule_on_a_24gb_card():
    # vLLM: 0.9 × H − W − A − non-torch 0.6e9 = 4,804,945,856 − 600,000,000 = 4,204,945,856 → ⌊÷ 2,097,152⌋ = 2,005
    assert pool_blocks("vllm-v1") == 2005
    # kokuban's old pool was 2,291 / 2,005 − 1 = 14.3 % too large (issue 12: "15 % too large on a 24 GB card")
    assert 2291 / pool_blocks("vllm-v1") - 1 == pytest.approx(0.1426, abs=1e-3)


def test_sglang_default_fraction_by_hand():
    # G = 24.15e9 / 2^20 = 23,031.31 MiB (22.5 GiB: the 20–35 GiB tier: chunk 2048, cuda_graph_max_bs 24 at tp 1)
    # reserved = 512 + 1.5 × 2048 + 2 × 24 + 1024 × 1/8 = 3,760 MiB; round((23,031.31 − 3,760) / 23,031.31, 3) = 0.837
    assert sglang_mem_fraction_static(H) == 0.837
    # an H100 (85.52e9 B = 79.65 GiB > 60 GiB): reserved = max(512 + 1.5·8192 + 2·256 + 128, 10,240) = 13,440 MiB
    # G = 81,558.99 MiB → round(68,118.99 / 81,558.99, 3) = 0.835
    assert sglang_mem_fraction_static(85.52e9) == 0.835
    # tp 8 on the H100: cuda_graph_max_bs 512, reserved = 512 + 12,288 + 1,024 + 1,024 = 14,848 → 0.818
    assert sglang_mem_fraction_static(85.52e9, parallel_size=8) == 0.818


def test_sglang_rule_on_a_24gb_card():
    # KV = 0.837 × H − W = 20,213,550,000 − 16,060,522,496 = 4,153,027,504; SGLang's page size 1 (blocks of one
    # token): ⌊4,153,027,504 ÷ 131,072⌋ = ⌊31,685.1⌋ = 31,685
    assert pool_blocks("sglang") == 31_685
    # --gpu-memory-utilization is SGLang's mem_fraction_static: 0.8 × H − W = 3,259,477,504 → 24,867 tokens
    assert pool_blocks("sglang", gpu_memory_utilization=0.8) == 24_867


def test_trtllm_rule_on_a_24gb_card():
    # KV = 0.9 × (H − W − A(256) − 3.0e9) = 0.9 × 4,219,945,856 = 3,797,951,270.4 (H − W − A = 7,219,945,856; the
    # profile's fitted 3.0e9 outside the pool); blocks of 32 tokens = 4,194,304 bytes → ⌊905.5⌋ = 905
    assert pool_blocks("trtllm") == 905
    # free_gpu_memory_fraction 0.5: 0.5 × 4,219,945,856 = 2,109,972,928 → ⌊503.06⌋ = 503
    assert pool_blocks("trtllm", gpu_memory_utilization=0.5) == 503


def test_kv_blocks_replace_every_rule():
    for engine in ("kokuban", "vllm-v1", "sglang", "trtllm"):
        r = SimulateRequest(model="llama-3.1-8b", gpu="l4", rate=1, engine=engine, kv_blocks=123)
        assert r.scheduler_config().kv_blocks == 123


@pytest.mark.parametrize(("engine", "expected"), [
    # batch max at 4096 tokens: KV per request 4096 × 131,072 = 536,870,912 bytes; logits 513,024 bytes
    (None, 9),        # (21.735e9 − W − 738,197,504) ÷ (536,870,912 + 513,024) = 4,936,280,000 ÷ 537,383,936 = 9.19
    ("vllm-v1", 8),   # (4,936,280,000 − 0.6e9) ÷ 537,383,936 = 8.07
    ("sglang", 7),    # (0.837 × H − W) ÷ 536,870,912 = 4,153,027,504 ÷ 536,870,912 = 7.74 (logits in the reserve)
    ("trtllm", 7),    # 0.9 × (H − W − 738,197,504 − 3.0e9) ÷ (536,870,912 + 0.9 × 513,024) = 0.9 × (7,351,280,000
                      # − 3.0e9) ÷ 537,332,633.6 = 3,916,152,000 ÷ 537,332,633.6 = 7.29
])
def test_estimate_largest_batch_by_engine(engine, expected):
    est = run_estimate(EstimateRequest(model="llama-3.1-8b", gpu="l4", batch="max", context=4096, engine=engine))
    assert est.batch == expected
    assert est.memory.fits


def test_estimate_fraction_knob():
    # kokuban's rule at 0.8: (19.32e9 − W − 738,197,504) ÷ 537,383,936 = 2,521,280,000 ÷ 537,383,936 = 4.69 → 4
    est = run_estimate(EstimateRequest(model="llama-3.1-8b", gpu="l4", batch="max", context=4096,
                                       gpu_memory_utilization=0.8))
    assert est.batch == 4


def test_profiles_name_their_rules():
    assert load_profile("kokuban").memory_rule is None
    assert load_profile("vllm-v1").memory_rule == MemoryRule("utilization", 0.6e9)
    assert load_profile("sglang").memory_rule == MemoryRule("static", 0.0)
    assert load_profile("trtllm").memory_rule == MemoryRule("free_fraction", 3.0e9)
    for name in ("vllm-v1", "vllm-v0", "sglang", "trtllm"):
        sources = dict(load_profile(name).sources)
        assert "memory_rule" in sources and "memory_fraction" in sources


def test_bad_rule_refused():
    with pytest.raises(KokubanError, match="memory_rule"):
        MemoryRule("magic")
