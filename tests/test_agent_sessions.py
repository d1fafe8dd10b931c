"""Closed-loop agent sessions in the simulator (issue 11, item 5): causality, cache hits under pinned retention,
what memory pressure does to hits, TTFT and cost per run, the offload reload, the capacity search, the face."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kokuban.agents.compaction import build_calls, parse_policy
from kokuban.agents.scenario import Scenario, sample_runs
from kokuban.cli import main
from kokuban.errors import KokubanError
from kokuban.present.jsonout import read_result, to_json
from kokuban.sim.kvcache import reload_seconds
from kokuban.sim.scheduler import SchedulerConfig
from kokuban.sim.sessions import (
    Retention,
    max_sessions,
    parse_retention,
    plan_sessions,
    simulate_sessions,
)
from kokuban.specs.catalog import load_accelerator, load_model
from kokuban.specs.deployment import Deployment
from kokuban.usecases.agent_sim import AgentSimRequest, run_agent_simulate

DEP = Deployment.make(load_model("llama-3.2-1b"), load_accelerator("l4"))
SETTINGS = settings(max_examples=30, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow])
# llama-3.2-1b: 16 layers × 8 KV heads × 64 head dim × 2 (K and V) × 2 bytes (bf16) = 32,768 B per token
KV_BYTES_PER_BLOCK = 16 * 8 * 64 * 2 * 2 * 16  # × 16 tokens a block = 524,288 B


def run_sessions(scenario: Scenario, n: int, retention: Retention | None = None, *, seed: int = 0,
                 kv_blocks: int | None = None, compaction: str = "none", stagger_s: float = 0.0,
                 cfg: SchedulerConfig | None = None):
    calls = build_calls(sample_runs(scenario, n, seed), parse_policy(compaction))
    plan = plan_sessions(calls.run, calls.prompt_tokens, calls.output_tokens, calls.gap_before_s,
                         calls.kv_prefix_tokens, np.arange(n) * stagger_s, 16)
    return simulate_sessions(DEP, plan, retention or Retention(), cfg, kv_blocks=kv_blocks)


def in_call_order(run, session: int) -> np.ndarray:
    p = run.plan
    idx = np.flatnonzero(p.session == session)
    return idx[np.argsort(p.call[idx])]


@st.composite
def setups(draw):
    scenario = Scenario.make(steps=str(draw(st.integers(1, 6))), system_tokens=draw(st.integers(1, 400)),
                             output_tokens=draw(st.sampled_from(["1", "20", "uniform:1,40"])),
                             tool_tokens=draw(st.sampled_from(["0", "50", "uniform:0,200"])),
                             gap_s=draw(st.sampled_from(["0", "0.05", "exp:0.2", "uniform:0,1"])))
    retention = draw(st.sampled_from(["evict", "pin:0.1", "pin:100", "offload:1e9,1e8", "offload:1e11,1e12"]))
    return (scenario, draw(st.integers(1, 6)), parse_retention(retention), draw(st.integers(0, 60)),
            draw(st.integers(0, 3)), draw(st.sampled_from(["none", "every:2,30"])), draw(st.integers(1, 4)))


@SETTINGS
@given(setup=setups())
def test_no_call_starts_before_the_previous_one_finished_plus_its_gap(setup):
    scenario, n, retention, slack, seed, compaction, seqs = setup
    calls = build_calls(sample_runs(scenario, n, seed), parse_policy(compaction))
    need = int((-(-(calls.prompt_tokens + calls.output_tokens - 1) // 16)).max())
    cfg = SchedulerConfig(max_num_seqs=seqs, max_num_batched_tokens=256)
    run = run_sessions(scenario, n, retention, seed=seed, kv_blocks=need + slack, compaction=compaction, cfg=cfg)
    s = run.sim
    assert not np.isnan(s.finish_s).any()  # every call of every session finished
    assert np.array_equal(s.generated_tokens, s.output_tokens)
    for j in range(n):
        idx = in_call_order(run, j)
        prev, nxt = idx[:-1], idx[1:]
        # sent exactly when the previous call finished plus the gap before it, never earlier
        assert np.allclose(s.arrival_s[nxt], s.finish_s[prev] + run.plan.gap_s[nxt], rtol=0, atol=1e-9)
        assert np.all(s.first_scheduled_s[nxt] >= s.finish_s[prev] + run.plan.gap_s[nxt]
                      + run.reload_s[nxt] - 1e-9)
        assert np.all(s.first_token_s[idx] > s.arrival_s[idx])
    assert 0 <= s.kv_blocks_free_at_end <= s.kv_capacity_blocks


def test_pinned_with_ample_capacity_every_call_after_the_first_hits_its_whole_context():
    # S₀ = 1,000, o = 100, r = 200, 4 steps, 10 s gaps, TTL 60 s: prompt_k = 1,000 + 300k. Call k ≥ 1 reuses
    # the previous context prompt_{k−1} + o = 1,100, 1,400, 1,700 tokens; the finished call published its full
    # blocks ⌊(prefix − 1) ÷ 16⌋: 1,099 // 16 = 68, 1,399 // 16 = 87, 1,699 // 16 = 106 → 1,088, 1,392, 1,696
    sc = Scenario.make(steps="4", system_tokens=1000, output_tokens="100", tool_tokens="200", gap_s="10")
    run = run_sessions(sc, 8, parse_retention("pin:60"))
    for j in range(8):
        idx = in_call_order(run, j)
        assert run.sim.prompt_tokens[idx].tolist() == [1000, 1300, 1600, 1900]
        assert run.sim.cached_tokens[idx].tolist() == [0, 1088, 1392, 1696]
    summary = run.summary()
    assert summary["cache"]["hit_rate"] == 1.0 and summary["cache"]["hit_calls"] == 8 * 3
    # each pin is held from a finish to the next call's admission: at least the 10 s gap, 3 gaps × 8 sessions,
    # over the blocks published: (68 + 87 + 106) × 10 s × 8 sessions = 20,880 block-seconds at least
    assert summary["cache"]["held_block_s"] >= (68 + 87 + 106) * 10 * 8
    assert all(r["cache_hit_rate"] == 1.0 for r in run.sessions_frame().to_dict(orient="records"))


def test_memory_pressure_lowers_hits_and_raises_ttft_and_cost_per_run():
    # 24 sessions of 6 steps (S₀ = 2,000, o = 100, r = 300, 2 s gaps), all started at once. Their contexts reach
    # 2,000 + 5 × 400 + 100 = 4,100 tokens, 24 × 4,100 = 98,400 tokens ≈ 6,150 blocks if all stay cached.
    # Ample: the L4 holds 35,723 blocks. Pressure: 700 blocks (11,200 tokens, under 3 sessions' contexts).
    sc = Scenario.make(steps="6", system_tokens=2000, output_tokens="100", tool_tokens="300", gap_s="2")
    ample, tight = run_sessions(sc, 24), run_sessions(sc, 24, kv_blocks=700)
    a, t = ample.summary(), tight.summary()
    assert a["cache"]["hit_rate"] == 1.0  # 24 × 5 calls, each hits its whole context
    assert t["cache"]["hit_rate"] < 0.5  # measured 0.008
    assert t["cache"]["cached_token_share"] < a["cache"]["cached_token_share"] / 2
    assert t["ttft_per_call_s"]["mean"] > 3 * a["ttft_per_call_s"]["mean"]  # measured 11.6 s vs 0.135 s
    assert t["usd_per_run"]["mean"] > 1.2 * a["usd_per_run"]["mean"]  # 6.4×: recomputed prefill paid again
    assert t["run_latency_s"]["mean"] > a["run_latency_s"]["mean"]
    # what the cost per run is made of: busy seconds × USD/s shared by computed tokens, summing to the busy cost
    assert ample.usd_per_run.sum() == pytest.approx(a["busy_s"] * DEP.usd_per_s, rel=1e-12)


def test_pinning_under_pressure_takes_memory_from_the_batch():
    # same pressure, the contexts pinned for 60 s: the batch cannot use the pinned blocks, so requests queue
    sc = Scenario.make(steps="6", system_tokens=2000, output_tokens="100", tool_tokens="300", gap_s="2")
    evict, pinned = run_sessions(sc, 24, kv_blocks=700), run_sessions(sc, 24, parse_retention("pin:60"), kv_blocks=700)
    assert pinned.summary()["queue_per_call_s"]["mean"] > evict.summary()["queue_per_call_s"]["mean"]
    assert pinned.summary()["cache"]["held_block_s"] > 0 == evict.summary()["cache"]["held_block_s"]


def test_offload_reload_costs_its_transfer_time_on_the_next_call():
    sc = Scenario.make(steps="6", system_tokens=2000, output_tokens="100", tool_tokens="300", gap_s="2")
    bw = 1e9  # 1 GB/s host link, 100 GB host tier
    run = run_sessions(sc, 24, parse_retention(f"offload:{bw:g},1e11"), kv_blocks=700)
    reloaded = run.reload_s > 0
    assert reloaded.any()
    # a reload brings back the blocks the previous call published (the call's reuse blocks): b ÷ BW, with
    # b = blocks × 524,288 B (llama-3.2-1b, bf16); e.g. 68 blocks (a 1,100-token context) → 0.0357 s at 1 GB/s
    expected = run.plan.reuse_blocks[reloaded] * KV_BYTES_PER_BLOCK / bw
    assert np.allclose(run.reload_s[reloaded], expected, rtol=1e-12)
    assert reload_seconds(68 * KV_BYTES_PER_BLOCK, bw) == pytest.approx(0.035651584)
    s = run.sim
    assert np.all(s.first_scheduled_s[reloaded] >= s.arrival_s[reloaded] + run.reload_s[reloaded] - 1e-12)
    assert run.summary()["cache"]["reloads"] == int(reloaded.sum())


def test_max_sessions_brackets_the_target():
    sc = Scenario.make(steps="4", system_tokens=2000, output_tokens="100", tool_tokens="300", gap_s="1")

    def with_n(n):
        return run_sessions(sc, n, kv_blocks=1500)

    cap = max_sessions(with_n, 20.0, limit=64)
    trials = {t["sessions"]: t for t in cap.trials}
    assert 1 <= cap.max_sessions < 64
    assert trials[cap.max_sessions]["meets_target"] and not trials[cap.max_sessions + 1]["meets_target"]
    assert max_sessions(with_n, 1e6, limit=8).max_sessions == 8  # the ceiling when every trial passes
    assert max_sessions(with_n, 1e-3, limit=8).max_sessions == 0  # even one session misses 1 ms


SIM_ARGS = ["agent", "simulate", "llama-3.2-1b", "--gpu", "l4", "--steps", "4", "--system-tokens", "2000",
            "--output-tokens", "100", "--tool-tokens", "300", "--gap-s", "exp:2", "--sessions", "6"]


def test_cli_json_is_the_use_case(capsys):
    assert main([*SIM_ARGS, "--retention", "pin:30", "--run-latency-target", "30", "--max-sessions", "8",
                 "--json"]) == 0
    got = read_result(capsys.readouterr().out)
    want = run_agent_simulate(AgentSimRequest(model="llama-3.2-1b", gpu="l4", steps="4", system_tokens=2000,
                                              output_tokens="100", tool_tokens="300", gap_s="exp:2", sessions=6,
                                              retention="pin:30", run_latency_target=30, max_sessions=8))
    assert got == json.loads(to_json(want.as_dict()))
    assert got["sessions"]["retention"] == "pin:30" and got["capacity"]["max_sessions"] >= 1


def test_cli_tables_print(capsys):
    assert main(SIM_ARGS) == 0
    out = capsys.readouterr().out
    assert "6 agent sessions" in out and "run latency" in out and "cache:" in out


@pytest.mark.parametrize("extra, field", [
    (["--retention", "pin:0"], "--retention"), (["--retention", "offload:1e9"], "--retention"),
    (["--retention", "keep"], "--retention"), (["--sessions", "0"], "--sessions"),
    (["--compaction", "every:0,5"], "--compaction"), (["--gap-s", "-1"], "--gap"),
    (["--kv-blocks", "10"], "--kv-blocks"), (["--stagger-s", "-1"], "--stagger"),
    (["--run-latency-target", "0"], "--run-latency-slo"),
])
def test_bad_inputs_are_one_line_errors_naming_the_field(capsys, extra, field):
    assert main([*SIM_ARGS, *extra]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and err.startswith(f"error: {field}:"), err


def test_fan_out_and_missing_shapes_are_refused(tmp_path):
    with pytest.raises(KokubanError) as exc:
        AgentSimRequest(model="llama-3.2-1b", gpu="l4", steps="4")
    assert exc.value.field == "system_tokens"
    path = tmp_path / "fan.toml"
    path.write_text('steps = "2"\nsystem_tokens = 10\noutput_tokens = "1"\ntool_tokens = "0"\ngap_s = "0"\n'
                    'subagents = 2\n')
    with pytest.raises(KokubanError) as exc:
        run_agent_simulate(AgentSimRequest(model="llama-3.2-1b", gpu="l4", scenario_file=str(path)))
    assert exc.value.field == "subagents"
