"""The parallel layout as an object, and the byte counts both time and capacity are built from, by hand."""

from __future__ import annotations

import numpy as np
import pytest

from kokuban.core import bytes as kbytes
from kokuban.core import memory, roofline
from kokuban.errors import KokubanError
from kokuban.specs.catalog import load_accelerator, load_model
from kokuban.specs.deployment import Deployment
from kokuban.specs.layout import Layout


def test_layout_table_by_hand():
    tp, ep = Layout("tp", 8), Layout("ep", 8)
    assert (tp.dense_shards, tp.data_parallel_ranks, tp.expert_shards) == (8, 1, 8)
    assert (ep.dense_shards, ep.data_parallel_ranks, ep.expert_shards) == (1, 8, 8)
    # GQA with 8 KV heads splits min(8, 8) = 8 ways under TP 8, min(4, 8) = 4 under TP 4; MLA cannot split
    assert (
        tp.kv_shards(8, True) == 8
        and Layout("tp", 4).kv_shards(8, True) == 4
        and Layout("tp", 16).kv_shards(8, True) == 8
    )
    assert tp.kv_shards(1, False) == 1 and ep.kv_shards(8, True) == 1
    # a step's KV traffic: spread over the 8 DP ranks under EP, over the KV shards under TP
    assert ep.kv_read_ways(1, False) == 8 and tp.kv_read_ways(8, True) == 8 and tp.kv_read_ways(1, False) == 1
    # 100 requests on EP 8: ⌈100/8⌉ = 13 whole requests on the busiest GPU; TP: a slice of all 100
    assert float(ep.requests_per_gpu(100)) == 13 and float(tp.requests_per_gpu(100)) == 100
    assert ep.prefill_chunk_per_gpu(8192) == 1024 and tp.prefill_chunk_per_gpu(8192) == 8192
    # llama-3.1-70b: 80 layers → 160 all-reduces; deepseek-v3: 58 MoE layers → 116 all-to-alls; 1 GPU: none
    assert tp.collectives(80, 0) == (160, "all-reduce")
    assert ep.collectives(61, 58) == (116, "all-to-all")
    assert Layout("tp", 1).collectives(80, 0) == (0, "none")
    with pytest.raises(KokubanError, match="layout: 'pp' is not known; allowed: tp, ep"):
        Layout("pp", 2)


def test_deployment_asks_its_layout():
    m, acc = load_model("deepseek-v3"), load_accelerator("h200")
    ep = Deployment.make(m, acc, 8, layout="ep")
    tp = Deployment.make(m, acc, 8, layout="tp")
    assert ep.parallel == Layout("ep", 8) and tp.parallel == Layout("tp", 8)
    assert ep.kv_shards == tp.kv_shards == 1  # MLA latent: replicated under TP, whole per request under EP
    assert ep.kv_read_ways == 8 and tp.kv_read_ways == 1
    assert (ep.dense_shards, tp.dense_shards) == (1, 8)


def test_weight_bytes_by_hand_llama8b():
    dep = Deployment.make(load_model("llama-3.1-8b"), load_accelerator("h100-sxm"), 2, weights_dtype="fp8")
    m = dep.model
    # embedding (128256 × 4096) and untied LM head (same) stay bf16; the other params are fp8 (1 B)
    embed = 2 * 128_256 * 4_096
    stored = (8_030_261_248 - embed) * 1 + embed * 2
    assert kbytes.weight_bytes_stored(dep) == pytest.approx(stored)
    assert kbytes.weight_bytes_per_gpu(dep) == pytest.approx(stored / 2)  # dense: all split 2 ways
    # one pass reads every always-read param except the input embedding (a lookup): LM head in bf16
    # always-read params = all 8,030,261,248 but the input embedding's 128,256 × 4,096 (a lookup)
    always_read = 8_030_261_248 - 128_256 * 4_096
    assert m.params_dense_read == always_read
    read = (always_read - 128_256 * 4_096) * 1 + 128_256 * 4_096 * 2
    assert float(kbytes.weight_bytes_read(dep, 1)) == pytest.approx(read)
    assert float(kbytes.weight_bytes_read_per_gpu(dep, 1)) == pytest.approx(read / 2)


def test_kv_bytes_by_hand_llama8b():
    dep = Deployment.make(load_model("llama-3.1-8b"), load_accelerator("h100-sxm"), 4)
    # 32 layers × 2 (K and V) × 8 KV heads × 128 dims × 2 B = 131072 B per token
    assert float(kbytes.kv_bytes_per_request(dep, 1000)) == 1000 * 32 * 2 * 8 * 128 * 2
    assert float(kbytes.kv_bytes_per_request_per_gpu(dep, 1000)) == 1000 * 32 * 2 * 8 * 128 * 2 / 4


def test_time_and_capacity_count_the_same_bytes():
    dep = Deployment.make(load_model("qwen3-235b-a22b"), load_accelerator("h100-sxm"), 8, layout="ep")
    assert roofline.weight_bytes_per_gpu is kbytes.weight_bytes_per_gpu  # one home, re-exported
    plan = memory.plan(dep, 64, 4096)
    assert plan.weights_bytes == kbytes.weight_bytes_per_gpu(dep)
    assert plan.kv_bytes_per_request == float(kbytes.kv_bytes_per_request(dep, 4096))
    step = roofline.decode_step(dep, 64, 4096)
    bw = dep.accelerator.memory_bandwidth_bytes_per_s
    assert float(step.weights_s) == pytest.approx(
        float(kbytes.weight_bytes_read_per_gpu(dep, 64)) / (bw * dep.efficiency.memory)
    )
    kv_bw = bw * dep.efficiency.kv_memory_fraction
    assert float(step.kv_s) == pytest.approx(64 * plan.kv_bytes_per_request / 8 / kv_bw)
    assert np.isfinite(float(step.step_time_s))
