"""TensorRT-LLM 0.15's throughput table (`table.md`, copied) as rows of the published schema, by the rule of
`inclusion_rule.md`:

    python -m evidence.sources.trtllm015.build      # rewrites rows.toml

Its layout is | model | TP | "input, output" | one cell per GPU column | (`tables.by_tp`), and a line may stop before
its last columns (empty cells).
"""

from __future__ import annotations

from pathlib import Path

from evidence import tables

HERE = Path(__file__).parent
TITLE = "TensorRT-LLM 0.15's throughput table"
SOURCE = ("NVIDIA/TensorRT-LLM docs/source/performance/perf-overview.md, version 0.15.0 (tool library index file id "
          "5939417815; commit not named by the index)")
#: model as written → (catalog id, id suffix, longest input + output kept: the checkpoint's window)
MODELS = {"LLaMA v3.1 8B": ("llama-3.1-8b", "", None), "LLaMA v3.1 70B": ("llama-3.1-70b", "", None),
          "LLaMA v3 70B": ("llama-3.1-70b", "-v3", 8192), "Mistral 7B": ("mistral-7b-v0.3", "", 4096),
          "Mixtral 8x7B": ("mixtral-8x7b", "", None), "Mixtral 8x22B": ("mixtral-8x22b", "", None)}
#: the six GPU columns, left to right: (catalog id, weights and KV dtype); "Mixed" is the unquantized 16-bit engine
COLUMNS = (("h100-sxm", "fp8"), ("h100-sxm", "fp16"), ("a100-80gb", "fp16"), ("a100-pcie-80gb", "fp16"),
           ("l40s", "fp8"), ("gh200", "fp8"))


def rows() -> list[dict]:
    """Every cell the rule keeps, with the GH200's tool named in its engine (`tables.by_tp`)."""
    return tables.by_tp(HERE / "table.md", MODELS, COLUMNS, "trtllm015", "0.15", SOURCE)


def files() -> dict[Path, str]:
    return {HERE / "rows.toml": tables.rows_file(f"{__package__}.build", rows(), SOURCE)}


if __name__ == "__main__":
    tables.write(files())
