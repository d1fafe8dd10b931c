"""`kokuban probe | validate | accuracy | calibrate`: prove the roofline on real hardware and published results.

Faces only: parse → use case (`usecases.validation`) → present (`present.validation`). Measurements come from
`validation.probe` / `validation.harness`, predictions from the core, errors from `validation.accuracy`, fits
from `validation.calibrate`; which efficiency each command starts from is its request's default.
"""

from __future__ import annotations

import sys
from typing import Any

import click

from kokuban.cli.options import OutputPath, efficiency_option_list, efficiency_options, emit_json, request
from kokuban.present.format import console
from kokuban.specs.hardware import Efficiency


def textbook_efficiency_options(func: Any) -> Any:
    """The efficiency flags, their help naming the textbook fractions validate and calibrate start from
    (`usecases.validation.TextbookEfficiencyRequest`, not imported here to keep start-up light)."""
    for option in reversed(
        efficiency_option_list(Efficiency.textbook(), "textbook; `accuracy` uses the calibrated ones")
    ):
        func = option(func)
    return func


def _progress(as_json: bool) -> bool:
    return not as_json and sys.stderr.isatty()


# ---- probe ---------------------------------------------------------------------------------------------
@click.command()
@click.option("--device", type=click.Choice(["auto", "cpu", "cuda"]), default="auto", show_default=True)
@click.option("--seconds", type=float, default=3.0, show_default=True, help="Rough time budget of the measurements.")
@click.option("--id", "entry_id", default=None, help="Accelerator id to write (default probed-DEVICE).")
@click.option(
    "--out",
    type=OutputPath(),
    default=None,
    help="Write the entry (TOML, or JSON if .json); use with --gpu-file.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the accelerator entry as JSON.")
def probe(**kw: Any) -> None:
    """Measure this machine's memory bandwidth and matmul FLOP/s; print an accelerator entry."""
    from kokuban.present.validation import print_probe, write_probe_entry
    from kokuban.usecases.validation import ProbeRequest, run_probe

    result = run_probe(request(ProbeRequest, kw), progress=_progress(kw["as_json"]))
    if kw["out"]:
        write_probe_entry(result, kw["out"])
    if kw["as_json"]:
        emit_json(result.as_dict())
    else:
        print_probe(console(), result, kw["out"])


# ---- validate --------------------------------------------------------------------------------------------
@click.command()
@click.option(
    "--model", default="llama-3.2-1b", show_default=True, help="Catalog id or config.json (llama/mistral/qwen2/qwen3)."
)
@click.option("--layers", type=int, default=4, show_default=True, help="Keep this many layers (0 = all).")
@click.option(
    "--hidden", type=int, default=None, help="Scale the hidden size down to this (heads and MLP scale with it)."
)
@click.option("--device", type=click.Choice(["auto", "cpu", "cuda"]), default="cpu", show_default=True)
@click.option(
    "--dtype", type=click.Choice(["fp32", "bf16", "fp16"]), default=None, help="Default: fp32 on CPU, bf16 on GPU."
)
@click.option("--linear", type=click.Choice(["auto", "matmul", "onednn"]), default="auto", show_default=True,
              help="Linear layers: dense matmul, or oneDNN inner product (auto: oneDNN for fp32 on CPU).")
@click.option("--batches", default="1,2,4,8,16,32,64", show_default=True)
@click.option("--contexts", default="128,1024,4096", show_default=True)
@click.option(
    "--prompts", default="16,64,256", show_default=True, help="Prefill prompt lengths (batch --prefill-batch)."
)
@click.option("--prefill-batch", type=int, default=1, show_default=True)
@click.option("--warmup", type=int, default=1, show_default=True, help="Untimed calls before each timed one.")
@click.option(
    "--repeats",
    type=int,
    default=5,
    show_default=True,
    help="Rounds over the whole grid; one timed call per point in each.",
)
@click.option(
    "--max-kv-gb", type=float, default=None, help="Skip points whose KV cache exceeds this (default 25 % of memory)."
)
@click.option("--gpu", default=None, help="Accelerator id in --gpu-file to predict with (default: probe now).")
@click.option("--gpu-file", type=click.Path(exists=True), default=None, help="A `kokuban probe --out` file.")
@click.option("--probe-seconds", type=float, default=3.0, show_default=True)
@click.option(
    "--out-dir",
    type=click.Path(file_okay=False),
    default=None,
    help="Write validate.csv, validate.json, validate.png here.",
)
@textbook_efficiency_options
@click.option("--json", "as_json", is_flag=True, help="Print rows and summary as JSON.")
def validate(**kw: Any) -> None:
    """Run a real (scaled) transformer in PyTorch and compare measured step times with kokuban's."""
    from kokuban.present.validation import print_validation, write_validation_report
    from kokuban.usecases.validation import ValidateRequest, run_validate

    report = run_validate(request(ValidateRequest, kw), progress=_progress(kw["as_json"]))
    if kw["out_dir"]:
        write_validation_report(report, kw["out_dir"])
    if kw["as_json"]:
        emit_json(report.as_dict())
    else:
        print_validation(console(), report, kw["out_dir"])


# ---- accuracy --------------------------------------------------------------------------------------------
@click.command()
@click.option("--file", "file", type=click.Path(dir_okay=False), default=None,
              help="Score your own measurements: a CSV (docs/validation.md) or a TOML in the published schema.")
@efficiency_options
@click.option("--json", "as_json", is_flag=True, help="Print rows and summary as JSON.")
def accuracy(**kw: Any) -> None:
    """kokuban's error against every published serving result (or your --file), by regime, workload, dtype,
    engine, with bootstrap intervals, and the ten worst rows with their terms."""
    from kokuban.present.validation import print_accuracy
    from kokuban.usecases.validation import AccuracyRequest, run_accuracy

    result = run_accuracy(request(AccuracyRequest, kw))
    if kw["as_json"]:
        emit_json(result.as_dict())
    else:
        print_accuracy(console(), result)


# ---- calibrate -------------------------------------------------------------------------------------------
@click.command()
@click.option("--source", type=click.Choice(["published", "validate-csv"]), required=True)
@click.option("--csv", "csv_path", type=click.Path(exists=True, dir_okay=False), default=None,
              help="validate.csv (with validate.json beside it), for --source validate-csv.")
@click.option("--phase", type=click.Choice(["decode", "prefill"]), default=None, help="Fit only these validate rows.")
@click.option(
    "--params",
    default=None,
    help="Comma-separated Efficiency fields to fit (default: compute,memory,"
    "interconnect,step_overhead_s for published; compute,memory,kv_memory,overlap,step_overhead_s for validate).",
)
@click.option(
    "--holdout", type=float, default=1 / 3, show_default=True, help="Fraction of rows held out (by hash of id)."
)
@click.option("--seed", type=int, default=0, show_default=True, help="Salt of the held-out split.")
@click.option("--hold-out", "hold_out", default=None, metavar="FIELD=V1,V2",
              help="validate-csv only: hold out the rows whose batch, context or prompt_tokens is one of these "
                   "(e.g. context=4096) instead of the hash split.")
@click.option("--plot", "plot_path", type=OutputPath(), default=None,
              help="Write predicted vs measured before and after (.png, .svg or .pdf); held-out rows filled.")
@textbook_efficiency_options
@click.option("--json", "as_json", is_flag=True)
def calibrate(**kw: Any) -> None:
    """Fit the achievable fractions on some rows; report the error before/after on the held-out rest."""
    from kokuban.present.plots import check_plot_path
    from kokuban.present.validation import plot_calibration, print_calibration
    from kokuban.usecases.validation import CalibrateRequest, run_calibrate

    if kw["plot_path"]:
        check_plot_path(kw["plot_path"])  # before the fit, which takes a while
    cal = run_calibrate(request(CalibrateRequest, kw))
    if kw["plot_path"]:
        plot_calibration(cal, kw["plot_path"])
    if kw["as_json"]:
        emit_json(cal.as_dict())
    else:
        print_calibration(console(), cal)


commands = [probe, validate, accuracy, calibrate]


# ---- serving-accuracy ------------------------------------------------------------------------------------
@click.command("serving-accuracy")
@click.option("--file", "files", multiple=True, type=click.Path(dir_okay=False),
              help="Score your own `vllm bench serve --save-result` JSON (repeatable); its setup from its "
                   "--metadata keys (gpu, gpus, engine, model, weights) or the flags below.")
@click.option("--refit", is_flag=True, help="Fit the engines' overhead terms on the training rows first.")
@click.option("--split", is_flag=True, help="Also print the error on the training rows.")
@click.option("--model", default=None, help="For --file: catalog id when the file's model_id is not one.")
@click.option("--gpu", default=None, help="For --file: accelerator id (`kokuban gpus`).")
@click.option("--gpus", type=int, default=None, help="For --file: accelerators (tensor parallel), default 1.")
@click.option("--engine", default=None, help="For --file: engine profile (e.g. vllm-v1).")
@click.option("--weights", default=None, help="For --file: weights dtype (default: the checkpoint's).")
@click.option("--json", "as_json", is_flag=True, help="Print rows and summaries as JSON.")
def serving_accuracy(**kw: Any) -> None:
    """The simulator against public serving benchmarks (TTFT, TPOT, E2E, throughput at several loads), or your
    --file runs: median and p90 |error| by metric and engine on rows no fit has seen."""
    from kokuban.present.serving import print_serving_accuracy
    from kokuban.usecases.serving import ServingAccuracyRequest, run_serving_accuracy

    result = run_serving_accuracy(request(ServingAccuracyRequest, kw))
    if kw["as_json"]:
        emit_json(result.as_dict())
    else:
        print_serving_accuracy(console(), result, kw["split"])


commands.append(serving_accuracy)
