"""Predict the v0.19-era rows once with session 32's final model (`../trtllm021/report.py`'s functions); writes
report.json and report.md:

    python validation/clean-checks/trtllm019/report.py
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

HERE = Path(__file__).parent
_spec = importlib.util.spec_from_file_location("report021", HERE.parent / "trtllm021" / "report.py")
CHECK = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(CHECK)

if __name__ == "__main__":
    CHECK.main(HERE, "A v0.19-era revision of TensorRT-LLM's throughput tables (PyTorch backend): a clean check "
               "(session 32)", "Its 4 cells the published set already holds (`trtllm019-*` rows, quoted from "
               "0.19.0's page) are left out by the rule; their values equal the published ones, so this is 0.19's "
               "document.")
