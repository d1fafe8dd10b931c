"""The claims of docs/agents.md's worked example, checked against what kokuban computes, and step 1's arithmetic by
hand. The example's table and step 1's figures are generated into the page (`python -m evidence`)."""

from __future__ import annotations

import pytest

from kokuban.usecases.agent import AgentRequest, run_agent

POL = ("threshold:100000,8000", "every:20,8000", "none")
_runs: dict = {}


def means(where: str, caching: str) -> dict[str, float]:
    """Mean USD per run of each policy that fits, for a price row (API) or `model on gpu` (self-hosted, scalar set)."""
    if (where, caching) not in _runs:
        if " on " in where:
            model, gpu = where.split(" on ")
            place = {"model": model, "gpu": gpu, "efficiency_file": "scalar"} | (
                {} if caching == "on" else {"survival": "drop"})
        else:
            place = {"price": where} | ({} if caching == "on" else {"cache_retention": "none"})
        res = run_agent(AgentRequest(preset="tracelab-session", runs=20, compaction=POL, **place))
        _runs[where, caching] = {p.policy.spec: p.distribution()["mean"] for p in res.policies}
    return _runs[where, caching]


def test_the_window_decides_which_policies_fit():
    """The uncompacted session reaches 20,000 + 83·(523 + 2,699) = 287,426 tokens: beyond a 200,000-token window
    (Sonnet 4.5) and a 131,072-token one (gpt-oss-120b), inside a 1M one (DeepSeek V4 Pro), where compacting is still
    the cheaper."""
    assert 20_000 + 83 * (523 + 2_699) == 287_426
    assert "none" not in means("anthropic/claude-sonnet-4.5", "on")
    assert "none" not in means("gpt-oss-120b on h100-sxm", "on")
    v4 = means("deepseek/deepseek-v4-pro", "on")
    assert v4["threshold:100000,8000"] < v4["none"]


def test_caching_and_compaction_as_the_page_says():
    """Caching is cheaper everywhere; without a cache the frequent every:20 wins, with one the rarer threshold wins."""
    for where in ("anthropic/claude-sonnet-4.5", "deepseek/deepseek-v4-pro", "gpt-oss-120b on h100-sxm",
                  "gpt-oss-120b on h200"):
        on, off = means(where, "on"), means(where, "off")
        assert all(on[p] < off[p] for p in on), where
        assert on["threshold:100000,8000"] < on["every:20,8000"], where
    for where in ("anthropic/claude-sonnet-4.5", "deepseek/deepseek-v4-pro"):
        off = means(where, "off")
        assert off["every:20,8000"] < off["threshold:100000,8000"], where
    # without a cache the H200 (same FLOP/s, dearer hour) costs more than the H100: recomputing is compute-bound
    assert means("gpt-oss-120b on h200", "off")["threshold:100000,8000"] > means(
        "gpt-oss-120b on h100-sxm", "off")["threshold:100000,8000"]


def test_prose_numbers():
    # S0 + o + r = 23,222: step 1's prompt
    assert 20_000 + 523 + 2_699 == 23_222
    res = run_agent(
        AgentRequest(preset="tracelab-session", runs=20, compaction=POL, price="anthropic/claude-sonnet-4.5")
    )
    sonnet = means("anthropic/claude-sonnet-4.5", "on")["threshold:100000,8000"]
    h100 = means("gpt-oss-120b on h100-sxm", "on")["threshold:100000,8000"]
    h200 = means("gpt-oss-120b on h200", "on")["threshold:100000,8000"]
    assert 30 < sonnet / h100 < 35 < sonnet / h200 < 37  # self-hosted against Sonnet: far cheaper
    for gpu in ("h100-sxm", "h200"):  # caching roughly halves gpt-oss's cost
        on, off = (means(f"gpt-oss-120b on {gpu}", c)["threshold:100000,8000"] for c in ("on", "off"))
        assert 0.4 < on / off < 0.6
    assert res.policy_summary(res.chosen)["cache_read_share"] > 0.9  # most input tokens are cache reads


def test_step_one_on_the_api_by_hand():
    # 20,000 × 0.30e-6 + 3,222 × 3.75e-6 + 523 × 15e-6 = 0.006 + 0.0120825 + 0.007845 = 0.0259275
    hand = 20_000 * 0.30e-6 + 3_222 * 3.75e-6 + 523 * 15e-6
    assert hand == pytest.approx(0.0259275)
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
    assert b == 761_278_464 and s.cached_tokens == 20_523 and s.kv_held_bytes == b
    assert s.slots == 14  # B: sessions of that context the H100 holds (core.memory.max_batch)
    # The roofline's prefill of the 2,699 new tokens and the 523-token decode; money = s · u.
    assert round(s.prefill_s, 6) == 0.06381 and round(s.decode_s, 6) == 0.600178
    assert s.prefill_usd == pytest.approx(s.prefill_s * u) and round(s.prefill_usd, 9) == pytest.approx(0.000052997)
    assert s.decode_usd == pytest.approx(s.decode_s * u) and round(s.decode_usd, 8) == pytest.approx(0.00049848)
    # Survival over the gap g (agents/survival.py's formulas written out): host memory $0.0816 per 8 GiB-hour,
    # i.e. h = 0.0816 / (8 · 2^30) $ per byte-hour; link ℓ = 0.8 × 64 GB/s (PCIe 5.0 x16) = 51.2 GB/s.
    g, slots = s.gap_before_s, 14
    h = 0.0816 / (8 * 2**30) / 3600
    copies = 2 * b / 51.2e9
    assert round(copies, 6) == 0.029737
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
