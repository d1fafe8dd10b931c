"""The validation wing for people: tables of `probe`, `validate`, `accuracy` and `calibrate` results, their
figures (Agg backend, files only), and the files they write. Nothing is computed here but labels and
positions; every number comes from a use case's result (`usecases.validation`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kokuban.errors import KokubanError
from kokuban.present.format import secs, si
from kokuban.present.jsonout import envelope, to_json

REGIME_COLOURS = {"compute": "tab:red", "weights": "tab:blue", "kv": "tab:green", "comm": "tab:purple",
                  "overhead": "tab:gray"}


def pct(x: float) -> str:
    """A fraction as a percentage with one decimal (0.123 → '12.3 %')."""
    return f"{100 * x:.1f} %"


def summary_table(title: str, summary: dict[str, Any], split_key: str):
    """An `error_summary` as a table: all rows, then each group of `summary[split_key]` that has rows; a column
    of the bootstrap interval of the median |error| where the summary has them (`median_abs_error_ci`)."""
    from rich.table import Table

    with_ci = "median_abs_error_ci" in summary
    table = Table(title=title)
    cols = ("rows", "count", "median |error|") + (("interval",) if with_ci else ()) + (
        "p90 |error|", "max |error|", "median signed")
    for col in cols:
        table.add_column(col, justify="left" if col == "rows" else "right")
    groups = [("all", summary)] + list(summary.get(split_key, {}).items())
    for name, s in groups:
        if s.get("count"):
            ci = (f"{pct(s['median_abs_error_ci'][0])} – {pct(s['median_abs_error_ci'][1])}",) if with_ci else ()
            table.add_row(name, str(s["count"]), pct(s["median_abs_error"]), *ci, pct(s["p90_abs_error"]),
                          pct(s["max_abs_error"]), pct(s["median_signed_error"]))
    return table


def bootstrap_line(summary: dict[str, Any]) -> str:
    """What the interval column means, from the summary's `bootstrap` settings."""
    b = summary["bootstrap"]
    return (f"interval: {100 * b['level']:g} % percentile bootstrap of the median |error| ({b['resamples']:,} "
            f"resamples, seed {b['seed']}); few rows, wide intervals")


WORKLOAD_NAMES = {"decode_batch_1": "decode batch 1", "throughput": "throughput (output tok/s)",
                  "prefill": "prefill-dominated", "moe": "MoE", "multi_gpu": "multi-GPU group"}


def named_workloads(summary: dict[str, Any]) -> dict[str, Any]:
    """The summary with its `by_workload` groups under their printed names (`WORKLOAD_NAMES`)."""
    return dict(summary, by_workload={WORKLOAD_NAMES.get(k, k): v for k, v in summary.get("by_workload", {}).items()})


def worst_table(worst: Any):
    """The worst rows and the terms of the step that decides each (seconds on one GPU)."""
    from rich.table import Table

    from kokuban.validation.accuracy import engine_family

    table = Table(title=f"the {len(worst)} worst rows and their step's terms (one GPU, per step)")
    terms = [p.terms or {} for p in worst]
    times = {"step": "step_time_s", "compute": "compute_s", "weights": "weights_s", "KV": "kv_s", "comm": "comm_s",
             "sync": "sync_s", "overhead": "overhead_s"}
    if not any(t.get("sync_s") for t in terms):  # a TP group's barrier wait: shown where a row has one
        del times["sync"]
    for col in ("id", "error", "engine", "phase", "bound", *times):
        table.add_column(col, justify="left" if col in ("id", "engine", "phase", "bound") else "right")
    for p, t in zip(worst, terms, strict=True):
        table.add_row(p.id, f"{100 * p.signed_error:+.1f} %", engine_family(p.engine), t.get("phase", ""),
                      t.get("bound", ""), *(secs(t[k]) if k in t else "" for k in times.values()))
    return table


def floor_line(predictions: Any) -> str:
    """The rows measured faster than their floor (`accuracy.floor_row`), each with how far beyond it; or none."""
    with_floor = [p for p in predictions if p.floor is not None]
    beyond = [p for p in with_floor if p.beyond_floor]
    head = (f"floor check: {len(beyond)} of {len(with_floor)} rows with a stated batch were measured faster than the "
            "hardware allows for the work kokuban counts (every FLOP at peak, every byte at full bandwidth)")
    if not beyond:
        return head + ": none"
    return head + "; the row's mapping or the counts' assumptions are not what ran: " + ", ".join(
        f"{p.id} ({p.floor_ratio:.2f}× the floor)" for p in beyond)


def _write(path: str | Path, text: str, field: str) -> None:
    try:
        Path(path).write_text(text)
    except OSError as exc:
        raise KokubanError(f"cannot write '{path}': {exc.strerror}", field=field, value=str(path)) from None


# ---- calibrate's efficiency file -------------------------------------------------------------------------
def write_efficiency_file(efficiency: Any, path: str | Path, source: str = "") -> None:
    """A fitted `Efficiency` as a file every command's `--efficiency-file` reads (`Efficiency.from_file`): JSON if
    `path` ends in .json, else TOML, its fields at the top level (an unset kv_memory left out: it follows
    memory)."""
    from dataclasses import asdict

    fields = {k: v for k, v in asdict(efficiency).items() if v is not None}
    if str(path).endswith(".json"):
        text = to_json(fields)
    else:
        lines = [f"# achievable fractions fitted by `kokuban calibrate`{' (' + source + ')' if source else ''}; "
                 "use with --efficiency-file"]
        text = "\n".join(lines + [f"{k} = {float(v)!r}" for k, v in fields.items()]) + "\n"
    _write(path, text, "out_file")


# ---- probe -------------------------------------------------------------------------------------------
def write_probe_entry(probe: Any, path: str | Path) -> None:
    """The probed entry as an accelerator file: JSON (`{"accelerator": [entry]}`) if `path` ends in .json,
    else one TOML `[[accelerator]]` table (`probe.entry_to_toml`)."""
    from kokuban.validation.probe import entry_to_toml

    entry = probe.as_dict()
    text = to_json({"accelerator": [entry]}) if str(path).endswith(".json") else entry_to_toml(entry)
    _write(path, text, "out")


def print_probe(console: Any, probe: Any, out: str | None = None) -> None:
    """The probed figures, one per line, and where the entry was written."""
    entry = probe.as_dict()
    console.print(f"[bold]{entry['device']}[/] — measured {entry['measured_on']}")
    console.print(f"  memory {si(entry['memory_bytes'], 'B')}, read bandwidth "
                  f"{si(entry['memory_bandwidth_bytes_per_s'], 'B/s')}")
    for key, value in entry.items():
        if key.startswith("flops_") and key != "flops_note":
            console.print(f"  {key[6:]:>5} matmul {si(value, 'FLOP/s')}")
    console.print(f"  method: {entry['method']}")
    if out:
        console.print(f"  written to {out} (use: --gpu-file {out} --gpu {entry['id']})")


# ---- validate ----------------------------------------------------------------------------------------
def print_validation(console: Any, report: Any, out_dir: str | None = None) -> None:
    """Setup line, measured vs predicted per point, the error by regime, skipped points, files written."""
    from rich.table import Table

    s = report.setup
    console.print(f"[bold]{s['model']}[/] ({', '.join(s['scaled']) or 'as published'}; {si(s['params_total'])} params, "
                  f"{s['dtype']}) on {s['device']}: {s['accelerator']['name']}")
    table = Table(title="measured vs predicted step time (median of interleaved rounds)")
    for col in ("phase", "batch", "context/prompt", "regime", "measured", "predicted", "error"):
        table.add_column(col, justify="left" if col in ("phase", "regime") else "right")
    for r in report.rows:
        table.add_row(r.phase, str(r.batch), str(r.context or r.prompt_tokens), r.regime, secs(r.measured_s),
                      secs(r.predicted_s), pct(r.error))
    console.print(table)
    console.print(summary_table("error |predicted − measured| ÷ measured, by regime", report.summary, "by_regime"))
    if s["skipped"]:
        console.print(f"skipped (KV cache over {si(s['max_kv_bytes'], 'B')}): "
                      + ", ".join(f"{p['phase']} b{p['batch']}×{p['tokens']}" for p in s["skipped"]))
    if out_dir:
        console.print(f"written: {out_dir}/validate.csv, validate.json, validate.png")


def write_validation_report(report: Any, out_dir: str | Path) -> None:
    """validate.csv (the rows, without the per-round times), validate.json (`report.as_dict()` in the `--json`
    envelope: what `kokuban validate --json` prints) and validate.png (`plot_validation`) in `out_dir`."""
    import pandas as pd

    out_dir = Path(out_dir)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise KokubanError(f"cannot create '{out_dir}': {exc.strerror}", field="out_dir", value=str(out_dir)) from None
    frame = pd.DataFrame([{k: v for k, v in r.as_dict().items() if k != "repeats_s"} for r in report.rows])
    frame.to_csv(out_dir / "validate.csv", index=False)
    _write(out_dir / "validate.json", to_json(envelope("validate", report.as_dict())), "out_dir")
    plot_validation(report, out_dir / "validate.png")


def plot_validation(report: Any, path: str | Path) -> None:
    """Two panels: predicted vs measured (log-log, ±15 % band, colour = regime, marker = phase), and
    decode step time against batch per context (measured dots, predicted lines)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    from matplotlib.ticker import NullFormatter

    rows, summary, setup = report.rows, report.summary, report.setup
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(13, 5.5))
    meas = np.array([r.measured_s for r in rows])
    pred = np.array([r.predicted_s for r in rows])
    lo, hi = min(meas.min(), pred.min()) / 1.5, max(meas.max(), pred.max()) * 1.5
    xs = np.geomspace(lo, hi, 50)
    ax.plot(xs, xs, "k-", lw=1, label="predicted = measured")
    ax.fill_between(xs, xs / 1.15, xs * 1.15, color="0.85", label="±15 %")
    for r in rows:
        ax.scatter(r.measured_s, r.predicted_s, c=REGIME_COLOURS.get(r.regime, "k"),
                   marker="o" if r.phase == "decode" else "s", s=28, edgecolors="k", linewidths=0.4)
    for regime, colour in REGIME_COLOURS.items():
        if any(r.regime == regime for r in rows):
            ax.scatter([], [], c=colour, label=f"{regime}-bound")
    ax.scatter([], [], marker="s", facecolors="none", edgecolors="k", label="prefill (squares)")
    ax.set(xscale="log", yscale="log", xlim=(lo, hi), ylim=(lo, hi), xlabel="measured step time (s)",
           ylabel="kokuban predicted (s)")
    ax.set_title(f"median |error| {100 * summary['median_abs_error']:.1f} %, p90 {100 * summary['p90_abs_error']:.1f} %"
                 f" ({summary['count']} points)")
    ax.legend(fontsize=8, loc="upper left")
    decode = [r for r in rows if r.phase == "decode"]
    for i, ctx in enumerate(sorted({r.context for r in decode})):
        sel = sorted((r for r in decode if r.context == ctx), key=lambda r: r.batch)
        colour = f"C{i}"
        ax2.plot([r.batch for r in sel], [r.predicted_s for r in sel], "-", color=colour, label=f"context {ctx}")
        ax2.plot([r.batch for r in sel], [r.measured_s for r in sel], "o", color=colour)
    ax2.set(xscale="log", yscale="log", xlabel="batch", ylabel="decode step time (s)",
            title="decode: measured (dots) vs predicted (lines)")
    ax2.legend(fontsize=8)
    for axis in (ax.xaxis, ax.yaxis, ax2.xaxis, ax2.yaxis):
        axis.set_minor_formatter(NullFormatter())
    eff = setup["efficiency"]
    fig.suptitle(f"kokuban validate: {setup['model']} ({'; '.join(setup['scaled']) or 'full'}), {setup['dtype']} on "
                 f"{setup['device']} ({setup['accelerator']['name']}); efficiency compute {eff['compute']:.3g}, "
                 f"memory {eff['memory']:.3g}, overhead {eff['step_overhead_s']:.3g} s", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# ---- accuracy ----------------------------------------------------------------------------------------
#: each published metric's short name and how its value prints (rates in tokens/s, a time in s/ms/µs)
METRIC_COLUMNS = {"tokens_per_s_per_user": ("tok/s/user", lambda v: f"{v:,.1f}"),
                  "output_tokens_per_s": ("tok/s", lambda v: f"{v:,.1f}"), "time_to_first_token_s": ("TTFT", secs)}


def print_accuracy(console: Any, result: Any) -> None:
    """Every published row beside its prediction, the error by regime and by metric, the fractions used."""
    from rich.table import Table

    table = Table(title=f"measured results vs kokuban ({result.source})")
    for col in ("id", "metric", "layout", "batch", "regime", "measured", "predicted", "error"):
        table.add_column(col, justify="left" if col in ("id", "metric", "regime", "layout") else "right")
    for r in result.predictions:
        unit, show = METRIC_COLUMNS[r.metric]
        table.add_row(r.id, unit, f"{r.replicas:g}×{r.tp_or_ep}", str(r.batch_per_replica), r.regime,
                      show(r.measured), show(r.predicted), pct(r.error))
    console.print(table)
    summary = result.summary
    console.print(summary_table("error by regime (the step's bound)", summary, "by_regime"))
    console.print(summary_table("error by metric", summary, "by_metric"))
    console.print(summary_table("error by workload (a row may be in several)", named_workloads(summary), "by_workload"))
    console.print(summary_table("error by weights dtype", summary, "by_weights"))
    console.print(summary_table("error by engine", summary, "by_engine"))
    console.print(bootstrap_line(summary))
    if "without_withdrawn" in summary:
        w = summary["without_withdrawn"]
        lo, hi = w["median_abs_error_ci"]
        console.print(f"beside the headline, without the {summary['count'] - w['count']} rows their sources withdrew "
                      f"(`withdrawn`): {w['count']} rows, median |error| {pct(w['median_abs_error'])} "
                      f"({pct(lo)} – {pct(hi)}), p90 {pct(w['p90_abs_error'])}")
    console.print(worst_table(result.worst))
    console.print(floor_line(result.predictions))
    fractions = {k: v for k, v in result.efficiency.as_dict().items() if k != "kernels" and v is not None}
    console.print("efficiency: " + ", ".join(f"{k}={v:g}" for k, v in fractions.items()))
    if result.efficiency.kernels is not None:
        curves = result.efficiency.kernels.as_dict()
        console.print("kernel curves (specs/kernels.py): " + ", ".join(f"{k}={v:g}" for k, v in curves.items()))


# ---- calibrate ---------------------------------------------------------------------------------------
def print_calibration(console: Any, cal: Any) -> None:
    """The fitted parameters before and after, and the held-out error before and after, by regime."""
    from rich.table import Table

    from kokuban.validation.calibrate import param_value

    table = Table(
        title=f"calibration on {cal.train_rows} rows, judged on {cal.holdout_rows} held-out rows ({cal.source})"
    )
    for col in ("parameter", "before", "after"):
        table.add_column(col, justify="left" if col == "parameter" else "right")
    for p in cal.params:
        table.add_row(p, f"{param_value(cal.before, p):.4g}", f"{param_value(cal.after, p):.4g}")
    console.print(table)
    console.print(summary_table("held-out error BEFORE calibration", cal.holdout_before, "by_regime"))
    console.print(summary_table("held-out error AFTER calibration", cal.holdout_after, "by_regime"))
    for key, name in (("by_workload", "workload"), ("by_weights", "weights dtype"), ("by_engine", "engine")):
        if cal.holdout_after.get(key):
            title = f"held-out error AFTER calibration, by {name}"
            console.print(summary_table(title, named_workloads(cal.holdout_after), key))
    if "bootstrap" in cal.holdout_after:
        console.print(bootstrap_line(cal.holdout_after) + " — held-out rows only")


def plot_calibration(cal: Any, path: str | Path) -> None:
    """Predicted vs measured with the starting fractions and with the fitted ones (log-log, ±15 % band);
    training rows hollow, held-out rows filled; each panel titled with its held-out error."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    from matplotlib.ticker import NullFormatter

    from kokuban.present.plots import check_plot_path
    from kokuban.validation.calibrate import param_value

    check_plot_path(path)
    meas = np.array([r["measured"] for r in cal.rows])
    held = np.array([r["held_out"] for r in cal.rows])
    panels = (("before", "predicted_before", cal.holdout_before), ("after", "predicted_after", cal.holdout_after))
    preds = [np.array([r[key] for r in cal.rows]) for _, key, _ in panels]
    lo = min(meas.min(), *(p.min() for p in preds)) / 1.5
    hi = max(meas.max(), *(p.max() for p in preds)) * 1.5
    xs = np.geomspace(lo, hi, 50)
    fig, axes = plt.subplots(1, 2, figsize=(11, 5.2), sharey=True)
    for ax, (name, _, summary), pred in zip(axes, panels, preds, strict=True):
        ax.plot(xs, xs, "k-", lw=1, label="predicted = measured")
        ax.fill_between(xs, xs / 1.15, xs * 1.15, color="0.85", label="±15 %")
        ax.scatter(meas[~held], pred[~held], facecolors="none", edgecolors="tab:blue", s=30, label="fitted on")
        ax.scatter(meas[held], pred[held], c="tab:red", edgecolors="k", linewidths=0.4, s=30, label="held out")
        ax.set(xscale="log", yscale="log", xlim=(lo, hi), ylim=(lo, hi), xlabel="measured")
        ax.set_title(f"{name}: held-out median |error| {100 * summary['median_abs_error']:.1f} %, "
                     f"p90 {100 * summary['p90_abs_error']:.1f} %", fontsize=10)
        for axis in (ax.xaxis, ax.yaxis):
            axis.set_minor_formatter(NullFormatter())
    axes[0].set_ylabel("kokuban predicted")
    axes[0].legend(fontsize=8, loc="upper left")
    fitted = ", ".join(f"{p} {param_value(cal.after, p):.3g}" for p in cal.params)
    fig.suptitle(
        f"kokuban calibrate ({cal.source}): {cal.train_rows} rows fitted, {cal.holdout_rows} held out; {fitted}",
        fontsize=9,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
