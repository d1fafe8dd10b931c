"""The TTFT knee of a load sweep (`validation.knee.ttft_knee`) on hand-built sweeps, its invariances (hypothesis),
the sweeps `validation.serving.knee_comparisons` finds among scored rows, and the printout."""

from __future__ import annotations

import math

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from kokuban.validation.knee import KNEE_FACTOR, Knee, ttft_knee
from kokuban.validation.serving import RowResult, ServingAccuracy, ServingRow, knee_comparisons, sweep_load


def test_the_briefs_sweep_by_hand():
    # loads 1, 10, 100 with TTFT 10, 15, 40 ms, K = 2: target 20 ms, first reached at 100 (15 < 20 ≤ 40), so
    # log knee = log 10 + ln(20/15) / ln(40/15) · (log 100 − log 10) = log 10 + 0.287682 / 0.980829 · log 10
    #          = log 10 · (1 + 0.293305) → knee = 10^1.293305 = 19.647
    assert KNEE_FACTOR == 2.0
    knee = ttft_knee([1, 10, 100], [0.010, 0.015, 0.040])
    assert knee.load == pytest.approx(19.647, rel=1e-4) and knee.bracket == 2


def test_never_reached():
    # target 2 × 10 = 20 ms; the highest TTFT is 19.9 ms
    assert ttft_knee([1, 4, 16], [0.010, 0.012, 0.0199]) == Knee(None, None)


def test_reached_between_the_lowest_load_and_the_next():
    # loads 1, 25, 100 with TTFT 10, 30, 50 ms: target 20 ms between 1 and 25, share ln(20/10) / ln(30/10)
    # = 0.693147 / 1.098612 = 0.630930 of the way in log load: knee = 25^0.630930 = e^(0.630930 · 3.218876)
    # = e^2.030899 = 7.6208
    knee = ttft_knee([1, 25, 100], [0.010, 0.030, 0.050])
    assert knee.load == pytest.approx(7.6208, rel=1e-4) and knee.bracket == 1
    # exactly 2 × at the second load: the knee is that load
    exact = ttft_knee([1, 25, 100], [0.010, 0.020, 0.050])
    assert exact.load == pytest.approx(25.0, rel=1e-12) and exact.bracket == 1


def test_non_monotone_ttft_keeps_the_first_crossing():
    # TTFT 10, 25, 15, 40 ms at 1, 2, 4, 8: target 20 ms is first crossed between 1 and 2 (the dip to 15 and the
    # second crossing between 4 and 8 do not count): share ln 2 / ln 2.5 = 0.693147 / 0.916291 = 0.756471,
    # knee = 2^0.756471 = e^(0.756471 · 0.693147) = e^0.524346 = 1.6894
    knee = ttft_knee([1, 2, 4, 8], [0.010, 0.025, 0.015, 0.040])
    assert knee.load == pytest.approx(1.6894, rel=1e-4) and knee.bracket == 1
    # a dip below the lowest load's TTFT before the crossing: 10, 8, 30 ms at 1, 2, 4; the crossing is between 2
    # and 4: share ln(20/8) / ln(30/8) = 0.916291 / 1.321756 = 0.693237, knee = 2 · 2^0.693238 = 2 · 1.616908 = 3.2338
    dip = ttft_knee([1, 2, 4], [0.010, 0.008, 0.030])
    assert dip.load == pytest.approx(3.2338, rel=1e-4) and dip.bracket == 2


@pytest.mark.parametrize(("loads", "ttfts", "factor"), [
    ([1, 2], [0.01], 2.0),  # one TTFT for two loads
    ([1], [0.01], 2.0),  # one load
    ([4, 1, 16], [0.01, 0.02, 0.03], 2.0),  # loads not increasing
    ([1, 1, 16], [0.01, 0.02, 0.03], 2.0),  # a load twice
    ([0, 1, 16], [0.01, 0.02, 0.03], 2.0),  # a zero load (no logarithm)
    ([1, 4, 16], [0.01, 0.0, 0.03], 2.0),  # a zero TTFT
    ([1, 4, 16], [0.01, math.nan, 0.03], 2.0),
    ([1, 4, 16], [0.01, 0.02, 0.03], 1.0),  # the lowest load would be its own knee
])
def test_a_sweep_that_is_not_one_is_refused(loads, ttfts, factor):
    with pytest.raises(ValueError):
        ttft_knee(loads, ttfts, factor)


sweeps = st.integers(min_value=2, max_value=8).flatmap(lambda n: st.tuples(
    st.lists(st.floats(min_value=0.1, max_value=10.0), min_size=n, max_size=n),
    st.lists(st.floats(min_value=1e-3, max_value=10.0), min_size=n, max_size=n)))


def _loads(steps):
    """Strictly increasing loads from positive steps (each load is the sum of the steps so far)."""
    return [sum(steps[:i + 1]) for i in range(len(steps))]


def _clear_of_the_target(ttfts):
    """No TTFT within a relative 1e-9 of the target, so rounding cannot move the crossing to another interval."""
    return all(abs(t / (KNEE_FACTOR * ttfts[0]) - 1) > 1e-9 for t in ttfts[1:])


@settings(max_examples=200)
@given(sweeps, st.floats(min_value=1e-3, max_value=1e3))
def test_scaling_every_ttft_leaves_the_knee(sweep, a):
    steps, ttfts = sweep
    assume(_clear_of_the_target(ttfts))
    loads = _loads(steps)
    base, scaled = ttft_knee(loads, ttfts), ttft_knee(loads, [a * t for t in ttfts])
    assert scaled.bracket == base.bracket
    assert (scaled.load is None) == (base.load is None)
    if base.load is not None:
        assert scaled.load == pytest.approx(base.load, rel=1e-9)
        assert loads[base.bracket - 1] < base.load <= loads[base.bracket] * (1 + 1e-12)  # inside its interval


@settings(max_examples=200)
@given(sweeps, st.floats(min_value=1e-3, max_value=1e3))
def test_scaling_the_loads_scales_the_knee(sweep, c):
    steps, ttfts = sweep
    loads = _loads(steps)
    base, scaled = ttft_knee(loads, ttfts), ttft_knee([c * x for x in loads], ttfts)
    assert scaled.bracket == base.bracket
    if base.load is None:
        assert scaled.load is None
    else:
        assert scaled.load == pytest.approx(c * base.load, rel=1e-9)


def _row(rid, concurrency, ttft_s, **kw):
    setup = {"engine": "vllm-v1", "model": "qwen3-8b", "gpu": "h100-sxm", "gpus": 1, "input_tokens": 128,
             "output_tokens": 128, "load": "concurrency", "source": {"key": "s"}} | kw
    return ServingRow(id=rid, concurrency=concurrency, measured={"ttft_s": ttft_s, "tpot_s": 0.01}, **setup)


def _result(row, predicted_ttft_s, held_out=False):
    return RowResult(row, {"ttft_s": predicted_ttft_s, "tpot_s": 0.01}, held_out)


def test_families_are_the_sweeps_among_the_rows():
    results = [
        # one sweep, given out of load order: measured 10, 15, 40 ms at 1, 10, 100 clients (knee 19.647, the
        # test above); predicted 10, 25, 40 ms: target 20 ms between 1 and 10, share ln 2 / ln 2.5 = 0.756471,
        # knee = 10^0.756471 = 5.7078; ratio 5.7078 / 19.647 = 0.29051, in the interval (1, 10] against (10, 100]
        _result(_row("x-c10", 10, 0.015), 0.025, held_out=True),
        _result(_row("x-c1", 1, 0.010), 0.010),
        _result(_row("x-c100", 100, 0.040), 0.040),
        # another model: its own family, with two loads only, so no comparison
        _result(_row("y-c1", 1, 0.010, model="llama-3.1-8b"), 0.010),
        _result(_row("y-c4", 4, 0.030, model="llama-3.1-8b"), 0.030),
        # another source with two rows at one load: not a sweep
        *[_result(_row(f"z-{i}", c, 0.01 * c, source={"key": "t"}), 0.01 * c) for i, c in enumerate((1, 4, 4))],
    ]
    (knee,) = knee_comparisons(results)
    assert (knee.family, knee.engine, knee.load_kind, knee.metric) == ("x", "vllm-v1", "concurrency", "ttft_s")
    assert knee.loads == (1, 10, 100) and knee.row_ids == ("x-c1", "x-c10", "x-c100")
    assert knee.measured.load == pytest.approx(19.647, rel=1e-4)
    assert knee.predicted.load == pytest.approx(5.7078, rel=1e-4)
    assert knee.ratio == pytest.approx(0.29051, rel=1e-4) and not knee.same_interval
    assert knee.held_out_share == pytest.approx(1 / 3)
    data = knee.as_dict()
    assert data["measured_interval"] == [10, 100] and data["predicted_interval"] == [1, 10]
    assert data["load_unit"] == "clients" and data["held_out_rows"] == 1
    # the summary: one family, both reached, none in the same interval, median ratio that family's
    summary = ServingAccuracy(tuple(results)).as_dict()["knees"]["summary"]
    assert summary == {"families": 1, "both_reached": 1, "same_interval": 0, "median_ratio": pytest.approx(0.29051,
                                                                                                          rel=1e-4)}


def test_a_family_uses_one_ttft_metric_every_row_measured():
    # the median where one row lacks the mean; measured and predicted the same metric
    rows = [ServingRow(id=f"r{c}", engine="sglang", model="llama-3.3-70b", gpu="h200", gpus=4, input_tokens=100,
                       output_tokens=100, load="run", rate_per_s=float(c), num_prompts=300 * c,
                       measured={"ttft_median_s": 0.1 * c} | ({"ttft_s": 0.1} if c > 1 else {}),
                       source={"key": "s"}) for c in (1, 2, 4)]
    results = [RowResult(r, {"ttft_median_s": 0.1, "ttft_s": 1.0}, False) for r in rows]
    (knee,) = knee_comparisons(results)
    assert knee.metric == "ttft_median_s" and knee.load_kind == "rate" and knee.loads == (1.0, 2.0, 4.0)
    # measured 0.1, 0.2, 0.4 s: exactly 2 × at 2 requests/s; predicted flat: not reached, so no ratio
    assert knee.measured.load == pytest.approx(2.0) and knee.predicted == Knee(None, None) and knee.ratio is None


@pytest.mark.parametrize(("kw", "expected"), [
    ({"load": "concurrency", "concurrency": 8}, ("concurrency", 8.0)),
    ({"load": "batch", "concurrency": 8}, ("batch", 8.0)),
    ({"load": "run", "concurrency": 16, "num_prompts": 80}, ("concurrency", 16.0)),  # vllm bench serve, rate inf
    ({"load": "run", "concurrency": 16, "rate_per_s": 4.0, "num_prompts": 1200}, ("rate", 4.0)),
    ({"load": "run", "num_prompts": 800}, ("burst", 800.0)),  # every request at t = 0, no cap
])
def test_sweep_load_by_kind(kw, expected):
    row = ServingRow(id="r", engine="vllm-v1", model="qwen3-8b", gpu="h100-sxm", gpus=1, input_tokens=1,
                     output_tokens=2, measured={"ttft_s": 1.0}, **kw)
    assert sweep_load(row) == expected


def test_knee_printout():
    from rich.console import Console

    from kokuban.present.serving import print_serving_accuracy

    results = [_result(_row(f"x-c{c}", c, t), p) for c, t, p in ((1, 0.010, 0.010), (10, 0.015, 0.011),
                                                                   (100, 0.040, 0.012))]
    console = Console(record=True, width=250)
    print_serving_accuracy(console, ServingAccuracy(tuple(results)))
    text = console.export_text()
    # measured knee 19.647 → "19.6"; predicted 10, 11, 12 ms never reaches 20 ms
    assert "TTFT knee" in text and "1, 10, 100 clients" in text and "mean" in text
    assert "19.6" in text and "not reached" in text and "0 of 3" in text
    assert "both knees reached in 0" in text


def test_two_knees_not_reached_do_not_count_as_agreeing():
    # measured and predicted flat (10 ms at 1, 10, 100 clients): neither reaches 20 ms, so both brackets are None and
    # `same_interval` is True for the family, but the summary counts agreement only where both knees exist: 0 of 0
    results = [_result(_row(f"f-c{c}", c, 0.010), 0.010) for c in (1, 10, 100)]
    (knee,) = knee_comparisons(results)
    assert knee.ratio is None and knee.same_interval
    summary = ServingAccuracy(tuple(results)).as_dict()["knees"]["summary"]
    assert summary == {"families": 1, "both_reached": 0, "same_interval": 0, "median_ratio": None}
