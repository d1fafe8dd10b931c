"""TensorRT-LLM v0.21's throughput tables (`table.md`, copied) as rows, by the rule of `inclusion_rule.md` (v0.20's
layout and mapping, `../trtllm020/build.py`). Its Llama 4 Maverick cells are v0.20's (the document: "To reproduce
the Llama 4 performance noted here, please use v0.20"); the rule keeps them, and the pool counts each measurement
once (`evidence.pool`):

    python -m evidence.sources.trtllm021.build      # rewrites rows.toml
"""

from __future__ import annotations

from pathlib import Path

from evidence import tables
from evidence.sources.trtllm020 import build as trtllm020

HERE = Path(__file__).parent
TITLE = "TensorRT-LLM v0.21's throughput tables (PyTorch backend)"
SOURCE = ("https://github.com/NVIDIA/TensorRT-LLM/blob/f6a35f3a88cf27041d8c0fc7f56e83827459344a/docs/source/legacy/"
          "performance/perf-overview.md (v0.21 benchmarks, PyTorch backend)")


def rows() -> list[dict]:
    """Every non-empty cell (the rule keeps them all)."""
    return trtllm020.rows(HERE / "table.md", "trtllm021", "TensorRT-LLM 0.21 (PyTorch backend, trtllm-bench)", SOURCE)


def files() -> dict[Path, str]:
    return {HERE / "rows.toml": tables.rows_file(f"{__package__}.build", rows(), SOURCE)}


if __name__ == "__main__":
    tables.write(files())
