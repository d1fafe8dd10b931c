"""Fast and slow lanes: the train timetable, checked against the core's `generation` and by hand."""

from __future__ import annotations

import pytest

from kokuban.core import memory
from kokuban.economics.lanes import lane_prices, lane_table
from kokuban.errors import KokubanError
from kokuban.specs.catalog import load_accelerator, load_model
from kokuban.specs.deployment import Deployment
from kokuban.specs.hardware import Efficiency
from kokuban.usecases.estimate import generation

DEP = Deployment.make(load_model("llama-3.1-8b"), load_accelerator("h100-sxm"), efficiency=Efficiency.textbook())
FIT = int(memory.max_batch(DEP, 1000 + 100))


def test_timetable_by_hand():
    # λ = 10 requests/s. W = 2 s: 20 arrivals per departure → batch 20; a request waits 2 ÷ 2 = 1 s on average.
    # W = 0: each request leaves alone at once. W = 10⁴ s: 10⁵ arrivals, the train fills first:
    # batch = B_fit, it fills in B_fit ÷ 10 s, mean wait B_fit ÷ 20 s.
    t = lane_table(DEP, 10.0, 1000, 100, [0.0, 2.0, 1e4])
    assert t["batch"].tolist() == [1, 20, FIT]
    assert t["queue_wait_s"].tolist() == pytest.approx([0.0, 1.0, FIT / 20])
    assert t["full"].tolist() == [False, False, True]
    assert t["departure_interval_s"].tolist() == pytest.approx([0.1, 2.0, FIT / 10])
    for i, b in enumerate((1, 20, FIT)):
        g = generation(DEP, b, 1000, 100)
        row = t.iloc[i]
        assert row["ttft_s"] == pytest.approx(row["queue_wait_s"] + g.ttft_s, rel=1e-12)
        assert row["tpot_s"] == pytest.approx(g.decode_time_s / 99, rel=1e-12)
        assert row["usd_per_m_output_all_in"] == pytest.approx(g.usd_per_request / 100 * 1e6, rel=1e-12)
        # deployments the timetable keeps busy: service time × departures per second (λ ÷ B)
        assert row["deployments_busy"] == pytest.approx(g.total_time_s * 10 / b, rel=1e-12)


def test_fast_lane_is_the_largest_batch_the_targets_allow():
    p = lane_prices(DEP, 10.0, 1000, 100, tpot_target_s=0.010, ttft_target_s=3.0)
    fast = p.fast
    assert fast["tpot_s"] <= 0.010 and fast["ttft_s"] <= 3.0
    # one more request per train breaks a target
    nxt = lane_table(DEP, 10.0, 1000, 100, [(fast["batch"] + 1) / 10.0]).iloc[0]
    assert nxt["tpot_s"] > 0.010 or nxt["ttft_s"] > 3.0
    assert p.slow["batch"] == FIT  # an hour's window at 10/s fills every train
    assert p.price_multiplier == pytest.approx(fast["usd_per_m_output_all_in"] / p.slow["usd_per_m_output_all_in"])
    assert p.price_multiplier > 1
    # TTFT grows with the window: at λ = 10/s a 3 s budget allows at most ~60 requests per train (wait 3 s)
    assert fast["batch"] < 60


def test_unmeetable_targets_name_the_constraint_and_the_shortfall():
    # batch 1 reads 15.01 GB of weights per token at 2.68e12 B/s: ≥ 5.6 ms, so 1 ms is impossible
    with pytest.raises(
        KokubanError,
        match=r"tpot_target_s: no batch meets 0.001 s per output token: a lone request already takes 0.005\d* s",
    ):
        lane_prices(DEP, 10.0, 1000, 100, tpot_target_s=0.001)
    with pytest.raises(
        KokubanError,
        match=r"ttft_target_s: no batch meets a first-token time of 0.001 s: the prefill of one 1000-token prompt "
               "alone",
    ):
        lane_prices(DEP, 10.0, 1000, 100, ttft_target_s=0.001)
    with pytest.raises(KokubanError, match="give a latency target"):
        lane_prices(DEP, 10.0, 1000, 100)


@pytest.mark.parametrize("kw,msg", [
    ({"rate_per_s": 0.0}, "rate_per_s: must be a positive finite number, got 0.0"),
    ({"output": 1}, "at least 2"),
    ({"prompt": 200_000}, "exceeds llama-3.1-8b's maximum"),
])
def test_bad_lane_input(kw, msg):
    args = {"rate_per_s": 1.0, "prompt": 100, "output": 100} | kw
    with pytest.raises(KokubanError, match=msg):
        lane_table(DEP, args["rate_per_s"], args["prompt"], args["output"], [1.0])


def test_empty_windows_rejected():
    with pytest.raises(KokubanError, match="windows"):
        lane_table(DEP, 1.0, 100, 100, [])
