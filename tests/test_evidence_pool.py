"""The pool (evidence/pool.py): which rows it holds, counted from its declared sources; that the committed reports
are the shipped model's (`python -m evidence --check`); its headline; and issue 13's bar on it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evidence import pool, report
from evidence.sources import HERE, measurements

ROOT = Path(__file__).resolve().parents[1]
RECORD = ROOT / "evidence/changes/tp_barrier_wait/pool_record.json"


def _saved() -> dict:
    return json.loads(pool.JSON.read_text())


def test_the_pool_is_its_declared_sources():
    """0.12's 217, the v0.19-era revision's 180, v0.21's 131 less the 11 Maverick cells v0.20 (a development table)
    printed first, LMDeploy's 64, XiongjieDai's 64, the fifteen GPUs' 30 prompt rows, the MI300X judges' 47 and the 40
    beside them, and 0.10's and 0.11's 318 not already there."""
    rows = pool.rows()
    by: dict[str, int] = {}
    for source, _ in rows:
        by[source] = by.get(source, 0) + 1
    assert by == {"trtllm012": 217, "trtllm019": 180, "trtllm021": 131 - 11, "lmdeploy01": 64, "llamacpp_xd": 64,
                  "llamacpp_sm": 30, "amd_vllm_nov": 40, "oracle_mi300x": 7, "amd_vllm_nov beside": 40,
                  "trtllm010": 182, "trtllm011": 136}
    assert len(rows) == 517 + 64 + 64 + 30 + 47 + 40 + 318 == 1080
    development = {pool.measurement(r) for s in pool.DEVELOPMENT for r in measurements(s)}
    assert not development & {pool.measurement(r) for _, r in rows}
    assert all(r.metric == "time_to_first_token_s" for s, r in rows if s == "llamacpp_sm")
    # no source the shipped constants were fitted on
    fitted = {r for s in ("llamacpp_cuda", "amd_vllm", "amd_vllm_judge") for r in measurements(s)}
    fitted |= set(measurements("amd_vllm", "versions.toml"))
    assert not fitted & {r for _, r in rows}


def test_each_measurement_once_across_tables():
    """A cell a later table prints again enters once; within one table every cell is its own measurement (LMDeploy's
    first tokens of 128 prompt tokens, measured in the 128/128 and the 128/2,048 runs, read the same)."""
    rows = pool.rows()
    first: dict[tuple, str] = {}
    for source, r in rows:
        key = pool.measurement(r)
        assert key not in first or first[key] == source
        first.setdefault(key, source)
    ftl = [r for s, r in rows if s == "lmdeploy01" and r.id.endswith("-b1-128-2048-ftl")]
    assert len(ftl) == 3


def test_the_generated_files_are_current(capsys):
    """`python -m evidence --check`: every source's rows and report, pool.json and docs/accuracy.md are what the
    shipped model gives now (CI runs the same command)."""
    from evidence.__main__ import main

    assert main(["--check"]) == 0, capsys.readouterr().err


def test_the_headline_is_pool_json():
    saved, h = _saved(), pool.headline()
    a = saved["all"]
    assert (h.rows, h.sources, h.step_model) == (1080, len(saved["sources"]), saved["step_model"])
    assert (h.median_abs_error, h.median_abs_error_ci, h.p90_abs_error, h.median_signed_error) == (
        a["median_abs_error"], tuple(a["median_abs_error_ci"]), a["p90_abs_error"], a["median_signed_error"])
    lo, hi = h.median_abs_error_ci
    assert lo <= h.median_abs_error <= hi and h.median_abs_error <= h.p90_abs_error


def test_the_pool_is_the_record_of_the_model_that_shipped_it(same_groups):
    """The pool scored by the shipped model is the pool step-v8 was judged to ship with (frozen in the barrier wait's
    record): the same rows, the same figures. A later step model moves this; its change's record says by how much."""
    record = json.loads(RECORD.read_text())["step_v8"]
    saved = _saved()
    same_groups({"all": record["all"]}, {"all": saved["all"]})
    named = {"workload first token": ("workload", "first token"), "workload decode batch 1": ("workload",
                                                                                              "decode batch 1"),
             "workload throughput": ("workload", "throughput"), "workload prefill": ("workload", "prefill"),
             "engine LMDeploy": ("engine", "LMDeploy"), "engine llama.cpp": ("engine", "llama.cpp"),
             "dtype q4_k_m": ("dtype", "q4_k_m"), "dtype fp4": ("dtype", "nvfp4"), "dtype fp8": ("dtype", "fp8"),
             "workload multi-gpu": ("gpus", "several"), "workload moe": ("moe", "moe")}
    same_groups({k: record[k] for k in named}, {k: saved["by"][f][n] for k, (f, n) in named.items()})


def test_issue_13s_bar_on_the_pool():
    """Median |error| ≤ 10 %, p90 ≤ 30 %, and no workload or dtype above 20 %."""
    saved = _saved()
    assert saved["all"]["median_abs_error"] <= 0.10 and saved["all"]["p90_abs_error"] <= 0.30
    regimes = {f"{facet} {k}": g["median_abs_error"] for facet in ("workload", "dtype")
               for k, g in saved["by"][facet].items()}
    assert max(regimes.values()) <= 0.20, regimes


def test_a_source_report_is_what_kokuban_accuracy_says(capsys):
    """A source's report (here LMDeploy's) is `kokuban accuracy --measurements-file` on its rows: the same error,
    row by row and overall."""
    from kokuban.cli import main
    from kokuban.present.jsonout import read_result

    assert main(["accuracy", "--measurements-file", str(HERE / "lmdeploy01/rows.toml"), "--json"]) == 0
    out = read_result(capsys.readouterr().out)
    saved = json.loads((HERE / "lmdeploy01/report.json").read_text())
    assert out["summary"]["median_abs_error"] == pytest.approx(saved["groups"]["all"]["median_abs_error"], rel=1e-12)
    assert out["summary"]["median_abs_error_ci"] == pytest.approx(saved["groups"]["all"]["median_abs_error_ci"])
    predicted = {r["id"]: r["predicted"] for r in out["rows"]}
    assert all(predicted[r["id"]] == pytest.approx(r["predicted"], rel=1e-12) for r in saved["rows"])


def test_figures_by_hand():
    """`report.figures` on three rows: errors 10 %, 20 % (too fast) and 40 % (too slow, a time): median 20 %,
    signed median +10 % (the first row, +10 %; the time read 40 % longer is −40 %; the second +20 %)."""
    from kokuban.validation.accuracy import Prediction

    def pred(metric, measured, predicted):
        return Prediction(id="x", metric=metric, measured=measured, predicted=predicted, error=0.0, regime="",
                          batch_per_replica=1, replicas=1.0, tp_or_ep="tp1", input_tokens=1, output_tokens=1,
                          lengths_assumed=False)

    g = report.figures([pred("output_tokens_per_s", 100.0, 110.0), pred("output_tokens_per_s", 100.0, 120.0),
                        pred("time_to_first_token_s", 1.0, 1.4)])
    assert g["count"] == 3 and g["median_abs_error"] == pytest.approx(0.20)
    assert g["median_signed_error"] == pytest.approx(0.10) and g["max_abs_error"] == pytest.approx(0.40)
    lo, hi = g["median_abs_error_ci"]
    assert 0.10 - 1e-12 <= lo <= 0.20 <= hi <= 0.40 + 1e-12
