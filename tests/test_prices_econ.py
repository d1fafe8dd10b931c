"""Price-sheet economics: fleet account (DeepSeek Day 6), request prices, back-calculation, explain, CLI."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kokuban.cli import main
from kokuban.errors import KokubanError
from kokuban.present.prices import plot_closed
from kokuban.prices.costing import api_request_usd, batch_for_speed, break_even_batch, decode_curve, fleet_day, margins
from kokuban.prices.explain import explain
from kokuban.prices.infer import infer_closed, infer_open
from kokuban.prices.sheets import find_price, hand_price
from kokuban.specs.catalog import load_accelerator, load_model
from kokuban.specs.deployment import Deployment
from kokuban.specs.hardware import Efficiency

H800 = "docs/examples/h800.toml"


def test_fleet_day_reproduces_deepseek_day6_from_published_throughputs():
    row = find_price("deepseek/deepseek-reasoner")
    day = fleet_day(row, 608e9, 342e9, 168e9, 73.7e3, 14.8e3, gpus_per_node=8, usd_per_gpu_hour=2.0)
    # node-hours: 608e9/73.7e3/3600 = 2291.6 prefill + 168e9/14.8e3/3600 = 3153.2 decode = 5444.8 → /24 = 226.87 nodes
    assert day.average_nodes == pytest.approx(226.87, abs=0.01)  # published: 226.75 average nodes
    # cost = 5444.8 node-h × 8 × $2 = $87,117 (published $87,072: 226.75 × 8 × 24 × 2)
    assert day.cost_usd_per_day == pytest.approx(87_117, rel=1e-4)
    # revenue = 266e9 × 0.55 + 342e9 × 0.14 + 168e9 × 2.19 per 1e6 = 146,300 + 47,880 + 367,920 = 562,100
    # (published 562,027)
    assert day.revenue_usd_per_day == pytest.approx(562_100)
    # 562,100 / 87,117 − 1 = 5.452 → "545 %"
    assert day.profit_over_cost == pytest.approx(5.452, abs=1e-3)


def test_fleet_day_rejects_more_cached_than_input():
    row = find_price("deepseek/deepseek-reasoner")
    with pytest.raises(KokubanError, match="cached input tokens") as exc:
        fleet_day(row, 1e9, 2e9, 1e9, 1e4, 1e4, usd_per_gpu_hour=2)
    assert exc.value.field == "cached_input_tokens"


def test_api_request_price_by_hand():
    row = find_price("anthropic/claude-sonnet-4")
    # 1,000 prompt (half cached) + 100 output: 500·3 + 500·0.3 + 100·15 = 1500 + 150 + 1500 = 3150 per 1e6 → $0.00315
    assert api_request_usd(row, 1000, 100, 0.5).usd == pytest.approx(0.00315)
    # above 200K the long tier: 300,000·6 + 100·22.5 = 1,800,000 + 2,250 → $1.80225
    assert api_request_usd(row, 300_000, 100).usd == pytest.approx(1.80225)
    # batch lane halves: 0.5 × (1000·3 + 100·15)/1e6 = 0.00225
    assert api_request_usd(row, 1000, 100, lane="batch").usd == pytest.approx(0.00225)
    with pytest.raises(KokubanError, match="no priority lane"):
        api_request_usd(row, 1000, 100, lane="priority")


def test_margins_definitions():
    # price 3, cost 1: profit ÷ cost = 200 %, gross = 2/3
    m = margins(3.0, 1.0)
    assert m.profit_over_cost == pytest.approx(2.0) and m.gross_margin == pytest.approx(2 / 3)


@pytest.fixture(scope="module")
def llama_dep():
    return Deployment.make(load_model("llama-3.1-8b"), load_accelerator("h100-sxm"), 1,
                           efficiency=Efficiency.textbook())


@settings(max_examples=25, deadline=None, derandomize=True)
@given(price=st.floats(0.01, 5.0), speed=st.floats(5.0, 150.0))
def test_break_even_and_speed_batches_are_the_edges(llama_dep, price, speed):
    curve = decode_curve(llama_dep, 4096)
    be = break_even_batch(curve, price)
    if be is not None:
        assert curve.at(be).usd_per_m_output <= price
        if be > 1:
            assert curve.at(be - 1).usd_per_m_output > price
    else:
        assert curve.usd_per_m_output.min() > price
    try:
        b = batch_for_speed(curve, speed)
    except KokubanError as exc:
        assert "batch 1" in str(exc) and curve.at(1).tokens_per_s_per_user < speed
        return
    assert curve.at(b).tokens_per_s_per_user >= speed
    if b < curve.max_batch:
        assert curve.at(b + 1).tokens_per_s_per_user < speed


def test_infer_open_range_is_ordered_and_more_gpus_help(llama_dep):
    row = hand_price(0.05, 0.10, open_model="llama-3.1-8b")
    r = infer_open(row, llama_dep, context=4096, speed=40)
    c = r.range
    # better efficiency can only lower the cost at the memory-limited batch
    assert c["optimistic"].usd_per_m_output_at_max_batch <= c["central"].usd_per_m_output_at_max_batch \
        <= c["pessimistic"].usd_per_m_output_at_max_batch
    assert c["central"].speed_batch <= c["central"].max_batch
    assert [g.gpus for g in r.by_gpu_count][:2] == [1, 2]


def test_infer_open_says_when_break_even_is_infeasible(llama_dep):
    r = infer_open(hand_price(0.001, 0.001, open_model="llama-3.1-8b"), llama_dep, context=4096)
    assert r.range["central"].break_even_batch is None and "memory" in r.infeasible


def test_infer_closed_region_and_plot(tmp_path):
    h100 = load_accelerator("h100-sxm")
    r = infer_closed(10.0, 50.0, h100, active_params=np.geomspace(1e9, 1e12, 12), batches=np.array([1, 8, 64, 512]))
    lo, hi = r.active_params_range
    assert 1e9 <= lo <= hi <= 1e12
    path = plot_closed(r, str(tmp_path / "region.png"))
    assert (tmp_path / "region.png").stat().st_size > 1000 and path.endswith(".png")


@pytest.mark.parametrize("price, speed, binds", [(10.0, 1e6, "speed constraint"), (1e-6, 30.0, "price constraint")])
def test_infer_closed_names_the_binding_constraint(price, speed, binds):
    with pytest.raises(KokubanError, match=binds):
        infer_closed(price, speed, load_accelerator("h100-sxm"), active_params=np.geomspace(1e9, 1e12, 8))


def test_explain_has_five_features_each_with_a_sentence(llama_dep):
    feats = explain(find_price("anthropic/claude-sonnet-4"), llama_dep, context=4096)
    assert [f.feature for f in feats] == ["output_vs_input", "long_context", "fast_lane", "batch_discount",
                                          "cached_input"]
    assert all(f.sentence.endswith(".") and "\n" not in f.sentence for f in feats)
    cached = feats[-1]
    assert cached.sheet.cached_over_input == pytest.approx(0.1)  # 0.30 / 3.00
    assert max(cached.model.hit_over_miss) < 0.1  # reloading KV is cheaper than recomputing it


# ---- CLI --------------------------------------------------------------------------------------------------


def test_cli_list_filters_by_provider(cli_json, capsys):
    rows = cli_json(["prices", "list", "--provider", "deepseek"])["prices"]
    assert rows and {r["provider"] for r in rows} == {"deepseek"}


def test_cli_bad_names_exit_2_with_a_suggestion(capsys):
    assert main(["prices", "list", "--provider", "antropic"]) == 2
    assert "did you mean anthropic" in capsys.readouterr().err
    assert main(["prices", "explain", "deepseek/deepseek-chatt"]) == 2
    assert "deepseek/deepseek-chat" in capsys.readouterr().err


def test_cli_explain_closed_model_states_the_stand_in(cli_json, capsys):
    out = cli_json(["prices", "explain", "anthropic/claude-haiku-3.5"])
    assert out["model"] == "gpt-oss-120b" and out["stand_in"].startswith("ASSUMPTION")
    assert len(out["features"]) == 5


def test_cli_infer_open_and_compare(cli_json, capsys):
    out = cli_json(["prices", "infer", "deepinfra/llama-3.3-70b-instruct-turbo", "--weights", "fp8",
                            "--context", "4096", "--speed", "30"])
    assert set(out["range"]) == {"pessimistic", "central", "optimistic"}
    cmp = cli_json(["prices", "compare", "llama-3.1-8b", "--prompt", "1000", "--output", "200",
                            "--requests", "100", "--all-apis"])
    assert any(a["usd"] for a in cmp["apis"]) and any(h["usd"] for h in cmp["self_host"])


def test_cli_fleet_with_published_throughputs(cli_json, capsys):
    out = cli_json(["prices", "fleet", "deepseek/deepseek-reasoner", "--gpu", "h800", "--gpu-file", H800,
                            "--input-tokens", "608e9", "--cached-tokens", "342e9", "--output-tokens", "168e9",
                            "--context", "4989", "--speed", "21", "--prefill-tps", "73.7e3", "--decode-tps", "14.8e3"])
    assert round(out["day"]["profit_over_cost"] * 100) == 545  # published: 545 %
    assert out["day"]["cost_usd_per_day"] == pytest.approx(87_072, rel=0.002)


def test_cli_fleet_roofline_brackets_the_published_throughput(cli_json, capsys):
    base = ["prices", "fleet", "deepseek/deepseek-reasoner", "--gpu-file", H800, "--input-tokens", "608e9",
            "--cached-tokens", "342e9", "--output-tokens", "168e9", "--context", "4989", "--speed", "21",
            # DeepEP's large all-to-alls reach most of the IB bandwidth; the calibrated 0.26 is for small all-reduces:
            # the textbook fractions on the scalar set, as docs/prices.md derives the bracket
            "--efficiency-file", "scalar", "--compute-eff", "0.6", "--memory-eff", "0.8", "--link-eff", "0.75",
            "--step-overhead", "0"]
    slow = cli_json(base + ["--gpu", "h800"])["throughput_model"]
    fast = cli_json(base + ["--gpu", "h800-nodelimited"])["throughput_model"]
    # published decode 14.8k output tokens/s per node lies between the two link assumptions (docs/prices.md's table:
    # 13.1k and 20.3k; prefill 43.0k and 72.2k against ~73.7k)
    assert slow["decode_tokens_per_s_per_node"] < 14.8e3 < fast["decode_tokens_per_s_per_node"]
    assert (round(slow["decode_tokens_per_s_per_node"], -2), round(fast["decode_tokens_per_s_per_node"], -2)) == (
        13.1e3, 20.3e3)
    assert (round(slow["prefill_tokens_per_s_per_node"], -2), round(fast["prefill_tokens_per_s_per_node"], -2)) == (
        43.0e3, 72.2e3)
