"""TensorRT-LLM v0.20's throughput tables (`table.md`, copied) as rows of the published schema, by the rule of
`inclusion_rule.md`; the v0.19-era and v0.21 tables (`../trtllm019/`, `../trtllm021/`) are mapped by the same
`rows`:

    python -m evidence.sources.trtllm020.build      # rewrites rows.toml

One table per model and precision ("#### Llama 3.3 70B FP8", `tables.sectioned`).
"""

from __future__ import annotations

from pathlib import Path

from evidence import tables

HERE = Path(__file__).parent
TITLE = "TensorRT-LLM v0.20's throughput tables (PyTorch backend)"
SOURCE = ("https://github.com/dominicshanshan/TensorRT-LLM/blob/ab4143e1d3c82df550f0d5673090a8feee84c7bd/docs/source/"
          "performance/perf-overview.md (v0.20 benchmarks, PyTorch backend)")
MODELS = {"Llama 3.3 70B": "llama-3.3-70b", "Llama 3.1 405B": "llama-3.1-405b", "Llama 3.1 8B": "llama-3.1-8b",
          "Llama 4 Maverick": "llama-4-maverick", "Llama 3.1 70B": "llama-3.1-70b"}
GPUS = {"B200": "b200", "GB200": "gb200", "H200 141GB HBM3": "h200", "H200": "h200", "H100 80GB HBM3": "h100-sxm",
        "H100": "h100-sxm", "GH200": "gh200"}
DTYPES = {"FP4": "nvfp4", "FP8": "fp8"}  # weights; the KV cache fp8 in both (the rule)


def rows(table: Path = HERE / "table.md", prefix: str = "trtllm020",
         engine: str = "TensorRT-LLM 0.20 (PyTorch backend, trtllm-bench)", source: str = SOURCE) -> list[dict]:
    """Every non-empty cell of `table` (the rule keeps them all), as `prefix`'s rows of `engine` from `source`."""
    out = []
    for model, precision, gpu, tp, inp, out_tokens, value in tables.sectioned(table):
        if not value:
            continue
        dtype, catalog, accelerator = DTYPES[precision], MODELS[model], GPUS[gpu]
        out.append(tables.throughput_row(f"{prefix}-{catalog}-{accelerator}-{dtype}-tp{tp}-{inp}-{out_tokens}",
                                         catalog, accelerator, tp, dtype, "fp8", engine, tables.number(value), inp,
                                         out_tokens, source))
    return out


def files() -> dict[Path, str]:
    return {HERE / "rows.toml": tables.rows_file(f"{__package__}.build", rows(), SOURCE)}


if __name__ == "__main__":
    tables.write(files())
