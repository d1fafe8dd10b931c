"""llama.cpp's quantized CUDA kernels bound per SM (`core.roofline.ggml_per_sm`; evidence/changes/ggml_mmq_rate/,
ggml_mmvq_stream_per_sm/, ggml_mmvq_stream_per_cycle/): the fits and their records, the frozen judgements reproduced
by the shipped model with each constant set by its `KernelCurves` field, the shipped rate and stream worked by hand,
the rows they must not move, and the blackboard."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evidence import pool, report
from evidence.changes.ggml_mmq_rate import fit as mmq_fit
from evidence.changes.ggml_mmvq_stream_per_cycle import fit as cycle_fit
from evidence.changes.ggml_mmvq_stream_per_sm import fit as stream_fit
from evidence.changes.ggml_per_sm import (
    MMQ_OPS_PER_CYCLE,
    STREAM_BYTES_PER_CYCLE,
    STREAM_BYTES_PER_S,
    candidate,
    fit_rows,
)
from evidence.sources import measurements
from kokuban.specs.catalog import load_accelerator, load_model
from kokuban.specs.hardware import Efficiency
from kokuban.validation.accuracy import predict_row

CHANGES = Path(__file__).resolve().parents[1] / "evidence/changes"
TG, PP = "tg128 (decode, batch 1)", "pp512 (first token)"
HBM = ("a100-80gb", "a100-pcie-80gb", "h100-pcie")  # the third candidate's judging GPUs with HBM

# Llama 2 7B by hand: 32 layers of 4·4096² attention and 3·4096·11008 MLP weights (no bias), the LM head 32000·4096
L7_BODY = 32 * (4 * 4096 * 4096 + 3 * 4096 * 11008)  # 6,476,005,376
L7_HEAD = 32000 * 4096  # 131,072,000
L7_NORMS = 32 * 2 * 4096 + 4096  # two RMSNorm weights a layer and the final one, counted as 2 FLOP each: 266,240


def _record(change: str, name: str) -> dict:
    return json.loads((CHANGES / change / name).read_text())


def _least(grid: list) -> float:
    return min((row for row in grid if row[0]), key=lambda row: row[1])[0]


def test_the_fits_are_the_grids_least_and_their_records():
    """Each grid's least is the constant (shipped or judged), and each grid reproduces its record point by point."""
    for change, scores, constant in (("ggml_mmq_rate", mmq_fit.scores, MMQ_OPS_PER_CYCLE),
                                     ("ggml_mmvq_stream_per_sm", stream_fit.scores, STREAM_BYTES_PER_S),
                                     ("ggml_mmvq_stream_per_cycle", cycle_fit.scores, STREAM_BYTES_PER_CYCLE)):
        table = scores()
        record = _record(change, "fit.json")["grid"]
        assert _least(record) == constant == min((p for p in table if p), key=lambda p: table[p][0]), change
        assert table[constant][0] < table[0.0][0]
        for point, msle, median in record:
            assert table[point][:2] == pytest.approx((msle, median), rel=1e-9), (change, point)
    assert len(fit_rows("tokens_per_s_per_user", ("llamacpp_cuda", "llamacpp_sm"))) == 6 + 30


def test_the_first_judgement_reproduces(same_groups):
    """The fifteen GPUs' rows, with each candidate alone, both, and neither: A (the stream per SM) higher on the tg128
    rows than the model without it, not shipped; B (MMQ's rate) lower on the pp512 rows, shipped."""
    judgement = _record("ggml_mmq_rate", "judgement.json")
    rows = list(measurements("llamacpp_sm"))
    models = {"without": candidate(), "A": candidate(stream_bytes_per_s=STREAM_BYTES_PER_S),
              "B": candidate(mmq_ops_per_cycle=MMQ_OPS_PER_CYCLE),
              "A and B": candidate(STREAM_BYTES_PER_S, MMQ_OPS_PER_CYCLE)}
    for name, eff in models.items():
        preds = [predict_row(r, eff) for r in rows]
        fresh = report.grouped(rows, preds, lambda r, p: (TG if r.metric == "tokens_per_s_per_user" else PP,))
        same_groups({k: judgement[name]["groups"][k] for k in fresh}, fresh)
    g = {name: judgement[name]["groups"] for name in models}
    assert g["A"][TG]["median_abs_error"] > g["without"][TG]["median_abs_error"]
    assert g["B"][PP]["median_abs_error"] < g["without"][PP]["median_abs_error"]
    assert judgement["decision"] == {"A": "does not ship", "B": "ships"}


def test_the_third_judgement_reproduces(same_groups):
    """XiongjieDai's rows: A2 lower on all of them and not higher on the GDDR parts' than the model with MMQ's rate
    alone: shipped."""
    judgement = _record("ggml_mmvq_stream_per_cycle", "judgement.json")
    rows = list(measurements("llamacpp_xd"))
    models = {"without": candidate(mmq_ops_per_cycle=MMQ_OPS_PER_CYCLE),
              "A2": candidate(mmq_ops_per_cycle=MMQ_OPS_PER_CYCLE, stream_bytes_per_cycle=STREAM_BYTES_PER_CYCLE),
              "A": candidate(STREAM_BYTES_PER_S, MMQ_OPS_PER_CYCLE)}
    for name, eff in models.items():
        preds = [predict_row(r, eff) for r in rows]
        fresh = report.grouped(rows, preds, lambda r, p: ("HBM" if r.accelerator in HBM else "GDDR",))
        same_groups({k: judgement[name]["groups"][k] for k in fresh}, fresh)
    a2, wo = judgement["A2"]["groups"], judgement["without"]["groups"]
    assert a2["all"]["median_abs_error"] < wo["all"]["median_abs_error"]
    assert a2["GDDR"]["median_abs_error"] <= wo["GDDR"]["median_abs_error"]
    assert judgement["decision"] == "ships"


def test_the_pool_record_reproduces(same_groups):
    """step-v7 (the shipped model without the barrier wait) on its pool: the pool less TensorRT-LLM 0.10's and 0.11's
    rows, 680 − 12 + 30 + 64 = 762."""
    record = _record("ggml_mmvq_stream_per_cycle", "pool_record.json")["step_v7"]
    rows = [r for source, r in pool.rows() if source not in ("trtllm010", "trtllm011")]
    assert len(rows) == record["all"]["count"] == 680 - 12 + 30 + 64 == 762
    preds = [predict_row(r, Efficiency.shipped().with_kernels(tp_sync_loss=0.0)) for r in rows]
    same_groups({"all": record["all"]}, {"all": report.figures(preds)})


def test_what_shipped():
    """B's rate and A2's stream are in the shipped curves; A's bound is off."""
    k = Efficiency.shipped().kernels
    assert (k.ggml_mmq_ops_per_cycle, k.ggml_sm_stream_bytes_per_s, k.ggml_sm_stream_bytes_per_cycle) == (
        520.0, 0.0, 5.5)


def test_the_mmq_rate_by_hand():
    """A 512-token prompt of Llama 2 7B Q4_0 on the RTX 5090: the body's 2·512·6,476,271,616 FLOP at 170 SMs ×
    2.407 GHz × 520 operations per cycle = 212.78 TFLOP/s is 31.17 ms; the LM head (one position) stays on the
    tensor-core curve."""
    from kokuban.core.roofline import ggml_per_sm, lm_head_time_s, prefill
    from kokuban.specs.deployment import Deployment

    m = load_model("llama-2-7b")
    assert m.flops_per_token == 2 * (L7_BODY + L7_NORMS + L7_HEAD)
    dep = Deployment.make(m, load_accelerator("rtx-5090"), 1, weights_dtype="q4_0", kv_dtype="fp16",
                          efficiency=Efficiency.shipped())
    rate = 170 * 2.407e9 * 520  # 2.12778e14 FLOP/s
    assert ggml_per_sm(dep) == (pytest.approx(170 * 5.5 * 2.407e9), pytest.approx(rate))  # MMVQ: 2.25e12 B/s
    step = prefill(dep, 1, 512)
    body_s = 2 * 512 * (L7_BODY + L7_NORMS) / rate
    assert body_s == pytest.approx(0.031166, rel=1e-4)
    assert float(step.compute_s - step.attn_compute_s) == pytest.approx(body_s + lm_head_time_s(dep))
    # the same prompt at 16 bits, on a GPU whose SMs the catalog does not state (L4), or under the scalar set: no bound
    for weights, gpu, eff in (("fp16", "rtx-5090", Efficiency.shipped()), ("q4_0", "l4", Efficiency.shipped()),
                              ("q4_0", "rtx-5090", Efficiency.scalar())):
        other = Deployment.make(m, load_accelerator(gpu), 1, weights_dtype=weights, kv_dtype="fp16", efficiency=eff)
        assert ggml_per_sm(other) == (0.0, 0.0), (weights, gpu)


def test_the_stream_bound_by_hand():
    """A2, shipped: Llama 2 7B Q4_0's weights on the A30 at 56 SMs × 5.5 B/cycle × 1.44 GHz = 443.5 GB/s, slower than
    0.9 of its 933 GB/s; on the RTX 5090, 170 × 5.5 × 2.407 GHz = 2.25 TB/s, faster than 0.9 of its 1.79 TB/s, so
    its memory decides. A (not shipped) set in an efficiency file adds 9.0e9 B/s an SM: on the A30 56 × 16.92e9 =
    947 GB/s, and its memory decides again."""
    from kokuban.core.roofline import weight_bytes_read_per_gpu, weight_read_s
    from kokuban.specs.deployment import Deployment

    def weights_s(gpu: str, eff: Efficiency) -> tuple[float, float]:
        dep = Deployment.make(load_model("llama-2-7b"), load_accelerator(gpu), 1, weights_dtype="q4_0",
                              kv_dtype="fp16", efficiency=eff)
        return float(weight_read_s(dep, 1)), float(weight_bytes_read_per_gpu(dep, 1))

    t, read = weights_s("a30", Efficiency.shipped())
    assert 56 * 5.5 * 1.44e9 < 0.9 * 933e9 and t == pytest.approx(read / (56 * 5.5 * 1.44e9))
    t, read = weights_s("rtx-5090", Efficiency.shipped())
    memory = Efficiency.shipped().memory  # 0.9
    assert 170 * 5.5 * 2.407e9 > memory * 1.792e12 and t == pytest.approx(read / (memory * 1.792e12))
    t, read = weights_s("a30", Efficiency.shipped().with_kernels(ggml_sm_stream_bytes_per_s=9.0e9))
    assert 56 * (9.0e9 + 5.5 * 1.44e9) > memory * 933e9 and t == pytest.approx(read / (memory * 933e9))


def test_the_published_set_does_not_move():
    """The published set's llama.cpp rows (2023-10, 2024-01) name neither mark: every published row predicts the same
    with and without the per-SM bounds."""
    from kokuban.validation.accuracy import load_published

    without = Efficiency.shipped().with_kernels(ggml_mmq_ops_per_cycle=0.0, ggml_sm_stream_bytes_per_cycle=0.0)
    for row in load_published():
        assert predict_row(row).predicted == predict_row(row, without).predicted, row.id


def test_the_blackboard_shows_the_mmq_rate(capsys):
    from kokuban.cli import main

    assert main(["estimate", "llama-2-7b", "--gpu", "rtx-5090", "--weights", "q4_0", "--json"]) == 0
    hw = json.loads(capsys.readouterr().out)["hardware"]
    assert hw["sm_count"] == 170 and hw["ggml_mmvq_bytes_per_s"] == pytest.approx(170 * 5.5 * 2.407e9)
    assert hw["ggml_mmq_flops_per_s"] == pytest.approx(170 * 2.407e9 * 520)
    assert main(["estimate", "llama-2-7b", "--gpu", "rtx-5090", "--weights", "q4_0"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "MMQ (prompts) 170 SMs × 2.41 GHz × 520 ops/cycle = 213 TFLOP/s" in out
    assert "MMVQ (decode) at most 170 SMs × (5.5 B/cycle × 2.41 GHz) = 2.25 TB/s" in out
    assert main(["estimate", "llama-2-7b", "--gpu", "a100", "--weights", "q4_0"]) == 0
    assert "MMVQ (decode) at most 108 SMs × (5.5 B/cycle × 1.41 GHz) = 838 GB/s" in " ".join(
        capsys.readouterr().out.split())
    assert main(["estimate", "llama-2-7b", "--gpu", "rtx-5090", "--weights", "fp16"]) == 0
    assert "MMQ" not in capsys.readouterr().out


def test_a_negative_sm_count_is_refused():
    from kokuban.errors import KokubanError
    from kokuban.specs.hardware import Accelerator

    entry = {"id": "x", "memory_bytes": 1e9, "memory_bandwidth_bytes_per_s": 1e11, "flops_bf16": 1e14, "sm_count": -1}
    with pytest.raises(KokubanError, match="sm_count must be a finite number ≥ 0"):
        Accelerator.from_dict(entry)
