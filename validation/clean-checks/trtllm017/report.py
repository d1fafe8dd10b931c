"""Predict the TensorRT-LLM 0.17 rows once with the shipped step model and write report.json and report.md:

    python validation/clean-checks/trtllm017/report.py

The same numbers as `kokuban accuracy --measurements-file validation/clean-checks/trtllm017/rows.toml`; the report
adds the splits by model and GPU, and the L40S rows under the flat collective model for comparison (the PCIe curve of
session 30 switched off: what the step model said before it).
"""

from __future__ import annotations

import json
from pathlib import Path

from kokuban.specs.hardware import Efficiency
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


def report(flat_pcie: bool = False) -> dict:
    rows = read_measurements(str(ROWS))
    efficiency = Efficiency.shipped().with_kernels(pcie_curve=not flat_pcie)
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


def markdown(now: dict, flat: dict) -> str:
    lines = ["# TensorRT-LLM 0.17's throughput table: a clean check (session 30)", "",
             "Predicted once by `report.py` with the shipped step model (rule: `inclusion-rule.md`; rows: "
             "`rows.toml`).",
             "The flat column: the same rows with PCIe all-reduces on the scalar set's 8 µs + 27 % (before "
             "session 30's PCIe curve).", "",
             "| rows | count | median \\|error\\| (95 % bootstrap) | p90 | median signed "
             "| flat PCIe: median \\|error\\| | flat: median signed |", "|---|---|---|---|---|---|---|"]
    for key, g in now["groups"].items():
        f = flat["groups"][key]
        lo, hi = g["median_abs_error_ci"]
        lines.append(f"| {key} | {g['count']} | {pct(g['median_abs_error'])} ({pct(lo)} – {pct(hi)}) | "
                     f"{pct(g['p90_abs_error'])} | {pct(g['median_signed_error'])} | {pct(f['median_abs_error'])} | "
                     f"{pct(f['median_signed_error'])} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    now, flat = report(), report(flat_pcie=True)
    (HERE / "report.json").write_text(json.dumps({"shipped": now, "flat_pcie": flat["groups"]}, indent=1) + "\n")
    (HERE / "report.md").write_text(markdown(now, flat))
    print(markdown(now, flat))
