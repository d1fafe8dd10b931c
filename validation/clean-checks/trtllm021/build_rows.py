"""Turn `table.md` (TensorRT-LLM v0.21's throughput tables, copied) into `rows.toml`, by the rule of
`inclusion-rule.md` (v0.20's layout and parser, `../trtllm020/build_rows.py`). Its Llama 4 Maverick cells are v0.20's
(the document: "To reproduce the Llama 4 performance noted here, please use v0.20"); the rule keeps them, and the
report names them.

    python validation/clean-checks/trtllm021/build_rows.py
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

HERE = Path(__file__).parent
SOURCE = ("https://github.com/NVIDIA/TensorRT-LLM/blob/f6a35f3a88cf27041d8c0fc7f56e83827459344a/docs/source/legacy/"
          "performance/perf-overview.md (v0.21 benchmarks, PyTorch backend)")
_spec = importlib.util.spec_from_file_location("build020", HERE.parent / "trtllm020" / "build_rows.py")
BUILD = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(BUILD)


def rows() -> list[dict]:
    """Every non-empty cell (the rule keeps them all)."""
    return BUILD.rows(HERE / "table.md", "trtllm021", "TensorRT-LLM 0.21 (PyTorch backend, trtllm-bench)", SOURCE)


if __name__ == "__main__":
    BUILD.TABLE.write(HERE, rows(), SOURCE)
