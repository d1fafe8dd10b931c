"""`kokuban serving-accuracy` as tables: every scored row, then the median / p90 |error| with its bootstrap
interval by metric and by engine (held-out rows; with `split`, the training rows too), then the TTFT knee of each
load sweep, measured vs predicted."""

from __future__ import annotations

from typing import Any

from kokuban.present.validation import pct
from kokuban.validation.accuracy import bootstrap_settings
from kokuban.validation.knee import KNEE_FACTOR
from kokuban.validation.serving import LOAD_UNITS, knee_summary

METRIC_NAMES = {"ttft_s": "TTFT mean", "ttft_median_s": "TTFT median", "ttft_p95_s": "TTFT p95", "tpot_s": "TPOT mean",
                "tpot_p95_s": "TPOT p95", "itl_median_s": "ITL median", "e2e_s": "E2E mean",
                "e2e_median_s": "E2E median", "e2e_p95_s": "E2E p95",
                "output_tokens_per_s": "output tok/s"}
FAMILY_NAMES = {"ttft": "TTFT", "tpot_itl": "TPOT/ITL", "e2e": "E2E", "throughput": "throughput"}


def _value(metric: str, value: float) -> str:
    return f"{value:,.1f}" if metric == "output_tokens_per_s" else f"{value * 1e3:,.2f} ms"


def _summary_rows(summary: dict[str, Any]) -> list[tuple[str, ...]]:
    """A summary's cells, overall then by engine: engine, metric family, points, median, interval, p90."""
    out = []
    for engine, by_family in [("all", summary["by_family"])] + list(summary["by_engine"].items()):
        for family, s in by_family.items():
            lo, hi = s["median_abs_error_ci"]
            out.append((engine, FAMILY_NAMES[family], str(s["points"]), pct(s["median_abs_error"]),
                        f"{pct(lo)} – {pct(hi)}", pct(s["p90_abs_error"])))
    return out


COLUMNS = ("engine", "metric", "points", "median |error|", "95 % interval", "p90 |error|")


def error_table(title: str, summary: dict[str, Any]):
    """One summary (`validation.serving.summarize`) as a table: by metric family, then each engine's."""
    from rich.table import Table

    table = Table(title=title)
    for col in COLUMNS:
        table.add_column(col, justify="left" if col in ("engine", "metric") else "right")
    for cells in _summary_rows(summary):
        table.add_row(*cells)
    return table


def print_serving_accuracy(console: Any, result: Any, show_split: bool = False) -> None:
    """Every row's metrics measured vs predicted, then the error tables and the fitted overheads."""
    from rich.table import Table

    rows = Table(title="serving benchmarks replayed by kokuban's simulator")
    for col in ("id", "engine", "load", "metric", "measured", "predicted", "error", "side"):
        rows.add_column(col, justify="right" if col in ("measured", "predicted", "error") else "left")
    for r in result.results:
        load = f"{r.row.load} {r.row.concurrency}" if r.row.concurrency else r.row.load
        for metric, err in r.errors.items():
            rows.add_row(r.row.id, r.row.engine, load, METRIC_NAMES[metric], _value(metric, r.row.measured[metric]),
                         _value(metric, r.predicted[metric]), pct(err), "held out" if r.held_out else "train")
    console.print(rows)
    console.print(error_table("held-out error (rows no fit has seen)", result.summary("held_out")))
    if show_split:
        console.print(error_table("training rows (what a --refit sees)", result.summary("train")))
    knees = result.knees()
    if knees:
        console.print(knee_table(knees))
        console.print(knee_summary_line(knee_summary(knees)))
    b = bootstrap_settings()
    console.print(f"interval: {100 * b['level']:g} % percentile bootstrap of the median |error| "
                  f"({b['resamples']:,} resamples, seed {b['seed']}); few rows, wide intervals")
    if result.fit is not None:
        for engine, fit in result.fit.as_dict().items():
            vals = ", ".join(f"{k}={v:.4g} s" + ("" if k in fit["pinned"] else " (at bound)" if k in fit["at_bound"]
                                                 else " (not pinned)") for k, v in fit["values"].items())
            passes = f"{fit['passes']} coordinate passes" + ("" if fit["converged"] else ", not converged")
            console.print(f"fitted on {fit['train_rows']} training rows, {engine} ({passes}): {vals}")


def markdown_table(summary: dict[str, Any]) -> str:
    """One summary as the Markdown table docs/serving-accuracy.md and the README show (a test checks they are
    the command's numbers)."""
    head = "| " + " | ".join(c.replace("|", "\\|") for c in COLUMNS) + " |"
    body = ["| " + " | ".join(cells) + " |" for cells in _summary_rows(summary)]
    return "\n".join([head, "| --- " * len(COLUMNS) + "|", *body])


KNEE_COLUMNS = ("family", "engine", "loads", "TTFT", "measured knee", "predicted knee", "ratio", "same interval",
                "held out")
KNEE_TITLE = f"TTFT knee: the lowest load at which TTFT reaches {KNEE_FACTOR:g} × the sweep's lowest-load TTFT"


def _load(value: float | None) -> str:
    return "not reached" if value is None else f"{value:.3g}"


def _knee_rows(knees: Any) -> list[tuple[str, ...]]:
    """Each sweep's cells (`validation.serving.KneeComparison`): its loads with their unit, the TTFT statistic,
    both knees in the loads' unit, their ratio (predicted / measured), whether they share an interval of measured
    loads, its held-out rows."""
    out = []
    for k in knees:
        loads = ", ".join(f"{x:g}" for x in k.loads) + f" {LOAD_UNITS[k.load_kind]}"
        ratio = "—" if k.ratio is None else f"{k.ratio:.2f}×"
        out.append((k.family, k.engine, loads, METRIC_NAMES[k.metric].removeprefix("TTFT "), _load(k.measured.load),
                    _load(k.predicted.load), ratio, "yes" if k.same_interval else "no",
                    f"{sum(k.held_out)} of {len(k.held_out)}"))
    return out


def knee_table(knees: Any):
    """The knee comparisons as a table (family, engine, loads, measured and predicted knee, ratio, …)."""
    from rich.table import Table

    table = Table(title=KNEE_TITLE + " (ratio: predicted / measured knee load)")
    for col in KNEE_COLUMNS:
        table.add_column(col, justify="left" if col in ("family", "engine", "loads", "TTFT") else "right",
                         overflow="fold")
    for cells in _knee_rows(knees):
        table.add_row(*cells)
    return table


def knee_summary_line(summary: dict[str, Any]) -> str:
    """The knee summary (`validation.serving.knee_summary`) in one sentence, for the printout, the docs and the
    README (a test checks they are the command's)."""
    ratio = "—" if summary["median_ratio"] is None else f"{summary['median_ratio']:.2f}×"
    return (f"TTFT knee ({KNEE_FACTOR:g} × the lowest load's TTFT) in {summary['families']} load sweeps: both knees "
            f"reached in {summary['both_reached']}, predicted / measured knee load median {ratio}; both between the "
            f"same two measured loads in {summary['same_interval']} of {summary['both_reached']} (the sweeps mix "
            f"training and held-out rows: not a held-out figure)")


def knee_markdown_table(knees: Any) -> str:
    """The knee comparisons as the Markdown table docs/serving-accuracy.md shows (a test checks it is the
    command's)."""
    head = "| " + " | ".join(KNEE_COLUMNS) + " |"
    body = ["| " + " | ".join(cells) + " |" for cells in _knee_rows(knees)]
    return "\n".join([head, "| --- " * len(KNEE_COLUMNS) + "|", *body])
