"""A decode-attention kernel that loads a KV head once per query head (TensorRT-LLM before XQA): the rule and its
arithmetic, expected values by hand."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kokuban.core import roofline
from kokuban.core.bytes import decode_kv_read_factor
from kokuban.errors import KokubanError
from kokuban.specs.catalog import load_accelerator, load_model
from kokuban.specs.deployment import Deployment
from kokuban.specs.hardware import Efficiency
from kokuban.validation.accuracy import engine_version, load_published, row_efficiency


def _dep(model: str, eff: Efficiency, per_query_head: bool) -> Deployment:
    if eff.kernels is not None:
        eff = replace(eff, kernels=replace(eff.kernels, kv_per_query_head=per_query_head))
    return Deployment.make(load_model(model), load_accelerator("h200"), 1, weights_dtype="fp8", kv_dtype="fp8",
                           efficiency=eff)


def test_factor_by_hand():
    """Llama-2-70B has 64 query heads over 8 KV heads: q = 8, so r = 0.5 reads 1 + 7 × 0.5 = 4.5 cache bytes per byte;
    Llama-2-7B (32 over 32) and a sharing kernel read 1; the scalar set has no kernel flags: 1."""
    eff = Efficiency.kernel_calibrated().updated(kv_reread=0.5)
    assert decode_kv_read_factor(_dep("llama-2-70b", eff, True)) == 4.5
    assert decode_kv_read_factor(_dep("llama-2-70b", eff, False)) == 1.0
    assert decode_kv_read_factor(_dep("llama-2-7b", eff, True)) == 1.0
    assert decode_kv_read_factor(_dep("llama-2-70b", Efficiency.scalar().updated(kv_reread=0.5), True)) == 1.0


def test_decode_kv_time_by_hand():
    """Llama-2-70B, fp8 KV, one request at 1,000 tokens on an H200: 1,000 × 80 layers × 2 × 8 heads × 128 × 1 B =
    163,840,000 B of cache; at r = 0.25 the kernel reads 1 + 7 × 0.25 = 2.75 times that, 450,560,000 B, in
    450,560,000 ÷ (4.8e12 × kv fraction) s. Prefill is not affected."""
    eff = Efficiency.kernel_calibrated().updated(kv_reread=0.25)
    dep = _dep("llama-2-70b", eff, True)
    step = roofline.decode_step(dep, 1, 1000)
    assert float(step.kv_bytes) == pytest.approx(450_560_000)
    assert float(step.kv_s) == pytest.approx(450_560_000 / (4.8e12 * eff.kv_memory_fraction))
    shared = _dep("llama-2-70b", eff, False)
    assert float(roofline.prefill(dep, 1, 1000).kv_s) == float(roofline.prefill(shared, 1, 1000).kv_s)
    mixed = roofline.decode_step_mixed(dep, [1000, 1000])
    assert float(mixed.kv_bytes) == pytest.approx(2 * 450_560_000)


@given(st.floats(0, 1), st.integers(1, 4096), st.integers(1, 256))
def test_repeats_only_add_time(r, context, batch):
    """Property: per-query-head loads never make a decode step faster, and at r = 0 they change nothing."""
    eff = Efficiency.kernel_calibrated().updated(kv_reread=r)
    slow = roofline.decode_step(_dep("llama-2-70b", eff, True), batch, context)
    fast = roofline.decode_step(_dep("llama-2-70b", eff, False), batch, context)
    assert float(slow.step_time_s) >= float(fast.step_time_s)
    if r == 0:
        assert float(slow.step_time_s) == float(fast.step_time_s)


def test_kv_reread_is_checked():
    with pytest.raises(KokubanError, match="kv_reread"):
        Efficiency().updated(kv_reread=1.5)


def test_engine_versions():
    assert engine_version("TensorRT-LLM 0.6.1 (gptSessionBenchmark, static batch)") == (0, 6, 1)
    assert engine_version("TensorRT-LLM 0.7a (static batch)") == (0, 7)
    assert engine_version("TensorRT-LLM 0.19 (PyTorch backend, trtllm-bench)") == (0, 19)
    assert engine_version("TensorRT-LLM (MLPerf Inference v4.1 submission)") is None
    assert engine_version("vLLM (ROCm), benchmark_latency.py") is None


def test_which_rows_load_per_query_head():
    """TensorRT-LLM 0.5 and 0.6.1 and a row run without XQA load per query head; 0.7a, 0.19, 1.0, MLPerf's
    unversioned TensorRT-LLM and other engines do not."""
    eff = Efficiency.kernel_calibrated()
    flagged = {r.engine for r in load_published() if row_efficiency(r, eff).kernels.kv_per_query_head}
    assert flagged == {"TensorRT-LLM 0.5 (gptSessionBenchmark, static batch)",
                       "TensorRT-LLM 0.6.1 (gptSessionBenchmark, static batch)",
                       "TensorRT-LLM 0.5 (static batch, H200 launch blog)",
                       "TensorRT-LLM (without XQA; static batch, out_tps = output_seqlen*batch_size/total_latency/tp)"}
