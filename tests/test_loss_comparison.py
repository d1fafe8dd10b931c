"""docs/validation.md's loss comparison is the committed five-split reports (validation/profiles/, one per loss)."""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REPORTS = {"log_squared": ROOT / "validation/profiles/report.json",
           "log_huber": ROOT / "validation/profiles/log_huber/report.json",
           "log_abs": ROOT / "validation/profiles/log_abs/report.json"}


def _figures(profile: dict) -> str:
    """'training median / p90 | held-out median / p90', the training ones the mean over the splits."""
    seeds = profile["per_seed"]
    train_median = sum(s["train_median_abs_error"] for s in seeds) / len(seeds)
    train_p90 = sum(s["train_p90_abs_error"] for s in seeds) / len(seeds)
    pooled = profile["pooled"]
    return (f"{100 * train_median:.2f} % / {100 * train_p90:.2f} % | "
            f"{100 * pooled['median_abs_error']:.2f} % / {100 * pooled['p90_abs_error']:.2f} %")


def test_each_report_was_fitted_with_its_loss_on_the_same_splits():
    reports = {name: json.loads(path.read_text()) for name, path in REPORTS.items()}
    assert {name: r["loss"] for name, r in reports.items()} == {name: name for name in REPORTS}
    assert {tuple(r["seeds"]) for r in reports.values()} == {(0, 1, 2, 3, 4)}


def test_the_docs_table_rows_are_the_reports():
    doc = (ROOT / "docs/validation.md").read_text()
    for name, path in REPORTS.items():
        profiles = json.loads(path.read_text())["profiles"]
        label = f"{name} (shipped)" if name == "log_squared" else name
        row = f"| {label} | {_figures(profiles['default'])} | {_figures(profiles['scalar'])} |"
        assert row in doc, row


def test_the_readme_quotes_the_training_medians():
    def train_median(loss: str, profile: str) -> str:
        seeds = json.loads(REPORTS[loss].read_text())["profiles"][profile]["per_seed"]
        return f"{100 * sum(s['train_median_abs_error'] for s in seeds) / len(seeds):.2f} %"

    readme = " ".join((ROOT / "README.md").read_text().split())
    for profile in ("default", "scalar"):
        quoted = f"{train_median('log_huber', profile)} against {train_median('log_squared', profile)}"
        assert quoted in readme, quoted
