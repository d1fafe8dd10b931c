"""Batch curve, crossover and input/output ratio: against the core and against hand arithmetic."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from kokuban.core import cost, memory, roofline
from kokuban.economics.batch import (
    batch_curve,
    batch_summary,
    blackboard_crossover_batch,
    compute_bound_batch,
    crossover_batch,
    input_output,
)
from kokuban.errors import KokubanError
from kokuban.specs.catalog import load_accelerator, load_model
from kokuban.specs.deployment import Deployment
from kokuban.specs.hardware import Efficiency
from kokuban.usecases.estimate import estimate

H100 = load_accelerator("h100-sxm")
# H100 SXM: 989.4e12 dense bf16 FLOP/s, 3.35e12 B/s; default efficiencies 0.6 and 0.8:
# achieved ridge = 989.4e12·0.6 / (3.35e12·0.8) = 593.64e12 / 2.68e12 = 221.507 FLOP per byte
RIDGE = 593.64 / 2.68


def dep(model="llama-3.1-8b", n=1, layout="tp", gpu=H100, **kw):
    kw.setdefault("efficiency", Efficiency.textbook())  # the hand arithmetic below uses 0.6 / 0.8 / 0.75, no overhead
    return Deployment.make(load_model(model), gpu, n, layout=layout, **kw)


# ---- the blackboard formula, by hand --------------------------------------------------------------
def test_compute_bound_batch_by_hand():
    # bf16: 2 bytes per weight, 2 FLOPs per param → B* = F/BW = 221.507
    assert compute_bound_batch(989.4e12 * 0.6, 3.35e12 * 0.8, 2.0) == pytest.approx(221.507, rel=1e-5)
    # fp8 weights on fp8 tensor cores: F doubles (1978.9e12), bytes halve → the same 221.5
    assert compute_bound_batch(1978.9e12 * 0.6, 3.35e12 * 0.8, 1.0) == pytest.approx(221.53, rel=1e-4)
    # fp8 weights multiplied in bf16 (A100-style de-quantisation): half the bytes, same FLOP/s → 110.75
    assert compute_bound_batch(989.4e12 * 0.6, 3.35e12 * 0.8, 1.0) == pytest.approx(110.75, rel=1e-4)
    # an MoE step that reads 4× the params a token multiplies through: 4 × 221.507 = 886.03
    assert compute_bound_batch(989.4e12 * 0.6, 3.35e12 * 0.8, 2.0, read_per_active=4.0) == pytest.approx(
        886.03, rel=1e-5
    )


def test_compute_bound_batch_rejects_nonsense():
    with pytest.raises(KokubanError, match="bandwidth"):
        compute_bound_batch(1e15, 0.0)


def test_dense_blackboard_crossover_is_the_ridge():
    # llama-3.1-8b in bf16: every read weight is 2 bytes and multiplied once → B* = ridge exactly
    assert blackboard_crossover_batch(dep()) == pytest.approx(RIDGE, rel=1e-9)
    # TP4 divides compute and weight read alike: unchanged
    assert blackboard_crossover_batch(dep("llama-3.1-70b", 4)) == pytest.approx(RIDGE, rel=1e-9)


def test_moe_blackboard_crossover_scales_by_touching():
    # Mixtral 8x7B (8 experts, top-2): near B* ≈ 800 a layer misses an expert with prob (6/8)^800 ≈ 0, so
    # the step reads every weight but the input embedding: 46,702,792,704 − 131,072,000 = 46,571,720,704
    # params, against 12,748,853,248 multiplied per token: ratio 3.65302 → B* = 221.507 × 3.65302 = 809.17
    d = dep("mixtral-8x7b", 2)
    assert blackboard_crossover_batch(d) == pytest.approx(RIDGE * 46_571_720_704 / 12_748_853_248, rel=1e-6)
    assert blackboard_crossover_batch(d) == pytest.approx(809.17, abs=0.01)


@pytest.mark.parametrize("model,n,hand", [("llama-3.1-8b", 1, 222), ("mixtral-8x7b", 2, 810)])
def test_curve_turns_compute_bound_where_the_formula_says(model, n, hand):
    # The weight multiplies turn compute-bound where c·B = w(B); each request's KV read (k) and attention (a)
    # run in their own kernels and only need c > max(a, k) for the step to be compute-bound at all:
    # llama-3.1-8b: c = 2·7.505e9 ÷ 593.64e12 = 25.284 µs ≫ k = 32·2048·2 B ÷ 2.68e12 = 48.9 ns; B* = w ÷ c
    #   = 221.507 → first integer 222.
    # mixtral-8x7b TP2: c = 2·12.749e9 ÷ 2 ÷ 593.64e12 = 21.476 µs ≫ k = 65536 B ÷ 2 shards ÷ 2.68e12 = 24.5 ns;
    #   the MoE fixed point B* = 809.17 → 810.
    d = dep(model, n)
    curve = batch_curve(d, 1, max_batch=1000)
    first = int(curve.loc[curve["bound"] == "compute", "batch"].min())
    assert first == hand
    assert 0 < first - blackboard_crossover_batch(d) < 2
    assert crossover_batch(d, 1) == first
    assert (curve.loc[curve["batch"] < first, "bound"] != "compute").all()


def test_crossover_with_kv_matches_curve_and_none_when_kv_dominates():
    # llama-3.1-70b TP4 at 1024: the curve's first compute-bound batch is the bisection's answer
    d = dep("llama-3.1-70b", 4)
    curve = batch_curve(d, 1024)
    assert crossover_batch(d, 1024) == int(curve.loc[curve["bound"] == "compute", "batch"].min())
    # llama-3.1-8b at 4096: KV per request 32·2048·2·4096 = 536.9 MB → 200 µs > compute 27 µs: never
    assert crossover_batch(dep(), 4096) is None
    assert "never compute-bound" in batch_summary(dep(), batch_curve(dep(), 4096)).reason


# ---- the curve agrees with the core at every point it shares -----------------------------------------
@pytest.mark.parametrize("model,n,layout,gpu,ctx,batches", [
    ("llama-3.1-8b", 1, "tp", "h100-sxm", 4096, (1, 7, 64, 111)),
    ("llama-3.1-70b", 4, "tp", "h100-sxm", 2048, (1, 33, 200)),
    ("qwen3-30b-a3b", 4, "ep", "h200", 8192, (1, 5, 250)),
])
def test_rows_equal_estimate(model, n, layout, gpu, ctx, batches):
    d = dep(model, n, layout, load_accelerator(gpu))
    curve = batch_curve(d, ctx).set_index("batch")
    for b in batches:
        e = estimate(model, gpu, gpus=n, layout=layout, batch=b, context=ctx, efficiency=d.efficiency).as_dict()
        row = curve.loc[b]
        assert row["step_time_s"] == pytest.approx(e["decode"]["step_time_s"], rel=1e-12)
        assert row["bound"] == e["decode"]["bound"]
        assert row["tokens_per_s"] == pytest.approx(e["decode"]["tokens_per_s"], rel=1e-12)
        assert row["tokens_per_s_per_user"] == pytest.approx(e["decode"]["tokens_per_s_per_user"], rel=1e-12)
        assert row["usd_per_m_output"] == pytest.approx(e["cost"]["usd_per_m_output"], rel=1e-12)
        for part, usd in e["cost"]["decode_split_usd_per_m"].items():
            assert row[f"usd_per_m_output_{part}"] == pytest.approx(usd, rel=1e-12, abs=1e-15)
        assert row["weights_s_per_token"] * b == pytest.approx(e["decode"]["breakdown"]["weights_s"], rel=1e-12)


@settings(max_examples=25, deadline=None, derandomize=True)
@given(b=st.integers(1, 400), ctx=st.integers(1, 4000))
def test_parts_add_up_and_shared_part_falls_as_one_over_b(b, ctx):
    d = dep("llama-3.1-70b", 4)
    curve = batch_curve(d, ctx, max_batch=min(400, int(memory.max_batch(d, ctx))))
    assume(b <= len(curve))
    row = curve.iloc[b - 1]
    assert row["usd_per_m_output_shared"] + row["usd_per_m_output_per_request"] == pytest.approx(
        row["usd_per_m_output"], rel=1e-12
    )
    # weight read per token × B is the whole step's weight read: the same at every batch (dense model)
    w1 = float(roofline.decode_step(d, 1, ctx).weights_s)
    assert row["weights_s_per_token"] * row["batch"] == pytest.approx(w1, rel=1e-12)
    # compute per token does not depend on the batch
    assert row["compute_s_per_token"] == pytest.approx(float(roofline.decode_step(d, 1, ctx).compute_s), rel=1e-12)


def test_summary_ratio_and_range():
    d = dep()
    curve = batch_curve(d, 1024)
    s = batch_summary(d, curve)
    assert len(curve) == s.max_batch_fits == int(memory.max_batch(d, 1024))
    assert curve["batch"].tolist() == list(range(1, s.max_batch_fits + 1))
    assert s.cost_ratio_max_to_min == pytest.approx(curve["usd_per_m_output"].iloc[0] / curve["usd_per_m_output"].min())
    # batch 1 of an 8B model on one H100 reads 16 GB of weights per token; at the largest batch it shares
    # them among 446, so the ratio is large: at least 446 × 16.06 GB / (16.06 GB + 446 × 0.134 GB) ≈ 97 ÷ ...
    assert s.cost_ratio_max_to_min > 50


def test_bad_batch_ranges():
    d = dep()
    with pytest.raises(KokubanError, match="largest batch that fits at context 4096 is 111"):
        batch_curve(d, 4096, max_batch=500)
    with pytest.raises(KokubanError, match="empty batch range"):
        batch_curve(d, 4096, min_batch=50, max_batch=10)
    with pytest.raises(KokubanError, match="exceeds llama-3.1-8b's maximum"):
        batch_curve(d, 10**6)
    with pytest.raises(KokubanError, match="does not fit"):
        batch_curve(dep("llama-3.1-405b"), 4096)


# ---- input vs output ---------------------------------------------------------------------------------
def test_input_output_ratio():
    d = dep()
    io = input_output(d, 1, 4096)
    pre, dec = roofline.prefill(d, 1, 4096), roofline.decode_step(d, 1, 4096)
    assert io.output_to_input_ratio == pytest.approx(
        float(cost.usd_per_m_output(d, dec) / cost.usd_per_m_input(d, pre))
    )
    # by hand: decode at batch 1 reads 2·7.505e9 B of weights (the embedding is a lookup) + 536.9 MB of KV
    # at 2.68e12 B/s = 5.601 + 0.200 = 5.801 ms per token. Prefill of 4096 tokens is compute-bound:
    # the LM head (128256·4096 = 0.5253e9) runs for the last position only, so per token
    # [2·(7.505e9 − 0.5253e9) + 2·0.5253e9 ÷ 4096] FLOP ÷ 593.64e12 = 23.516 µs, plus attention
    # 32·(4096·4097/2)·16384 FLOP ÷ 593.64e12 ÷ 4096 = 1.809 µs → ratio = 5.801 ms ÷ 25.325 µs = 229.1
    assert io.output_to_input_ratio == pytest.approx(229.1, rel=2e-3)
    assert io.prefill_bound == "compute" and io.decode_bound == "weights"
    assert "4,096 tokens through each weight read" in io.sentence
    with pytest.raises(KokubanError, match="batch: 1000 does not fit"):
        input_output(d, 1000, 4096)


def test_curve_is_vectorised_over_a_large_batch_range():
    d = dep()
    curve = batch_curve(d, 1)  # every batch that fits at context 1: tens of thousands of rows
    assert len(curve) == int(memory.max_batch(d, 1)) > 50_000
    assert np.isfinite(curve["usd_per_m_output"]).all()
