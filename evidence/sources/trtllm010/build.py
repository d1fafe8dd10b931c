"""TensorRT-LLM 0.10's throughput table (`table.md`, copied) as rows of the published schema, by the rule of
`inclusion_rule.md` (0.11's table, `../trtllm011/`, is read by the same function; the models are mapped as 0.12's
rule maps them, `../trtllm012/build.py`):

    python -m evidence.sources.trtllm010.build      # rewrites rows.toml
"""

from __future__ import annotations

from pathlib import Path

from evidence import tables
from evidence.sources.trtllm012.build import MODELS

HERE = Path(__file__).parent
TITLE = "TensorRT-LLM 0.10's throughput table"
#: the six GPU columns, left to right: (catalog id, weights and KV dtype)
COLUMNS = (("h200", "fp8"), ("h100-sxm", "fp8"), ("h100-sxm", "fp16"), ("a100-80gb", "fp16"), ("l40s", "fp8"),
           ("l40s", "fp16"))


def source(version: str, file_id: str) -> str:
    return (f"NVIDIA/TensorRT-LLM docs/source/performance/perf-overview.md, version {version} (tool library index file "
            f"id {file_id}; commit not named by the index)")


SOURCE = source("0.10.0", "5853938931")


def rows(here: Path = HERE, columns: tuple = COLUMNS, version: str = "0.10", text: str = SOURCE) -> list[dict]:
    """Every cell of `here`'s table the rule keeps (`tables.by_lengths`)."""
    return tables.by_lengths(here / "table.md", MODELS, columns, here.name,
                             f"TensorRT-LLM {version} (gptManagerBenchmark, IFB)", text)


def files() -> dict[Path, str]:
    return {HERE / "rows.toml": tables.rows_file(f"{__package__}.build", rows(), SOURCE)}


if __name__ == "__main__":
    tables.write(files())
