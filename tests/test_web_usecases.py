"""The use cases behind the web page (no web libraries needed): the roofline picture by hand, the blackboard's
ratio and why from the estimate's own terms, the interim curves against the estimate, the catalog rows."""

from __future__ import annotations

import math

import pytest

from kokuban.core import cost
from kokuban.core.intensity import arithmetic_intensity, attainable_flops_per_s, ridge_intensity
from kokuban.errors import KokubanError
from kokuban.usecases.board import run_blackboard
from kokuban.usecases.catalog import catalog_model_name, model_from_config
from kokuban.usecases.curves import BatchCurveRequest, ContextWallRequest, run_batch_curve, run_context_wall
from kokuban.usecases.estimate import run_estimate
from kokuban.usecases.request import EstimateRequest


def test_roofline_formulas_by_hand():
    # an H100 SXM at bf16 with the shipped fractions: F = 989.4e12 × 0.74 = 732.156e12 FLOP/s,
    # BW = 3.35e12 × 0.84 = 2.814e12 B/s, ridge = 732.156 / 2.814 = 260.1834 FLOP/B
    f, bw = 989.4e12 * 0.74, 3.35e12 * 0.84
    assert ridge_intensity(f, bw) == pytest.approx(260.1834, rel=1e-6)
    assert attainable_flops_per_s(10.0, f, bw) == pytest.approx(28.14e12)      # 10 × 2.814e12: under the ridge
    assert attainable_flops_per_s(1000.0, f, bw) == pytest.approx(732.156e12)  # past it: the compute roof
    assert arithmetic_intensity(3e12, 1.5e12) == 2.0
    assert math.isinf(arithmetic_intensity(1.0, 0.0))


def test_blackboard_roofs_scale_with_the_deployment():
    # the shipped step model's fractions on an H100 in bf16: 989.4e12 × 0.69 = 682.686e12 FLOP/s, 3.35e12 × 0.90 =
    # 3.015e12 B/s, ridge 682.686 ÷ 3.015 = 226.4299 FLOP/B; the scalar set's 0.74 / 0.84: 732.156e12, 2.814e12
    one = run_blackboard(EstimateRequest(model="llama-3.1-8b", gpu="h100-sxm", batch=8))
    assert one.peak_flops_per_s == pytest.approx(682.686e12) and one.bandwidth_bytes_per_s == pytest.approx(3.015e12)
    two = run_blackboard(EstimateRequest(model="llama-3.1-8b", gpu="h100-sxm", gpus=2, batch=8))
    assert two.peak_flops_per_s == pytest.approx(2 * 682.686e12) and two.ridge_flop_per_byte == pytest.approx(226.4299)
    scalar = run_blackboard(EstimateRequest(model="llama-3.1-8b", gpu="h100-sxm", batch=8, efficiency_file="scalar"))
    assert scalar.peak_flops_per_s == pytest.approx(732.156e12)
    assert scalar.bandwidth_bytes_per_s == pytest.approx(2.814e12)


def test_operating_points_from_the_estimates_terms():
    b = run_blackboard(EstimateRequest(model="llama-3.1-8b", gpu="h100-sxm", batch=8))
    d = b.as_dict()["estimate"]
    for kind, step_s in (("decode", d["decode"]["step_time_s"]), ("prefill", d["prefill"]["time_s"])):
        s = d[kind]
        point = getattr(b, kind)
        moved = s["weights_read_bytes"] + s["kv_read_bytes"]
        assert point.intensity_flop_per_byte == pytest.approx(s["flops"] / moved)
        assert point.achieved_flops_per_s == pytest.approx(s["flops"] / step_s)
        assert point.achieved_flops_per_s <= point.attainable_flops_per_s * (1 + 1e-9)  # on or under the roof
    # decode of 8 requests sits far left of the ridge, prefill of 8 × 4096 tokens far right
    assert b.decode.intensity_flop_per_byte < b.ridge_flop_per_byte < b.prefill.intensity_flop_per_byte


def test_output_to_input_ratio_is_the_cost_ratio():
    req = EstimateRequest(model="llama-3.1-8b", gpu="h100-sxm", batch=8)
    b, d = run_blackboard(req), run_estimate(req).as_dict()
    assert b.output_to_input_ratio == pytest.approx(d["cost"]["usd_per_m_output"] / d["cost"]["usd_per_m_input"])
    # the price cancels: a free accelerator (catalog price 0) still has a ratio, the same as a priced one
    free = run_blackboard(EstimateRequest(model="llama-3.1-8b", gpu="h100-sxm", batch=8, price_per_hour=0))
    assert free.output_to_input_ratio == pytest.approx(b.output_to_input_ratio)


@pytest.mark.parametrize(("req", "bound", "words"), [
    (dict(model="llama-3.1-8b", gpu="h100-sxm", batch=8, step_overhead=0), "weights", "shared by the batch"),
    # 12 × 4.29 GB of KV at 32k tokens ÷ 2.814 TB/s = 18.3 ms against a 16 GB weight read of 5.7 ms
    (dict(model="llama-3.1-8b", gpu="h100-sxm", batch=12, context=32768, step_overhead=0), "kv", "no batch"),
    # 50 ms of fixed overhead against a roofline step of about 6 ms
    (dict(model="llama-3.1-8b", gpu="h100-sxm", batch=1, step_overhead=0.05), "overhead", "fixed overhead"),
])
def test_why_names_the_bound_and_its_lever(req, bound, words):
    b = run_blackboard(EstimateRequest(**req))
    d = b.as_dict()
    assert d["estimate"]["decode"]["bound"] == bound
    why = " ".join(d["why"])
    assert f"Decode is {bound}-bound" in why and words in why
    assert f"the largest batch that fits is {d['estimate']['memory']['max_batch']:,}" in why


def test_batch_curve_rows_are_the_estimates():
    base = dict(model="llama-3.1-8b", gpu="h100-sxm", context=4096)
    c = run_batch_curve(BatchCurveRequest(**base, points=20))
    assert len(c.rows) <= 20 and c.max_batch == run_estimate(EstimateRequest(**base, batch="max")).batch
    for row in c.rows[::6]:
        est = run_estimate(EstimateRequest(**base, batch=row["batch"])).as_dict()
        assert row["usd_per_m_output"] == pytest.approx(est["cost"]["usd_per_m_output"], rel=1e-12)
        assert row["step_time_s"] == pytest.approx(est["decode"]["step_time_s"], rel=1e-12)
    with pytest.raises(KokubanError) as e:
        run_batch_curve(BatchCurveRequest(**base, max_batch=500))
    assert e.value.field == "max_batch"


def test_context_wall_bounds():
    w = run_context_wall(ContextWallRequest(model="llama-3.1-8b", gpu="h100-sxm", points=20))
    assert w.rows[-1]["context"] == 131_072 and len(w.rows) <= 22
    with pytest.raises(KokubanError) as e:
        run_context_wall(ContextWallRequest(model="llama-3.1-8b", gpu="h100-sxm", end=200_000))
    assert e.value.field == "end"
    long = run_context_wall(ContextWallRequest(model="llama-3.1-8b", gpu="h100-sxm", end=200_000, points=20,
                                               allow_beyond_max_context=True))
    assert long.rows[-1]["beyond_max_context"] and not long.rows[0]["beyond_max_context"]


def test_model_names_and_configs():
    assert catalog_model_name("meta-llama/Llama-3.1-8B") == "llama-3.1-8b"
    assert catalog_model_name("LLAMA-3.1-8B") == "LLAMA-3.1-8B"  # the catalog lookup ignores case itself
    for bad in ("/etc/passwd", "src/kokuban/data/models/llama-3.1-8b.json"):
        with pytest.raises(KokubanError) as e:
            catalog_model_name(bad)
        assert e.value.field == "model"
    with pytest.raises(KokubanError) as e:
        model_from_config({"model_type": "llama", "num_hidden_layers": 2000})
    assert e.value.field == "model" and "1024" in e.value.reason


def test_cost_ratio_by_hand():
    assert cost.cost_ratio(6.0, 3.0, 10.0, 5.0) == 2.0   # priced: the USD ratio
    assert cost.cost_ratio(0.0, 0.0, 10.0, 4.0) == 2.5   # free: 0 ÷ 0 becomes the ratio of the seconds, 10 ÷ 4


def test_a_free_accelerator_has_the_same_ratios():
    """Price 0 (h20, b300, mi355x, gaudi3 in the catalog): every cost is 0, and every cost ratio is the priced
    one (the price cancels) — before, `kokuban batch`/`io` divided 0 by 0 (a traceback) and `context` printed NaN."""
    base = dict(model="llama-3.1-8b", gpu="h100-sxm", points=20)
    free, paid = (run_batch_curve(BatchCurveRequest(**base, price_per_hour=p)) for p in (0, 2.99))
    assert free.rows[0]["usd_per_m_output"] == 0.0
    assert free.summary["cost_ratio_max_to_min"] == pytest.approx(paid.summary["cost_ratio_max_to_min"], rel=1e-12)
    assert free.summary["cheapest_batch"] == paid.summary["cheapest_batch"] == paid.max_batch
    assert free.summary["input_output"]["output_to_input_ratio"] == pytest.approx(
        paid.summary["input_output"]["output_to_input_ratio"], rel=1e-12)
    wfree, wpaid = (run_context_wall(ContextWallRequest(**base, price_per_hour=p)) for p in (0, 2.99))
    for kind in ("output", "input"):
        key = f"surcharge_{kind}_at_end"
        assert wfree.summary[key] == pytest.approx(wpaid.summary[key], rel=1e-12)
        surcharges = [r[f"surcharge_{kind}"] for r in wfree.rows]
        assert surcharges == pytest.approx([r[f"surcharge_{kind}"] for r in wpaid.rows])
