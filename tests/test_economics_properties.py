"""Properties of the economics wing (hypothesis, derandomized so a run cannot pass or fail by chance):
every `usd_per_m_output` it reports is the cost module's on the same decode step, and the batch curve's
shared and per-request parts add up to the token's cost, with communication overlapped or not."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kokuban.core import cost, memory, roofline
from kokuban.economics.batch import batch_curve, decode_columns, input_output
from kokuban.specs.catalog import load_accelerator, load_model
from kokuban.specs.deployment import Deployment
from kokuban.specs.hardware import Efficiency
from kokuban.usecases.economics import (
    ContextRequest,
    FrontierRequest,
    LanesRequest,
    run_context,
    run_frontier,
    run_lanes,
)

SETTINGS = settings(max_examples=60, deadline=None, derandomize=True)

# (model, accelerator, GPUs, layout): dense TP on one and several GPUs (all-reduces), MoE TP and EP
# (all-to-alls, expert touching), MLA; each tried with the shipped default (the kernel curves), the scalar set and
# the textbook fractions, with communication overlapped or not, and with kernels that hide only part of the shorter
# time (overlap < 1)
CONFIGS = [("llama-3.1-8b", "h100-sxm", 1, "tp"), ("llama-3.1-70b", "h100-sxm", 4, "tp"),
           ("mixtral-8x7b", "h200", 2, "tp"), ("qwen3-30b-a3b", "h100-sxm", 4, "ep"), ("deepseek-v3", "h200", 8, "ep")]
EFFICIENCIES = [Efficiency.shipped(), Efficiency.scalar(), Efficiency.textbook(), Efficiency().updated(overlap=0.4)]


def make(config, eff, overlap_comm):
    model, gpu, n, layout = config
    return Deployment.make(load_model(model), load_accelerator(gpu), n, layout=layout, efficiency=eff,
                           overlap_comm=overlap_comm)


deployments = st.builds(make, st.sampled_from(CONFIGS), st.sampled_from(EFFICIENCIES), st.booleans())


@st.composite
def points(draw):
    """A deployment and a (batch, context) at which that batch fits."""
    dep = draw(deployments)
    ctx = draw(st.integers(1, min(dep.model.max_context, 131_072)))
    fit = int(memory.max_batch(dep, ctx))
    if fit < 1:  # nothing fits this long: take the shortest context instead
        ctx, fit = 1, int(memory.max_batch(dep, 1))
    return dep, draw(st.integers(1, fit)), ctx


@SETTINGS
@given(points())
def test_reported_cost_is_the_cost_modules_on_the_same_step(point):
    dep, b, ctx = point
    step = roofline.decode_step(dep, b, ctx)
    cols = decode_columns(dep, b, ctx)
    assert float(cols["usd_per_m_output"]) == pytest.approx(float(cost.usd_per_m_output(dep, step)), rel=1e-12)
    # and that is USD/s × step ÷ B × 10⁶, written out
    hand = dep.num_gpus * dep.price_per_hour_usd / 3600 * float(step.step_time_s) / b * 1e6
    assert float(cols["usd_per_m_output"]) == pytest.approx(hand, rel=1e-12)
    parts = sum(float(cols[f"usd_per_m_output_{p}"]) for p in ("compute", "weights", "kv", "comm", "overhead"))
    assert parts == pytest.approx(float(cols["usd_per_m_output"]), rel=1e-9)
    # `kokuban io`: both prices are the cost module's, on the decode step and on the prefill of B prompts of L tokens
    io = input_output(dep, b, ctx)
    assert io.usd_per_m_output == pytest.approx(float(cost.usd_per_m_output(dep, step)), rel=1e-12)
    assert io.usd_per_m_input == pytest.approx(
        float(cost.usd_per_m_input(dep, roofline.prefill(dep, b, ctx))), rel=1e-12
    )


@SETTINGS
@given(points())
def test_curve_shared_and_per_request_parts_sum_to_the_total(point):
    dep, b, ctx = point
    curve = batch_curve(dep, ctx, min_batch=b, max_batch=min(b + 3, int(memory.max_batch(dep, ctx))))
    total = curve["usd_per_m_output"].to_numpy()
    np.testing.assert_allclose(
        curve["usd_per_m_output_shared"] + curve["usd_per_m_output_per_request"], total, rtol=1e-9
    )
    step = roofline.decode_step(dep, curve["batch"].to_numpy(), ctx)
    np.testing.assert_allclose(total, cost.usd_per_m_output(dep, step), rtol=1e-12)
    # every part is a cost: never negative, never NaN
    for column in ("usd_per_m_output_shared", "usd_per_m_output_per_request", "usd_per_m_output_comm_latency",
                   "usd_per_m_output_comm_bytes"):
        assert np.all(np.isfinite(curve[column])) and np.all(curve[column] >= 0)


def _assert_rows_priced_by_the_cost_module(dep, table):
    step = roofline.decode_step(dep, table["batch"].to_numpy(), table["context"].to_numpy())
    np.testing.assert_allclose(table["usd_per_m_output"], cost.usd_per_m_output(dep, step), rtol=1e-12)


def test_lanes_and_context_rows_are_the_cost_modules():
    lanes = run_lanes(LanesRequest(model="qwen3-30b-a3b", gpu="h100-sxm", gpus=4, layout="ep", rate=3, tpot=0.05))
    _assert_rows_priced_by_the_cost_module(lanes.deployment, lanes.table)
    ctx = run_context(ContextRequest(model="deepseek-v3", gpu="h200", gpus=8, layout="ep", points=10))
    _assert_rows_priced_by_the_cost_module(ctx.deployment, ctx.table)
    # an input token: the cost module's on one prefill of the row's context
    pre = roofline.prefill(ctx.deployment, 1, ctx.table["context"].to_numpy())
    np.testing.assert_allclose(ctx.table["usd_per_m_input"], cost.usd_per_m_input(ctx.deployment, pre), rtol=1e-12)


def test_frontier_rows_are_the_cost_modules():
    result = run_frontier(FrontierRequest(model="mixtral-8x7b", gpu=("h100-sxm",), counts="2,4", layouts="tp,ep"))
    spec, acc = load_model("mixtral-8x7b"), load_accelerator("h100-sxm")
    for (n, layout), rows in result.table.groupby(["gpus", "layout"]):
        dep = Deployment.make(spec, acc, int(n), layout=layout)
        _assert_rows_priced_by_the_cost_module(dep, rows)
