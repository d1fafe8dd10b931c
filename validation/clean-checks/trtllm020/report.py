"""Predict the TensorRT-LLM v0.20 rows once with the shipped step model and the rule's candidate, as the 0.15 check
(`../trtllm015/report.py`, whose functions this runs); writes report.json and report.md:

    python validation/clean-checks/trtllm020/report.py
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

HERE = Path(__file__).parent
_spec = importlib.util.spec_from_file_location("report015", HERE.parent / "trtllm015" / "report.py")
CHECK = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(CHECK)

if __name__ == "__main__":
    CHECK.main(HERE, "TensorRT-LLM v0.20's throughput tables (PyTorch backend): a clean check (session 32)")
