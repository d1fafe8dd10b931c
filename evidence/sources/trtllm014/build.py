"""TensorRT-LLM 0.14's throughput table (`table.md`, copied) as rows of the published schema, by the rule of
`inclusion_rule.md`:

    python -m evidence.sources.trtllm014.build      # rewrites rows.toml
"""

from __future__ import annotations

from pathlib import Path

from evidence import tables

HERE = Path(__file__).parent
TITLE = "TensorRT-LLM 0.14's throughput table"
SOURCE = ("https://github.com/arthurrasmusson/TensorRT-LLM/blob/e00d4e6564921307dd264b61fe1d46f116095e0e/docs/source/"
          "performance/perf-overview.md")
#: model as written → (catalog id, id suffix, longest input + output kept: the checkpoint's window)
MODELS = {"LLaMA v3.1 8B": ("llama-3.1-8b", "", None), "LLaMA v3.1 70B": ("llama-3.1-70b", "", None),
          "LLaMA v3 70B": ("llama-3.1-70b", "-v3", None), "LLaMA v3.1 405B": ("llama-3.1-405b", "", None),
          "Mistral 7B": ("mistral-7b-v0.3", "", 4096), "Mixtral 8x7B": ("mixtral-8x7b", "", None),
          "Mixtral 8x22B": ("mixtral-8x22b", "", None)}
#: the six GPU columns, left to right: (catalog id, weights and KV dtype)
COLUMNS = (("h200", "fp8"), ("h100-sxm", "fp8"), ("h100-sxm", "fp16"), ("a100-80gb", "fp16"),
           ("a100-pcie-80gb", "fp16"), ("l40s", "fp8"))


def rows() -> list[dict]:
    """Every cell the rule keeps (`tables.by_lengths`)."""
    return tables.by_lengths(HERE / "table.md", MODELS, COLUMNS, "trtllm014", "TensorRT-LLM 0.14 (trtllm-bench)",
                             SOURCE)


def files() -> dict[Path, str]:
    return {HERE / "rows.toml": tables.rows_file(f"{__package__}.build", rows(), SOURCE)}


if __name__ == "__main__":
    tables.write(files())
