"""accuracy: the rules that turn a published result into a prediction, and the error statistics."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kokuban.cli import main
from kokuban.present.jsonout import read_result
from kokuban.specs.hardware import Efficiency
from kokuban.validation.accuracy import (
    UNKNOWN_INPUT_TOKENS,
    UNKNOWN_OUTPUT_TOKENS,
    assumed_lengths,
    error_summary,
    load_published,
    predict_row,
    relative_error,
    replica_layout,
)


def _row(row_id: str):
    return next(r for r in load_published() if r.id == row_id)


def test_dataset_has_196_rows():
    """88 rows, then llm-perf-bench's 12 single-GPU 4-bit cells (3 engines × 2 models × 2 GPUs, all
    per-user decode speeds) and TensorRT-LLM 0.9's 96 (4 models × 4 GPUs × 4 throughput settings, and × 2 first-token
    prompts)."""
    rows = load_published()
    assert len(rows) == 88 + 3 * 2 * 2 + 4 * 4 * (4 + 2)
    by_metric = {m: sum(r.metric == m for r in rows) for m in ("output_tokens_per_s", "tokens_per_s_per_user",
                                                              "time_to_first_token_s")}
    assert by_metric == {"output_tokens_per_s": 67 + 64, "tokens_per_s_per_user": 11 + 12,
                         "time_to_first_token_s": 10 + 32}


def test_error_summary_by_hand():
    s = error_summary([1, 2, 4], [1.1, 1.0, 4.0], ["weights", "kv", "weights"])
    # errors 0.1, 0.5, 0 → median 0.1; p90 (linear) of sorted [0, 0.1, 0.5] at index 1.8 = 0.1 + 0.8·0.4 = 0.42
    assert s["median_abs_error"] == pytest.approx(0.1)
    assert s["p90_abs_error"] == pytest.approx(0.42)
    assert s["by_regime"]["weights"]["count"] == 2
    assert s["by_regime"]["kv"]["median_signed_error"] == pytest.approx(-0.5)


@given(st.floats(0.01, 1e6), st.floats(0.01, 1e6), st.floats(1e-3, 1e3))
def test_relative_error_is_scale_free(p, m, k):
    assert float(relative_error(k * p, k * m)) == pytest.approx(float(relative_error(p, m)), rel=1e-9)


def test_unknown_lengths_use_documented_defaults():
    # MLC's llm-perf-bench thread states neither length (0, 0 → 512, 256)
    assert assumed_lengths(_row("mlc-llama2-7b-int4-rtx4090")) == (UNKNOWN_INPUT_TOKENS, UNKNOWN_OUTPUT_TOKENS)
    # llama.cpp's tg128 decodes 128 tokens from an empty cache: stated as a 1-token prompt (the BOS), not unknown
    assert assumed_lengths(_row("llamacpp-llama2-7b-f16-rtx4090-tg128")) == (1, 128)
    # gpt-fast states a 5-token prompt and no output length (0 → 256)
    assert assumed_lengths(_row("gptfast-llama2-7b-bf16-tp1-a100")) == (5, UNKNOWN_OUTPUT_TOKENS)


def test_mlperf_rows_carry_the_datasets_mean_prompt_and_their_runs_mean_output():
    """The six MLPerf v4.1 Llama-2-70B rows: input = the OpenOrca set's mean prompt, 5,463,976 tokens over 24,576
    samples = 222.33 → 222; output = the run's tokens/s ÷ samples/s from its mlperf_log_summary.txt; TP as the
    submission's config states it (data file block above the rows)."""
    expected_output = {  # tokens/s ÷ samples/s, rounded
        "b200-1gpu-offline": 274,  # 11,264.4 ÷ 41.1075 = 274.02
        "b200-1gpu-server": 274,  # 10,755.59 ÷ 39.25 = 274.03
        "h200-1gpu-offline": 291,  # 4,487.88 ÷ 15.4091 = 291.25
        "h200-8gpu-offline": 292,  # 32,124.3 ÷ 110.131 = 291.69
        "h200-8gpu-server": 292,  # 29,739.88 ÷ 101.96 = 291.68
        "h100-4gpu-offline": 291,  # 10,699.6 ÷ 36.7807 = 290.90
    }
    rows = [r for r in load_published() if r.id.startswith("mlperf41-")]
    assert sorted(r.id.removeprefix("mlperf41-llama2-70b-") for r in rows) == sorted(expected_output)
    for r in rows:
        out = expected_output[r.id.removeprefix("mlperf41-llama2-70b-")]
        assert assumed_lengths(r) == (round(5_463_976 / 24_576), out) == (222, out)
        assert not predict_row(r).lengths_assumed
    # the configs' TP: the H200s run one TP1 engine per GPU, the 4× H100 two TP2 engines
    layouts = {k: replica_layout(_row(f"mlperf41-llama2-70b-{k}")) for k in ("h200-8gpu-server", "h100-4gpu-offline")}
    assert [(d.layout, d.num_gpus, n) for d, n in layouts.values()] == [("tp", 1, 8), ("tp", 2, 2)]


def test_a_tensorrt_llm_row_sizes_its_kv_pool_by_trtllms_rule():
    """TensorRT-LLM keeps 0.9 of the memory free after weights W and activations A (less the profile's fitted 3.0 GB
    outside its pool) for the KV cache; kokuban's default keeps 0.9·HBM − W − A. Llama 3.1 70B fp8 on one 80 GB H100:
    the engine's pool is 0.9·(H − W − A − 3.0e9) and exceeds the default's 0.9·H − W − A by 0.1·(W + A) − 2.7e9
    (W ≈ 71 GB: ≈ 4.5 GB more). A vLLM row keeps vLLM's rule; a gpt-fast row kokuban's."""
    from kokuban.core.bytes import weight_bytes_per_gpu
    from kokuban.core.memory import activation_bytes_per_gpu, memory_budget

    dep, _ = replica_layout(_row("trtllm019-llama31-70b-h100-tp1-fp8-128-2048"))
    hbm, w = dep.accelerator.memory_bytes, weight_bytes_per_gpu(dep)
    a = float(activation_bytes_per_gpu(dep, 1))
    assert dep.memory_rule.kind == "free_fraction" and dep.memory_utilization == 0.9
    assert float(memory_budget(dep, a)[1]) == pytest.approx(0.9 * (hbm - w - a - 3.0e9))
    assert float(memory_budget(dep, a)[1]) - (0.9 * hbm - w - a) == pytest.approx(0.1 * (w + a) - 2.7e9)
    assert replica_layout(_row("amd-vllm0901-llama31-70b-mi300x-fp8-tp8-128-2048"))[0].memory_rule.kind == "utilization"
    assert replica_layout(_row("gptfast-llama2-7b-bf16-tp1-a100"))[0].memory_rule.non_torch_bytes == 0


def test_trtllm_moe_rows_run_attention_data_parallel_with_expert_parallel_experts():
    # the perf-overview's MoE command sets enable_attention_dp: kokuban's "ep" layout over the 8 GPUs
    for gpu in ("h200-fp8", "h100-fp8", "b200-fp4"):
        dep, replicas = replica_layout(_row(f"trtllm10-qwen3-235b-{gpu}-tp8-128-2048"))
        assert (dep.layout, dep.num_gpus, replicas) == ("ep", 8, 1.0)


def test_unknown_tp_takes_smallest_group_that_fits():
    # llama-2-70b fp8: ~69 GB of weights < 0.9·141 GB on one H200 → TP1, 8 replicas on 8 GPUs
    from dataclasses import replace

    dep, replicas = replica_layout(replace(_row("mlperf41-llama2-70b-h200-8gpu-offline"), tensor_parallel=0))
    assert (dep.num_gpus, dep.layout, replicas) == (1, "tp", 8)
    # on an 80 GB H100 (85.9e9 B) too: 0.9·(85.9 − 69 − activations − 0.6) GB ≈ 14 GB of KV pool ≫ one request's
    # 513 tokens · 160 KiB; so without its config's TP2 the 4× H100 row would read as 4 TP1 replicas
    dep, replicas = replica_layout(replace(_row("mlperf41-llama2-70b-h100-4gpu-offline"), tensor_parallel=0))
    assert (dep.num_gpus, dep.layout, replicas) == (1, "tp", 4)


def test_single_stream_rule_by_hand():
    # llama-2-7b fp16 on an RTX 4090, batch 1; tg128: a 1-token prompt (empty cache), output 128 → mean context
    # 1 + 128/2 = 65. weights read: all but the 32000·4096 input embedding = 6,738,415,616 − 131,072,000 =
    # 6,607,343,616 params · 2 B; KV: 32 layers · 2·4096 elements · 2 B = 524,288 B per token · 65 = 34,078,720 B
    # time = (13,214,687,232 + 34,078,720) B ÷ (1.008e12 B/s · 0.8)  (catalog bandwidth, textbook memory efficiency)
    r = _row("llamacpp-llama2-7b-f16-rtx4090-tg128")
    pred = predict_row(r, Efficiency.textbook())
    from kokuban.specs.catalog import load_accelerator

    bw = load_accelerator("rtx-4090").memory_bandwidth_bytes_per_s
    expected_s = (13_214_687_232 + 34_078_720) / (bw * 0.8)
    assert pred.predicted == pytest.approx(1 / expected_s, rel=2e-3)  # compute (~0.2 ms) hides under memory
    assert pred.regime == "weights" and pred.batch_per_replica == 1 and not pred.lengths_assumed


def test_per_node_row_that_does_not_fit_scales():
    # DeepSeek-V3 fp8 does not fit 8× H100 under EP: a per-node row on 8 GPUs is predicted on 16 and scaled by 8/16
    from dataclasses import replace

    row = replace(_row("sglang-deepseek-v3-h100-96gpu-pd-ep-decode-per-node"), num_gpus=8, per_gpu=False, batch=0)
    p = predict_row(row)
    assert p.tp_or_ep == "ep16" and p.replicas == 0.5


def test_sglang_decode_row_is_the_blogs_ep72_at_256_per_gpu_with_two_batch_overlap():
    # the blog's decode test: 9 nodes × 8 H100 = EP72, 256 sequences per GPU, 22,282 tokens/s per node → per GPU
    from kokuban.core.roofline import decode_step

    row = _row("sglang-deepseek-v3-h100-96gpu-pd-ep-decode-per-node")
    assert (row.num_gpus, row.batch, row.per_gpu, row.value) == (72, 256 * 72, True, 22282 / 8)
    eff = Efficiency.kernel_calibrated()
    dep, replicas = replica_layout(row, eff)
    assert (dep.layout, dep.num_gpus, replicas, dep.overlap_comm) == ("ep", 72, 1.0, True)
    # two micro-batches hide communication: step = max(roofline, comm) + overhead, not their sum
    step = decode_step(dep, 18432, 2000 + 256 / 2)
    roof, comm, over = float(step.roof_s), float(step.comm_s), float(step.overhead_s)
    assert float(step.step_time_s) == pytest.approx(max(roof, comm) + over) and comm > 0 and roof > 0
    # per GPU: 18,432 tokens per step ÷ step ÷ 72 GPUs
    assert predict_row(row, eff).predicted == pytest.approx(18432 / float(step.step_time_s) / 72)
    assert not replica_layout(_row("trtllm10-qwen3-235b-h200-fp8-tp8-128-2048"), eff)[0].overlap_comm


def test_accuracy_cli_json(capsys):
    assert main(["accuracy", "--json"]) == 0
    data = read_result(capsys.readouterr().out)
    assert len(data["rows"]) == 196
    errs = np.array([r["error"] for r in data["rows"]])
    assert data["summary"]["median_abs_error"] == pytest.approx(np.median(errs))
    assert set(data["summary"]["by_regime"]) <= {"compute", "weights", "kv", "comm", "overhead"}


def test_documented_accuracy_figures_hold():
    """The published set's summaries under three step models, pinned so that a change to the model that moves them is
    seen (and its CHANGELOG entry updated).

    Shipped step model (the kernel profile): "all 196 rows 8.9 % median (p90 29.4 %), signed −4.6 %"; the scalar set
    (`--efficiency-file scalar`): "24.9 % median, p90 75.2 %, signed +14.7 %"; textbook fractions (the table of
    `kokuban accuracy --efficiency-file scalar --compute-eff 0.6 --memory-eff 0.8 --link-eff 0.75 --step-overhead 0`):
    all 196 rows 28.9 % median, 97.8 % p90, 373.7 % max, +26.4 % signed (> 0: faster than measured)."""
    from kokuban.usecases.validation import AccuracyRequest, run_accuracy

    def quoted(s):
        return tuple(round(100 * s[k], 1) for k in ("median_abs_error", "p90_abs_error", "median_signed_error"))

    shipped = run_accuracy(AccuracyRequest()).summary
    assert shipped["count"] == 196 and quoted(shipped) == (8.9, 29.4, -4.6)
    scalar = run_accuracy(AccuracyRequest(efficiency_file="scalar")).summary
    assert quoted(scalar) == (24.9, 75.2, 14.7)
    textbook = run_accuracy(AccuracyRequest(efficiency_file="scalar", compute_eff=0.6, memory_eff=0.8, link_eff=0.75,
                                            step_overhead=0)).summary
    assert quoted(textbook) == (28.9, 97.8, 26.4) and round(100 * textbook["max_abs_error"], 1) == 373.7
