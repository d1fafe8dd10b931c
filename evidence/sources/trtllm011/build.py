"""TensorRT-LLM 0.11's throughput table (`table.md`, copied) as rows of the published schema, by the rule of
`../trtllm010/inclusion_rule.md`, with `../trtllm010/build.py`'s reader:

    python -m evidence.sources.trtllm011.build      # rewrites rows.toml
"""

from __future__ import annotations

from pathlib import Path

from evidence import tables
from evidence.sources.trtllm010 import build as trtllm010

HERE = Path(__file__).parent
TITLE = "TensorRT-LLM 0.11's throughput table"
#: the six GPU columns, left to right: (catalog id, weights and KV dtype), None = left out (GH200 120GB)
COLUMNS = (("h200", "fp8"), None, ("h100-sxm", "fp8"), ("h100-sxm", "fp16"), ("a100-80gb", "fp16"), ("l40s", "fp8"))
SOURCE = trtllm010.source("0.11.0", "3247412510")


def rows() -> list[dict]:
    return trtllm010.rows(HERE, COLUMNS, "0.11", SOURCE)


def files() -> dict[Path, str]:
    return {HERE / "rows.toml": tables.rows_file(f"{__package__}.build", rows(), SOURCE)}


if __name__ == "__main__":
    tables.write(files())
