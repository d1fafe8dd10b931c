"""A tensor-parallel group's barrier wait (`core.roofline.tp_sync_loss`, evidence/changes/tp_barrier_wait/): the judging
rows, the fit and the decision, the frozen judgement reproduced by the shipped model with and without the wait, the
wait by hand and as a property of the step, the simulator, the sweep and the price."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evidence import pool, report
from evidence.changes import grid
from evidence.changes.tp_barrier_wait import fit
from evidence.sources import measurements
from kokuban.core import cost, roofline
from kokuban.core.generation import inflight_step
from kokuban.sim.steptime import StepModel
from kokuban.specs.catalog import load_accelerator, load_model
from kokuban.specs.deployment import Deployment
from kokuban.specs.hardware import Efficiency
from kokuban.specs.kernels import KernelCurves
from kokuban.validation.accuracy import predict_row

LOSS = 0.14  # the rule's fitted value, as evidence/sources/trtllm010/inclusion_rule.md states it
CHANGE = Path(__file__).resolve().parents[1] / "evidence/changes/tp_barrier_wait"
CHANGED = "changed (TP ≥ 2 on NVLink)"


def _record(name: str) -> dict:
    return json.loads((CHANGE / name).read_text())


def _without() -> Efficiency:
    """The shipped model without the wait (ℓ = 0): what the judgement compared against."""
    return Efficiency.shipped().with_kernels(tp_sync_loss=0.0)


def _dep(gpu: str, n: int, eff: Efficiency, model: str = "llama-3.1-70b", layout: str = "tp") -> Deployment:
    return Deployment.make(load_model(model), load_accelerator(gpu), n, layout=layout, efficiency=eff,
                           price_per_hour_usd=3.0)


def test_the_judging_rows():
    judges = fit.judging_rows()
    dev = {pool.measurement(r) for c in fit.DEVELOPMENT for r in measurements(c)}
    assert len(judges) == 318 and not {pool.measurement(r) for r in judges} & dev
    assert fit.DEVELOPMENT == pool.DEVELOPMENT


def test_the_fit_is_the_grids_least_and_its_record():
    assert LOSS == fit.LOSS == KernelCurves().tp_sync_loss and LOSS in fit.GRID
    rows = fit.fit_rows()
    assert len(rows) == 1329
    near = {loss: grid.scores(rows, (loss,), fit.candidate)[loss] for loss in (0.0, 0.13, LOSS, 0.15)}
    assert near[LOSS][0] < near[0.13][0] and near[LOSS][0] < near[0.15][0]  # a least, on the grid's step of 0.01
    record = {p: (m, e, s) for p, m, e, s in _record("fit.json")["grid"]}
    assert min((p for p in record if p), key=lambda p: record[p][0]) == LOSS  # the whole grid, as produced
    for loss in (0.0, LOSS):  # the record reproduces on the shipped model
        assert near[loss] == pytest.approx(record[loss], rel=1e-9)


def test_the_missing_share_is_what_the_rule_saw():
    """The rule's evidence, on the development tables without the wait: the time missing from a TP group's step is a
    near-constant share of it (12–13 %) while the collectives' share grows with the degree."""
    share = fit.missing_share()
    assert [share[tp][0] for tp in (2, 4, 8)] == [258, 277, 316]
    assert all(abs(share[tp][1] - 0.13) < 0.01 for tp in (2, 4, 8)) and abs(share[1][1]) < 0.01
    assert share[2][2] < share[4][2] < share[8][2]
    record = {int(tp): v for tp, *v in _record("fit.json")["missing_share"]}
    for tp, (n, missing, comm) in share.items():
        assert (n, missing, comm) == pytest.approx(tuple(record[tp]), rel=1e-9)


def test_the_judgement_reproduces(same_groups):
    """The frozen judgement, predicted again: with the wait (the shipped model) and without it (ℓ = 0); the rule
    decides on the 166 rows it changes."""
    judgement = _record("judgement.json")
    rows = fit.judging_rows()
    changed = {r.id for r in fit.changed(rows)}
    for name, eff in (("with", Efficiency.shipped()), ("without", _without())):
        preds = [predict_row(r, eff) for r in rows]
        fresh = {"all": report.figures(preds), CHANGED: report.figures([p for p in preds if p.id in changed])}
        same_groups({k: judgement[name]["groups"][k] for k in fresh}, fresh)
    w, wo = judgement["with"]["groups"][CHANGED], judgement["without"]["groups"][CHANGED]
    assert judgement["decision"] == "ships" and w["median_abs_error"] < wo["median_abs_error"]
    assert w["count"] == 166 and judgement["with"]["groups"]["all"]["count"] == 318


def test_the_barrier_wait_against_the_model_without_it():
    """Llama 3.1 70B bf16 on 2× H100 SXM, batch 8 at 1,000 tokens: the step is the body (roofline + all-reduces)
    without the wait × 1.14 plus the fixed overhead of 3.8 ms; the price's parts still add up to the token's price."""
    shipped, without = Efficiency.shipped(), _without()
    step = roofline.decode_step(_dep("h100-sxm", 2, shipped), 8, 1000)
    base = roofline.decode_step(_dep("h100-sxm", 2, without), 8, 1000)
    body = float(base.step_time_s) - 3.8e-3  # the trtllm-less shipped overhead, 3.8 ms a step
    assert float(base.overhead_s) == pytest.approx(3.8e-3)
    assert float(step.sync_s) == pytest.approx(0.14 * body, rel=1e-12)
    assert float(step.step_time_s) == pytest.approx(1.14 * body + 3.8e-3, rel=1e-12)
    dep = _dep("h100-sxm", 2, shipped)
    parts = cost.decode_split_usd_per_m(dep, step)
    assert sum(float(v) for v in parts.values()) == pytest.approx(float(cost.usd_per_m_output(dep, step)), rel=1e-12)
    # the simulator's step is the core's: a decode of 8 at 1,000 through its tables
    model = StepModel(dep, 16, 1200)
    ctx = np.full(8, 1000)
    got = model.seconds(8, 8, *model.decode_terms(ctx))
    assert got == pytest.approx(float(roofline.decode_step_mixed(dep, list(ctx)).step_time_s), rel=1e-9)
    # the in-flight step of the published rows waits the same share of its body
    fl = inflight_step(dep, 64, 1000, 1000)
    fl0 = inflight_step(_dep("h100-sxm", 2, without), 64, 1000, 1000)
    assert float(fl.step_time_s) - 3.8e-3 == pytest.approx(1.14 * (float(fl0.step_time_s) - 3.8e-3), rel=1e-12)


@settings(max_examples=40, deadline=None)
@given(gpu=st.sampled_from(["h100-sxm", "h200", "b200", "a100-80gb", "l40s", "mi300x"]),
       n=st.sampled_from([1, 2, 4, 8]), loss=st.floats(0.0, 1.0), batch=st.integers(1, 256),
       context=st.integers(0, 16384))
def test_the_wait_scales_the_body_of_an_nvlink_tp_group_only(gpu, n, loss, batch, context):
    """step(ℓ) − overhead = (1 + ℓ)·(step(0) − overhead) for a TP group of two or more NVLink GPUs; elsewhere (one
    GPU, PCIe, AMD's link, expert parallelism, the scalar profile) ℓ changes nothing."""
    with_loss, without = Efficiency.shipped().with_kernels(tp_sync_loss=loss), _without()
    a = roofline.decode_step(_dep(gpu, n, with_loss), batch, context)
    b = roofline.decode_step(_dep(gpu, n, without), batch, context)
    nvlink_tp = n > 1 and gpu in ("h100-sxm", "h200", "b200", "a100-80gb")  # L40S: PCIe; MI300X: Infinity Fabric
    factor = 1.0 + loss if nvlink_tp else 1.0
    body_a, body_b = float(a.step_time_s - a.overhead_s), float(b.step_time_s - b.overhead_s)
    assert body_a == pytest.approx(factor * body_b, rel=1e-12) and float(a.step_time_s) >= float(b.step_time_s)
    ep = roofline.decode_step(_dep(gpu, n, with_loss, "mixtral-8x7b", "ep"), batch, context)
    ep0 = roofline.decode_step(_dep(gpu, n, without, "mixtral-8x7b", "ep"), batch, context)
    assert float(ep.step_time_s) == float(ep0.step_time_s) and float(ep.sync_s) == 0.0
    scalar = Efficiency.scalar()
    assert float(roofline.decode_step(_dep(gpu, n, scalar), batch, context).sync_s) == 0.0


def test_a_negative_loss_is_refused():
    from kokuban.errors import KokubanError

    with pytest.raises(KokubanError, match="tp_sync_loss"):
        KernelCurves(tp_sync_loss=-0.1)


def test_the_blackboard_shows_the_wait(capsys):
    from kokuban.cli import main

    assert main(["estimate", "llama-3.1-70b", "--gpu", "h100-sxm", "--gpus", "4", "--batch", "64", "--context",
                 "2048", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    br = out["decode"]["breakdown"]
    assert br["sync_s"] > 0 and out["efficiency"]["kernels"]["tp_sync_loss"] == LOSS
    assert main(["estimate", "llama-3.1-70b", "--gpu", "h100-sxm", "--gpus", "4", "--batch", "64", "--context",
                 "2048"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "TP barrier wait" in text and "·(1 + 0.14) + overhead" in text


def test_the_why_names_the_wait():
    """The web face's sentences list the barrier wait among a TP group's terms, and leave it out on one GPU."""
    from kokuban.usecases.board import run_blackboard
    from kokuban.usecases.request import EstimateRequest

    group = run_blackboard(EstimateRequest(model="llama-3.1-70b", gpu="h100-sxm", gpus=4, batch=64)).as_dict()
    sync_ms = group["estimate"]["decode"]["breakdown"]["sync_s"] * 1e3
    assert sync_ms > 0 and f"TP barrier wait {sync_ms:.3g} ms" in group["why"][0]
    one = run_blackboard(EstimateRequest(model="llama-3.1-8b", gpu="h100-sxm", batch=8)).as_dict()
    assert "barrier" not in " ".join(one["why"])


def test_the_sweep_prices_the_wait():
    """A sweep's points of a TP group carry the wait per token (`sync_s_per_token`), and their step is the core's."""
    from kokuban.economics.batch import decode_columns

    dep = _dep("h100-sxm", 4, Efficiency.shipped())
    batch = np.arange(1, 129, dtype=np.float64)
    cols = decode_columns(dep, batch, np.full(batch.shape, 2048.0))
    base = roofline.decode_step(_dep("h100-sxm", 4, _without()), batch, 2048.0)
    body = np.asarray(base.step_time_s - base.overhead_s)
    np.testing.assert_allclose(cols["sync_s_per_token"] * batch, 0.14 * body, rtol=1e-12)
    np.testing.assert_allclose(cols["step_time_s"], 1.14 * body + base.overhead_s, rtol=1e-12)
    one = decode_columns(_dep("h100-sxm", 1, Efficiency.shipped(), "llama-3.1-8b"), batch, 2048.0)
    assert not one["sync_s_per_token"].any()


def test_the_development_tables_without_the_wait():
    """What the rule saw (its erratum): without the wait every TP degree of every development table reads too fast
    (median signed error > 0) but 0.17's TP 4; one GPU does not move."""
    signed = {}
    for source in fit.DEVELOPMENT:
        by_tp: dict[int, list] = {}
        for r in measurements(source):
            by_tp.setdefault(r.num_gpus, []).append(predict_row(r, _without()).signed_error)
        signed[source] = {tp: float(np.median(v)) for tp, v in by_tp.items()}
    groups = sorted((signed[c][tp], c, tp) for c in signed for tp in (2, 4, 8))
    assert groups[0][1:] == ("trtllm017", 4) and groups[0][0] < 0 < groups[1][0]

