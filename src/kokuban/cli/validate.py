"""`kokuban probe | validate | accuracy | calibrate`: prove the roofline on real hardware and published results.

Faces only: parse → use case (`usecases.validation`) → present (`present.validation`). Measurements come from
`validation.probe` / `validation.harness`, predictions from the core, errors from `validation.accuracy`, fits
from `validation.calibrate`; which efficiency each command starts from is its request's default.
"""

from __future__ import annotations

from typing import Any

import click

from kokuban.cli.options import OutputPath, efficiency_option_list, efficiency_options, emit_json, request
from kokuban.cli.progress import progress_bar
from kokuban.cli.vocabulary import option
from kokuban.present.format import console
from kokuban.specs.hardware import Efficiency


def textbook_efficiency_options(func: Any) -> Any:
    """The efficiency flags, their help naming the textbook fractions validate and calibrate start from
    (`usecases.validation.TextbookEfficiencyRequest`, not imported here to keep start-up light)."""
    for decorate in reversed(
        efficiency_option_list(Efficiency.textbook(), "textbook; `accuracy` uses the shipped ones")
    ):
        func = decorate(func)
    return func


# ---- probe ---------------------------------------------------------------------------------------------
@click.command()
@option("--device", type=click.Choice(["auto", "cpu", "cuda"]), default="auto", show_default=True)
@option("--seconds", type=float, default=3.0, show_default=True, help="Rough time budget of the measurements.")
@click.option("--id", "entry_id", default=None, help="Accelerator id to write (default probed-DEVICE).")
@option(
    "--out-file",
    "out",
    type=OutputPath(),
    default=None,
    help="Write the entry (TOML, or JSON if .json); use with --gpu-file.",
)
@option("--json", "as_json", is_flag=True, help="Print the accelerator entry as JSON.")
def probe(**kw: Any) -> None:
    """Measure this machine's memory bandwidth and matmul FLOP/s; print an accelerator entry."""
    from kokuban.present.validation import print_probe, write_probe_entry
    from kokuban.usecases.validation import ProbeRequest, run_probe

    with progress_bar("probe", "test") as progress:
        result = run_probe(request(ProbeRequest, kw), progress=progress)
    if kw["out"]:
        write_probe_entry(result, kw["out"])
    if kw["as_json"]:
        emit_json({"accelerator": [result.as_dict()]})  # the --out file's shape
    else:
        print_probe(console(), result, kw["out"])


# ---- validate --------------------------------------------------------------------------------------------
@click.command()
@option(
    "--model", default="llama-3.2-1b", show_default=True, help="Catalog id or config.json (llama/mistral/qwen2/qwen3)."
)
@click.option("--layers", type=int, default=4, show_default=True, help="Keep this many layers (0 = all).")
@click.option(
    "--hidden", type=int, default=None, help="Scale the hidden size down to this (heads and MLP scale with it)."
)
@option("--device", type=click.Choice(["auto", "cpu", "cuda"]), default="cpu", show_default=True)
@click.option(
    "--dtype", type=click.Choice(["fp32", "bf16", "fp16"]), default=None, help="Default: fp32 on CPU, bf16 on GPU."
)
@click.option("--linear", type=click.Choice(["auto", "matmul", "onednn"]), default="auto", show_default=True,
              help="Linear layers: dense matmul, or oneDNN inner product (auto: oneDNN for fp32 on CPU).")
@option("--batches", join=True, default="1,2,4,8,16,32,64", show_default=True, help="Decode batch sizes.")
@option("--contexts", join=True, default="128,1024,4096", show_default=True, help="Decode context lengths.")
@option("--prompts", join=True, default="16,64,256", show_default=True,
        help="Prefill prompt lengths (batch --prefill-batch).")
@option("--prefill-batch", type=int, default=1, show_default=True)
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
@option("--gpu", default=None, help="Accelerator id in --gpu-file to predict with (default: probe now).")
@option("--gpu-file", type=click.Path(exists=True), default=None, help="A `kokuban probe --out-file` file.")
@option("--probe-seconds", type=float, default=3.0, show_default=True)
@option(
    "--out-dir",
    type=click.Path(file_okay=False),
    default=None,
    help="Write validate.csv, validate.json, validate.png here, and the run (result.json, command.txt, "
         "scenario.toml) as every command's --out-dir does.",
)
@textbook_efficiency_options
@option("--json", "as_json", is_flag=True, help="Print rows and summary as JSON.")
def validate(**kw: Any) -> None:
    """Run a real (scaled) transformer in PyTorch and compare measured step times with kokuban's."""
    from kokuban.present.validation import print_validation, write_validation_report
    from kokuban.usecases.validation import ValidateRequest, run_validate

    with progress_bar("validate", "call") as progress:
        report = run_validate(request(ValidateRequest, kw), progress=progress)
    if kw["out_dir"]:
        write_validation_report(report, kw["out_dir"])
    if kw["as_json"]:
        emit_json(report.as_dict())
    else:
        print_validation(console(), report, kw["out_dir"])


# ---- accuracy --------------------------------------------------------------------------------------------
@click.command()
@option("--measurements-file", "file", type=click.Path(dir_okay=False), default=None,
        help="Score your own measurements: a CSV (docs/calibration.md) or a TOML in the published schema.")
@efficiency_options
@option("--json", "as_json", is_flag=True, help="Print rows and summary as JSON.")
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
@option("--source", type=click.Choice(["published", "validate-csv"]), required=True)
@option("--measurements-file", "measurements_file", legacy=("--csv",), type=click.Path(exists=True, dir_okay=False),
        default=None,
        help="validate.csv (with validate.json beside it), for --source validate-csv.")
@click.option("--phase", type=click.Choice(["decode", "prefill"]), default=None, help="Fit only these validate rows.")
@option(
    "--params",
    join=True,
    default=None,
    help="Efficiency fields to fit (default: compute,memory,"
    "interconnect,step_overhead_s for published; compute,memory,step_overhead_s for published with "
    "--efficiency-file kernel; compute,memory,kv_memory,overlap,step_overhead_s for validate).",
)
@option("--holdout-fraction", "holdout", type=float, default=1 / 3, show_default=True,
        help="Fraction of rows held out (by hash of id).")
@option("--seed", type=int, default=0, show_default=True, help="Salt of the held-out split.")
@option("--holdout-values", "hold_out", default=None, metavar="FIELD=V1,V2",
        help="validate-csv only: hold out the rows whose batch, context or prompt_tokens is one of these "
                   "(e.g. context=4096) instead of the hash split.")
@option("--plot", "plot_path", type=OutputPath(), default=None,
        help="Write predicted vs measured before and after (.png, .svg or .pdf); held-out rows filled.")
@option("--out-file", "out_file", type=OutputPath(), default=None,
        help="Write the fitted efficiency (TOML, or JSON if .json) for any command's --efficiency-file.")
@textbook_efficiency_options
@option("--json", "as_json", is_flag=True)
def calibrate(**kw: Any) -> None:
    """Fit the achievable fractions on some rows; report the error before/after on the held-out rest."""
    from kokuban.present.plots import check_plot_path
    from kokuban.present.validation import plot_calibration, print_calibration, write_efficiency_file
    from kokuban.usecases.validation import CalibrateRequest, run_calibrate

    kw["csv_path"] = kw.pop("measurements_file")  # the request's field
    if kw["plot_path"]:
        check_plot_path(kw["plot_path"])  # before the fit, which takes a while
    out_file = kw.pop("out_file")
    with progress_bar("calibrate", "iter") as progress:
        cal = run_calibrate(request(CalibrateRequest, kw), progress=progress)
    if out_file:
        write_efficiency_file(cal.after, out_file, cal.source)
    if kw["plot_path"]:
        plot_calibration(cal, kw["plot_path"])
    if kw["as_json"]:
        emit_json(cal.as_dict())
    else:
        print_calibration(console(), cal)


commands = [probe, validate, accuracy, calibrate]


# ---- serving-accuracy ------------------------------------------------------------------------------------
@click.command("serving-accuracy")
@option("--measurements-file", "measurements_file", list_values=True, type=click.Path(dir_okay=False),
        help="Score your own `vllm bench serve --save-result` JSON; its setup from its --metadata keys (gpu, gpus, "
             "engine, model, weights) or the flags below.")
@option("--refit", is_flag=True, help="Fit the engines' overhead terms on the training rows first.")
@option("--split", is_flag=True, help="Also print the error on the training rows.")
@option("--model", default=None, help="For --measurements-file: catalog id when the file's model_id is not one.")
@option("--gpu", default=None, list_values=False, help="For --measurements-file: accelerator id (`kokuban gpus`).")
@option("--gpus", type=int, default=None, help="For --measurements-file: accelerators (tensor parallel), default 1.")
@option("--engine", default=None, help="For --measurements-file: engine profile (e.g. vllm-v1).")
@option("--weights", default=None, help="For --measurements-file: weights dtype (default: the checkpoint's).")
@efficiency_options
@option("--json", "as_json", is_flag=True, help="Print rows and summaries as JSON.")
def serving_accuracy(**kw: Any) -> None:
    """The simulator against public serving benchmarks (TTFT, TPOT, E2E, throughput at several loads), or your
    --measurements-file runs: median and p90 |error| by metric and engine on rows no fit has seen."""
    from kokuban.present.serving import print_serving_accuracy
    from kokuban.usecases.serving import ServingAccuracyRequest, run_serving_accuracy

    kw["files"] = kw.pop("measurements_file")  # the request's field
    with progress_bar("serving-accuracy", "replay") as progress:
        result = run_serving_accuracy(request(ServingAccuracyRequest, kw), progress=progress)
    if kw["as_json"]:
        emit_json(result.as_dict())
    else:
        print_serving_accuracy(console(), result, kw["split"])


commands.append(serving_accuracy)
