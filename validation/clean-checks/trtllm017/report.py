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

import importlib.util
import json
from pathlib import Path

from kokuban.specs.hardware import PROFILES

HERE = Path(__file__).parent
ROWS = HERE / "rows.toml"
_spec = importlib.util.spec_from_file_location("perf_report", HERE.parent / "perf_report.py")
REPORT = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(REPORT)


def groups_of(r) -> tuple[str, ...]:
    return (f"model {r.model}", f"gpu {r.accelerator}", f"gpu {r.accelerator} tp{r.num_gpus}",
            "workload moe" if "mixtral" in r.model else "workload dense",
            "workload multi-gpu" if r.num_gpus > 1 else "workload one gpu")


def report(flat_pcie: bool = False, today: bool = False) -> dict:
    """Rows and groups as predicted by the step model of session 30 (the profile "kernel-2026-12-04c" at the curves
    it was fitted with), with the PCIe curve or (`flat_pcie`) without it; or (`today`) by the model shipped at the end
    of session 31, "today" when this was written (the dated profile "kernel-2026-12-04d"; today's is
    `../session32.py`'s)."""
    efficiency = PROFILES["kernel-2026-12-04d"]() if today else PROFILES["kernel-2026-12-04c"]().with_kernels(
        pcie_curve=not flat_pcie)
    return REPORT.predict(ROWS, efficiency, groups_of)


def markdown(now: dict, flat: dict, own: dict) -> str:
    lines = ["# TensorRT-LLM 0.17's throughput table: a clean check (session 30)", "",
             "Predicted once by `report.py` with the step model of session 30 (rule: `inclusion-rule.md`; rows: "
             "`rows.toml`): the first five columns, the clean check.",
             "The flat columns: the same rows with PCIe all-reduces on the scalar set's 8 µs + 27 % (before "
             "session 30's PCIe curve).",
             "The last columns: today's shipped model (session 31: the A100's own kernel tables, the GEMM shape "
             "factor, the refit), changes made after these rows were seen: a development figure, not a clean one.", ""]
    lines += REPORT.table(now["groups"], [("flat PCIe", flat["groups"], REPORT.BRIEF),
                                          ("today", own["groups"], REPORT.FULL)])
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    now, flat, own = report(), report(flat_pcie=True), report(today=True)
    (HERE / "report.json").write_text(json.dumps({"as_checked": now, "flat_pcie": flat["groups"],
                                                  "today": own["groups"]}, indent=1) + "\n")
    (HERE / "report.md").write_text(markdown(now, flat, own))
    print(markdown(now, flat, own))
