"""Every number the closed-loop sessions section of docs/agents.md quotes: the output block rendered again, the
retention table recomputed, the capacity bracket re-run, the cache arithmetic by hand."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest

from kokuban.usecases.agent_sim import AgentSimRequest, run_agent_simulate

DOC = (Path(__file__).resolve().parents[1] / "docs" / "agents.md").read_text()
RUN = {"model": "llama-3.1-8b", "gpu": "h100-sxm", "preset": "swe-bench", "efficiency_file": "scalar"}  # as the doc
_cache: dict = {}


def simulate(sessions: int = 12, retention: str = "evict"):
    key = (sessions, retention)
    if key not in _cache:
        _cache[key] = run_agent_simulate(AgentSimRequest(**RUN, sessions=sessions, retention=retention))
    return _cache[key]


def block(name: str) -> str:
    return DOC.split(f"<!-- {name}")[1].split(f"<!-- end {name}")[0]


def test_output_block_is_what_the_command_prints():
    from rich.console import Console

    from kokuban.present.agent import agent_sim_tables

    console = Console(width=120, record=True, color_system=None, file=io.StringIO())
    agent_sim_tables(console, simulate())
    printed = [line.rstrip() for line in console.export_text().splitlines()]
    quoted = block("agent-sim-output").split("```\n")[1].splitlines()
    assert quoted == printed


def test_retention_table_is_what_kokuban_computes():
    rows = re.findall(r"^\| (\S+) \| ([\d.]+) % \| (\d+) s \| ([\d.]+) s \| \$([\d.]+) \| (\d+) \| (\d+) \|$",
                      block("agent-sim-table"), re.MULTILINE)
    assert [r[0] for r in rows] == ["evict", "pin:30", "offload:5.12e10,5e11"]
    for retention, hit, p90, ttft, usd, reloads, preemptions in rows:
        d = simulate(retention=retention).as_dict()
        s, c = d["sessions"], d["sessions"]["cache"]
        assert f"{100 * c['hit_rate']:.1f}" == hit and f"{s['run_latency_s']['p90']:.0f}" == p90
        assert f"{s['ttft_per_call_s']['mean']:.2f}" == ttft and f"{s['usd_per_run']['mean']:.4f}" == usd
        assert c["reloads"] == int(reloads) and d["requests"]["preemptions"] == int(preemptions)
    assert f"{simulate(retention='offload:5.12e10,5e11').as_dict()['sessions']['cache']['reload_s']:.2f}" == "0.82"
    assert "(8 reloads, 0.82 s in all)" in DOC and "(348 times against 92)" in DOC


def test_cache_arithmetic_by_hand():
    # 28,440 blocks × 16 = 455,040 tokens; last context 20,000 + 10 × 3,222 + 523 = 52,743; 455,040 / 52,743 = 8.63
    run = simulate().run
    assert run.sim.kv_capacity_blocks == 28_440 and 28_440 * 16 == 455_040
    assert 20_000 + 10 * (523 + 2_699) + 523 == 52_743 == int((run.sim.prompt_tokens + run.sim.output_tokens).max())
    assert 455_040 / 52_743 == pytest.approx(8.63, abs=0.005)
    for text in ("455,040 tokens", "52,743 tokens", "8.6 sessions", "51.2 GB/s"):
        assert text in DOC
    assert 64e9 * 0.8 == 51.2e9


@pytest.mark.parametrize("retention, holds", [("evict", 12), ("offload:5.12e10,5e11", 13)])
def test_capacity_quoted_is_the_bracket(retention, holds):
    # the search's answer n: n sessions meet the 300 s p90 target and n + 1 do not
    assert "12 such sessions under evict and 13 under offload" in DOC
    assert simulate(holds, retention).run.summary()["run_latency_s"]["p90"] <= 300
    assert simulate(holds + 1, retention).run.summary()["run_latency_s"]["p90"] > 300
