"""The three-part cost of a decode token adds up to the token's cost, communication overlapped or not."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kokuban.core import cost, roofline
from kokuban.specs.catalog import load_accelerator, load_model
from kokuban.specs.deployment import Deployment
from kokuban.specs.hardware import Efficiency


def test_split_sums_with_overlapped_comm_llama70b():
    """The issue's case: 8× H100, overlap_comm, batch 64 at 4096. The old split charged comm on top of a roof that
    already hid it and summed to $1.70/M while the token costs $1.32/M."""
    from kokuban.specs.hardware import Efficiency

    # the shipped step model without a TP group's barrier wait (which scales the whole body, `tp_sync_loss`), so that
    # the step is the overlapped roof and collectives plus the fixed overhead: the split is the point
    dep = Deployment.make(load_model("llama-3.1-70b"), load_accelerator("h100-sxm"), 8, overlap_comm=True,
                          efficiency=Efficiency.shipped().with_kernels(tp_sync_loss=0.0))
    step = roofline.decode_step(dep, 64, 4096)
    total = float(cost.usd_per_m_output(dep, step))
    parts = cost.decode_split_usd_per_m(dep, step)
    assert sum(float(v) for v in parts.values()) == pytest.approx(total, rel=1e-12)
    # by hand: overlapped, the step is max(roof, comm) + overhead, so comm's exposed share is comm·max/(roof+comm)
    roof, comm = float(step.roof_s), float(step.comm_s)
    assert float(step.step_time_s) == pytest.approx(max(roof, comm) + float(step.overhead_s))
    per_token = dep.usd_per_s / 64 * 1e6
    assert float(parts["comm"]) == pytest.approx(per_token * comm * max(roof, comm) / (roof + comm))
    assert 1.2 < total < 1.45  # the issue's $1.32/M
    # the old split (comm charged in full) exceeds the token's cost: what this test would have caught
    assert per_token * (roof + comm + float(step.overhead_s)) > total * 1.2


@given(
    model=st.sampled_from(["llama-3.1-8b", "llama-3.1-70b", "deepseek-v3", "qwen3-235b-a22b", "gpt-oss-120b"]),
    gpu=st.sampled_from(["h100-sxm", "h200", "b200", "mi300x"]),
    gpus=st.sampled_from([1, 2, 8]),
    ep=st.booleans(),
    overlap_comm=st.booleans(),
    overlap=st.floats(0.0, 1.0),
    batch=st.integers(1, 512),
    context=st.integers(1, 32768),
)
def test_split_always_sums_to_the_token_cost(model, gpu, gpus, ep, overlap_comm, overlap, batch, context):
    m = load_model(model)
    layout = "ep" if ep and m.is_moe else "tp"
    dep = Deployment.make(m, load_accelerator(gpu), gpus, layout=layout, overlap_comm=overlap_comm,
                          efficiency=Efficiency().updated(overlap=overlap), price_per_hour_usd=2.0)
    step = roofline.decode_step(dep, batch, context)
    parts = cost.decode_split_usd_per_m(dep, step)
    assert all(float(v) >= 0 for v in parts.values())
    assert sum(float(v) for v in parts.values()) == pytest.approx(float(cost.usd_per_m_output(dep, step)), rel=1e-9)


def test_money_helpers_by_hand():
    dep = Deployment.make(load_model("llama-3.1-8b"), load_accelerator("h100-sxm"), 4, price_per_hour_usd=3.6)
    assert cost.usd_of_seconds(dep, 10.0) == pytest.approx(4 * 3.6 / 3600 * 10)  # $0.04
    assert cost.usd_per_m_tokens(0.04, 20_000) == pytest.approx(2.0)  # $0.04 over 20k tokens = $2/M
    assert cost.usd_for_tokens(250_000, 2.0) == pytest.approx(0.5)
