"""The TensorRT-LLM 0.17 rows as predicted once in session 30, and today; writes report.json and report.md:

    python validation/clean-checks/trtllm017/report.py

"As checked" is the step model of session 30, which predicted these rows once (the dated profile
"kernel-2026-12-04c" at the curves it was fitted with, `specs.kernels.CURVES_2026_12_04`); the report adds the
splits by model and GPU, the same rows under the flat collective model (the PCIe curve of session 30 switched off
too: what the step model said before it), and what today's shipped model (`kokuban accuracy --measurements-file
validation/clean-checks/trtllm017/rows.toml`) predicts. That last column is NOT a clean figure: session 31's changes
(the A100's own kernel tables, the GEMM shape factor and the refit) were made after these rows were seen, and they
are their development set; the checks are `../trtllm014/` (the A100 tables) and `../trtllm013/` (all of session 31).
"""

from __future__ import annotations

import json
from pathlib import Path

from kokuban.specs.hardware import PROFILES, Efficiency
from kokuban.usecases.validation import read_measurements
from kokuban.validation.accuracy import add_intervals, error_summary, predict_row, speed_direction

HERE = Path(__file__).parent
ROWS = HERE / "rows.toml"


def figures(preds: list) -> dict:
    """`accuracy.error_summary` of the predictions with the bootstrap interval of the median (`add_intervals`)."""
    measured, predicted = [p.measured for p in preds], [p.predicted for p in preds]
    direction = [speed_direction(p.metric) for p in preds]
    summary = add_intervals(error_summary(measured, predicted, direction=direction), measured, predicted, {},
                            direction=direction)
    return {k: v for k, v in summary.items() if k != "bootstrap"}  # the settings: `accuracy.bootstrap_settings()`


def report(flat_pcie: bool = False, today: bool = False) -> dict:
    """Rows and groups as predicted by the step model of session 30 (the profile "kernel-2026-12-04c" at the curves
    it was fitted with), with the PCIe curve or (`flat_pcie`) without it; or (`today`) by today's shipped model."""
    rows = read_measurements(str(ROWS))
    efficiency = Efficiency.shipped() if today else PROFILES["kernel-2026-12-04c"]().with_kernels(
        pcie_curve=not flat_pcie)
    preds = [predict_row(r, efficiency) for r in rows]
    groups: dict[str, list] = {}
    for r, p in zip(rows, preds, strict=True):
        for key in (f"model {r.model}", f"gpu {r.accelerator}", f"gpu {r.accelerator} tp{r.num_gpus}",
                    "workload moe" if "mixtral" in r.model else "workload dense",
                    "workload multi-gpu" if r.num_gpus > 1 else "workload one gpu"):
            groups.setdefault(key, []).append((r, p))
    groups = {"all": list(zip(rows, preds, strict=True))} | dict(sorted(groups.items()))
    return {"rows": [{"id": p.id, "measured": p.measured, "predicted": p.predicted, "signed_error": p.signed_error,
                      "batch_per_replica": p.batch_per_replica} for p in preds],
            "groups": {k: figures([p for _, p in v]) for k, v in groups.items()}}


def pct(x: float) -> str:
    return f"{100 * x:.1f} %"


def markdown(now: dict, flat: dict, own: dict) -> str:
    lines = ["# TensorRT-LLM 0.17's throughput table: a clean check (session 30)", "",
             "Predicted once by `report.py` with the step model of session 30 (rule: `inclusion-rule.md`; rows: "
             "`rows.toml`): the first five columns, the clean check.",
             "The flat columns: the same rows with PCIe all-reduces on the scalar set's 8 µs + 27 % (before "
             "session 30's PCIe curve).",
             "The last columns: today's shipped model (session 31: the A100's own kernel tables, the GEMM shape "
             "factor, the refit), changes made after these rows were seen: a development figure, not a clean one.", "",
             "| rows | count | median \\|error\\| (95 % bootstrap) | p90 | median signed "
             "| flat PCIe: median \\|error\\| | flat: median signed | today: median \\|error\\| | today: p90 "
             "| today: median signed |", "|---|---|---|---|---|---|---|---|---|---|"]
    for key, g in now["groups"].items():
        f, o = flat["groups"][key], own["groups"][key]
        lo, hi = g["median_abs_error_ci"]
        lines.append(f"| {key} | {g['count']} | {pct(g['median_abs_error'])} ({pct(lo)} – {pct(hi)}) | "
                     f"{pct(g['p90_abs_error'])} | {pct(g['median_signed_error'])} | {pct(f['median_abs_error'])} | "
                     f"{pct(f['median_signed_error'])} | {pct(o['median_abs_error'])} | {pct(o['p90_abs_error'])} | "
                     f"{pct(o['median_signed_error'])} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    now, flat, own = report(), report(flat_pcie=True), report(today=True)
    (HERE / "report.json").write_text(json.dumps({"as_checked": now, "flat_pcie": flat["groups"],
                                                  "today": own["groups"]}, indent=1) + "\n")
    (HERE / "report.md").write_text(markdown(now, flat, own))
    print(markdown(now, flat, own))
