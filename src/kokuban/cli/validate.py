"""`kokuban probe | validate | accuracy | calibrate`: prove the roofline on real hardware and published results.

Presentation only: measurements come from `kokuban.probe` / `kokuban.validate`, predictions from the
core, errors from `kokuban.accuracy`, fits from `kokuban.calibrate`.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from kokuban.cli.options import efficiency_from_flags, efficiency_option_list, efficiency_options, emit_json
from kokuban.errors import KokubanError
from kokuban.present.format import console, secs, si
from kokuban.specs.hardware import Efficiency


def _ints(text: str, name: str) -> list[int]:
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise KokubanError(f"{name} must be comma-separated integers, got '{text}'") from None
    if not values or any(v < 1 for v in values):
        raise KokubanError(f"{name} must be positive integers, got '{text}'")
    return values


def _efficiency(kw: dict[str, Any], base: Efficiency | None = None) -> Efficiency:
    """The shipped (calibrated) defaults, or `base`, with the flags given on the command line."""
    return efficiency_from_flags(kw, base)


def textbook_efficiency_options(func: Any) -> Any:
    """The efficiency flags, their help naming the textbook fractions validate and calibrate start from."""
    for option in reversed(efficiency_option_list(Efficiency.textbook(), "textbook; `accuracy` uses the calibrated ones")):
        func = option(func)
    return func


def _progress(as_json: bool) -> bool:
    return not as_json and sys.stderr.isatty()


def _pct(x: float) -> str:
    return f"{100 * x:.1f} %"


def _summary_table(title: str, summary: dict[str, Any], split_key: str):
    from rich.table import Table

    table = Table(title=title)
    for col in ("rows", "count", "median |error|", "p90 |error|", "max |error|", "median signed"):
        table.add_column(col, justify="left" if col == "rows" else "right")
    groups = [("all", summary)] + list(summary.get(split_key, {}).items())
    for name, s in groups:
        if s.get("count"):
            table.add_row(name, str(s["count"]), _pct(s["median_abs_error"]), _pct(s["p90_abs_error"]),
                          _pct(s["max_abs_error"]), _pct(s["median_signed_error"]))
    return table


# ---- probe ---------------------------------------------------------------------------------------------
@click.command()
@click.option("--device", type=click.Choice(["auto", "cpu", "cuda"]), default="auto", show_default=True)
@click.option("--seconds", type=float, default=3.0, show_default=True, help="Rough time budget of the measurements.")
@click.option("--id", "entry_id", default=None, help="Accelerator id to write (default probed-DEVICE).")
@click.option("--out", type=click.Path(dir_okay=False), default=None, help="Write the entry (TOML, or JSON if .json); use with --gpu-file.")
@click.option("--json", "as_json", is_flag=True, help="Print the accelerator entry as JSON.")
def probe(device: str, seconds: float, entry_id: str | None, out: str | None, as_json: bool) -> None:
    """Measure this machine's memory bandwidth and matmul FLOP/s; print an accelerator entry."""
    from kokuban.validation.probe import entry_to_toml
    from kokuban.validation.probe import probe as run

    entry = run(device, seconds=seconds, entry_id=entry_id, progress=_progress(as_json))
    if out:
        text = json.dumps({"accelerator": [entry]}, indent=2) if out.endswith(".json") else entry_to_toml(entry)
        Path(out).write_text(text)
    if as_json:
        emit_json(entry)
        return
    c = console()
    c.print(f"[bold]{entry['device']}[/] — measured {entry['measured_on']}")
    c.print(f"  memory {si(entry['memory_bytes'], 'B')}, read bandwidth {si(entry['memory_bandwidth_bytes_per_s'], 'B/s')}")
    for key, value in entry.items():
        if key.startswith("flops_") and key != "flops_note":
            c.print(f"  {key[6:]:>5} matmul {si(value, 'FLOP/s')}")
    c.print(f"  method: {entry['method']}")
    if out:
        c.print(f"  written to {out} (use: --gpu-file {out} --gpu {entry['id']})")


# ---- validate --------------------------------------------------------------------------------------------
@click.command()
@click.option("--model", default="llama-3.2-1b", show_default=True, help="Catalog id or config.json (llama/mistral/qwen2/qwen3).")
@click.option("--layers", type=int, default=4, show_default=True, help="Keep this many layers (0 = all).")
@click.option("--hidden", type=int, default=None, help="Scale the hidden size down to this (heads and MLP scale with it).")
@click.option("--device", type=click.Choice(["auto", "cpu", "cuda"]), default="cpu", show_default=True)
@click.option("--dtype", type=click.Choice(["fp32", "bf16", "fp16"]), default=None, help="Default: fp32 on CPU, bf16 on GPU.")
@click.option("--linear", type=click.Choice(["auto", "matmul", "onednn"]), default="auto", show_default=True,
              help="Linear layers: dense matmul, or oneDNN inner product (auto: oneDNN for fp32 on CPU).")
@click.option("--batches", default="1,2,4,8,16,32,64", show_default=True)
@click.option("--contexts", default="128,1024,4096", show_default=True)
@click.option("--prompts", default="16,64,256", show_default=True, help="Prefill prompt lengths (batch --prefill-batch).")
@click.option("--prefill-batch", type=int, default=1, show_default=True)
@click.option("--warmup", type=int, default=1, show_default=True, help="Untimed calls before each timed one.")
@click.option("--repeats", type=int, default=5, show_default=True, help="Rounds over the whole grid; one timed call per point in each.")
@click.option("--max-kv-gb", type=float, default=None, help="Skip points whose KV cache exceeds this (default 25 % of memory).")
@click.option("--gpu", default=None, help="Accelerator id in --gpu-file to predict with (default: probe now).")
@click.option("--gpu-file", type=click.Path(exists=True), default=None, help="A `kokuban probe --out` file.")
@click.option("--probe-seconds", type=float, default=3.0, show_default=True)
@click.option("--out-dir", type=click.Path(file_okay=False), default=None, help="Write validate.csv, validate.json, validate.png here.")
@textbook_efficiency_options
@click.option("--json", "as_json", is_flag=True, help="Print rows and summary as JSON.")
def validate(**kw: Any) -> None:
    """Run a real (scaled) transformer in PyTorch and compare measured step times with kokuban's."""
    from kokuban.validation.harness import read_probe_entry, run_validation

    as_json = kw.pop("as_json")
    # a bare PyTorch loop has no serving engine's per-step overhead: predict with the textbook fractions
    # (then `kokuban calibrate --source validate-csv` fits this machine's own)
    eff = _efficiency(kw, Efficiency.textbook())
    if kw["gpu"] and not kw["gpu_file"]:
        raise KokubanError("--gpu needs --gpu-file (a `kokuban probe --out` file); without both, validate probes")
    entry = read_probe_entry(kw["gpu_file"], kw["gpu"]) if kw["gpu_file"] else None
    report = run_validation(
        kw["model"], device=kw["device"], dtype=kw["dtype"], num_layers=kw["layers"] or None, hidden_size=kw["hidden"],
        batches=_ints(kw["batches"], "--batches"), contexts=_ints(kw["contexts"], "--contexts"),
        prompts=_ints(kw["prompts"], "--prompts") if kw["prompts"] else [], prefill_batch=kw["prefill_batch"],
        accelerator_entry=entry, efficiency=eff, warmup=kw["warmup"], repeats=kw["repeats"],
        max_kv_bytes=kw["max_kv_gb"] * 1e9 if kw["max_kv_gb"] else None, probe_seconds=kw["probe_seconds"],
        progress=_progress(as_json), linear=kw["linear"],
    )
    if kw["out_dir"]:
        write_report(report, Path(kw["out_dir"]))
    if as_json:
        emit_json({"rows": report.rows, "summary": report.summary, "setup": report.setup})
        return
    from rich.table import Table

    s = report.setup
    c = console()
    c.print(f"[bold]{s['model']}[/] ({', '.join(s['scaled']) or 'as published'}; {si(s['params_total'])} params, "
            f"{s['dtype']}) on {s['device']}: {s['accelerator']['name']}")
    table = Table(title="measured vs predicted step time (median of interleaved rounds)")
    for col in ("phase", "batch", "context/prompt", "regime", "measured", "predicted", "error"):
        table.add_column(col, justify="left" if col in ("phase", "regime") else "right")
    for r in report.rows:
        table.add_row(r["phase"], str(r["batch"]), str(r["context"] or r["prompt_tokens"]), r["regime"],
                      secs(r["measured_s"]), secs(r["predicted_s"]), _pct(r["error"]))
    c.print(table)
    c.print(_summary_table("error |predicted − measured| ÷ measured, by regime", report.summary, "by_regime"))
    if s["skipped"]:
        c.print(f"skipped (KV cache over {si(s['max_kv_bytes'], 'B')}): "
                + ", ".join(f"{p['phase']} b{p['batch']}×{p['tokens']}" for p in s["skipped"]))
    if kw["out_dir"]:
        c.print(f"written: {kw['out_dir']}/validate.csv, validate.json, validate.png")


def write_report(report: Any, out_dir: Path) -> None:
    """validate.csv (rows), validate.json (rows, summary, setup), validate.png (plot)."""
    import pandas as pd

    out_dir.mkdir(parents=True, exist_ok=True)
    frame = pd.DataFrame([{k: v for k, v in r.items() if k != "repeats_s"} for r in report.rows])
    frame.to_csv(out_dir / "validate.csv", index=False)
    (out_dir / "validate.json").write_text(json.dumps(report.as_dict(), indent=2, default=float))
    plot_validation(report.rows, report.summary, report.setup, out_dir / "validate.png")


def plot_validation(rows: list[dict[str, Any]], summary: dict[str, Any], setup: dict[str, Any], path: Path) -> None:
    """Two panels: predicted vs measured (log-log, ±15 % band, colour = regime, marker = phase), and
    decode step time against batch per context (measured dots, predicted lines)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    colours = {"compute": "tab:red", "weights": "tab:blue", "kv": "tab:green", "comm": "tab:purple", "overhead": "tab:gray"}
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(13, 5.5))
    meas = np.array([r["measured_s"] for r in rows])
    pred = np.array([r["predicted_s"] for r in rows])
    lo, hi = min(meas.min(), pred.min()) / 1.5, max(meas.max(), pred.max()) * 1.5
    xs = np.geomspace(lo, hi, 50)
    ax.plot(xs, xs, "k-", lw=1, label="predicted = measured")
    ax.fill_between(xs, xs / 1.15, xs * 1.15, color="0.85", label="±15 %")
    for r in rows:
        ax.scatter(r["measured_s"], r["predicted_s"], c=colours.get(r["regime"], "k"),
                   marker="o" if r["phase"] == "decode" else "s", s=28, edgecolors="k", linewidths=0.4)
    for regime, colour in colours.items():
        if any(r["regime"] == regime for r in rows):
            ax.scatter([], [], c=colour, label=f"{regime}-bound")
    ax.scatter([], [], marker="s", facecolors="none", edgecolors="k", label="prefill (squares)")
    ax.set(xscale="log", yscale="log", xlim=(lo, hi), ylim=(lo, hi), xlabel="measured step time (s)",
           ylabel="kokuban predicted (s)")
    ax.set_title(f"median |error| {100 * summary['median_abs_error']:.1f} %, p90 {100 * summary['p90_abs_error']:.1f} %"
                 f" ({summary['count']} points)")
    ax.legend(fontsize=8, loc="upper left")
    decode = [r for r in rows if r["phase"] == "decode"]
    for i, ctx in enumerate(sorted({r["context"] for r in decode})):
        sel = sorted((r for r in decode if r["context"] == ctx), key=lambda r: r["batch"])
        colour = f"C{i}"
        ax2.plot([r["batch"] for r in sel], [r["predicted_s"] for r in sel], "-", color=colour, label=f"context {ctx}")
        ax2.plot([r["batch"] for r in sel], [r["measured_s"] for r in sel], "o", color=colour)
    ax2.set(xscale="log", yscale="log", xlabel="batch", ylabel="decode step time (s)",
            title="decode: measured (dots) vs predicted (lines)")
    ax2.legend(fontsize=8)
    from matplotlib.ticker import NullFormatter

    for axis in (ax.xaxis, ax.yaxis, ax2.xaxis, ax2.yaxis):
        axis.set_minor_formatter(NullFormatter())
    eff = setup["efficiency"]
    fig.suptitle(f"kokuban validate: {setup['model']} ({'; '.join(setup['scaled']) or 'full'}), {setup['dtype']} on "
                 f"{setup['device']} ({setup['accelerator']['name']}); efficiency compute {eff['compute']:.3g}, "
                 f"memory {eff['memory']:.3g}, overhead {eff['step_overhead_s']:.3g} s", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_calibration(cal: Any, path: Path) -> None:
    """Predicted vs measured with the starting fractions and with the fitted ones (log-log, ±15 % band);
    training rows hollow, held-out rows filled; each panel titled with its held-out error."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    from matplotlib.ticker import NullFormatter

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
    from kokuban.validation.calibrate import param_value

    fitted = ", ".join(f"{p} {param_value(cal.after, p):.3g}" for p in cal.params)
    fig.suptitle(f"kokuban calibrate ({cal.source}): {cal.train_rows} rows fitted, {cal.holdout_rows} held out; {fitted}",
                 fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# ---- accuracy --------------------------------------------------------------------------------------------
@click.command()
@efficiency_options
@click.option("--json", "as_json", is_flag=True, help="Print rows and summary as JSON.")
def accuracy(as_json: bool, **kw: Any) -> None:
    """kokuban's error against every published serving result, and in summary by regime."""
    from rich.table import Table

    from kokuban.validation.accuracy import accuracy as run

    result = run(_efficiency(kw))
    if as_json:
        emit_json(result)
        return
    c = console()
    table = Table(title="published results vs kokuban (data/published_results.toml)")
    for col in ("id", "metric", "layout", "batch", "regime", "measured", "predicted", "error"):
        table.add_column(col, justify="left" if col in ("id", "metric", "regime", "layout") else "right")
    for r in result["rows"]:
        table.add_row(r["id"], "tok/s/user" if r["metric"] == "tokens_per_s_per_user" else "tok/s",
                      f"{r['replicas']:g}×{r['tp_or_ep']}", str(r["batch_per_replica"]), r["regime"],
                      f"{r['measured']:,.1f}", f"{r['predicted']:,.1f}", _pct(r["error"]))
    c.print(table)
    c.print(_summary_table("error by regime", result["summary"], "by_regime"))
    c.print(_summary_table("error by metric", result["summary"], "by_metric"))
    c.print("efficiency: " + ", ".join(f"{k}={v:g}" for k, v in result["efficiency"].items()))


# ---- calibrate -------------------------------------------------------------------------------------------
@click.command()
@click.option("--source", type=click.Choice(["published", "validate-csv"]), required=True)
@click.option("--csv", "csv_path", type=click.Path(exists=True, dir_okay=False), default=None,
              help="validate.csv (with validate.json beside it), for --source validate-csv.")
@click.option("--phase", type=click.Choice(["decode", "prefill"]), default=None, help="Fit only these validate rows.")
@click.option("--params", default=None, help="Comma-separated Efficiency fields to fit (default: compute,memory,"
              "interconnect,step_overhead_s for published; compute,memory,kv_memory,overlap,step_overhead_s for validate).")
@click.option("--holdout", type=float, default=1 / 3, show_default=True, help="Fraction of rows held out (by hash of id).")
@click.option("--seed", type=int, default=0, show_default=True, help="Salt of the held-out split.")
@click.option("--hold-out", "hold_out", default=None, metavar="FIELD=V1,V2",
              help="validate-csv only: hold out the rows whose batch, context or prompt_tokens is one of these "
                   "(e.g. context=4096) instead of the hash split.")
@click.option("--plot", "plot_path", type=click.Path(dir_okay=False), default=None,
              help="Write predicted vs measured before and after (.png, .svg or .pdf); held-out rows filled.")
@textbook_efficiency_options
@click.option("--json", "as_json", is_flag=True)
def calibrate(source: str, csv_path: str | None, phase: str | None, params: str | None, holdout: float, seed: int,
              hold_out: str | None, plot_path: str | None, as_json: bool, **kw: Any) -> None:
    """Fit the achievable fractions on some rows; report the error before/after on the held-out rest."""
    from kokuban.present.plots import check_plot_path
    from kokuban.validation.calibrate import calibrate_published, calibrate_validation, param_value

    if plot_path:
        check_plot_path(plot_path)

    start = _efficiency(kw, Efficiency.textbook())  # calibration starts from the uncalibrated fractions
    chosen = tuple(p.strip() for p in params.split(",")) if params else None
    split = None
    if hold_out:
        field, _, values = hold_out.partition("=")
        try:
            split = (field.strip(), [int(v) for v in values.split(",") if v.strip()])
        except ValueError:
            split = None
        if not split or not split[1]:
            raise KokubanError(f"--hold-out must look like FIELD=V1,V2 (e.g. context=4096), got '{hold_out}'")
    if source == "published":
        if phase or csv_path or hold_out:
            raise KokubanError("--csv, --phase and --hold-out apply to --source validate-csv only")
        cal = calibrate_published(*(chosen,) if chosen else (), start=start, holdout_fraction=holdout, seed=seed)
    else:
        if not csv_path:
            raise KokubanError("--source validate-csv needs --csv PATH (a `kokuban validate --out-dir` validate.csv)")
        cal = calibrate_validation(csv_path, *(chosen,) if chosen else (), phase=phase, start=start,
                                   holdout_fraction=holdout, seed=seed, hold_out=split)
    if plot_path:
        plot_calibration(cal, Path(plot_path))
    if as_json:
        emit_json(cal.as_dict())
        return
    from rich.table import Table

    c = console()
    table = Table(title=f"calibration on {cal.train_rows} rows, judged on {cal.holdout_rows} held-out rows ({cal.source})")
    for col in ("parameter", "before", "after"):
        table.add_column(col, justify="left" if col == "parameter" else "right")
    for p in cal.params:
        table.add_row(p, f"{param_value(cal.before, p):.4g}", f"{param_value(cal.after, p):.4g}")
    c.print(table)
    c.print(_summary_table("held-out error BEFORE calibration", cal.holdout_before, "by_regime"))
    c.print(_summary_table("held-out error AFTER calibration", cal.holdout_after, "by_regime"))


commands = [probe, validate, accuracy, calibrate]
