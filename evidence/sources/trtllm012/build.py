"""TensorRT-LLM 0.12's throughput table (`table.md`, copied) as rows of the published schema, by the rule of
`inclusion_rule.md`; 0.10's and 0.11's tables (`../trtllm010/`, `../trtllm011/`) map their models by the same rule:

    python -m evidence.sources.trtllm012.build      # rewrites rows.toml
"""

from __future__ import annotations

from pathlib import Path

from evidence import tables

HERE = Path(__file__).parent
TITLE = "TensorRT-LLM 0.12's throughput table"
SOURCE = ("NVIDIA/TensorRT-LLM docs/source/performance/perf-overview.md, version 0.12.0 (tool library index file id "
          "2499968698; commit not named by the index)")
#: model as written → (catalog id, id suffix, longest input + output kept: the checkpoint's window), None = left out
MODELS = {"LLaMA v3 8B": ("llama-3.1-8b", "-v3", 8192), "LLaMA v2 7B": ("llama-2-7b", "", 4096),
          "Mistral 7B": ("mistral-7b-v0.3", "", 4096), "LLaMA v3 70B": ("llama-3.1-70b", "-v3", 8192),
          "LLaMA v2 70B": ("llama-2-70b", "", 4096), "Mixtral 8x7B": ("mixtral-8x7b", "", None), "GPTJ 6B": None,
          "Falcon 180B": None}
#: the six GPU columns, left to right: (catalog id, weights and KV dtype), None = left out (GH200 120GB)
COLUMNS = (("h200", "fp8"), None, ("h100-sxm", "fp8"), ("h100-sxm", "fp16"), ("a100-80gb", "fp16"), ("l40s", "fp8"))


def rows() -> list[dict]:
    """Every cell the rule keeps (`tables.by_lengths`)."""
    return tables.by_lengths(HERE / "table.md", MODELS, COLUMNS, "trtllm012", "TensorRT-LLM 0.12 (trtllm-bench)",
                             SOURCE)


def files() -> dict[Path, str]:
    return {HERE / "rows.toml": tables.rows_file(f"{__package__}.build", rows(), SOURCE)}


if __name__ == "__main__":
    tables.write(files())
