"""The kernel profile (`Efficiency.kernel_calibrated`, specs/kernels.py): GEMM fraction by dtype and token count,
collectives by message size and link, groups that cross a node. Expected values derived by hand."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kokuban.cli import main
from kokuban.core.roofline import comm_time_s, decode_step, linear_compute_fractions
from kokuban.errors import KokubanError
from kokuban.specs.catalog import load_accelerator, load_model
from kokuban.specs.deployment import Deployment
from kokuban.specs.hardware import PROFILES, STEP_MODEL, Efficiency
from kokuban.specs.kernels import (
    KernelCurves,
    allreduce_time_s,
    alltoall_time_s,
    collective_link,
    gemm_attainable_factor,
    gemm_fraction,
    moe_dispatch_time_s,
)
from kokuban.validation.accuracy import WORST_ROWS, accuracy

SETTINGS = settings(max_examples=60, deadline=None)
SCALAR = Efficiency.scalar()


@pytest.fixture(scope="session")
def kernel(step_v3) -> Efficiency:
    """The constants the hand-derived numbers below are worked at: step-v3's curves (no GEMM shape term, M_half 70, fp8
    at 0.71 of bf16, the MoE layer at 39 µs + 15.3 ns a pair, no accelerator's own constants) at 0.70 / 0.63 / 0.36 ms,
    TensorRT-LLM's pool by the engine profile. The shipped constants are checked in
    test_the_shipped_step_model_is_the_kernel_profile_at_its_fitted_fractions and tests/test_gemm_shapes.py."""
    return step_v3("step-v3", v4_pool=False)


# ---- by hand ---------------------------------------------------------------------------------------------
def test_gemm_fraction_is_half_the_peak_at_m_half():
    """e·M/(M + M_half) at M = M_half = 70: 0.8·70/140 = 0.4; at M = 630: 0.8·630/700 = 0.72."""
    assert float(gemm_fraction(0.8, 70, 70)) == pytest.approx(0.4)
    assert float(gemm_fraction(0.8, 630, 70)) == pytest.approx(0.72)


def test_allreduce_one_shot_below_the_threshold_two_shot_above():
    """N = 8 on 450 GB/s at f = 0.72 (f·B = 324 GB/s), α₁ = 3 µs, α₂ = 25.7 µs.

    S = 1 MB: one-shot 3 + 7·1e6/3.24e11 s = 3 + 21.605 = 24.605 µs; two-shot 25.7 + 1.75e6/3.24e11 = 25.7 + 5.401
    = 31.101 µs → one-shot, 24.605 µs. S = 10 MB: one-shot 3 + 216.05 = 219.05 µs; two-shot 25.7 + 54.01 = 79.71 µs
    → two-shot."""
    args = (8, 450e9, 3e-6, 25.7e-6, 0.72)
    assert float(allreduce_time_s(1e6, *args)) == pytest.approx(3e-6 + 7e6 / 3.24e11)
    assert float(allreduce_time_s(1e6, *args)) == pytest.approx(24.605e-6, rel=1e-4)
    assert float(allreduce_time_s(1e7, *args)) == pytest.approx(25.7e-6 + 1.75e7 / 3.24e11)
    assert float(allreduce_time_s(1e7, *args)) == pytest.approx(79.71e-6, rel=1e-4)
    assert float(allreduce_time_s(1e7, 1, *args[1:])) == 0.0


def test_alltoall_adds_the_off_node_share_at_the_network_rate():
    """1 MB on node at 0.57·900 GB/s = 513 GB/s: 1e6/5.13e11 = 1.949 µs; 0.5 MB off node at 0.8·50 GB/s = 40 GB/s:
    12.5 µs; α = 9.8 µs: 9.8 + 1.949 + 12.5 = 24.249 µs."""
    t = alltoall_time_s(1e6, 5e5, 9.8e-6, 900e9, 0.57, 50e9, 0.8)
    assert float(t) == pytest.approx(9.8e-6 + 1e6 / 5.13e11 + 5e5 / 4e10)
    assert float(t) == pytest.approx(24.249e-6, rel=1e-4)
    with pytest.raises(KokubanError):
        alltoall_time_s(1e6, 1.0, 9.8e-6, 900e9, 0.57, 0.0, 0.8)


def test_a_tp16_group_on_hgx_h200_pays_the_scale_out_link(kernel):
    """Llama 3.1 70B (hidden 8192, 80 layers) TP16 on H200 (8 per node, 50 GB/s NIC, +10 µs), 64 tokens:
    message 64·8192·2 = 1,048,576 bytes; across nodes two-shot at 0.8·50 GB/s = 40 GB/s:
    25.7 µs + 2·15/16·1,048,576/4e10 s (= 49.152 µs) + 10 µs = 84.852 µs per all-reduce, × 2·80 = 13.576 ms."""
    dep = Deployment.make(load_model("llama-3.1-70b"), load_accelerator("h200"), 16, efficiency=kernel)
    seconds, sent = comm_time_s(dep, 64)
    assert float(seconds) == pytest.approx(160 * (25.7e-6 + 2 * 15 / 16 * 1_048_576 / 4e10 + 10e-6))
    assert float(seconds) == pytest.approx(13.576e-3, rel=1e-4)
    assert float(sent) == pytest.approx(160 * 2 * 15 / 16 * 1_048_576)


def test_a_tp8_group_inside_the_node_uses_the_nvlink_curve(kernel):
    """Same model TP8 on H200, 64 tokens (S = 1,048,576 B, NVLink 450 GB/s at 0.72 = 324 GB/s):
    one-shot 3 + 7·1,048,576/3.24e11 s = 3 + 22.654 = 25.654 µs; two-shot 25.7 + 1.75·1,048,576/3.24e11 = 25.7 + 5.663
    = 31.363 µs → 25.654 µs × 160 = 4.1047 ms."""
    dep = Deployment.make(load_model("llama-3.1-70b"), load_accelerator("h200"), 8, efficiency=kernel)
    assert float(comm_time_s(dep, 64)[0]) == pytest.approx(160 * (3e-6 + 7 * 1_048_576 / 3.24e11))
    assert float(comm_time_s(dep, 64)[0]) == pytest.approx(4.1047e-3, rel=1e-4)


def test_scalar_profile_tp16_across_two_nodes_waits_on_the_nic():
    """Scalar profile (interconnect 0.27, 8 µs per collective), Llama 3.1 70B TP16 on H200 (8 per node, 50 GB/s NIC),
    64 tokens: ring bytes per GPU 2·15/16·1,048,576 = 1,966,080; at 0.27·50 GB/s = 13.5 GB/s: 145.64 µs + 8 µs =
    153.64 µs per all-reduce, × 160 = 24.582 ms. TP8 inside the node: 2·7/8·1,048,576 = 1,835,008 B at 0.27·450 GB/s
    = 121.5 GB/s: 15.103 µs + 8 µs = 23.103 µs × 160 = 3.6965 ms."""
    model, h200 = load_model("llama-3.1-70b"), load_accelerator("h200")
    across = Deployment.make(model, h200, 16, efficiency=SCALAR)
    assert float(comm_time_s(across, 64)[0]) == pytest.approx(160 * (8e-6 + 1_966_080 / 13.5e9))
    assert float(comm_time_s(across, 64)[0]) == pytest.approx(24.582e-3, rel=1e-4)
    assert float(comm_time_s(across, 64)[1]) == pytest.approx(160 * 1_966_080)
    inside = Deployment.make(model, h200, 8, efficiency=SCALAR)
    assert float(comm_time_s(inside, 64)[0]) == pytest.approx(3.6965e-3, rel=1e-4)


def test_scalar_profile_ep16_sends_the_other_nodes_share_over_the_nic():
    """Scalar profile, DeepSeek-V3 (hidden 7168, top-8, 58 MoE layers) EP16 on H100 (8 per node), 1,024 tokens:
    each GPU sends 15/16·(1,024/16)·8·7168·2 = 6,881,280 B per all-to-all; 8 of its 15 peers are on the other node:
    3,670,016 B over the NIC at 0.27·50 GB/s = 13.5 GB/s (271.85 µs), 3,211,264 B over NVLink at 0.27·450 GB/s
    (26.43 µs), + 8 µs = 306.28 µs, × 2·58 = 35.529 ms."""
    dep = Deployment.make(load_model("deepseek-v3"), load_accelerator("h100-sxm"), 16, layout="ep", efficiency=SCALAR)
    expected = 116 * (8e-6 + 3_211_264 / 121.5e9 + 3_670_016 / 13.5e9)
    assert float(comm_time_s(dep, 1024)[0]) == pytest.approx(expected)
    assert float(comm_time_s(dep, 1024)[0]) == pytest.approx(35.529e-3, rel=1e-4)
    assert float(comm_time_s(dep, 1024)[1]) == pytest.approx(116 * 6_881_280)


def test_gemm_fraction_in_the_step_by_dtype(kernel):
    """Kernel profile (compute 0.70): bf16 on one H100 at 70 tokens: 0.70·70/140 = 0.35; fp8 weights (fp8 tensor
    cores) at 70: 0.70·0.71·0.5 = 0.2485; the scalar profile: 0.74 whatever the tokens."""
    model, h100 = load_model("llama-3.1-8b"), load_accelerator("h100-sxm")
    bf16 = Deployment.make(model, h100, 1, efficiency=kernel)
    assert float(linear_compute_fractions(bf16, 70.0)[0]) == pytest.approx(0.35)
    fp8 = Deployment.make(model, h100, 1, weights_dtype="fp8", efficiency=kernel)
    assert float(linear_compute_fractions(fp8, 70.0)[0]) == pytest.approx(0.2485)
    assert linear_compute_fractions(Deployment.make(model, h100, 1, efficiency=SCALAR), 70.0) == (0.74, 0.74)


def test_mi300x_gemm_ceiling_is_scaled_by_amds_measured_best_case(kernel, v3_curves):
    """AMD's MAF table (accelerators.toml maf_note): MI300X fp8 1273 TFLOP/s of a 2614.9 peak = 0.48682; curves without
    the shape term compare it with the NVIDIA tables' shape-free fp8 0.548: a = 0.48682 ÷ 0.548 = 0.88837; bf16 708 ÷
    1307.4 = 0.54153, ÷ 0.797 = 0.67946. In the
    step, fp8 Llama 3.1 70B on 8 MI300X (TP: every GPU sees all M = 560 tokens): 0.70·0.71 = 0.497, ·0.88837 =
    0.441520, ·560/(560 + 70) = 0.392462. An H100 (no measurement in the catalog) keeps a = 1; a missing figure is 1."""
    mi, old = load_accelerator("mi300x"), KernelCurves(**v3_curves)
    assert old.attainable_factor(mi, "fp8") == pytest.approx(0.88837, abs=1e-5)
    assert old.attainable_factor(mi, "bf16") == pytest.approx(0.67946, abs=1e-5)
    assert old.attainable_factor(load_accelerator("h100-sxm"), "fp8") == 1.0
    # int8 (W8A8) follows fp8 in the curves, so it takes fp8's factor, not 1 (which would price it 12 % above fp8)
    assert old.attainable_factor(mi, "int8") == pytest.approx(0.88837, abs=1e-5)
    # the shipped curves compare with the tables' shape-aware fraction AT the measurement's shape (N 3648, K 32896 for
    # fp8): 3648/(3648 + 1581) · 32896/(32896 + 215) = 0.697648 · 0.993507 = 0.693118; 0.767 · 0.693118 = 0.531621;
    # a = 0.486825 ÷ 0.531621 = 0.915737. bf16 (N 4864): 4864/4909 · 32896/32988 = 0.988070; 0.829 · 0.988070 =
    # 0.819110; a = 0.541533 ÷ 0.819110 = 0.661122
    assert KernelCurves().attainable_factor(mi, "fp8") == pytest.approx(0.915737, abs=1e-5)
    assert KernelCurves().attainable_factor(mi, "bf16") == pytest.approx(0.661122, abs=1e-5)
    assert gemm_attainable_factor(0.0, 1e15, 0.5) == 1.0
    dep = Deployment.make(load_model("llama-3.1-70b"), mi, 8, weights_dtype="fp8", efficiency=kernel)
    assert float(linear_compute_fractions(dep, 560.0)[0]) == pytest.approx(0.392462, abs=1e-6)
    scalar = Deployment.make(load_model("llama-3.1-70b"), mi, 8, weights_dtype="fp8", efficiency=Efficiency.scalar())
    assert float(linear_compute_fractions(scalar, 560.0)[0]) == 0.74  # the scalar set has no curves: unchanged


def test_gemv_below_the_threshold_is_not_padded():
    """M ≤ M_gemv = 4 runs a matrix-vector kernel: the fraction is e itself; above, the tiled curve:
    M = 5: 0.8·5/(5 + 70) = 0.05333."""
    assert float(gemm_fraction(0.8, 4, 70, 4)) == 0.8
    assert float(gemm_fraction(0.8, 1, 70, 4)) == 0.8
    assert float(gemm_fraction(0.8, 5, 70, 4)) == pytest.approx(0.8 * 5 / 75)


def test_batch_one_int4_decode_is_weight_bound_and_experts_stay_tiled(kernel):
    """Llama-2-7B int4 (bf16 compute) on one RTX 4090, one token, kernel profile (compute 0.70): the dense GEMV at
    0.70 (not 0.70/71), so compute = 13.21 GFLOP ÷ (165.2e12·0.70) ≈ 0.114 ms, far under the weight read: the step
    is weight-bound. A MoE's routed experts keep the tiled fraction at M = 1 per expert: 0.70·1/71."""
    dep = Deployment.make(load_model("llama-2-7b"), load_accelerator("rtx-4090"), 1, weights_dtype="int4-g32",
                          efficiency=kernel)
    assert float(linear_compute_fractions(dep, 1.0)[0]) == pytest.approx(0.70)
    step = decode_step(dep, 1, 128)
    assert float(step.compute_s) == pytest.approx(13.21e9 / (165.2e12 * 0.70), rel=0.01)
    assert float(step.weights_s) > 10 * float(step.compute_s)
    # gemm_fraction's docstring (at the scalar compute 0.74): at M = 4 still a GEMV, 4 · 13.21 GFLOP ÷ (165.2e12·0.74)
    # = 0.43 ms of compute against 3.9 GB (int4 body, 16-bit embeddings and LM head) ÷ 1.008e12 B/s = 3.9 ms of read
    four = decode_step(replace(dep, efficiency=kernel.updated(compute=0.74)), 4, 128)
    assert float(four.compute_s) == pytest.approx(4 * 13.21e9 / (165.2e12 * 0.74), rel=0.01)
    assert float(four.weight_bytes) / 1.008e12 == pytest.approx(3.9e-3, rel=0.01)
    moe = Deployment.make(load_model("qwen3-30b-a3b"), load_accelerator("h100-sxm"), 1, efficiency=kernel)
    dense_f, expert_f = linear_compute_fractions(moe, 1.0)
    assert float(dense_f) == pytest.approx(0.70) and float(expert_f) == pytest.approx(0.70 / 71)


def test_moe_dispatch_time_by_hand():
    """48 MoE layers, 1,000 pairs: 48·(39 µs + 15.3 ns·1,000) = 48·54.3 µs = 2.6064 ms; no pairs: 48·39 µs."""
    assert float(moe_dispatch_time_s(1000, 48, 39e-6, 15.3e-9)) == pytest.approx(2.6064e-3)
    assert float(moe_dispatch_time_s(0, 48, 39e-6, 15.3e-9)) == pytest.approx(1.872e-3)


def test_moe_layers_pay_the_dispatch_time_in_the_step(kernel):
    """Qwen3-30B-A3B (48 MoE layers, top-8) decoding 100 requests on one B200 under the kernel profile: the step's
    overhead is 0.36 ms + 48·(39 µs + 15.3 ns·100·8) = 0.36 + 2.45952 = 2.81952 ms. As EP8 (8 data-parallel ranks)
    a GPU's experts receive 800/8 = 100 pairs: 0.36 + 48·(39 µs + 1.53 µs) = 0.36 + 1.94544 = 2.30544 ms. A dense
    model and the scalar profile pay only the step overhead (0.36 ms, 2.7 ms)."""
    model, b200 = load_model("qwen3-30b-a3b"), load_accelerator("b200")
    tp1 = Deployment.make(model, b200, 1, efficiency=kernel)
    assert float(decode_step(tp1, 100, 1000).overhead_s) == pytest.approx(2.81952e-3)
    ep8 = Deployment.make(model, b200, 8, layout="ep", efficiency=kernel)
    assert float(decode_step(ep8, 100, 1000).overhead_s) == pytest.approx(2.30544e-3)
    dense = Deployment.make(load_model("llama-3.1-8b"), b200, 1, efficiency=kernel)
    assert float(decode_step(dense, 100, 1000).overhead_s) == pytest.approx(0.36e-3)
    scalar = Deployment.make(model, b200, 1, efficiency=SCALAR)
    assert float(decode_step(scalar, 100, 1000).overhead_s) == pytest.approx(2.7e-3)


def test_fp4_moe_layers_pay_the_fp4_tables_constants(kernel):
    """Qwen3-30B-A3B in nvfp4 on one B200 computes in fp4, so its 48 MoE layers pay the B200 nvfp4 table's
    α 49.9 µs and β 21.4 ns: decoding 100 requests (800 pairs) the overhead is 0.36 ms + 48·(49.9 µs + 21.4 ns·800)
    = 0.36 + 48·67.02 µs = 0.36 + 3.21696 = 3.57696 ms; in fp8 the median constants, as before (2.81952 ms)."""
    model, b200 = load_model("qwen3-30b-a3b"), load_accelerator("b200")
    fp4 = Deployment.make(model, b200, 1, weights_dtype="nvfp4", efficiency=kernel)
    assert fp4.compute_dtype == "fp4" and kernel.kernels.moe_constants("fp4") == (49.9e-6, 21.4e-9)
    assert float(decode_step(fp4, 100, 1000).overhead_s) == pytest.approx(3.57696e-3)
    fp8 = Deployment.make(model, b200, 1, weights_dtype="fp8", efficiency=kernel)
    assert float(decode_step(fp8, 100, 1000).overhead_s) == pytest.approx(2.81952e-3)


def test_non_nvlink_links_keep_the_flat_model(kernel):
    """MI300X (Infinity Fabric): the curves do not apply; TP8 of Llama 3.1 70B at 64 tokens costs what the default
    profile's 8 µs + 2·7/8·1,048,576 B ÷ (0.27·link) does, per all-reduce."""
    mi = load_accelerator("mi300x")
    dep = Deployment.make(load_model("llama-3.1-70b"), mi, 8, efficiency=kernel)
    expected = 160 * (8e-6 + 2 * 7 / 8 * 1_048_576 / (mi.interconnect_bytes_per_s * 0.27))
    assert float(comm_time_s(dep, 64)[0]) == pytest.approx(expected)


def test_scalar_profile_is_the_field_defaults_and_carries_no_curves():
    e = Efficiency.scalar()
    assert e == Efficiency() == Efficiency.from_file("scalar")
    assert e.kernels is None and "kernels" not in e.as_dict()
    assert (e.compute, e.memory, e.interconnect, e.step_overhead_s) == (0.74, 0.84, 0.27, 2.7e-3)


def test_the_shipped_step_model_is_the_kernel_profile_at_its_fitted_fractions():
    """What a bare request, a bare Deployment and `--efficiency-file default` get: step-v8, the kernel curves at the
    fractions evidence.fractions's procedure fitted on seed 0's two thirds of the 196 published rows (0.6864 /
    0.8959 / 3.806 ms / kv_reread 0.3868 / dequant_memory 0.9495 / loop 0.9806 ms,
    evidence/fractions/choice-196/step-v4-seed0/report.json), shipped as 0.69 / 0.90 / 3.8 ms / 0.39 / 0.95 /
    0.98 ms; interconnect and collective latency stay the scalar set's (used on links the curves do not cover)."""
    import json
    from pathlib import Path

    from kokuban.usecases.request import EfficiencyRequest

    e = Efficiency.shipped()
    assert e.kernels == KernelCurves()
    assert (e.compute, e.memory, e.step_overhead_s, e.kv_reread, e.dequant_memory, e.loop_overhead_s) == (
        0.69, 0.90, 3.8e-3, 0.39, 0.95, 0.98e-3)
    report = json.loads((Path(__file__).resolve().parents[1] / "evidence/fractions/choice-196/step-v4-seed0/"
                         "report.json").read_text())
    fit = report["profiles"]["default"]["per_seed"][0]["fitted"]
    assert (round(fit["compute"], 2), round(fit["memory"], 2), round(fit["step_overhead_s"], 4),
            round(fit["kv_reread"], 2), round(fit["dequant_memory"], 2), round(fit["loop_overhead_s"], 5)) == (
        0.69, 0.90, 3.8e-3, 0.39, 0.95, 0.00098)
    assert (e.interconnect, e.collective_latency_s, e.overlap, e.kv_memory) == (0.27, 8e-6, 1.0, None)
    # TensorRT-LLM's bytes outside its KV pool are the engine profile's (data/engines.toml), not the step model's
    assert e.engine_non_torch_bytes is None
    # its terms beside the fractions: llama.cpp's per-SM bounds and a TP group's barrier wait are on
    assert (e.kernels.ggml_mmq_ops_per_cycle, e.kernels.ggml_sm_stream_bytes_per_cycle, e.kernels.tp_sync_loss) == (
        520.0, 5.5, 0.14)
    assert STEP_MODEL == "step-v8" and set(PROFILES) == {"default", "kernel", STEP_MODEL, "scalar"}
    assert e == Efficiency.kernel_calibrated() == Efficiency.from_file("default") == Efficiency.from_file("kernel")
    assert e == Efficiency.from_file("step-v8")
    assert Deployment.make(load_model("llama-3.1-8b"), load_accelerator("h100-sxm")).efficiency == e
    assert EfficiencyRequest().efficiency_spec() == e
    # a weight-bound step prices its weight read at 0.90 of HBM: Llama-3.1-8B bf16 body + LM head on an H100,
    # (6,979,588,096 + 525,336,576)·2 B = 15,009,849,344 B ÷ (3.35e12 · 0.90 = 3.015e12 B/s) = 4.9784 ms
    dep = Deployment.make(load_model("llama-3.1-8b"), load_accelerator("h100-sxm"))
    assert float(decode_step(dep, 1, 1024).weights_s) == pytest.approx(15_009_849_344 / 3.015e12, rel=1e-9)


def test_a_retired_profile_name_or_curve_field_is_a_one_line_error_listing_what_is_allowed(tmp_path, capsys):
    """A step model no longer shipped (`--efficiency-file kernel-2026-12-05c`, no such file) names the profiles
    there are; a saved efficiency whose `kernels` table has a field the curves no longer have (`own_pcie`) names the
    fields there are. Both are one line on the command line, exit code 2."""
    with pytest.raises(KokubanError, match="a named profile is one of: default, kernel, step-v8, scalar") as err:
        Efficiency.from_file("kernel-2026-12-05c")
    assert err.value.field == "efficiency_file"
    path = tmp_path / "old.json"
    path.write_text(json.dumps({"compute": 0.7, "kernels": {"own_pcie": False, "m_half_tokens": 70}}))
    with pytest.raises(KokubanError, match=r"unknown kernels field\(s\) \['own_pcie'\]; allowed: .*tp_sync_loss"):
        Efficiency.from_file(str(path))
    for bad in ("kernel-2026-12-05c", str(path)):
        assert main(["estimate", "llama-3.1-8b", "--gpu", "h100-sxm", "--efficiency-file", bad]) == 2
        lines = capsys.readouterr().err.strip().splitlines()
        assert len(lines) == 1 and ("allowed" in lines[0] or "one of" in lines[0])


# ---- the profile as a file / name ---------------------------------------------------------------------
def test_named_profile_and_file(tmp_path):
    assert Efficiency.from_file("kernel") == Efficiency.kernel_calibrated()
    path = tmp_path / "eff.json"
    path.write_text(json.dumps({"compute": 0.7, "kernels": {"m_half_tokens": 40}}))
    e = Efficiency.from_file(str(path))
    assert e.compute == 0.7 and e.kernels == KernelCurves(m_half_tokens=40)
    path.write_text(json.dumps({"kernels": {"m_half": 40}}))
    with pytest.raises(KokubanError, match="unknown kernels field"):
        Efficiency.from_file(str(path))
    with pytest.raises(KokubanError):
        KernelCurves(fp8_ratio=0.0)


def test_accuracy_report_of_the_kernel_profile_has_its_splits_and_worst_rows(kernel, capsys):
    acc = accuracy(kernel)
    assert {"by_regime", "by_workload", "by_weights", "by_engine", "bootstrap"} <= set(acc.summary)
    assert len(acc.worst) == WORST_ROWS and all(p.terms["step_time_s"] > 0 for p in acc.worst)
    assert main(["accuracy", "--efficiency-file", "kernel", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["efficiency"]["kernels"]["m_half_tokens"] == 103.0 and len(out["worst"]) == WORST_ROWS


# ---- properties ------------------------------------------------------------------------------------------
@SETTINGS
@given(e=st.floats(0.01, 1.0), m=st.floats(1.0, 1e6), dm=st.floats(0.0, 1e6), mh=st.floats(0.0, 1e4))
def test_gemm_fraction_in_range_and_monotone(e, m, dm, mh):
    a, b = float(gemm_fraction(e, m, mh)), float(gemm_fraction(e, m + dm, mh))
    assert 0 < a <= e <= 1 and a <= b + 1e-15


@SETTINGS
@given(s=st.floats(0.0, 1e10), ds=st.floats(1.0, 1e10), n=st.integers(2, 72), link=st.floats(1e9, 2e12),
       f=st.floats(0.05, 1.0))
def test_allreduce_time_increases_with_bytes(s, ds, n, link, f):
    a = float(allreduce_time_s(s, n, link, 3e-6, 25.7e-6, f))
    assert 0 < a < float(allreduce_time_s(s + ds, n, link, 3e-6, 25.7e-6, f))


@SETTINGS
@given(gpu=st.sampled_from(["h100-sxm", "h200", "b200", "a100-80gb"]),
       model=st.sampled_from(["llama-3.1-70b", "qwen3-235b-a22b", "llama-3.1-8b"]),
       layout=st.sampled_from(["tp", "ep"]), tokens=st.floats(1.0, 1e5),
       profile=st.sampled_from(["kernel", "default"]))
def test_crossing_a_node_is_never_faster(kernel, gpu, model, layout, tokens, profile):
    """The same 16-GPU group, once inside one 16-GPU domain, once across two 8-GPU nodes, in either profile."""
    efficiency = kernel if profile == "kernel" else Efficiency()
    m = load_model(model)
    if layout == "ep" and not m.is_moe:
        layout = "tp"
    acc = load_accelerator(gpu)
    inside = Deployment.make(m, replace(acc, gpus_per_node=16), 16, layout=layout, efficiency=efficiency)
    across = Deployment.make(m, replace(acc, gpus_per_node=8), 16, layout=layout, efficiency=efficiency)
    assert collective_link(16, 8, acc.interconnect_bytes_per_s, acc.scaleout_bytes_per_s, 1e-5, 0.7, 0.8).crosses_node
    t_in, t_out = float(comm_time_s(inside, tokens)[0]), float(comm_time_s(across, tokens)[0])
    assert np.isfinite(t_out) and t_out >= t_in > 0


@SETTINGS
@given(batch=st.floats(1, 4096), context=st.floats(1, 32768),
       dtype=st.sampled_from(["bf16", "fp8", "int4-g128"]))
def test_kernel_step_times_positive_and_more_batch_never_faster(kernel, batch, context, dtype):
    dep = Deployment.make(load_model("llama-3.1-8b"), load_accelerator("h100-sxm"), 2, weights_dtype=dtype,
                          efficiency=kernel)
    a, b = decode_step(dep, batch, context), decode_step(dep, batch + 1, context)
    assert 0 < float(a.step_time_s) <= float(b.step_time_s) and np.isfinite(float(b.step_time_s))


def test_repeated_holdout_pools_each_splits_held_out_rows():
    """Two stub 'calibrations' (no fit: the scalar set, rows a, b held out in split 0 and b, c in split 1)
    pool to 4 rows: b twice. The pooled median is the median of those four rows' errors from `accuracy`."""
    from types import SimpleNamespace

    from kokuban.validation.calibrate import repeated_holdout

    preds = {p.id: p for p in accuracy(Efficiency()).predictions}
    ids = list(preds)[:3]
    held = {0: ids[:2], 1: ids[1:]}

    def stub(seed, fraction):
        return SimpleNamespace(after=Efficiency(), params=("compute",), holdout_ids=tuple(held[seed]),
                               holdout_rows=2, holdout_after={"median_abs_error": 0.0, "p90_abs_error": 0.0},
                               train_after={"median_abs_error": 0.25, "p90_abs_error": 0.5})

    out = repeated_holdout([0, 1], procedures={"stub": stub})
    pooled = out["profiles"]["stub"]["pooled"]
    errors = [preds[i].error for i in ids[:2] + ids[1:]]
    assert pooled["count"] == 4
    assert pooled["median_abs_error"] == pytest.approx(float(np.median(errors)))
    assert [s["fitted"] for s in out["profiles"]["stub"]["per_seed"]] == [{"compute": 0.74}] * 2
    assert [(s["train_median_abs_error"], s["train_p90_abs_error"]) for s in out["profiles"]["stub"]["per_seed"]] == [
        (0.25, 0.5)] * 2


def test_catalog_node_fields_are_checked_and_sourced():
    """Every entry with a node states its NIC and a note with a source; a negative node size is one-line refused."""
    from kokuban.specs.catalog import _checked_entry

    for gpu in ("h100-sxm", "h200", "b200", "gb200", "a100-80gb", "mi300x"):
        acc = load_accelerator(gpu)
        assert acc.gpus_per_node in (8, 72) and acc.scaleout_bytes_per_s in (25e9, 50e9)
    entry = {"id": "x", "memory_bytes": 1e9, "memory_bandwidth_bytes_per_s": 1e12, "flops_bf16": 1e14}
    assert _checked_entry(entry, "x").gpus_per_node == 0
    with pytest.raises(KokubanError, match="gpus_per_node"):
        _checked_entry(entry | {"gpus_per_node": -1}, "x")


def test_catalog_gemm_measurements_are_sourced_and_checked():
    """Every entry with a vendor-measured GEMM (`maf_flops_*`) quotes it with its source; only the AMD MI300X and
    MI325X have one; a negative figure is one-line refused."""
    from kokuban.specs.catalog import _checked_entry, accelerator_catalog

    measured = {a.id: a for a in accelerator_catalog().values() if a.max_achievable_flops}
    assert sorted(measured) == ["mi300x", "mi325x"]
    for acc in measured.values():
        note = acc.extra["maf_note"]
        assert "github.com/ROCm/rocm-blogs" in note and "quote:" in note
        for dtype, flops in acc.max_achievable_flops.items():
            assert f"{flops / 1e12:.0f} TFLOPs" in note and flops < acc.flops(dtype)
    entry = {"id": "x", "memory_bytes": 1e9, "memory_bandwidth_bytes_per_s": 1e12, "flops_bf16": 1e14}
    with pytest.raises(KokubanError, match="maf_flops_fp8"):
        _checked_entry(entry | {"maf_flops_fp8": -1.0}, "x")


def test_plain_nccl_engine_pays_nccls_allreduce_latency(kernel):
    """gpt-fast all-reduces through torch.distributed (NCCL). Llama 2 70B (hidden 8192, 80 layers) TP8 on A100
    (NVLink 300 GB/s), batch 1: message 1·8192·2 = 16,384 B. NCCL: α = 5.7 + 1.77·7 = 18.09 µs, ring
    2·7/8·16,384 B ÷ (0.65·300e9) = 0.147 µs → 18.237 µs, × 2·80 = 2.918 ms. The custom kernel's one-shot:
    3 + 7·16,384 ÷ (0.72·300e9) = 3.531 µs, × 160 = 0.565 ms."""
    from kokuban.validation.accuracy import load_published, row_efficiency

    rows = {r.id: r for r in load_published()}
    gptfast = row_efficiency(rows["gptfast-llama2-70b-bf16-tp8-a100"], kernel)
    assert gptfast.kernels.plain_nccl and not kernel.kernels.plain_nccl
    trtllm = rows["trtllm10-llama31-405b-h200-fp8-tp8-128-2048"]
    assert row_efficiency(trtllm, kernel) == kernel  # TensorRT-LLM keeps its custom all-reduce
    assert row_efficiency(rows["gptfast-llama2-70b-bf16-tp8-a100"], Efficiency()) == Efficiency()  # scalar: flat
    model, a100 = load_model("llama-2-70b"), load_accelerator("a100-80gb")
    nccl_s, _ = comm_time_s(Deployment.make(model, a100, 8, efficiency=gptfast), 1)
    assert float(nccl_s) == pytest.approx(160 * (5.7e-6 + 1.77e-6 * 7 + 2 * 7 / 8 * 16_384 / (0.65 * 300e9)))
    assert float(nccl_s) == pytest.approx(2.918e-3, rel=1e-3)
    custom_s, _ = comm_time_s(Deployment.make(model, a100, 8, efficiency=kernel), 1)
    assert float(custom_s) == pytest.approx(160 * (3e-6 + 7 * 16_384 / (0.72 * 300e9)))
    assert float(custom_s) == pytest.approx(0.565e-3, rel=1e-3)


def test_calibrating_the_kernel_profile_fits_compute_memory_and_step(monkeypatch):
    """`kokuban calibrate --source published --efficiency-file kernel` fits `KERNEL_PARAMS` (compute, memory, the
    step, the pre-XQA KV re-read share, the fused dequantising rate and the decode loop's step) from the shipped
    fractions; without it the scalar set's four fields are fitted from the textbook ones. evidence.fractions's
    procedure for the shipped profile starts from the shipped fractions too. The fit itself is stubbed: only the
    choice is tested."""
    import kokuban.validation.calibrate as cal
    from kokuban.usecases.validation import CalibrateRequest, run_calibrate

    seen = []
    monkeypatch.setattr(cal, "calibrate_published", lambda params, **kw: seen.append((tuple(params), kw["start"])))
    run_calibrate(CalibrateRequest(source="published", efficiency_file="kernel"))
    run_calibrate(CalibrateRequest(source="published"))
    assert seen[0][0] == ("compute", "memory", "step_overhead_s", "kv_reread", "dequant_memory", "loop_overhead_s")
    assert seen[0][1].kernels is not None
    assert seen[0][1] == Efficiency.shipped()
    assert seen[1][0] == ("compute", "memory", "interconnect", "step_overhead_s") and seen[1][1].kernels is None
    assert seen[1][1] == Efficiency.textbook()
    cal.profile_procedures()["default"](0, 1 / 3)
    assert seen[2][0] == cal.KERNEL_PARAMS and seen[2][1] == Efficiency.shipped()


def test_the_shipped_step_models_held_out_figures():
    """`KERNEL_PROFILE_FRACTIONS`' comment: step-v8 on seed 0's 59 held-out published rows (those its fractions were
    not fitted on) reads median |error| 11.2 %, p90 33.4 %, as `kokuban calibrate --source published
    --efficiency-file kernel` prints before it fits."""
    from kokuban.validation.calibrate import holdout_mask

    preds = accuracy(Efficiency.shipped()).predictions
    held = holdout_mask([p.id for p in preds])
    err = np.array([p.error for p in preds])[held]
    assert (len(preds), int(held.sum())) == (196, 59)
    assert (round(100 * float(np.median(err)), 1), round(100 * float(np.percentile(err, 90)), 1)) == (11.2, 33.4)
