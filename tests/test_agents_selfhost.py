"""Agent runs self-hosted: the three survival options and their break-even gaps (by hand), and the per-call
wiring to the core (cached prefix = previous prompt + output; prefill of the uncached part; decode per token)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from kokuban.agents import survival
from kokuban.core import cost, roofline
from kokuban.usecases.agent import AgentRequest, run_agent

# u = 0.01 USD/s, gap 10 s, B = 50 slots, b = 1e9 bytes, h = 1e-12 USD per byte-second, ℓ = 5e10 B/s, ΔP = 0.5 s
U, G, B, BYTES, H, LINK, DP = 0.01, 10.0, 50.0, 1e9, 1e-12, 5e10, 0.5


def test_survival_options_by_hand():
    assert survival.keep_usd(U, G, B) == pytest.approx(0.002)  # 0.01 × 10 / 50
    # h·b·g = 1e-12 × 1e9 × 10 = 0.01; copies 2b/ℓ = 0.04 s of a slot: 0.04 × 0.01 / 50 = 8e-6
    assert survival.offload_usd(U, G, B, BYTES, H, LINK) == pytest.approx(0.010008)
    assert survival.drop_usd(U, DP) == pytest.approx(0.005)  # 0.01 × 0.5


def test_break_even_gaps_closed_forms_by_hand():
    assert survival.break_even_keep_drop_s(DP, B) == pytest.approx(25.0)  # ΔP·B = 0.5 × 50
    assert survival.keep_usd(U, 25.0, B) == pytest.approx(survival.drop_usd(U, DP))
    # u/B = 2e-4 < h·b = 1e-3: host memory dearer than an HBM slot, so offloading never beats keeping
    assert math.isinf(survival.break_even_keep_offload_s(U, B, BYTES, H, LINK))
    # (u·ΔP − u·(2b/ℓ)/B) ÷ (h·b) = (0.005 − 8e-6) / 1e-3 = 4.992 s
    g = survival.break_even_offload_drop_s(U, DP, B, BYTES, H, LINK)
    assert g == pytest.approx(4.992)
    assert survival.offload_usd(U, g, B, BYTES, H, LINK) == pytest.approx(survival.drop_usd(U, DP))
    # cheap host memory (h = 1e-15): keep = offload at (2b/ℓ)(u/B) ÷ (u/B − h·b) = 0.04·2e-4 / (2e-4 − 1e-6) = 0.0402 s
    assert survival.break_even_keep_offload_s(U, B, BYTES, 1e-15, LINK) == pytest.approx(0.04 * 2e-4 / (2e-4 - 1e-6))


def hosted(**over):
    # N = 3, S0 = 1000, o = 100, r = 400: prompts 1000, 1500, 2000; the KV after call i is prompt_i + o
    fields = {"model": "llama-3.1-8b", "gpu": "h100-sxm", "steps": "3", "system_tokens": 1000, "output_tokens": "100",
                  "tool_tokens": "400", "gap_s": "2"}
    return run_agent(AgentRequest(**(fields | over)))


def test_kept_kv_is_the_previous_prompt_and_output():
    df = hosted(survival="keep").steps_frame()
    assert df["cached_tokens"].tolist() == [0, 1100, 1600]  # 1000 + 100, 1500 + 100
    assert df["survival"].tolist() == ["", "keep", "keep"]
    dropped = hosted(survival="drop").steps_frame()
    assert dropped["cached_tokens"].tolist() == [0, 0, 0] and dropped["recomputed_tokens"].tolist() == [0, 1100, 1600]


def test_call_cost_is_prefill_of_the_uncached_part_plus_decode_at_the_growing_context():
    res = hosted(survival="keep", gap_s="0")
    df = res.steps_frame()
    from kokuban.specs.catalog import load_accelerator, load_model
    from kokuban.specs.deployment import Deployment

    d = Deployment.make(load_model("llama-3.1-8b"), load_accelerator("h100-sxm"))
    # call 1: prompt 1500 with 1100 cached; 100 output tokens decoded at contexts 1500 … 1599 in a batch of 32
    pre = float(roofline.prefill(d, 1, 1500, 1100).step_time_s)
    dec = float(np.sum(roofline.decode_step(d, 32, np.arange(1500, 1600)).step_time_s)) / 32
    assert df["prefill_s"].iloc[1] == pytest.approx(pre)
    assert df["decode_s"].iloc[1] == pytest.approx(dec)
    assert df["hold_s"].iloc[1] == 0.0  # a zero gap holds nothing
    assert df["usd"].iloc[1] == pytest.approx(cost.usd_of_seconds(d, pre + dec))
    assert df["gpu_s"].iloc[1] == pytest.approx(pre + dec)  # one GPU


def test_best_survival_is_never_dearer_than_any_single_option():
    best = hosted(gap_s="lognormal:20,2", runs=20).chosen.run_usd
    for option in ("keep", "offload", "drop"):
        assert np.all(best <= hosted(gap_s="lognormal:20,2", runs=20, survival=option).chosen.run_usd + 1e-15)


def test_a_long_gap_makes_keeping_dearer_than_dropping():
    df = hosted(gap_s="100000").steps_frame()
    assert (df["keep_usd"].iloc[1:] > df["drop_usd"].iloc[1:]).all()
    assert set(df["survival"].iloc[1:]) <= {"offload", "drop"}


def test_self_hosted_window_is_the_models():
    from kokuban.errors import KokubanError

    with pytest.raises(KokubanError, match="131,072-token window of llama-3.1-8b") as exc:
        hosted(steps="300", tool_tokens="1000")
    assert exc.value.field == "compaction"
