"""The TensorRT-LLM 0.14 rows: the clean check as predicted once, and today's model on them; writes report.json and
report.md:

    python validation/clean-checks/trtllm014/report.py

The clean check ("as checked") is what the shipped step model of commit c020fe4 predicted once: session 30's model
with the A100's own kernel tables (session 31's first change). That model is not rebuilt here (the A100's constants
were refitted with the GEMM shape factor afterwards): its rows and groups are kept in report.json as predicted and
the markdown quotes them. Beside them, recomputed: the step model of session 30 (the dated profile
"kernel-2026-12-04c" at its curves), and today's shipped model, which was changed AFTER these rows were seen (the GEMM
shape factor and the refit of session 31): a development figure; its clean check is `../trtllm013/`.
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
    return (f"model {r.model}", f"gpu {r.accelerator} {r.weights_dtype}",
            f"gpu {r.accelerator} {r.weights_dtype} tp{r.num_gpus}", f"dtype {r.weights_dtype}",
            "workload moe" if "mixtral" in r.model else "workload dense",
            "workload multi-gpu" if r.num_gpus > 1 else "workload one gpu")


def report(today: bool = True, rows: Path = ROWS) -> dict:
    """Rows and groups of `rows` (these, or another check's of the same layout: `../trtllm013/report.py`) as the model
    shipped at the end of session 31 predicts them ("today" when this was written; the dated profile
    "kernel-2026-12-04d", session 32 changed TensorRT-LLM's memory rule since: `../session32.py`), or (`today` False)
    the step model of session 30."""
    return REPORT.predict(rows, PROFILES["kernel-2026-12-04d" if today else "kernel-2026-12-04c"](), groups_of)


def markdown(checked: dict, before: dict, today: dict) -> str:
    lines = ["# TensorRT-LLM 0.14's throughput table: a third clean check (session 31)", "",
             "Predicted once (commit c020fe4) with the shipped step model of that commit, session 30's with the A100's "
             "own kernel tables (rule: `inclusion-rule.md`; rows: `rows.toml`; table: `table.md`): the first five "
             "columns are the check.",
             "Then, recomputed: the step model of session 30 (the profile \"kernel-2026-12-04c\"), for comparison, and "
             "today's shipped model, changed after these rows were seen (the GEMM shape factor, the refit): a "
             "development figure, not a clean one.", ""]
    lines += REPORT.table(checked["groups"], [("session 30", before["groups"], REPORT.BRIEF),
                                              ("today", today["groups"], REPORT.FULL)])
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    saved = json.loads((HERE / "report.json").read_text())
    checked = saved.get("as_checked") or saved["shipped"]  # the prediction of c020fe4, kept as it was made
    before, today = report(today=False), report()
    (HERE / "report.json").write_text(json.dumps({"as_checked": checked, "session30": before["groups"],
                                                  "today": today["groups"]}, indent=1) + "\n")
    (HERE / "report.md").write_text(markdown(checked, before, today))
    print(markdown(checked, before, today))
