"""Predict the TensorRT-LLM v0.21 rows once with session 32's final model (profile kernel-2026-12-05a, shipped until
session 35's barrier wait), by the rule of `inclusion-rule.md`; writes
report.json ("shipped") and report.md (the v0.19-era check runs the same: `../trtllm019/report.py`):

    python validation/clean-checks/trtllm021/report.py
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

from kokuban.specs.hardware import PROFILES

HERE = Path(__file__).parent
_spec = importlib.util.spec_from_file_location("report015", HERE.parent / "trtllm015" / "report.py")
CHECK = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(CHECK)
REPORT = CHECK.REPORT


def report(here: Path) -> dict:
    """Every row of `here`'s rows.toml and its groups as session 32's final model predicts them."""
    return REPORT.predict(here / "rows.toml", PROFILES["kernel-2026-12-05a"](), CHECK.groups_of)


def main(here: Path, title: str, note: str) -> None:
    shipped = report(here)
    lines = [f"# {title}", "", "Predicted once by `report.py` with session 32's final model (profile "
             "kernel-2026-12-05a, shipped until session 35; rule: `../trtllm021/inclusion-rule.md`; rows: `rows.toml`; "
             "table: `table.md`). " + note, ""]
    text = "\n".join(lines + REPORT.table(shipped["groups"], [])) + "\n"
    (here / "report.json").write_text(json.dumps({"shipped": shipped}, indent=1) + "\n")
    (here / "report.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main(HERE, "TensorRT-LLM v0.21's throughput tables (PyTorch backend): a clean check (session 32)",
         "Its 11 Llama 4 Maverick cells are v0.20's measurements (the document: \"To reproduce the Llama 4 "
         "performance noted here, please use v0.20\"), the same values as `../trtllm020/`'s.")
