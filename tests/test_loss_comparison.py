"""The committed five-split reports of the fraction fits (evidence/fractions/, one per loss on the same 88 rows; the
main report, evidence/fractions/report.json, on all 196 rows): each was fitted with its loss on the same splits, and
what they show holds in their figures."""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: the shipped procedure's loss (`calibrate.PUBLISHED_LOSS`, log_huber) and the others, each on the same 88 rows
REPORTS = {"log_squared": ROOT / "evidence/fractions/log_squared/report.json",
           "log_huber": ROOT / "evidence/fractions/log_huber/report.json",
           "log_abs": ROOT / "evidence/fractions/log_abs/report.json"}
#: the main report: both profiles' five splits on the 196 published rows
MAIN = ROOT / "evidence/fractions/report.json"


def test_each_report_was_fitted_with_its_loss_on_the_same_splits():
    reports = {name: json.loads(path.read_text()) for name, path in REPORTS.items()}
    assert {name: r["loss"] for name, r in reports.items()} == {name: name for name in REPORTS}
    assert {tuple(r["seeds"]) for r in reports.values()} == {(0, 1, 2, 3, 4)}


def test_the_main_report():
    """On every split the default profile's held-out median is below the scalar set's; pooled, the median meets 10 %
    but the p90 misses 30 %; MoE is at or below 20 % and bf16 above; int8 is the worst of the other dtypes."""
    report = json.loads(MAIN.read_text())
    profiles = report["profiles"]
    assert report["rows"] == 196 and report["excluded_sources"] == []
    assert all(b["median_abs_error"] < a["median_abs_error"]
               for a, b in zip(profiles["scalar"]["per_seed"], profiles["default"]["per_seed"], strict=True))
    pooled = profiles["default"]["pooled"]
    w, d = pooled["by_workload"], pooled["by_weights"]
    assert pooled["median_abs_error"] <= 0.10 < 0.30 < pooled["p90_abs_error"]
    assert w["moe"]["median_abs_error"] <= 0.20 < d["bf16"]["median_abs_error"]
    rest = {k: g for k, g in d.items() if k != "bf16"}
    assert max(rest, key=lambda k: rest[k]["median_abs_error"]) == "int8"


def test_the_robust_losses():
    """The robust losses lower the default's training median on every split, and with any loss the held-out p90 stays
    above 30 %."""
    reports = {name: json.loads(path.read_text())["profiles"] for name, path in REPORTS.items()}
    squared = [s["train_median_abs_error"] for s in reports["log_squared"]["default"]["per_seed"]]
    for loss in ("log_huber", "log_abs"):
        robust = [s["train_median_abs_error"] for s in reports[loss]["default"]["per_seed"]]
        assert all(r < q for r, q in zip(robust, squared, strict=True)), loss
    assert all(reports[k]["default"]["pooled"]["p90_abs_error"] > 0.30 for k in REPORTS)
