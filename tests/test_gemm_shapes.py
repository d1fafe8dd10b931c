"""The GEMM shape factor (step-v4) and an accelerator's own kernel constants: expected values derived by hand."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kokuban.core.roofline import linear_compute_fractions
from kokuban.errors import KokubanError
from kokuban.specs.catalog import load_accelerator, load_model
from kokuban.specs.deployment import Deployment
from kokuban.specs.hardware import Accelerator, Efficiency
from kokuban.specs.kernels import KernelCurves, gemm_shape_factor, layer_shape_factor


def test_gemm_shape_factor_by_hand():
    # fp8 halves (N 1581, K 215): a QKV projection of Llama 3.1 70B split eight ways, N 1280, K 8192
    assert gemm_shape_factor(1280, 8192, 1581, 215) == pytest.approx(1280 / 2861 * 8192 / 8407)
    assert gemm_shape_factor(1280, 8192, 1581, 215) == pytest.approx(0.435954, abs=1e-6)
    # bf16 halves (45, 92) barely move it: 1280/1325 · 8192/8284 = 0.966038 · 0.988894
    assert gemm_shape_factor(1280, 8192, 45, 92) == pytest.approx(0.955309, abs=1e-6)
    assert gemm_shape_factor(1280, 8192, 0, 0) == 1.0  # no shape term


def by_hand(shapes, n_half=1581, k_half=215):
    """Each GEMM's FLOPs (N·K per token) at its own rate N/(N + N_half)·K/(K + K_half), summed: Σ N·K ÷ Σ N·K/s; the
    halves are fp8's."""
    flops = [n * k for n, k in shapes]
    rates = [n / (n + n_half) * k / (k + k_half) for n, k in shapes]
    return sum(flops) / sum(f / r for f, r in zip(flops, rates, strict=True))


def test_llama_70b_gemm_shapes_and_layer_factor_by_hand():
    """64 query heads, 8 KV heads of 128, d 8192, MLP 28,672. TP8: QKV (64/8 + 2·1)·128 = 1280 wide, K 8192; output
    8192 wide, K 64·128/8 = 1024; gate+up 2·28,672/8 = 7168, K 8192; down 8192, K 3584. TP1: 10,240, 8192·8192,
    57,344, 28,672."""
    model, h100 = load_model("llama-3.1-70b"), load_accelerator("h100-sxm")
    tp8 = Deployment.make(model, h100, 8, weights_dtype="fp8")
    shapes = ((1280, 8192), (8192, 1024), (7168, 8192), (8192, 3584))
    assert tp8.gemm_shapes == (shapes, ())
    tp1 = Deployment.make(model, h100, 1, weights_dtype="fp8")
    assert tp1.gemm_shapes == (((10240, 8192), (8192, 8192), (57344, 8192), (8192, 28672)), ())
    assert layer_shape_factor(shapes, 1581, 215) == pytest.approx(by_hand(shapes), rel=1e-12)
    assert f"{by_hand(shapes):.4f}" == "0.7284"  # the figure docs/history/validation-journal.md quotes (0.728)
    assert KernelCurves().shape_factor(tp1.gemm_shapes[0], "fp8") == pytest.approx(by_hand(tp1.gemm_shapes[0]))
    assert f"{by_hand(tp1.gemm_shapes[0]):.4f}" == "0.8920"
    assert layer_shape_factor([], 1581, 215) == 1.0


def test_moe_expert_shapes_follow_the_layout():
    """Mixtral 8x7B (32 heads, 8 KV heads of 128, d 4096, experts 14,336 wide, no dense MLP): TP2 splits each expert,
    gate+up 2·14,336/2 = 14,336 wide, down K 7168; EP2 keeps them whole (28,672 and 14,336) and the attention too."""
    model, h100 = load_model("mixtral-8x7b"), load_accelerator("h100-sxm")
    tp2 = Deployment.make(model, h100, 2)
    assert tp2.gemm_shapes == (((3072, 4096), (4096, 2048)), ((14336, 4096), (4096, 7168)))
    ep2 = Deployment.make(model, h100, 2, layout="ep")
    assert ep2.gemm_shapes == (((6144, 4096), (4096, 4096)), ((28672, 4096), (4096, 14336)))


def test_the_step_prices_a_split_fp8_gemm_slower():
    """Kernel profile: the dense fraction of fp8 Llama 3.1 70B on eight H100s at M = 1000 tokens is compute · 0.92 ·
    0.7284 · 1000/(1000 + 103); on one H100 the shape factor is 0.8920: TP8 reaches 0.817 of TP1's rate per FLOP."""
    e, model, h100 = Efficiency.shipped(), load_model("llama-3.1-70b"), load_accelerator("h100-sxm")
    tp8 = Deployment.make(model, h100, 8, weights_dtype="fp8")
    tp1 = Deployment.make(model, h100, 1, weights_dtype="fp8")
    shapes = ((1280, 8192), (8192, 1024), (7168, 8192), (8192, 3584))  # test_llama_70b_gemm_shapes_and_layer_factor
    expected = e.compute * 0.92 * by_hand(shapes) * 1000 / 1103
    assert float(linear_compute_fractions(tp8, 1000.0)[0]) == pytest.approx(expected)
    ratio = float(linear_compute_fractions(tp8, 1000.0)[0]) / float(linear_compute_fractions(tp1, 1000.0)[0])
    assert ratio == pytest.approx(by_hand(shapes) / by_hand(tp1.gemm_shapes[0]), rel=1e-12)
    assert f"{ratio:.3f}" == "0.817"


@settings(max_examples=200, deadline=None)
@given(n=st.floats(1, 1e6), k=st.floats(1, 1e6), nh=st.floats(0, 1e4), kh=st.floats(0, 1e4),
       grow=st.floats(1, 100))
def test_shape_factor_is_a_fraction_that_grows_with_the_shape(n, k, nh, kh, grow):
    s = gemm_shape_factor(n, k, nh, kh)
    assert 0 < s <= 1
    assert gemm_shape_factor(n * grow, k, nh, kh) >= s and gemm_shape_factor(n, k * grow, nh, kh) >= s


@settings(max_examples=100, deadline=None)
@given(shapes=st.lists(st.tuples(st.floats(1, 1e5), st.floats(1, 1e5)), min_size=1, max_size=6),
       nh=st.floats(0, 1e4), kh=st.floats(0, 1e4))
def test_a_layers_factor_lies_between_its_gemms(shapes, nh, kh):
    each = [gemm_shape_factor(n, k, nh, kh) for n, k in shapes]
    assert min(each) * (1 - 1e-12) <= layer_shape_factor(shapes, nh, kh) <= max(each) * (1 + 1e-12)


def test_an_a100_runs_its_own_measured_constants():
    """accelerators.toml a100-80gb: its own tables (kernel_note) replace the medians on an A100 deployment: M_half
    113, all-reduce 0.56 of the link; `per_accelerator=False` keeps the medians (103, 0.72); an H100 has none."""
    model, a100 = load_model("llama-3.1-70b"), load_accelerator("a100-80gb")
    k = Deployment.make(model, a100, 4).efficiency.kernels
    assert (k.m_half_tokens, k.allreduce_fraction, k.allreduce_two_shot_s, k.gemm_ceiling_factor) == (
        113.0, 0.56, 37.4e-6, 1.099)
    medians = Efficiency.shipped().with_kernels(per_accelerator=False)
    k = Deployment.make(model, a100, 4, efficiency=medians).efficiency.kernels
    assert (k.m_half_tokens, k.allreduce_fraction, k.gemm_ceiling_factor) == (103.0, 0.72, 1.0)
    assert Deployment.make(model, load_accelerator("h100-sxm"), 4).efficiency == Efficiency.shipped()
    # a value someone set stays theirs: only the medians give way to the GPU's own
    mine = Efficiency.shipped().with_kernels(allreduce_fraction=0.8)
    k = Deployment.make(model, a100, 4, efficiency=mine).efficiency.kernels
    assert (k.allreduce_fraction, k.m_half_tokens) == (0.8, 113.0)
    # the A100's bf16 ceiling: compute · 1.099 (its e 0.911 over the medians' 0.829)
    assert KernelCurves(gemm_ceiling_factor=1.099).attainable_factor(a100, "fp16") == 1.099


def test_a_catalog_kernel_constant_is_checked_at_the_boundary():
    base = {"id": "my-gpu", "memory_bytes": 80e9, "memory_bandwidth_bytes_per_s": 2e12, "flops_bf16": 300e12}
    with pytest.raises(KokubanError) as err:
        Accelerator.from_dict(base | {"kernel_m_half": 90})
    assert "kernel_m_half_tokens" in str(err.value) and err.value.field == "kernel_m_half"
    with pytest.raises(KokubanError) as err:
        Accelerator.from_dict(base | {"kernel_allreduce_fraction": 1.5})
    assert err.value.field == "kernel_allreduce_fraction" and "my-gpu" in str(err.value) and "(0, 1]" in str(err.value)
    assert Accelerator.from_dict(base | {"kernel_m_half_tokens": 90}).kernel_constants == {"m_half_tokens": 90.0}


def test_curves_without_the_shape_term_or_own_constants_are_the_m_curve_alone():
    """The kernel curves with the shape term switched off (N_half = K_half = 0) and no accelerator's own constants
    (`per_accelerator=False`), M_half 70, compute 0.72: one H100 at 70 bf16 tokens reaches 0.72 · 70/140 = 0.36 of
    peak, an A100 too (its own M_half 113 and ceiling 1.099 not applied)."""
    plain = Efficiency.kernel_calibrated({"compute": 0.72}, {"m_half_tokens": 70.0, "n_half_bf16": 0.0,
                                                              "k_half_bf16": 0.0, "per_accelerator": False})
    model = load_model("llama-3.1-8b")
    for gpu in ("h100-sxm", "a100-80gb"):
        dep = Deployment.make(model, load_accelerator(gpu), 1, efficiency=plain)
        assert float(linear_compute_fractions(dep, 70.0)[0]) == pytest.approx(0.36)
