"""Turn `table.md` (TensorRT-LLM 0.10's throughput table, copied) into `rows.toml` in the published schema, by the
rule of `inclusion-rule.md` (0.11's table, `../trtllm011/build_rows.py`, is read by the same functions):

    python validation/clean-checks/trtllm010/build_rows.py

The models and the layout are 0.12's (`../trtllm012/build_rows.py`, `../perf_table.rows`); the rows are predicted once
by `../session35.py`.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

HERE = Path(__file__).parent
#: the six GPU columns, left to right: (catalog id, weights and KV dtype)
COLUMNS = (("h200", "fp8"), ("h100-sxm", "fp8"), ("h100-sxm", "fp16"), ("a100-80gb", "fp16"), ("l40s", "fp8"),
           ("l40s", "fp16"))

_spec = importlib.util.spec_from_file_location("build012", HERE.parent / "trtllm012" / "build_rows.py")
B012 = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(B012)
TABLE = B012.TABLE


def source(version: str, file_id: str) -> str:
    return (f"NVIDIA/TensorRT-LLM docs/source/performance/perf-overview.md, version {version} (tool library index file "
            f"id {file_id}; commit not named by the index)")


SOURCE = source("0.10.0", "5853938931")


def rows(here: Path = HERE, columns: tuple = COLUMNS, version: str = "0.10", text: str = SOURCE) -> list[dict]:
    """Every cell of `here`'s table the rule keeps (`../perf_table.rows`), models mapped as 0.12's rule maps them."""
    return TABLE.rows(here / "table.md", B012.MODELS, columns, here.name,
                      f"TensorRT-LLM {version} (gptManagerBenchmark, IFB)", text)


if __name__ == "__main__":
    TABLE.write(HERE, rows(), SOURCE)
