"""Turn `table.md` (TensorRT-LLM 0.11's throughput table, copied) into `rows.toml` in the published schema, by the
rule of `../trtllm010/inclusion-rule.md`, with `../trtllm010/build_rows.py`'s functions:

    python validation/clean-checks/trtllm011/build_rows.py
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

HERE = Path(__file__).parent
#: the six GPU columns, left to right: (catalog id, weights and KV dtype), None = left out (GH200 120GB)
COLUMNS = (("h200", "fp8"), None, ("h100-sxm", "fp8"), ("h100-sxm", "fp16"), ("a100-80gb", "fp16"), ("l40s", "fp8"))

_spec = importlib.util.spec_from_file_location("build010", HERE.parent / "trtllm010" / "build_rows.py")
B010 = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(B010)
TABLE = B010.TABLE
SOURCE = B010.source("0.11.0", "3247412510")


def rows() -> list[dict]:
    return B010.rows(HERE, COLUMNS, "0.11", SOURCE)


if __name__ == "__main__":
    TABLE.write(HERE, rows(), SOURCE)
