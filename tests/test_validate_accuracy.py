"""accuracy: the rules that turn a published result into a prediction, and the error statistics."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from json_envelope import result_of

from kokuban.cli import main
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


def test_dataset_has_43_rows():
    assert len(load_published()) == 43


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
    r = _row("mlperf41-llama2-70b-h200-1gpu-offline")  # 0/0 in the data
    assert assumed_lengths(r) == (UNKNOWN_INPUT_TOKENS, UNKNOWN_OUTPUT_TOKENS)


def test_unknown_tp_takes_smallest_group_that_fits():
    # llama-2-70b fp8: ~69 GB of weights < 0.9·141 GB on one H200 → TP1, 8 replicas on 8 GPUs
    dep, replicas = replica_layout(_row("mlperf41-llama2-70b-h200-8gpu-offline"))
    assert (dep.num_gpus, dep.layout, replicas) == (1, "tp", 8)


def test_single_stream_rule_by_hand():
    # llama-2-7b fp16 on an RTX 4090, batch 1; input unknown → 512, output 128 → mean context 576.
    # weights read: all but the 32000·4096 input embedding = 6,738,415,616 − 131,072,000 = 6,607,343,616 params · 2 B
    # KV: 32 layers · 2·4096 elements · 2 B = 524,288 B per token · 576 tokens = 301,989,888 B
    # time = (13,214,687,232 + 301,989,888) B ÷ (1.008e12 B/s · 0.8)  (catalog bandwidth, textbook memory efficiency)
    r = _row("llamacpp-llama2-7b-f16-rtx4090-tg128")
    pred = predict_row(r, Efficiency.textbook())
    from kokuban.specs.catalog import load_accelerator

    bw = load_accelerator("rtx-4090").memory_bandwidth_bytes_per_s
    expected_s = (13_214_687_232 + 301_989_888) / (bw * 0.8)
    assert pred.predicted == pytest.approx(1 / expected_s, rel=2e-3)  # compute (~0.2 ms) hides under memory
    assert pred.regime == "weights" and pred.batch_per_replica == 1 and pred.lengths_assumed


def test_per_node_row_that_does_not_fit_scales():
    # DeepSeek-V3 fp8 does not fit 8× H100 under EP: predicted on 16 and scaled by 8/16
    p = predict_row(_row("sglang-deepseek-v3-h100-96gpu-pd-ep-decode-per-node"))
    assert p.tp_or_ep == "ep16" and p.replicas == 0.5


def test_accuracy_cli_json(capsys):
    assert main(["accuracy", "--json"]) == 0
    data = result_of(capsys.readouterr().out)
    assert len(data["rows"]) == 43
    errs = np.array([r["error"] for r in data["rows"]])
    assert data["summary"]["median_abs_error"] == pytest.approx(np.median(errs))
    assert set(data["summary"]["by_regime"]) <= {"compute", "weights", "kv", "comm", "overhead"}


def test_documented_accuracy_figures_hold():
    """docs/validation.md and the README quote these summaries; prose must not drift from the code.

    Shipped defaults: "all 43 rows 20.6 % median (p90 65.5 %), signed +2.1 %"; textbook fractions (the table of
    `kokuban accuracy --compute-eff 0.6 --memory-eff 0.8 --link-eff 0.75 --step-overhead 0`): all 43 rows
    35.2 % median, 96.1 % p90, 167.8 % max, +31.2 % signed."""
    from kokuban.usecases.validation import AccuracyRequest, run_accuracy

    def quoted(s):
        return tuple(round(100 * s[k], 1) for k in ("median_abs_error", "p90_abs_error", "median_signed_error"))

    shipped = run_accuracy(AccuracyRequest()).summary
    assert shipped["count"] == 43 and quoted(shipped) == (20.6, 65.5, 2.1)
    textbook = run_accuracy(AccuracyRequest(compute_eff=0.6, memory_eff=0.8, link_eff=0.75, step_overhead=0)).summary
    assert quoted(textbook) == (35.2, 96.1, 31.2) and round(100 * textbook["max_abs_error"], 1) == 167.8
