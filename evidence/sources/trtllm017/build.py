"""TensorRT-LLM 0.17's throughput table (`table.md`, copied) as rows of the published schema, by the rule of
`inclusion_rule.md`:

    python -m evidence.sources.trtllm017.build      # rewrites rows.toml

Its layout is 0.15's (`tables.by_tp`).
"""

from __future__ import annotations

from pathlib import Path

from evidence import tables

HERE = Path(__file__).parent
TITLE = "TensorRT-LLM 0.17's throughput table"
SOURCE = ("https://github.com/NVIDIA/TensorRT-LLM/blob/258c7540c03517def55d9a5aadfa9288af474e1b/docs/source/"
          "performance/perf-overview.md")
#: model as written → (catalog id, id suffix, longest input + output kept); Mistral 7B's checkpoint is not named: rows
#: beyond v0.1's sliding window (4,096) are left out
MODELS = {"LLaMA v3.1 8B": ("llama-3.1-8b", "", None), "LLaMA v3.1 70B": ("llama-3.1-70b", "", None),
          "LLaMA v3.1 405B": ("llama-3.1-405b", "", None), "Mistral 7B": ("mistral-7b-v0.3", "", 4096),
          "Mixtral 8x7B": ("mixtral-8x7b", "", None), "Mixtral 8x22B": ("mixtral-8x22b", "", None)}
#: the five GPU columns, left to right: (catalog id, weights and KV dtype)
COLUMNS = (("h200", "fp8"), ("h100-sxm", "fp8"), ("gh200", "fp8"), ("l40s", "fp8"), ("a100-80gb", "fp16"))


def rows() -> list[dict]:
    """Every cell the rule keeps, with the GH200's tool named in its engine (`tables.by_tp`)."""
    return tables.by_tp(HERE / "table.md", MODELS, COLUMNS, "trtllm017", "0.17", SOURCE)


def files() -> dict[Path, str]:
    return {HERE / "rows.toml": tables.rows_file(f"{__package__}.build", rows(), SOURCE)}


if __name__ == "__main__":
    tables.write(files())
