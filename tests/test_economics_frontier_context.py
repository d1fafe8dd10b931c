"""Frontier and long-context wall: against the core and by hand."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from kokuban.core import memory, roofline
from kokuban.economics.context import BeyondMaxContextWarning, context_summary, context_wall
from kokuban.economics.frontier import cheapest_meeting, frontier_sweep, pareto
from kokuban.errors import KokubanError
from kokuban.specs.catalog import load_accelerator, load_model
from kokuban.specs.deployment import Deployment
from kokuban.specs.hardware import Efficiency
from kokuban.usecases.estimate import estimate

H100, H200 = load_accelerator("h100-sxm"), load_accelerator("h200")
L8 = Deployment.make(load_model("llama-3.1-8b"), H100, efficiency=Efficiency.textbook())


# ---- frontier --------------------------------------------------------------------------------------
def test_pareto_by_hand():
    # points (x, y): (1, 5) (2, 4) (2, 1) (3, 1) (0.5, 4): (2,1) is beaten by (2,4) and (3,1)? no — by (2,4)
    # only on y; (0.5, 4) is beaten by (2, 4) (same y, more x). Frontier: (1,5), (2,4), (3,1).
    x = np.array([1, 2, 2, 3, 0.5])
    y = np.array([5, 4, 1, 1, 4])
    assert pareto(x, y).tolist() == [True, True, False, True, False]


@pytest.fixture(scope="module")
def sweep():
    return frontier_sweep(load_model("llama-3.1-70b"), [H100, H200], 2048, counts=(1, 2, 4, 8), weights=(None, "fp8"))


def test_frontier_rows_equal_estimate(sweep):
    table, skipped = sweep
    # bf16 70B (141 GB) cannot fit on one 80 GB or 141 GB card: reported, not dropped silently
    assert {s.config for s in skipped} == {"1× h100-sxm TP1 bf16", "1× h200 TP1 bf16"}
    for _, row in table.sample(6, random_state=1).iterrows():
        e = estimate("llama-3.1-70b", row["gpu"], gpus=int(row["gpus"]), layout=row["layout"], weights=row["weights"],
                     batch=int(row["batch"]), context=2048).as_dict()
        assert row["tokens_per_s_per_user"] == pytest.approx(e["decode"]["tokens_per_s_per_user"], rel=1e-12)
        assert row["tokens_per_s_per_gpu"] == pytest.approx(e["decode"]["tokens_per_s"] / row["gpus"], rel=1e-12)
        assert row["usd_per_m_output"] == pytest.approx(e["cost"]["usd_per_m_output"], rel=1e-12)
        # TTFT: the prefill of one 2048-token prompt on that deployment
        one = estimate("llama-3.1-70b", row["gpu"], gpus=int(row["gpus"]), layout=row["layout"], weights=row["weights"],
                       batch=1, context=2048).as_dict()
        assert row["ttft_s"] == pytest.approx(one["prefill"]["time_s"], rel=1e-12)


def test_frontier_shape_is_the_published_one(sweep):
    table, _ = sweep
    f = table[table["on_frontier"]].sort_values("tokens_per_s_per_user")
    # along the frontier, more interactivity costs throughput per GPU (strictly falling)
    assert (np.diff(f["tokens_per_s_per_gpu"].to_numpy()) < 0).all()
    # the interactive end is held by the most GPUs, the throughput end by fewer (vLLM/TRT-LLM tables' shape)
    assert f.iloc[-1]["gpus"] == 8 and f.iloc[-1]["batch"] == 1
    assert f.iloc[0]["gpus"] < 8


def test_cheapest_meeting_slo(sweep):
    table, _ = sweep
    best = cheapest_meeting(table, min_tokens_per_s_per_user=50)
    ok = table[table["tokens_per_s_per_user"] >= 50]
    assert best["tokens_per_s_per_user"] >= 50
    assert best["usd_per_m_output"] == pytest.approx(ok["usd_per_m_output"].min())
    with pytest.raises(
        KokubanError,
        match=r"no configuration reaches 1000 tokens/s per user: the fastest, 8× h200 TP8 fp8 at batch 1, gives \d+",
    ):
        cheapest_meeting(table, min_tokens_per_s_per_user=1000)
    with pytest.raises(KokubanError, match="max_ttft_s: no configuration meets a first-token target of 1e-06 s"):
        cheapest_meeting(table, max_ttft_s=1e-6)


def test_frontier_errors():
    with pytest.raises(KokubanError, match="no configuration fits llama-3.1-405b"):
        frontier_sweep(load_model("llama-3.1-405b"), [H100], 4096, counts=(1,))
    with pytest.raises(KokubanError, match="exceeds"):
        frontier_sweep(load_model("llama-3.1-8b"), [H100], 10**7)


# ---- long-context wall -------------------------------------------------------------------------------
def test_context_rows_equal_core():
    df = context_wall(L8, 1024, 131072, points=12)
    for _, row in df.iloc[[0, 5, -1]].iterrows():
        ctx, b = int(row["context"]), int(row["batch"])
        assert b == int(memory.max_batch(L8, ctx)) == row["max_batch"]
        e = estimate("llama-3.1-8b", "h100-sxm", batch="max", context=ctx, efficiency=L8.efficiency).as_dict()
        assert row["usd_per_m_output"] == pytest.approx(e["cost"]["usd_per_m_output"], rel=1e-12)
        assert row["usd_per_m_input"] == pytest.approx(
            estimate("llama-3.1-8b", "h100-sxm", batch=1, context=ctx, efficiency=L8.efficiency).as_dict()["cost"][
                "usd_per_m_input"
            ],
            rel=1e-12,
        )
        # KV per request by hand: 32 layers × 2048 elements × 2 bytes = 131,072 B per token
        assert row["kv_bytes_per_request"] == 131_072 * ctx


def test_bandwidth_wall_by_hand():
    # the attention kernel of one request at context L is KV-bound: k(L) = 131,072 B·L ÷ 2.68e12 = 48.91 ns·L
    # (its compute 32·16384 FLOP·L ÷ 593.64e12 = 0.883 ns·L is smaller); the linear compute c = 25.284 µs
    # k > c ⇔ L > 25.284 µs ÷ 48.91 ns = 516.9 → first integer 517
    s = context_summary(L8, context_wall(L8, 1024, 8192, points=4))
    assert s.bandwidth_wall_context == 517


def test_capacity_wall_is_where_the_largest_batch_stops_amortising_weights():
    s = context_summary(L8, context_wall(L8, 1024, 131072, points=8))
    L = s.capacity_wall_context
    # definition, checked on either side with the core: weight read per token at the largest batch vs compute
    for ctx, binds in ((L - 1, False), (L, True)):
        b = int(memory.max_batch(L8, ctx))
        step = roofline.decode_step(L8, b, ctx)
        assert (float(step.weights_s) > float(step.linear_compute_s)) is binds
    # by hand: 15.01 GB ÷ B > 2·7.505e9 FLOP·B ÷ ... ⇔ B < 221.5 (the ridge); B(L) ≈ 60.1 GB free ÷ 131 kB·L,
    # so L ≈ 60.1e9 ÷ (131072 × 221.5) ≈ 2,070 tokens (attention FLOPs lower c; the exact wall is a little later)
    assert 2000 < L < 2400


def test_surcharge_and_beyond_max_context():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        df = context_wall(L8, 4096, 262_144, points=10, threshold=200_000)
    assert any(issubclass(w.category, BeyondMaxContextWarning) for w in caught)
    at = df[df["context"] == 200_000].iloc[0]
    assert at["surcharge_output"] == pytest.approx(1.0) and at["beyond_max_context"]
    last = df.iloc[-1]
    assert last["surcharge_output"] == pytest.approx(last["usd_per_m_output"] / at["usd_per_m_output"])
    assert df.loc[df["context"] <= 131_072, "beyond_max_context"].eq(False).all()
    s = context_summary(L8, df)
    assert s.surcharge_output_at_end == pytest.approx(last["surcharge_output"]) and s.surcharge_output_at_end > 1


def test_default_threshold_inside_short_models():
    df = context_wall(L8, 1024, 131_072, points=6)
    s = context_summary(L8, df)
    assert s.threshold == 131_072 // 4 and s.surcharge_output_at_end > 1


def test_context_range_errors():
    with pytest.raises(KokubanError, match="start: empty context range: 9000 > the end 8000"):
        context_wall(L8, 9000, 8000)
    with pytest.raises(KokubanError, match="points: must be a positive integer"):
        context_wall(L8, 1024, 8000, points=0)
