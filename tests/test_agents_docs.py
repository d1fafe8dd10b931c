"""Every number docs/agents.md quotes: the example table recomputed, and step 1's arithmetic by hand."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from kokuban.usecases.agent import AgentRequest, run_agent

DOC = (Path(__file__).resolve().parents[1] / "docs" / "agents.md").read_text()
POL = ("threshold:100000,8000", "every:20,8000", "none")


def table_rows():
    block = DOC.split("<!-- agent-example-table")[1].split("<!-- end agent-example-table")[0]
    return re.findall(r"^\| (\S+(?: on \S+)?) \| (\S+) \| (on|off) \| (\$[\d.]+|does not fit) \|$", block, re.MULTILINE)


def kwargs(where: str, caching: str) -> dict:
    if " on " in where:
        model, gpu = where.split(" on ")
        return {"model": model, "gpu": gpu} | ({} if caching == "on" else {"survival": "drop"})
    return {"price": where} | ({} if caching == "on" else {"cache_retention": "none"})


def test_example_table_is_what_kokuban_computes():
    rows = table_rows()
    assert len(rows) == 19
    cache: dict = {}
    for where, policy, caching, usd in rows:
        key = (where, caching)
        if key not in cache:
            res = run_agent(AgentRequest(preset="tracelab-session", runs=20, compaction=POL, **kwargs(where, caching)))
            cache[key] = {p.policy.spec: p.distribution()["mean"] for p in res.policies}
        if usd == "does not fit":
            assert policy not in cache[key]
        else:
            assert round(cache[key][policy], 4) == pytest.approx(float(usd[1:])), (where, policy, caching)


def test_prose_numbers():
    # 20,000 + 83·(523 + 2,699) = 287,426; S0 + o + r = 23,222
    assert 20_000 + 83 * (523 + 2_699) == 287_426 and "287,426" in DOC
    assert 20_000 + 523 + 2_699 == 23_222 and "23,222" in DOC
    res = run_agent(
        AgentRequest(preset="tracelab-session", runs=20, compaction=POL, price="anthropic/claude-sonnet-4.5")
    )
    assert 35 < 3.6849 / 0.0997 < 45 and 35 < 3.6849 / 0.0879 < 45 and "about 40×" in DOC  # self-hosted vs Sonnet
    assert 0.0997 / 0.2031 <= 0.5 and 0.0879 / 0.2143 <= 0.5 and "by half or more" in DOC  # caching on gpt-oss-120b
    assert f"{res.policy_summary(res.chosen)['cache_read_share']:.1%}" == "94.1%" and "94.1 %" in DOC


def test_step_one_on_the_api_by_hand():
    # 20,000 × 0.30e-6 + 3,222 × 3.75e-6 + 523 × 15e-6 = 0.006 + 0.0120825 + 0.007845 = 0.0259275
    hand = 20_000 * 0.30e-6 + 3_222 * 3.75e-6 + 523 * 15e-6
    assert hand == pytest.approx(0.0259275) and "$0.0259275" in DOC
    df = run_agent(AgentRequest(preset="tracelab-session", runs=20, compaction=POL, price="anthropic/claude-sonnet-4.5")
                   ).steps_frame()
    assert df["usd"].iloc[1] == pytest.approx(hand)
    assert df["gap_before_s"].iloc[1] < 300


def test_step_one_self_hosted_by_hand():
    df = run_agent(
        AgentRequest(preset="tracelab-session", runs=20, compaction=POL, model="gpt-oss-120b", gpu="h100-sxm")
    ).steps_frame()
    s = df.iloc[1]
    u = 2.99 / 3600
    assert s.cached_tokens == 20_523 and s.kv_bytes_held == 761_278_464 and s.slots == 16
    assert round(s.prefill_s, 6) == 0.060193 and round(s.decode_s, 6) == 0.441391
    assert s.usd_prefill == pytest.approx(s.prefill_s * u) and round(s.usd_prefill, 9) == pytest.approx(0.000049994)
    assert round(s.usd_decode, 8) == pytest.approx(0.00036660)
    # offload by hand: h·b·g + u·(2b/ℓ)/B with h = 0.0816 / (8·2^30/1e9) per GB-hour
    h = 0.0816 / (8 * 2**30 / 1e9) / 1e9 / 3600
    copies = 2 * 761_278_464 / 51.2e9
    assert round(copies, 6) == 0.029737
    assert s.offload_usd == pytest.approx(h * 761_278_464 * s.gap_before_s + u * copies / 16)
    assert (round(s.keep_usd, 8), round(s.offload_usd, 10), round(s.drop_usd, 8)) == pytest.approx(
        (0.00018805, 0.0000088209, 0.00028337))
    assert s.survival == "offload" and round(s.usd, 8) == pytest.approx(0.00042542)
    assert round(s.gpu_seconds, 5) == pytest.approx(0.50344)
    assert np.round([s.break_even_keep_drop_s, s.break_even_offload_drop_s], 2).tolist() == pytest.approx(
        [5.46, 140.29]
    )
    assert round(s.break_even_keep_offload_s, 3) == 0.031
