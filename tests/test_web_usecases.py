"""The use cases behind the web page (no web libraries needed): the roofline picture by hand, the blackboard's
ratio and why from the estimate's own terms, the interim curves against the estimate, the catalog rows."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kokuban.core import cost, memory, roofline
from kokuban.core.intensity import arithmetic_intensity, attainable_flops_per_s, ridge_intensity
from kokuban.economics.batch import batch_curve
from kokuban.errors import KokubanError
from kokuban.specs.catalog import load_accelerator, load_model
from kokuban.specs.deployment import Deployment
from kokuban.specs.hardware import Efficiency
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


def test_batch_curve_split_by_hand_across_the_gemv_switch():
    """The page's default curve (Llama-3.1-8B on one H100 at 4096, the shipped kernel profile). From batch 4 to 5
    the multiplies leave the GEMV kernel for a tiled one (`gemm_fraction`'s M ≤ 4): their compute time jumps more
    than tenfold but stays hidden under the weight read, so the step does not jump, and neither may its shared and
    per-request parts. By hand, weights-bound at overlap 1: the weight read w and the fixed overhead are paid once a
    step, shared = USD/s × (w + overhead) ÷ B × 10⁶; each request pays its own attention kernel, a (its time at
    batch 1), per request = USD/s × a × 10⁶ at every batch."""
    req = BatchCurveRequest(model="llama-3.1-8b", gpu="h100-sxm", context=4096, points=20)
    rows = {r["batch"]: r for r in run_batch_curve(req).rows}
    dep = req.deployment(4096)
    four, five = (roofline.decode_step(dep, b, 4096) for b in (4, 5))
    assert float(five.linear_compute_s) > 10 * float(four.linear_compute_s)  # the switch this test is about
    assert four.bound == five.bound == "weights" and float(four.sync_s) == float(four.comm_s) == 0
    one = roofline.decode_step(dep, 1, 4096)
    w, overhead, attention = float(one.weights_s), float(one.overhead_s), float(one.attention_s)
    for b in range(1, 9):
        row = rows[b]
        assert row["usd_per_m_output_shared"] == pytest.approx(dep.usd_per_s * (w + overhead) / b * 1e6, rel=1e-9)
        assert row["usd_per_m_output_per_request"] == pytest.approx(dep.usd_per_s * attention * 1e6, rel=1e-9)
        assert row["usd_per_m_output_shared"] + row["usd_per_m_output_per_request"] == pytest.approx(
            row["usd_per_m_output"], rel=1e-12)


MODELS = ["llama-3.1-8b", "llama-3.1-70b", "qwen3-30b-a3b", "mixtral-8x7b", "gpt-oss-120b"]


@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(model=st.sampled_from(MODELS), gpu=st.sampled_from(["h100-sxm", "h200", "b200", "mi300x", "a100-80gb"]),
       gpus=st.sampled_from([1, 2, 4, 8]), ep=st.booleans(), overlap=st.sampled_from([1.0, 0.7, 0.3]),
       context=st.sampled_from([1, 100, 1000, 4096, 30000]), start=st.integers(1, 2048))
def test_batch_curve_parts_move_only_as_the_step_does(model, gpu, gpus, ep, overlap, context, start):
    """Between adjacent batches, the cost of a step's shared part (USD/M × B) and of its per-request part each move
    by no more than the whole step's cost does: a part cannot jump where the step does not (the GEMV → tiled switch
    at batch 4 → 5 is inside every window that starts at 1 to 4). The parts add up to the token's cost.
    Communication runs apart from the kernels here: overlapped, max(roof, comm) is shared between them in
    proportion, and the parts trade smoothly as the hidden one grows."""
    m = load_model(model)
    dep = Deployment.make(m, load_accelerator(gpu), gpus, layout="ep" if ep and m.is_moe else "tp",
                          efficiency=Efficiency.shipped().updated(overlap=overlap), price_per_hour_usd=2.0)
    fit = int(memory.max_batch(dep, context))
    if fit < 2 or context > m.max_context:
        return
    lo = min(start if start <= 8 else max(1, fit * start // 2048), fit - 1)  # the first batches, or anywhere
    curve = batch_curve(dep, context, min_batch=lo, max_batch=min(fit, lo + 8))
    b = curve["batch"].to_numpy()
    step, shared, per_request = (curve[f"usd_per_m_output{k}"].to_numpy() * b for k in ("", "_shared", "_per_request"))
    np.testing.assert_allclose(shared + per_request, step, rtol=1e-9)
    moved = np.abs(np.diff(step)) + 1e-9 * step[1:]
    assert np.all(np.abs(np.diff(shared)) <= moved) and np.all(np.abs(np.diff(per_request)) <= moved)
    assert np.all(shared >= 0) and np.all(per_request >= 0)


@settings(max_examples=40, deadline=None, derandomize=True)
@given(model=st.sampled_from(MODELS), gpus=st.sampled_from([1, 2, 8]), overlap_comm=st.booleans(),
       overlap=st.floats(0.0, 1.0), batch=st.integers(1, 512), context=st.integers(1, 32768))
def test_weights_first_split_sums_to_the_token_cost(model, gpus, overlap_comm, overlap, batch, context):
    """The batch curve's attribution (`weights_first`): every part a cost (≥ 0), the parts the token's cost, the
    weight read at its whole time w (× the barrier's 1 + ℓ, × max(roof, comm) ÷ (roof + comm) when overlapped), and
    only the linear compute differs from the in-proportion split, by what the read takes from it."""
    dep = Deployment.make(load_model(model), load_accelerator("h100-sxm"), gpus, overlap_comm=overlap_comm,
                          efficiency=Efficiency.shipped().updated(overlap=overlap), price_per_hour_usd=2.0)
    step = roofline.decode_step(dep, batch, context)
    first, proportional = cost.decode_split_usd_per_m(dep, step, weights_first=True), \
        cost.decode_split_usd_per_m(dep, step)
    assert all(float(v) >= 0 for v in first.values())
    assert sum(float(v) for v in first.values()) == pytest.approx(float(cost.usd_per_m_output(dep, step)), rel=1e-9)
    roof, comm = float(step.roof_s), float(step.comm_s)
    scale = max(roof, comm) / (roof + comm) if step.comm_overlapped else 1.0
    per_token = dep.usd_per_s / batch * 1e6 * (1 + step.sync_loss)
    assert float(first["weights"]) == pytest.approx(per_token * float(step.weights_s) * scale, rel=1e-9)
    for part in ("kv", "comm", "overhead"):
        assert float(first[part]) == float(proportional[part])
    moved = float(first["weights"]) - float(proportional["weights"])
    assert moved >= -1e-12 * float(first["weights"])
    assert float(first["compute"]) == pytest.approx(float(proportional["compute"]) - moved, rel=1e-9, abs=1e-12)


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
