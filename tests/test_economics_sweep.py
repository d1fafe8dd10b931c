"""The sweep's fast paths (`decode_columns` block by block, the token terms looked up in `roofline.decode_table`)
give the general path's numbers: the same arithmetic, bit for bit, without the table; within 1e-12 with it (the
lookup reorders one product: B·(a·x) against (B·a)·x). Hypothesis, derandomized, on random deployments (dense TP,
MoE TP and EP, sliding windows, a linear-attention hybrid; the shipped, textbook, kernel and partial-overlap
efficiencies; communication overlapped or not) and random integer and fractional batch and context arrays."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_economics_properties import make  # (model, gpu, n, layout), efficiency, overlap_comm -> Deployment

from kokuban.core import cost, roofline
from kokuban.economics import batch as sweep
from kokuban.specs.catalog import load_accelerator, load_model
from kokuban.specs.deployment import Deployment
from kokuban.specs.hardware import PROFILES, Efficiency

SETTINGS = settings(max_examples=40, deadline=None, derandomize=True)
RTOL = 1e-12
BLOCK = 1000  # `decode_columns` block size in these tests, so a few thousand points make several blocks

CONFIGS = [("llama-3.1-8b", "h100-sxm", 1, "tp"), ("llama-3.1-70b", "h100-sxm", 4, "tp"),
           ("mixtral-8x7b", "h200", 2, "tp"), ("qwen3-30b-a3b", "h100-sxm", 4, "ep"), ("deepseek-v3", "h200", 8, "ep"),
           ("gemma-3-27b", "h100-sxm", 1, "tp"), ("qwen3-next-80b-a3b", "h200", 4, "tp")]
EFFICIENCIES = [PROFILES["default"](), PROFILES["scalar"](), Efficiency.textbook(), Efficiency().updated(overlap=0.4)]


deployments = st.builds(make, st.sampled_from(CONFIGS), st.sampled_from(EFFICIENCIES), st.booleans())


@st.composite
def sweeps(draw, whole: bool):
    """A deployment and batch and context arrays of 2–5 blocks' worth of points: whole numbers (batches 1 … top,
    top at most half the points, so the table is taken) or not (some fractional)."""
    dep = draw(deployments)
    n = draw(st.integers(2 * BLOCK + 1, 5 * BLOCK))
    top = draw(st.integers(1, n // 2))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    batch = rng.integers(1, top + 1, n).astype(np.float64)
    context = rng.integers(0, min(dep.model.max_context, 200_000) + 1, n).astype(np.float64)
    if not whole:
        batch = batch + rng.random(n) * draw(st.sampled_from([0.5, 1.0]))
        context = context + rng.random(n)
    return dep, batch, context


def columns(dep, batch, context, tables):
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(sweep, "BLOCK_POINTS", BLOCK)
        return sweep.decode_columns(dep, batch, context, tables=tables)


def assert_same(fast, general, rtol):
    assert list(fast) == list(general)
    for name, value in general.items():
        if value.dtype.kind == "U":
            np.testing.assert_array_equal(fast[name], value, err_msg=name)
        else:
            np.testing.assert_allclose(fast[name], value, rtol=rtol, atol=0, err_msg=name)


def scalar_columns(dep, b, ctx):
    """One point's columns from the scalar core, written out: decode_step, cost."""
    step = roofline.decode_step(dep, b, ctx)
    t = float(step.step_time_s)
    split = cost.decode_split_usd_per_m(dep, step)
    return {"bound": step.bound, "step_time_s": t, "compute_s_per_token": float(step.compute_s) / b,
            "weights_s_per_token": float(step.weights_s) / b, "kv_s_per_token": float(step.kv_s) / b,
            "tokens_per_s": b / t, "usd_per_m_output": float(cost.usd_per_m_output(dep, step))} | {
            f"usd_per_m_output_{part}": float(value) for part, value in split.items()}


def assert_points_are_the_scalar_cores(dep, batch, context, cols, rng):
    for i in rng.choice(batch.size, 12, replace=False):
        for name, value in scalar_columns(dep, float(batch[i]), float(context[i])).items():
            if isinstance(value, str):
                assert cols[name][i] == value, (name, i)
            else:
                assert cols[name][i] == pytest.approx(value, rel=RTOL, abs=0), (name, i)


@SETTINGS
@given(sweeps(whole=True))
def test_the_table_path_is_the_general_path_on_whole_numbers(sweep_):
    dep, batch, context = sweep_
    assert sweep._sweep_table(dep, batch, context) is not None  # the fast path is the one under test
    fast, general = columns(dep, batch, context, True), columns(dep, batch, context, False)
    assert_same(fast, general, RTOL)
    assert_points_are_the_scalar_cores(dep, batch, context, fast, np.random.default_rng(batch.size))


@SETTINGS
@given(sweeps(whole=False))
def test_fractional_points_take_the_general_path(sweep_):
    dep, batch, context = sweep_
    fast, general = columns(dep, batch, context, True), columns(dep, batch, context, False)
    assert_same(fast, general, 0.0)  # no block is whole, so both are decode_step's: the same numbers
    assert_points_are_the_scalar_cores(dep, batch, context, fast, np.random.default_rng(batch.size))


@SETTINGS
@given(sweeps(whole=True))
def test_blocks_are_the_unblocked_arithmetic_bit_for_bit(sweep_):
    # without the table every block runs decode_step and the cost module on its slice: element-wise arithmetic,
    # so the columns equal those of one decode_step over all the points exactly
    dep, batch, context = sweep_
    cols = columns(dep, batch, context, False)
    step = roofline.decode_step(dep, batch, context)
    np.testing.assert_array_equal(cols["step_time_s"], step.step_time_s)
    np.testing.assert_array_equal(cols["usd_per_m_output"], cost.usd_per_m_output(dep, step))
    np.testing.assert_array_equal(cols["kv_s_per_token"], step.kv_s / batch)
    np.testing.assert_array_equal(cols["bound"], step.bound)
    for part, value in cost.decode_split_usd_per_m(dep, step).items():
        np.testing.assert_array_equal(cols[f"usd_per_m_output_{part}"], value)


def test_the_table_is_decode_step_split_by_hand():
    # llama-3.1-8b on one H100: batches 1…4, contexts 0, 1000, 1001. Token terms at B are decode_step(B, 0);
    # a request at context c adds decode_step(1, c)'s attention and KV read, B times (B·a, B·k)
    dep = Deployment.make(load_model("llama-3.1-8b"), load_accelerator("h100-sxm"))
    table = roofline.decode_table(dep, 4)
    batch, context = np.array([1.0, 4.0, 2.0, 3.0]), np.array([0.0, 1000.0, 1001.0, 1000.0])
    step = table.step(batch, context)
    for i, (b, c) in enumerate(zip(batch, context, strict=True)):
        token, one = roofline.decode_step(dep, b, 0.0), roofline.decode_step(dep, 1.0, c)
        assert step.weights_s[i] == float(token.weights_s)
        assert step.attn_compute_s[i] == pytest.approx(b * float(one.attn_compute_s), rel=RTOL)
        assert step.kv_s[i] == pytest.approx(b * float(one.kv_s), rel=RTOL)
        assert step.compute_s[i] == pytest.approx(float(token.linear_compute_s) + b * float(one.attn_compute_s),
                                                  rel=RTOL)
    # decode at context 0 reads no KV; 4 requests at 1000 read 4 × 1000 tokens × 32 layers × 8 KV heads × 128 ×
    # (K, V) × 2 B = 4 × 1000 × 131,072 B = 524.288 MB at the HBM rate × the KV fraction; a request at 1001 reads
    # 1001/1000 of what it reads at 1000
    assert step.kv_s[0] == 0.0
    kv_rate = dep.accelerator.memory_bandwidth_bytes_per_s * dep.efficiency.kv_memory_fraction
    assert step.kv_s[1] == pytest.approx(4 * 1000 * 32 * 8 * 128 * 2 * 2 / kv_rate, rel=RTOL)
    assert step.kv_s[2] / 2 == pytest.approx(step.kv_s[3] / 3 * 1001 / 1000, rel=RTOL)
    # not whole, or outside 1…4: no lookup
    assert table.step(np.array([1.5]), np.array([10.0])) is None
    assert table.step(np.array([5.0]), np.array([10.0])) is None
    assert table.step(np.array([0.0]), np.array([10.0])) is None


def test_a_sweep_too_spread_for_a_table_prices_every_point_itself():
    dep = Deployment.make(load_model("llama-3.1-8b"), load_accelerator("h100-sxm"))
    n = 3 * BLOCK
    assert sweep._sweep_table(dep, np.arange(1.0, n + 1), np.zeros(n)) is None  # batches up to n > n / 2
    assert sweep._sweep_table(dep, np.full(n, 0.0), np.zeros(n)) is None  # batch 0
    assert sweep._sweep_table(dep, np.full(n, np.nan), np.zeros(n)) is None
    assert sweep._sweep_table(dep, np.full(n, 8.0), np.full(n, 4096.0)) is not None
