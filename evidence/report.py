"""Rows scored by a step model, summarised by group, and written as a Markdown table.

A row's error is kokuban's (`kokuban.validation.accuracy.predict_row`): |predicted − measured| ÷ measured, and the
signed error is + when kokuban predicts faster than measured (`speed_direction`). A group's figures are
`accuracy.error_summary`'s (count, median, p90 and max |error|, median signed error) with the 95 % bootstrap interval
of its median |error| (`accuracy.add_intervals`: 10,000 resamples, seed 0, so the same rows in the same order always
give the same interval).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from kokuban.specs.hardware import Efficiency
from kokuban.validation.accuracy import (
    Prediction,
    PublishedResult,
    add_intervals,
    engine_family,
    error_summary,
    predict_row,
    speed_direction,
)

#: the comparison columns a table shows for another model: its median |error| and median signed error, and p90
BRIEF = ("median_abs_error", "median_signed_error")
FULL = ("median_abs_error", "p90_abs_error", "median_signed_error")
LABELS = {"median_abs_error": "median \\|error\\|", "p90_abs_error": "p90", "median_signed_error": "median signed"}


class Predictor:
    """One step model's predictions, each distinct row predicted once (rows are frozen dataclasses, so equal rows of
    two files share one prediction)."""

    def __init__(self, efficiency: Efficiency | None = None):
        self.efficiency = efficiency or Efficiency.shipped()
        self._done: dict[PublishedResult, Prediction] = {}

    def __call__(self, row: PublishedResult) -> Prediction:
        if row not in self._done:
            self._done[row] = predict_row(row, self.efficiency)
        return self._done[row]

    def all(self, rows: Iterable[PublishedResult]) -> list[Prediction]:
        return [self(r) for r in rows]


def figures(preds: Sequence[Prediction]) -> dict[str, Any]:
    """`accuracy.error_summary` of the predictions with the bootstrap interval of the median |error|."""
    measured, predicted = [p.measured for p in preds], [p.predicted for p in preds]
    direction = [speed_direction(p.metric) for p in preds]
    summary = add_intervals(error_summary(measured, predicted, direction=direction), measured, predicted, {},
                            direction=direction)
    return {k: v for k, v in summary.items() if k != "bootstrap"}  # the settings: `accuracy.bootstrap_settings()`


def grouped(rows: Sequence[PublishedResult], preds: Sequence[Prediction],
            keys: Callable[[PublishedResult, Prediction], Iterable[str]]) -> dict[str, dict[str, Any]]:
    """"all", then every group `keys(row, prediction)` names (a row may be in several), sorted, with its `figures`."""
    groups: dict[str, list[Prediction]] = {}
    for r, p in zip(rows, preds, strict=True):
        for key in keys(r, p):
            groups.setdefault(key, []).append(p)
    return {"all": figures(preds)} | {k: figures(v) for k, v in sorted(groups.items())}


def workload(row: PublishedResult) -> str:
    """Which regime the row measures: the time to a first token, a user's decode speed at batch 1 (or one request's
    whole generation at batch 1), or a batch's throughput."""
    if row.metric == "time_to_first_token_s":
        return "first token"
    return "decode batch 1" if row.batch == 1 else "throughput"


def is_moe(row: PublishedResult) -> bool:
    from kokuban.specs.catalog import load_model

    return load_model(row.model).num_experts > 0


def facets(row: PublishedResult, pred: Prediction) -> dict[str, tuple[str, ...]]:
    """The groups a row belongs to, by facet: its engine (family), GPU vendor, GPU, model family, workload (issue 13's
    regimes; "prefill" is every row whose predicted prefill outlasts its decode, first tokens included:
    `accuracy.row_workloads`), weights dtype, metric, one GPU or several, MoE or dense."""
    from kokuban.specs.catalog import load_accelerator, load_model

    work = (workload(row), "prefill") if "prefill" in pred.workloads else (workload(row),)
    return {"engine": (engine_family(row.engine),), "vendor": (load_accelerator(row.accelerator).vendor,),
            "gpu": (row.accelerator,), "family": (load_model(row.model).family,), "workload": work,
            "dtype": (row.weights_dtype,), "metric": (row.metric,),
            "gpus": ("several" if row.num_gpus > 1 else "one",), "moe": ("moe" if is_moe(row) else "dense",)}


def facet_keys(row: PublishedResult, pred: Prediction) -> list[str]:
    """`facets` as flat group names ("gpu h100-sxm", "workload first token", …)."""
    return [f"{facet} {name}" for facet, names in facets(row, pred).items() for name in names]


def pct(x: float) -> str:
    return f"{100 * x:.1f} %"


def interval(g: dict[str, Any]) -> str:
    lo, hi = g["median_abs_error_ci"]
    return f"{pct(lo)} – {pct(hi)}"


def table(main: dict[str, dict[str, Any]], others: Sequence[tuple[str, dict, tuple[str, ...]]] = (),
          label: str = "rows") -> list[str]:
    """Markdown lines: one row per group of `main` (count, median |error| with its interval, p90, median signed),
    then for each (label, groups, fields) of `others` those fields of the same group."""
    head = f"| {label} | count | median \\|error\\| (95 % bootstrap) | p90 | median signed |"
    head += "".join(f" {name}: {LABELS[f]} |" for name, _, fields in others for f in fields)
    lines = [head, "|---" * head.count(" |") + "|"]
    for key, g in main.items():
        cells = [key, str(g["count"]), f"{pct(g['median_abs_error'])} ({interval(g)})", pct(g["p90_abs_error"]),
                 pct(g["median_signed_error"])]
        cells += [pct(groups[key][f]) for _, groups, fields in others for f in fields]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def step_model() -> str:
    """The shipped step model's version, as `kokuban.specs.hardware.STEP_MODEL` names it ("step-v8": the kernel curves
    with a TP group's barrier wait)."""
    from kokuban.specs import hardware

    return hardware.STEP_MODEL
