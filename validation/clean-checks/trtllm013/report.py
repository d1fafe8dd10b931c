"""Predict the TensorRT-LLM 0.13 rows once with the shipped step model and write report.json and report.md:

    python validation/clean-checks/trtllm013/report.py

The clean check is today's shipped model (`kokuban accuracy --measurements-file
validation/clean-checks/trtllm013/rows.toml`), with all of session 31's changes (the A100's own kernel tables, the GEMM
shape factor, the refit). Beside it, for comparison only, the step model of session 30 (the dated profile
"kernel-2026-12-04c" at the curves it was fitted with): what session 31 moved.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

HERE = Path(__file__).parent


def _report014():
    spec = importlib.util.spec_from_file_location("report014", HERE.parent / "trtllm014" / "report.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def report(today: bool = True) -> dict:
    """Rows and groups as today's shipped model predicts them, or (`today` False) the step model of session 30: the
    groups of the 0.14 check (`../trtllm014/report.py`), on these rows."""
    return _report014().report(today, HERE / "rows.toml")


def markdown(now: dict, before: dict) -> str:
    lines = ["# TensorRT-LLM 0.13's throughput table: a fourth clean check (session 31)", "",
             "Predicted once by `report.py` with the shipped step model (rule: `inclusion-rule.md`; rows: "
             "`rows.toml`; table: `table.md`): the first five columns are the check.",
             "The last two: the step model of session 30 (the profile \"kernel-2026-12-04c\"), for comparison "
             "only.", ""]
    lines += _report014().REPORT.table(now["groups"], [("session 30", before["groups"],
                                                         _report014().REPORT.BRIEF)])
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    now, before = report(), report(today=False)
    (HERE / "report.json").write_text(json.dumps({"shipped": now, "session30": before["groups"]}, indent=1) + "\n")
    (HERE / "report.md").write_text(markdown(now, before))
    print(markdown(now, before))
