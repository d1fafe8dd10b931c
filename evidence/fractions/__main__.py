"""Both efficiency profiles, calibrated and judged on the same splits of data/published_results.toml.

    python -m evidence.fractions [--seeds 0,1,2,3,4] [--out evidence/fractions] [--loss log_huber]

For each split (a seed salts `calibrate.holdout_mask`: one third held out) the "scalar" profile is fitted as the
scalar set `Efficiency.scalar()` was (compute, memory, interconnect, step overhead from the textbook fractions) and
the "default" profile, the shipped kernel profile, from its curves and the start `calibrate.profile_procedures`
gives, with `calibrate.KERNEL_PARAMS` fitted (compute, memory, step overhead and the share of pre-XQA repeated KV
loads that reach HBM), each judged on the rows its fit never saw (`calibrate.repeated_holdout`). Writes report.json
and report.md to --out. Seed 0 is the split the shipped fractions were fitted on (`choice-196/step-v4-seed0/`).
Both fits minimise `calibrate.PUBLISHED_LOSS` (log_huber); `--loss` fits both with another loss
of `calibrate.LOSSES`: write those runs elsewhere (--out), the committed report is the shipped procedure's.
`--exclude-source TEXT` leaves out rows by source, `--kernel-params` names the default's fitted fields and
`--profile` runs one profile: how the rule and the loss were chosen on the 77 rows before the H200 blogs
(evidence/fractions/choice-77/):

    python -m evidence.fractions --profile default --exclude-source blogs/ --loss log_huber \
        --out evidence/fractions/choice-77/log_huber-rule
    ... --kernel-params compute,memory,step_overhead_s --out evidence/fractions/choice-77/log_huber-no-rule
    (and the same two with --loss log_squared)
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from kokuban.validation.accuracy import load_published
from kokuban.validation.calibrate import KERNEL_PARAMS, LOSSES, PUBLISHED_LOSS, profile_procedures, repeated_holdout

GROUPS = (("by_workload", "workload"), ("by_metric", "metric"), ("by_weights", "weights"), ("by_engine", "engine"),
          ("by_regime", "bound"))


def pct(x: float) -> str:
    return f"{100 * x:.1f} %"


def markdown(report: dict) -> str:
    profiles = report["profiles"]
    names = list(profiles)
    lines = [f"# Held-out error of {' and '.join(names)} over {len(report['seeds'])} splits (seeds {report['seeds']})",
             "",
             f"Fitted with the loss {report['loss']} (`calibrate.LOSSES`) on {report['rows']} rows of "
             "data/published_results.toml" + (f", leaving out the sources containing {report['excluded_sources']}"
                                              if report["excluded_sources"] else "") + ".", "",
             "Pooled held-out rows (a row counts once per split that holds it out); interval: 95 % bootstrap of",
             "the median (pooled rows are not independent, so it is too narrow).", "",
             "| rows | " + " | ".join(f"{n}: n, median [CI], p90" for n in names) + " |",
             "|---|" + "---|" * len(names)]

    def cell(s: dict) -> str:
        if not s.get("count"):
            return "–"
        lo, hi = s["median_abs_error_ci"]
        return f"{s['count']}, {pct(s['median_abs_error'])} [{pct(lo)}–{pct(hi)}], {pct(s['p90_abs_error'])}"

    lines.append("| all | " + " | ".join(cell(profiles[n]["pooled"]) for n in names) + " |")
    for key, label in GROUPS:
        groups = sorted({g for n in names for g in profiles[n]["pooled"].get(key, {})})
        for g in groups:
            lines.append(f"| {label}: {g} | " + " | ".join(cell(profiles[n]["pooled"].get(key, {}).get(g, {}))
                                                        for n in names) + " |")
    lines += ["", "Per split (held-out median / p90, fitted fields):", ""]
    for n in names:
        for s in profiles[n]["per_seed"]:
            fitted = ", ".join(f"{k} {v:.4g}" for k, v in s["fitted"].items())
            lines.append(f"- {n}, seed {s['seed']} ({s['holdout_rows']} rows): {pct(s['median_abs_error'])} / "
                         f"{pct(s['p90_abs_error'])} (training {pct(s['train_median_abs_error'])} / "
                         f"{pct(s['train_p90_abs_error'])}); {fitted}")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="0,1,2,3,4")
    parser.add_argument("--out", default=str(Path(__file__).parent / "profiles"))
    parser.add_argument("--loss", choices=sorted(LOSSES), default=PUBLISHED_LOSS)
    parser.add_argument("--exclude-source", action="append", default=[], metavar="TEXT",
                        help="leave out the rows whose source contains TEXT (repeatable)")
    parser.add_argument("--kernel-params", default=",".join(KERNEL_PARAMS),
                        help="the default profile's fitted fields (comma-separated)")
    parser.add_argument("--profile", choices=("both", "default", "scalar"), default="both")
    args = parser.parse_args()
    rows = [r for r in load_published() if not any(text in r.source for text in args.exclude_source)]
    procedures = profile_procedures(LOSSES[args.loss], rows=rows, kernel_params=tuple(args.kernel_params.split(",")))
    if args.profile != "both":
        procedures = {args.profile: procedures[args.profile]}
    report = repeated_holdout([int(s) for s in args.seeds.split(",")], procedures=procedures)
    report["loss"] = args.loss
    report["rows"], report["excluded_sources"] = len(rows), args.exclude_source
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.json").write_text(json.dumps(report, indent=1) + "\n")
    (out / "report.md").write_text(markdown(report))
    print(markdown(report))


if __name__ == "__main__":
    main()
