"""Turn `table.md` (TensorRT-LLM 0.11's throughput table, copied) into `rows.toml` in the published schema, by the
rule of `../trtllm010/inclusion-rule.md`:

    python validation/clean-checks/trtllm011/build_rows.py

The layout is 0.12's (`../perf_table.rows`); the rows are predicted once by `../session35.py`.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

HERE = Path(__file__).parent
SOURCE = ("NVIDIA/TensorRT-LLM docs/source/performance/perf-overview.md, version 0.11.0 (tool library index file id "
          "3247412510; commit not named by the index)")
#: model as written → (catalog id, id suffix, longest input + output kept: the checkpoint's window), None = left out
MODELS = {"LLaMA v3 8B": ("llama-3.1-8b", "-v3", 8192), "LLaMA v2 7B": ("llama-2-7b", "", 4096),
          "Mistral 7B": ("mistral-7b-v0.3", "", 4096), "LLaMA v3 70B": ("llama-3.1-70b", "-v3", 8192),
          "LLaMA v2 70B": ("llama-2-70b", "", 4096), "Mixtral 8x7B": ("mixtral-8x7b", "", None), "GPTJ 6B": None,
          "Falcon 180B": None}
#: the six GPU columns, left to right: (catalog id, weights and KV dtype), None = left out (GH200 120GB)
COLUMNS = (("h200", "fp8"), None, ("h100-sxm", "fp8"), ("h100-sxm", "fp16"), ("a100-80gb", "fp16"), ("l40s", "fp8"))

_spec = importlib.util.spec_from_file_location("perf_table", HERE.parent / "perf_table.py")
TABLE = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(TABLE)


def rows() -> list[dict]:
    """Every cell the rule keeps (`../perf_table.rows`)."""
    return TABLE.rows(HERE / "table.md", MODELS, COLUMNS, "trtllm011", "TensorRT-LLM 0.11 (gptManagerBenchmark, IFB)",
                      SOURCE)


if __name__ == "__main__":
    TABLE.write(HERE, rows(), SOURCE)
