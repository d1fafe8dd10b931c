"""Driver of evidence/llamacpp/llamacpp.sh: measure llama.cpp on this CPU, then report kokuban's error on held-out
rows.

    python -m evidence.llamacpp measure --bin DIR --work DIR --raw evidence/cpu/llamacpp.json
    python -m evidence.llamacpp report --raw evidence/cpu/llamacpp.json --probe evidence/cpu/probe.toml \
        --out-dir evidence/cpu     (these are report's defaults: `python -m evidence.llamacpp report` alone
                                    regenerates the committed report from the committed record, ~18 min)

`measure` writes the raw record (every repetition's seconds, the command lines, the files' tensor types, the
load average around each run); `report` re-predicts from it, so the analysis can be rerun without measuring.
The steps are functions of kokuban.validation.llamacpp; this file only reads arguments and writes files.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any


def _pct(x: Any) -> str:
    return "    -" if x is None else f"{100 * float(x):5.1f} %"


def _summary_line(label: str, s: dict[str, Any]) -> str:
    if not s.get("count"):
        return f"  {label:<22} {0:>5}"
    return (f"  {label:<22} {s['count']:>5}   {_pct(s['median_abs_error'])}   {_pct(s['p90_abs_error'])}   "
            f"{_pct(s['max_abs_error'])}   {_pct(s['median_signed_error'])}")


def _phase_lines(label: str, cal: dict[str, Any]) -> list[str]:
    lines = [_summary_line(f"{label}, all", cal["phases"])]
    for name, summary in cal["phases"].get("by_phase", {}).items():
        lines.append(_summary_line(f"{label}, {name}", summary))
    return lines


def _error_block(title: str, result: dict[str, Any]) -> list[str]:
    lines = [f"error |predicted − measured| ÷ measured on HELD-OUT rows, {title}",
             "  decode = tg + batched-tg, prefill = pp + batched-pp; 'flat' is an earlier model (one compute "
             "fraction for every M, KV read at the weight read's fraction, the roofline's attention) fitted on the "
             "same rows",
             "  rows                   count   median     p90      max      median signed"]
    for t, cal in result["per_type"].items():
        lines.append(f" {t}: fitted per type on {cal['train_rows']} rows {_fractions(cal)}")
        lines.append(_summary_line("before (defaults)", cal["holdout_before"]))
        if t in result.get("flat", {}):
            flat = result["flat"][t]
            lines.append(f"   flat model: {_fractions(flat)}")
            lines += _phase_lines("flat", flat)
        lines += _phase_lines("after", cal)
        for regime, s in cal["holdout_after"].get("by_regime", {}).items():
            lines.append(_summary_line(f"after, {regime}", s))
    if result.get("per_type_pooled"):
        lines += [" every type under its own fit, pooled (the per-type calibration as one figure)",
                  *_phase_lines("pooled", {"phases": result["per_type_pooled"]})]
    joint = result["all_types"]
    lines += [f" one Efficiency for every type {_fractions(joint)}", *_phase_lines("after", joint)]
    for regime, s in joint["holdout_after"].get("by_regime", {}).items():
        lines.append(_summary_line(f"after, {regime}", s))
    return lines


def report_text(record: dict[str, Any], result: dict[str, Any], median: dict[str, Any], probe: dict[str, Any],
                probe_path: str) -> str:
    from kokuban.specs.dtypes import bytes_per_element
    from kokuban.validation.llamacpp import GGUF_TYPES, gemm_rows

    plan = record["plan"]
    commits = sorted({r.get("build_commit", "") for r in record["runs"] if r.get("build_commit")})
    loads = [x for r in record["runs"] for x in (r.get("load_before"), r.get("load_after")) if x is not None]
    lines = [
        f"llama.cpp on {probe.get('device', 'cpu')}, {plan['threads']} threads — measured {record['date']}",
        f"  llama.cpp: {record.get('llama_cpp', '')}" + (f" (llama-bench's build_commit: {', '.join(commits)})"
                                                         if commits else ""),
        f"  machine: {record['machine']}" + (f"; 1-minute load average around the runs {min(loads):.1f}–"
                                             f"{max(loads):.1f}" if loads else ""),
        f"  kokuban's CPU: {probe_path} ({probe['memory_bandwidth_bytes_per_s'] / 1e9:.1f} GB/s read, "
        f"{probe['flops_fp32'] / 1e9:.0f} GFLOP/s fp32 matmul; every FLOP timed at the fp32 rate)",
        *_method(record),
        "",
        "models (random weights; llama-quantize from the F16 file): body bits per weight in the file, kokuban's",
    ]
    for name, case in record["cases"].items():
        scaled = "; ".join(case["scaled"])
        lines.append(f"  {name:<18} {'held out' if case['held_out'] else 'fitted  '}  {case['base']}: {scaled}")
        cells = []
        for t, f in case["files"].items():
            cells.append(f"{t} {f['body_bits_per_weight']:.3f} (kokuban {8 * bytes_per_element(GGUF_TYPES[t]):.3f})")
        lines.append("      " + ", ".join(cells))
    lines += ["", f"held out: every row of the cases marked so (batched-bench rows included) and depth(s) "
              f"{plan['held_out_depths']} of the fitted cases; the fitted cases' other rows train, their batched-bench "
              "rows included",
              "matmul path of a row (M = rows of activations per matmul): gemv for M = 1 (tg, batched-tg at batch 1: "
              "ggml's vec_dot), gemm for M ≥ 2 (pp, batched-pp, batched-tg at batch 2–8); within it each weight "
              "tensor runs the kernel of its own type (KERNEL_SOURCE): "
              + "; ".join(f"{t} a GEMM kernel from M = {next(m for m in range(1, 64) if gemm_rows(t, m))}"
                          for t in ("F16", "Q8_0", "Q4_0", "Q4_K", "Q6_K"))
              + " (the repacked Q4_0/Q4_K GEMM on whole blocks of 4 rows); a GEMM kernel's rows priced at "
              "compute·M ÷ (M + M_half), a GEMV kernel's rows at compute, each a pass over the weights; the read at "
              "the file's bytes per tensor type", ""]
    fa = result.get("flash_attention")
    lines.append("attention: ggml's CPU flash-attention kernel (-fa auto → on), "
                 + ("not fitted (no depth pairs): the roofline's attention" if fa is None else
                    f"{fa['rows_flops_s'] / 1e9:.1f} GFLOP/s row by row (fewer than 64 queries per sequence), "
                    f"{fa['tiled_flops_s'] / 1e9:.1f} GFLOP/s in 64 × 64 tiles, the medians of what depth adds to "
                    f"the training prompts ({fa['pairs_fitted']} depth-D/depth-0 pairs, every type pooled)"))
    lines.append("")
    lines += _error_block("ALL ROWS", result)
    if result.get("skipped"):
        lines.append(f"  (no fit/held-out split for {', '.join(result['skipped'])})")
    lines += ["", "same per-type fit judged on the MEDIAN repetition instead of the fastest:"]
    for t, cal in median["per_type"].items():
        lines += _phase_lines(f"{t} after", cal)
    if median.get("per_type_pooled"):
        lines += _phase_lines("pooled", {"phases": median["per_type_pooled"]})
    lines += ["", "rows (s = whole test; spread = slowest ÷ fastest repetition − 1; flat = the previous model)",
              "  id                                              held path  measured   spread  predicted(fit)  error"
              "    flat error"]
    for r in result["rows"]:
        err = (r["predicted_fit_s"] - r["best_s"]) / r["best_s"]
        flat = (r["predicted_flat_s"] - r["best_s"]) / r["best_s"]
        spread = max(r["samples_s"]) / min(r["samples_s"]) - 1
        lines.append(f"  {r['id']:<48} {'yes ' if r['held_out'] else 'no  '} {r['path']} {r['best_s']:9.4f} "
                     f"{_pct(spread)}  {r['predicted_fit_s']:9.4f}  {100 * err:+6.1f} %  {100 * flat:+6.1f} %")
    return "\n".join(lines) + "\n"


def _method(record: dict[str, Any]) -> list[str]:
    from kokuban.validation.llamacpp import passes

    if record.get("method") != "clean":
        return [f"  passes: {'; '.join(_pass(p) for p in passes(record))}",
                f"  statistic: the fastest of each row's {_counts(record)} repetitions — the machine is shared "
                "(the run is niced), so slower repetitions measure other processes too; the median's error is reported "
                "below"]
    attempts = record["attempts"]
    kept = [a for a in attempts if a["kept"]]
    if "not_measured" not in record:  # an interrupted run: the tests started but never kept
        done = {(a["case"], a["type"], a["test"]) for a in kept}
        record["not_measured"] = sorted({f"{a['case']}/{a['type']}/{a['test']}" for a in attempts
                                         if (a["case"], a["type"], a["test"]) not in done})
    others = max(a["others_cores"] for a in kept) if kept else float("nan")
    return [
        f"  method: one test per llama-bench run ({record['plan']['repeats']} repetitions after its warm-up), started "
        "when the machine was quiet; a run is kept only if other processes used at most "
        f"{record['max_others_cores']:.2f} cores on average during it (/proc/stat busy time − the run's own CPU time)",
        f"  runs: {len(attempts)} started, {len(kept)} kept (others ≤ {others:.2f} cores in the kept ones), "
        f"{len(attempts) - len(kept)} disturbed and run again, {record.get('rounds', '?')} round(s); not measured: "
        f"{', '.join(record.get('not_measured', ['(run in progress)'])) or 'none'}",
        "  statistic: the fastest repetition of the kept run (the median's error is reported below)",
    ]


def _pass(p: dict[str, Any]) -> str:
    return f"{p['date']} ({p['repeats']} llama-bench repetitions, {p['batched_runs']} batched-bench runs)"


def _counts(record: dict[str, Any]) -> str:
    counts = sorted({len(r["samples_s"]) for r in record["rows"]})
    return str(counts[0]) if len(counts) == 1 else f"{counts[0]}–{counts[-1]}"


def _fractions(cal: dict[str, Any]) -> str:
    eff, m_half = cal["after"], cal.get("m_half_tokens")
    kv = "" if eff.get("kv_memory") is None else f", KV read {eff['kv_memory']:.3f}"
    curve = "" if m_half is None else f", GEMM M_half {m_half:.1f} tokens"
    return (f"(compute {eff['compute']:.3f}, memory {eff['memory']:.3f}{kv}, "
            f"overhead {1e3 * eff['step_overhead_s']:.3f} ms/step{curve})")


def cmd_measure(args: argparse.Namespace) -> int:
    from kokuban.validation.llamacpp import DEFAULT_PLAN, find_tools, measure, measure_clean, merge_records

    tools = find_tools(args.bin)
    if tools is None:
        print(f"llama-bench, llama-batched-bench and llama-quantize are not all in {args.bin} or on PATH",
              file=sys.stderr)
        return 2
    raw = Path(args.raw)
    raw.parent.mkdir(parents=True, exist_ok=True)
    previous = json.loads(raw.read_text()) if args.append and raw.exists() else None

    def save(record: dict[str, Any]) -> None:
        record["llama_cpp"] = args.llama_cpp
        raw.write_text(json.dumps(merge_records(previous, record) if previous else record, indent=1) + "\n")

    plan = replace(DEFAULT_PLAN, repeats=args.repeats or DEFAULT_PLAN.repeats,
                   batched_runs=args.batched_runs or DEFAULT_PLAN.batched_runs)
    if args.clean:
        save(measure_clean(plan, tools, args.work, budget_s=args.budget_s, max_others=args.max_others, save=save,
                           log=lambda m: print(m, flush=True)))
    else:
        save(measure(plan, tools, args.work, save=save, log=lambda m: print(m, flush=True)))
    print(f"written: {raw}")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from kokuban.validation.harness import read_probe_entry
    from kokuban.validation.llamacpp import analyse

    record = json.loads(Path(args.raw).read_text())
    probe = read_probe_entry(args.probe)
    result = analyse(record, probe, statistic="best")
    median = analyse(record, probe, statistic="median", flat=False)
    out = Path(args.out_dir)
    text = report_text(record, result, median, probe, args.probe)
    (out / "llamacpp.txt").write_text(text)
    keys = ("after", "m_half_tokens", "holdout_before", "holdout_after", "phases", "train_after", "train_rows",
            "holdout_rows")
    summary = {"statistic": "best", "per_type": {t: {k: c[k] for k in keys} for t, c in result["per_type"].items()},
               "flat": {t: {k: c[k] for k in keys} for t, c in result["flat"].items()},
               "per_type_pooled": result["per_type_pooled"],
               "all_types": {k: result["all_types"][k] for k in keys},
               "flash_attention": result["flash_attention"],
               "median_statistic": {t: c["phases"] for t, c in median["per_type"].items()},
               "median_statistic_pooled": median["per_type_pooled"]}
    (out / "llamacpp-report.json").write_text(json.dumps(summary, indent=1) + "\n")
    with open(out / "llamacpp.csv", "w", newline="") as fh:
        cols = ["id", "model", "gguf_type", "regime", "tokens", "depth", "batch", "held_out", "path", "best_s",
                "median_s", "samples_s", "predicted_default_s", "predicted_fit_s", "predicted_flat_s",
                "predicted_joint_s"]
        w = csv.DictWriter(fh, fieldnames=cols)
        w.writeheader()
        for r in result["rows"]:
            w.writerow({**{k: r[k] for k in cols}, "samples_s": " ".join(f"{s:.6g}" for s in r["samples_s"])})
    print(text, end="")
    print(f"written: {out / 'llamacpp.txt'}, llamacpp.csv, llamacpp-report.json")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="step", required=True)
    m = sub.add_parser("measure")
    m.add_argument("--bin", default=None, help="folder holding llama-bench, llama-batched-bench, llama-quantize")
    m.add_argument("--work", required=True, help="folder for the GGUF files (gigabytes; not in the repository)")
    m.add_argument("--raw", required=True)
    m.add_argument("--llama-cpp", default="", help="what llama.cpp this is (source and commit), for the record")
    m.add_argument("--append", action="store_true", help="a further pass: add its samples to the rows of --raw")
    m.add_argument("--clean", action="store_true",
                   help="one test per run, started on a quiet machine, kept only if no other process used the CPU")
    m.add_argument("--budget-s", type=float, default=1800,
                   help="with --clean: stop retrying disturbed tests after this many seconds")
    m.add_argument("--max-others", type=float, default=0.15,
                   help="with --clean: most cores other processes may use on average during a kept run")
    m.add_argument("--repeats", type=int, default=None, help="llama-bench repetitions per test (default: the plan's)")
    m.add_argument("--batched-runs", type=int, default=None, help="llama-batched-bench runs (default: the plan's)")
    r = sub.add_parser("report")
    r.add_argument("--raw", default="evidence/cpu/llamacpp.json",
                   help="the raw record `measure` wrote (the committed one by default: no llama.cpp needed)")
    r.add_argument("--probe", default="evidence/cpu/probe.toml")
    r.add_argument("--out-dir", default="evidence/cpu")
    args = parser.parse_args(argv)
    return cmd_measure(args) if args.step == "measure" else cmd_report(args)


if __name__ == "__main__":
    sys.exit(main())
