"""The GEMM shape term and the A100's own kernel tables (evidence/changes/gemm_shape_term/, a100_kernel_tables/): the
shape factors of a split 70B, why the L40S's own tables are not used, the frozen checks on TensorRT-LLM 0.13's and
0.14's tables, and the five-split fit of the fractions that shipped with them (evidence/fractions/)."""

from __future__ import annotations

import json
from pathlib import Path

from evidence.sources import measurements
from kokuban.specs.catalog import load_accelerator, load_model
from kokuban.specs.deployment import Deployment
from kokuban.specs.hardware import Efficiency
from kokuban.validation.accuracy import load_published, predict_row

ROOT = Path(__file__).resolve().parents[1]
FRACTIONS = ROOT / "evidence/fractions"


def _json(path: Path) -> dict:
    return json.loads(path.read_text())


def test_the_shape_factors():
    """fp8 Llama-3.1-70B's QKV GEMM on one H100 reaches 0.892 of its ceiling and 0.728 split eight ways; bf16 0.988
    and 0.971 (bf16 loses half its rate at N ≈ 45, fp8 at N ≈ 1,600)."""
    model, h100 = load_model("llama-3.1-70b"), load_accelerator("h100-sxm")
    got = []
    for dtype in ("fp8", "bf16"):
        for n in (1, 8):
            dep = Deployment.make(model, h100, n, weights_dtype=dtype)
            got.append(f"{dep.efficiency.kernels.shape_factor(dep.gemm_shapes[0], dep.compute_dtype):.3f}")
    assert got == ["0.892", "0.728", "0.988", "0.971"]


def test_the_l40s_tables_were_not_used_for_a_reason():
    """Its fp8 GEMM fit (`evidence.kernels.fit.per_gpu`: e 0.532 → 0.532 ÷ 0.767 = 0.694 of the medians' ceiling,
    M_half 163, N_half 495, K_half 22) prices one L40S's first tokens 12–40 % too slow; the medians are within 15 %."""
    rows = [r for r in load_published() if r.accelerator == "l40s" and r.metric == "time_to_first_token_s"
            and r.num_gpus == 1]
    own = Efficiency.shipped().with_kernels(gemm_ceiling_factor=round(0.532 / 0.767, 3), m_half_tokens=163,
                                            n_half_fp8=495, k_half_fp8=22)
    medians = [predict_row(r).signed_error for r in rows]
    tables = [predict_row(r, own).signed_error for r in rows]
    assert len(rows) == 6 and max(abs(e) for e in medians) < 0.15
    assert (round(-100 * max(tables)), round(-100 * min(tables))) == (12, 40)


def test_the_checks_as_recorded():
    """0.13's check (step-v4) is below step-v3 overall and on the A100 and MoE groups, and its multi-GPU rows read too
    fast; 0.14's check (step-v3 with the A100's tables) halves the A100's error; each record holds every row."""
    g13 = _json(ROOT / "evidence/changes/gemm_shape_term/judgement.json")
    g14 = _json(ROOT / "evidence/changes/a100_kernel_tables/judgement.json")
    checked13, before13 = g13["shipped"]["groups"], g13["step_v3"]
    assert checked13["all"]["count"] == len(measurements("trtllm013")) == 633
    for key in ("all", "gpu a100-80gb fp16", "workload moe"):
        assert checked13[key]["median_abs_error"] < before13[key]["median_abs_error"], key
    checked14, before14 = g14["as_checked"]["groups"], g14["step_v3"]
    assert checked14["all"]["count"] == len(measurements("trtllm014")) == 604
    a100 = "gpu a100-80gb fp16"
    assert checked14[a100]["median_abs_error"] < 0.6 * before14[a100]["median_abs_error"]
    for g in (checked13, checked14):
        assert g["workload multi-gpu"]["median_signed_error"] > 0.15 > g["workload one gpu"]["median_signed_error"]


def test_the_five_splits_with_the_shape_term():
    """evidence/fractions/step-v4-curves: the procedure refitted on five splits of the 196 published rows with
    step-v4's curves: median within 10 %, p90 just above 30 %, the worst group bf16 (3 pooled rows) at 17.0 %; its
    seed 0 is the shipped fit (choice-196/step-v4-seed0)."""
    saved = _json(FRACTIONS / "step-v4-curves/report.json")
    assert saved["rows"] == 196 and saved["seeds"] == [0, 1, 2, 3, 4]
    p = saved["profiles"]["default"]["pooled"]
    groups = {k: g["median_abs_error"] for part in ("by_workload", "by_weights") for k, g in p[part].items()}
    worst = max(groups, key=groups.get)
    assert (worst, f"{100 * groups[worst]:.1f}") == ("bf16", "17.0") and p["by_weights"]["bf16"]["count"] == 3
    assert p["median_abs_error"] <= 0.10 < 0.30 < p["p90_abs_error"]
    seed0 = _json(FRACTIONS / "choice-196/step-v4-seed0/report.json")
    assert (saved["profiles"]["default"]["per_seed"][0]["fitted"]
            == seed0["profiles"]["default"]["per_seed"][0]["fitted"])
