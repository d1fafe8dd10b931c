"""Agent runs on an API sheet: closed forms, hand-computed bills, cache expiry, compaction, bad scenarios.

Every expected number is worked out by hand in the test from the price sheet (data/prices.toml) rows:
anthropic/claude-sonnet-4.5: input $3, 5m write $3.75, 1h write $6, read $0.30, output $15 per M; TTL 300 s / 3600 s.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from kokuban.agents.compaction import build_calls, parse_policy
from kokuban.agents.scenario import Scenario, parse_dist, read_trace, sample_runs
from kokuban.errors import KokubanError
from kokuban.present.jsonout import read_result, to_json
from kokuban.usecases.agent import AgentRequest, run_agent

SONNET = "anthropic/claude-sonnet-4.5"


def small(**over):
    """N = 3, S0 = 1000, o = 100, r = 400, gaps 10 s: prompts 1000, 1500, 2000."""
    fields = {
        "steps": "3",
        "system_tokens": 1000,
        "output_tokens": "100",
        "tool_tokens": "400",
        "gap_s": "10",
        "price": SONNET,
    }
    return run_agent(AgentRequest(**(fields | over)))


def test_without_caching_total_input_is_the_closed_form():
    # N·S0 + (o + r)·N(N−1)/2 with N = 7, S0 = 1234, o = 56, r = 789: 8,638 + 845·21 = 26,383
    res = run_agent(AgentRequest(steps="7", system_tokens=1234, output_tokens="56", tool_tokens="789", gap_s="1",
                                 price=SONNET, cache_retention="none"))
    df = res.steps_frame()
    assert int(df["prompt_tokens"].sum()) == 26_383
    assert int(df["input_written_tokens"].sum()) == 26_383 and int(df["input_read_tokens"].sum()) == 0
    # billed at the input price, $3 / M: 26,383 × 3e-6 = 0.079149; output 7·56 = 392 × 15e-6 = 0.00588
    assert res.chosen.run_usd[0] == pytest.approx(0.079149 + 0.00588)


def test_small_scenario_bill_matches_hand_arithmetic():
    # step 0: write 1000 × 3.75e-6 = 0.00375, output 100 × 15e-6 = 0.0015            → 0.00525
    # step 1: read 1000 × 0.3e-6 = 0.0003, write 500 × 3.75e-6 = 0.001875, + 0.0015    → 0.003675
    # step 2: read 1500 × 0.3e-6 = 0.00045, write 500 → 0.001875, + 0.0015            → 0.003825
    df = small().steps_frame()
    assert df["usd"].tolist() == pytest.approx([0.00525, 0.003675, 0.003825])
    assert df["cumulative_usd"].iloc[-1] == pytest.approx(0.01275)


def test_with_caching_under_the_ttl_each_step_writes_only_its_new_tokens():
    df = small().steps_frame()
    assert df["input_written_tokens"].tolist() == [1000, 500, 500]  # S0, then o + r = 100 + 400
    assert df["input_read_tokens"].tolist() == [0, 1000, 1500]  # the previous prompt
    assert not df["cache_expired"].any()


def test_a_gap_over_the_ttl_rewrites_the_whole_context():
    # gaps 400 s > 300 s: every step writes its whole prompt: (1000 + 1500 + 2000) × 3.75e-6 + 3 × 0.0015 = 0.021375
    res = small(gap_s="400")
    df = res.steps_frame()
    assert df["input_written_tokens"].tolist() == [1000, 1500, 2000]
    assert df["cache_expired"].tolist() == [False, True, True]
    assert res.chosen.run_usd[0] == pytest.approx(0.021375)
    assert res.as_dict()["expired_before_calls"] == [1, 2]


def test_extended_retention_buys_the_hour_at_its_write_price():
    # 1h writes at $6 / M survive 400 s: writes 1000 + 500 + 500 = 2000 × 6e-6 = 0.012, reads 2500 × 0.3e-6 = 0.00075,
    # output 0.0045 → 0.01725
    assert small(gap_s="400", cache_retention="extended").chosen.run_usd[0] == pytest.approx(0.01725)


def test_long_context_tier_bills_the_whole_request_once_crossed():
    # claude-sonnet-4: > 200,000 input tokens → input $6, output $22.50, so write 3.75·2 = 7.5, read 0.3·2 = 0.6.
    # prompts 150,000, 200,000 (not above), 250,000: step 2 = 200,000 × 0.6e-6 + 50,000 × 7.5e-6 + 1000 × 22.5e-6
    #   = 0.12 + 0.375 + 0.0225 = 0.5175
    res = run_agent(AgentRequest(steps="3", system_tokens=150_000, output_tokens="1000", tool_tokens="49000", gap_s="5",
                                 price="anthropic/claude-sonnet-4"))
    df = res.steps_frame()
    assert df["long_context_tier"].tolist() == [False, False, True]
    assert df["usd"].iloc[2] == pytest.approx(0.5175)
    assert res.as_dict()["long_tier_from_call"] == 2


@pytest.mark.parametrize("hour, weekend, factor", [(11.0, False, 0.5), (2.0, False, 1.0), (2.0, True, 0.5)])
def test_off_peak_hours_halve_deepseek(hour, weekend, factor):
    # deepseek-v4-pro peak: 1000 × 1.32e-6 + 100 × 3.96e-6 = 0.001716; 11:00 UTC and weekends are off-peak (× 0.5)
    res = run_agent(AgentRequest(steps="1", system_tokens=1000, output_tokens="100", tool_tokens="0", gap_s="0",
                                 price="deepseek/deepseek-v4-pro", start_utc_hour=hour, weekend=weekend))
    assert res.chosen.run_usd[0] == pytest.approx(0.001716 * factor)


def test_batch_lane_multiplies_everything():
    # claude-sonnet-4 batch × 0.5; N = 1: 1000 × 3.75e-6 + 100 × 15e-6 = 0.00525 → 0.002625
    res = run_agent(AgentRequest(steps="1", system_tokens=1000, output_tokens="100", tool_tokens="0", gap_s="0",
                                 price="anthropic/claude-sonnet-4", lane="batch"))
    assert res.chosen.run_usd[0] == pytest.approx(0.002625)


def test_compaction_every_m_steps_adds_a_summary_call_and_invalidates_the_cache():
    # N = 4, S0 = 100, o = 10, r = 40, every 2 steps down to K = 30: before step 2 the context 150 + 10 + 40 = 200
    # is summarised (a call: prompt 200, output 30); step 2 restarts at S0 + K = 130; step 3 = 130 + 50 = 180.
    sc = Scenario.make(steps="4", system_tokens=100, output_tokens="10", tool_tokens="40", gap_s="1")
    calls = build_calls(sample_runs(sc, 1), parse_policy("every:2,30"))
    assert calls.prompt_tokens.tolist() == [100, 150, 200, 130, 180]
    assert calls.output_tokens.tolist() == [10, 10, 30, 10, 10]
    assert calls.is_summary.tolist() == [False, False, True, False, False]
    # what the API's cache still holds: the previous prompt, except after the summary only S0 (100) is shared
    assert calls.api_prefix_tokens.tolist() == [0, 100, 150, 100, 130]


def test_threshold_compaction_keeps_the_context_under_the_threshold():
    sc = Scenario.make(steps="40", system_tokens=5000, output_tokens="500", tool_tokens="2000", gap_s="1")
    calls = build_calls(sample_runs(sc, 1), parse_policy("threshold:30000,4000"))
    steps = ~calls.is_summary
    assert calls.prompt_tokens[steps].max() <= 30_000
    assert calls.is_summary.sum() >= 1


def test_cheapest_policy_is_named_and_the_window_forces_compaction():
    res = run_agent(AgentRequest(preset="tracelab-session", price=SONNET, compaction=("threshold:150000,8000", "none",
                                                                                     "every:20,8000")))
    assert res.cheapest.policy.spec in {"threshold:150000,8000", "every:20,8000"}
    assert any("none left out" in n for n in res.notes)  # 287,426 tokens > 200,000: cannot run without compaction


@pytest.mark.parametrize("fields, field, words", [
    ({"gap_s": "-3"}, "gap_s", "≥ 0"),
    ({"gap_s": "uniform:-1,5"}, "gap_s", "≤ LO"),
    ({"steps": "400", "tool_tokens": "2000"}, "compaction", "window"),
    ({"price": "google/gemini-2.5-flash", "cache_ttl_s": 300.0}, "cache_ttl_s", "no prompt cache"),
    ({"price": "openai/gpt-5-mini", "cache_retention": "extended"}, "cache_retention", "standard"),
    ({"price": "openai/gpt-5-mini", "lane": "flex"}, "lane", "no flex lane"),
    ({"preset": "swe-bench"}, "trace", "one scenario source"),
])
def test_bad_scenarios_are_one_line_errors_naming_the_field(fields, field, words):
    base = {
        "steps": "3",
        "system_tokens": 1000,
        "output_tokens": "100",
        "tool_tokens": "400",
        "gap_s": "10",
        "price": SONNET,
    }
    if "preset" in fields:
        base |= {"trace": "example"}
        base = {
            k: v
            for k, v in base.items()
            if k not in ("steps", "system_tokens", "output_tokens", "tool_tokens", "gap_s")
        }
    with pytest.raises(KokubanError) as exc:
        run_agent(AgentRequest(**(base | fields)))
    assert exc.value.field == field and words in str(exc.value) and "\n" not in str(exc.value)


def test_cli_errors_word_the_flag_and_exit_2(capsys):
    from kokuban.cli import main

    rc = main(["agent", "api", SONNET, "--steps", "3", "--system-tokens", "100", "--output-tokens", "10",
               "--tool-tokens", "10", "--gap-s", "-1"])
    err = capsys.readouterr().err
    assert rc == 2 and err.startswith("error: --gap:") and err.count("\n") == 1


def test_cli_json_is_the_use_case_result(capsys):
    from kokuban.cli import main

    assert main(["agent", "api", SONNET, "--preset", "swe-bench", "--compaction", "auto", "--runs", "5", "--json"]) == 0
    got = read_result(capsys.readouterr().out)
    want = json.loads(to_json(run_agent(AgentRequest(preset="swe-bench", price=SONNET, compaction=("auto",), runs=5))
                              .as_dict()))
    assert got == want


def test_self_hosted_cli_json_is_the_use_case_result(capsys):
    from kokuban.cli import main

    args = ["agent", "self-hosted", "llama-3.1-8b", "--gpu", "h100-sxm", "--steps", "4", "--system-tokens", "2000",
            "--output-tokens", "50", "--tool-tokens", "300", "--gap-s", "5", "--json"]
    assert main(args) == 0
    got = read_result(capsys.readouterr().out)
    want = json.loads(
        to_json(
            run_agent(
                AgentRequest(
                    model="llama-3.1-8b",
                    gpu="h100-sxm",
                    steps="4",
                    system_tokens=2000,
                    output_tokens="50",
                    tool_tokens="300",
                    gap_s="5",
                )
            ).as_dict()
        )
    )
    assert got == want


def test_trace_is_priced_as_measured():
    # example session a: prompts 20,000, 23,100, 26,900, 31,200, 33,000; the 420 s gap before step 3 expires a
    # 300 s cache
    res = run_agent(AgentRequest(trace="example", price=SONNET))
    df = res.steps_frame()
    assert df["prompt_tokens"].tolist() == [20_000, 23_100, 26_900, 31_200, 33_000]
    assert df["cache_expired"].tolist() == [False, False, False, True, False]
    assert df["input_written_tokens"].tolist() == [20_000, 3_100, 3_800, 31_200, 1_800]
    assert res.runs == 2


def test_bad_trace_lines_are_one_line_errors(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text('{"session": "a", "step": 0, "input_tokens": 10, "output_tokens": 5, "gap_s": -2}\n')
    with pytest.raises(KokubanError, match="line 1: gap_s must be seconds ≥ 0"):
        read_trace(path)


def test_distributions_parse_and_sample_deterministically():
    d = parse_dist("lognormal:11,1.03", "steps", integer=True, minimum=1)
    a, b = d.sample(np.random.default_rng(0), 5), d.sample(np.random.default_rng(0), 5)
    assert a.tolist() == b.tolist()
    assert parse_dist("uniform:2,4", "gap_s").mean == 3.0
    # a draw never falls below the minimum the spec was checked against (a run has at least one step)
    assert (
        parse_dist("lognormal:1,3", "steps", integer=True, minimum=1).sample(np.random.default_rng(0), 1000).min() == 1
    )
    with pytest.raises(KokubanError, match="not known"):
        parse_dist("zipf:1", "gap_s")


def test_presets_cite_their_sources():
    from kokuban.agents.presets import presets

    for name, sc in presets().items():
        assert any(ref in sc.source for ref in ("2606.30560", "2511.02230", "2604.22750")), name
        assert sc.assumptions, name
    # TraceLab arithmetic quoted in the preset file: 186.9 M output tokens over 357,161 steps → 523 per step;
    # 357,161 steps / 4,265 sessions → 84 steps; 153,710 = 20,000 + (523 + r)·41.5 → r = 2,699 (rounded)
    session = presets()["tracelab-session"]
    assert session.output_tokens.params == (round(186.9e6 / 357_161),)
    assert session.steps.params == (round(357_161 / 4_265),)
    assert session.tool_tokens.params == (round((153_710 - 20_000) / 41.5 - 523),)
    assert session.system_tokens == 20_000


def test_cli_help_words_the_use_case_defaults():
    from click.testing import CliRunner

    from kokuban.cli import cli
    from kokuban.usecases import agent as uc

    text = CliRunner().invoke(cli, ["agent", "self-hosted", "--help"], terminal_width=400).output
    assert f"default {uc.DEFAULT_RUNS};" in text and f"default {uc.DEFAULT_BATCH})" in text
    assert f"default {uc.HOST_LINK_BYTES_PER_S:.3g}:" in text and f"default {uc.HOST_USD_PER_GB_HOUR:.2g}," in text


def test_auto_leaves_out_what_does_not_fit_and_subagents_add_their_cost():
    res = run_agent(AgentRequest(preset="tracelab-session", price=SONNET, compaction=("auto",), runs=3))
    assert "none" not in [p.policy.spec for p in res.policies] and any("none left out" in n for n in res.notes)
    one = small(subagents=0).chosen.run_usd[0]
    # two children of the same fixed shapes cost two more runs: 3 × 0.01275
    assert small(subagents=2).chosen.run_usd[0] == pytest.approx(3 * one) and one == pytest.approx(0.01275)
