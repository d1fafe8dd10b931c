"""The claims of the closed-loop sessions section of docs/agents.md, checked against what kokuban computes: the
retention policies against each other, the capacity bracket, the cache arithmetic by hand. The run's output and the
retention table are generated into the page (`python -m evidence`)."""

from __future__ import annotations

import pytest

from kokuban.usecases.agent_sim import AgentSimRequest, run_agent_simulate

RUN = {"model": "llama-3.1-8b", "gpu": "h100-sxm", "preset": "swe-bench", "efficiency_file": "scalar"}  # as the doc
_cache: dict = {}


def simulate(sessions: int = 12, retention: str = "evict"):
    key = (sessions, retention)
    if key not in _cache:
        _cache[key] = run_agent_simulate(AgentSimRequest(**RUN, sessions=sessions, retention=retention))
    return _cache[key]


def test_retention_policies_as_the_page_says():
    """Pinning through the gaps takes memory the running calls need: more preemptions than evicting. Offloading turns
    evictions into reloads of well under a second each: a higher hit rate and fewer preemptions."""
    evict, pin, offload = (simulate(retention=r).as_dict() for r in ("evict", "pin:30", "offload:5.12e10,5e11"))
    assert pin["requests"]["preemptions"] > evict["requests"]["preemptions"]
    cache = offload["sessions"]["cache"]
    assert cache["hit_rate"] > evict["sessions"]["cache"]["hit_rate"]
    assert offload["requests"]["preemptions"] < evict["requests"]["preemptions"]
    assert cache["reloads"] > 0 and cache["reload_s"] / cache["reloads"] < 1


def test_cache_arithmetic_by_hand():
    # 28,440 blocks × 16 = 455,040 tokens; last context 20,000 + 10 × 3,222 + 523 = 52,743; 455,040 / 52,743 = 8.63
    run = simulate().run
    assert run.sim.kv_capacity_blocks == 28_440 and 28_440 * 16 == 455_040
    assert 20_000 + 10 * (523 + 2_699) + 523 == 52_743 == int((run.sim.prompt_tokens + run.sim.output_tokens).max())
    assert 455_040 / 52_743 == pytest.approx(8.63, abs=0.005)
    assert 64e9 * 0.8 == 51.2e9  # the offload link: PCIe 5.0 x16 at 0.8


@pytest.mark.parametrize("retention, holds", [("evict", 12), ("offload:5.12e10,5e11", 13)])
def test_capacity_bracket(retention, holds):
    # the search's answer n: n sessions meet the 300 s p90 target and n + 1 do not
    assert simulate(holds, retention).run.summary()["run_latency_s"]["p90"] <= 300
    assert simulate(holds + 1, retention).run.summary()["run_latency_s"]["p90"] > 300
