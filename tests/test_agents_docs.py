"""Every number docs/agents.md quotes: the example table recomputed, and step 1's arithmetic by hand."""

from __future__ import annotations

import re
from pathlib import Path

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
        scalar = {"model": model, "gpu": gpu, "efficiency_file": "scalar"}  # the doc's scalar step model
        return scalar | ({} if caching == "on" else {"survival": "drop"})
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
    assert 30 < 3.6849 / 0.1172 < 35 < 3.6849 / 0.1022 < 37 and "about 30–35×" in DOC  # self-hosted vs Sonnet
    assert 0.4 < 0.1172 / 0.2203 < 0.6 and 0.4 < 0.1022 / 0.2286 < 0.6 and "by about half" in DOC  # caching, gpt-oss
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
        AgentRequest(preset="tracelab-session", runs=20, compaction=POL, model="gpt-oss-120b", gpu="h100-sxm",
                     efficiency_file="scalar")  # the doc's scalar step model
    ).steps_frame()
    s = df.iloc[1]
    u = 2.99 / 3600  # the H100's $2.99 per GPU-hour, one GPU, per second
    # KV held after step 0: S0 + o = 20,000 + 523 = 20,523 tokens. gpt-oss-120b (config.json): 36 layers alternating
    # sliding (window 128) and full attention, 8 KV heads × head_dim 64, bf16 K and V: 2 · 8 · 64 · 2 B = 2,048 B per
    # token per layer. 18 full layers hold all 20,523 tokens, 18 sliding layers 128:
    # 18 · 2,048 · 20,523 + 18 · 2,048 · 128 = 756,559,872 + 4,718,592 = 761,278,464 B.
    per_token_layer = 2 * 8 * 64 * 2
    b = 18 * per_token_layer * 20_523 + 18 * per_token_layer * 128
    assert b == 761_278_464 and s.cached_tokens == 20_523 and s.kv_held_bytes == b and "761,278,464" in DOC
    assert s.slots == 14  # B: sessions of that context the H100 holds (core.memory.max_batch), quoted in the docs
    # The roofline's prefill of the 2,699 new tokens and the 523-token decode, as the docs quote them; money = s · u.
    assert round(s.prefill_s, 6) == 0.06381 and round(s.decode_s, 6) == 0.600178
    assert s.prefill_usd == pytest.approx(s.prefill_s * u) and round(s.prefill_usd, 9) == pytest.approx(0.000052997)
    assert s.decode_usd == pytest.approx(s.decode_s * u) and round(s.decode_usd, 8) == pytest.approx(0.00049848)
    # Survival over the gap g (agents/survival.py's formulas written out): host memory $0.0816 per 8 GiB-hour,
    # i.e. h = 0.0816 / (8 · 2^30) $ per byte-hour; link ℓ = 0.8 × 64 GB/s (PCIe 5.0 x16) = 51.2 GB/s.
    g, slots = s.gap_before_s, 14
    h = 0.0816 / (8 * 2**30) / 3600
    copies = 2 * b / 51.2e9
    assert round(copies, 6) == 0.029737 and "0.029737 s" in DOC
    keep = u * g / slots
    offload = h * b * g + u * copies / slots
    recompute_s = s.drop_usd / u  # ΔP, the roofline's recompute of the 20,523 cached tokens
    assert (s.keep_usd, s.offload_usd) == pytest.approx((keep, offload))
    assert (round(keep, 8), round(offload, 10), round(s.drop_usd, 8)) == pytest.approx(
        (0.00021492, 0.0000090415, 0.00028036))
    # The cheapest survives: offload < keep < drop; the step's bill is prefill + decode + offload.
    assert s.survival == "offload" and offload < keep < s.drop_usd
    assert s.usd == pytest.approx(s.prefill_usd + s.decode_usd + offload)
    assert round(s.usd, 8) == pytest.approx(0.00056052)
    assert s.gpu_s == pytest.approx(s.prefill_s + s.decode_s + copies / slots)
    assert round(s.gpu_s, 5) == pytest.approx(0.66611)
    # Break-even gaps, the closed forms: keep = drop at ΔP·B; keep = offload at (2b/ℓ)(u/B) ÷ (u/B − h·b);
    # offload = drop at (u·ΔP − u·(2b/ℓ)/B) ÷ (h·b).
    keep_drop = recompute_s * slots
    keep_offload = copies * (u / slots) / (u / slots - h * b)
    offload_drop = (u * recompute_s - u * copies / slots) / (h * b)
    assert (s.break_even_keep_drop_s, s.break_even_keep_offload_s, s.break_even_offload_drop_s) == pytest.approx(
        (keep_drop, keep_offload, offload_drop))
    assert (round(keep_drop, 2), round(keep_offload, 3), round(offload_drop, 2)) == pytest.approx((4.73, 0.031, 138.69))
