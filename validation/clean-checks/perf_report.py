"""What the clean checks' `report.py` scripts share: predict a check's rows with one step model, summarise them by
group (`accuracy.error_summary` with the bootstrap interval of the median), and write the markdown table whose first
five columns are a model's groups and whose next columns compare other models on the same groups."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from kokuban.usecases.validation import read_measurements
from kokuban.validation.accuracy import add_intervals, error_summary, predict_row, speed_direction

#: the comparison columns a report shows for another model: its median |error| and median signed error, and p90
BRIEF = ("median_abs_error", "median_signed_error")
FULL = ("median_abs_error", "p90_abs_error", "median_signed_error")
LABELS = {"median_abs_error": "median \\|error\\|", "p90_abs_error": "p90", "median_signed_error": "median signed"}


def figures(preds: list) -> dict:
    """`accuracy.error_summary` of the predictions with the bootstrap interval of the median (`add_intervals`)."""
    measured, predicted = [p.measured for p in preds], [p.predicted for p in preds]
    direction = [speed_direction(p.metric) for p in preds]
    summary = add_intervals(error_summary(measured, predicted, direction=direction), measured, predicted, {},
                            direction=direction)
    return {k: v for k, v in summary.items() if k != "bootstrap"}  # the settings: `accuracy.bootstrap_settings()`


def predict(rows_path: Path, efficiency: Any, keys: Callable[[Any], Iterable[str]]) -> dict:
    """Every row of `rows_path` predicted once with `efficiency`: {"rows": id, measured, predicted, signed error and
    batch per replica; "groups": "all" then each group `keys(row)` names, sorted, with its `figures`}."""
    rows = read_measurements(str(rows_path))
    preds = [predict_row(r, efficiency) for r in rows]
    groups: dict[str, list] = {}
    for r, p in zip(rows, preds, strict=True):
        for key in keys(r):
            groups.setdefault(key, []).append(p)
    groups = {"all": preds} | dict(sorted(groups.items()))
    return {"rows": [{"id": p.id, "measured": p.measured, "predicted": p.predicted, "signed_error": p.signed_error,
                      "batch_per_replica": p.batch_per_replica} for p in preds],
            "groups": {k: figures(v) for k, v in groups.items()}}


def pct(x: float) -> str:
    return f"{100 * x:.1f} %"


def table(main: dict, others: list[tuple[str, dict, tuple[str, ...]]]) -> list[str]:
    """Markdown lines: one row per group of `main` (count, median |error| with its interval, p90, median signed),
    then for each (label, groups, fields) of `others` those fields of the same group."""
    head = "| rows | count | median \\|error\\| (95 % bootstrap) | p90 | median signed |"
    head += "".join(f" {label}: {LABELS[f]} |" for label, _, fields in others for f in fields)
    lines = [head, "|---" * head.count(" |") + "|"]
    for key, g in main.items():
        lo, hi = g["median_abs_error_ci"]
        cells = [key, str(g["count"]), f"{pct(g['median_abs_error'])} ({pct(lo)} – {pct(hi)})",
                 pct(g["p90_abs_error"]), pct(g["median_signed_error"])]
        cells += [pct(groups[key][f]) for _, groups, fields in others for f in fields]
        lines.append("| " + " | ".join(cells) + " |")
    return lines

