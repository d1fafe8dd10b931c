"""A v0.19-era revision of TensorRT-LLM's throughput tables (`table.md`, copied) as rows, by the rule of
`../trtllm021/inclusion_rule.md` (v0.20's layout and mapping, `../trtllm020/build.py`); the 4 cells the published
set already holds (`trtllm019-*` rows, quoted from 0.19.0's page, equal values) are left out:

    python -m evidence.sources.trtllm019.build      # rewrites rows.toml
"""

from __future__ import annotations

from pathlib import Path

from evidence import tables
from evidence.sources.trtllm020 import build as trtllm020
from kokuban.validation.accuracy import load_published

HERE = Path(__file__).parent
TITLE = "A v0.19-era revision of TensorRT-LLM's throughput tables (PyTorch backend)"
SOURCE = ("NVIDIA/TensorRT-LLM docs/source/performance/perf-overview.md, a revision after v0.19's switch to the "
          "PyTorch backend (tool library index file id 2997649200; commit not named by the index)")
ENGINE = "TensorRT-LLM 0.19+ (PyTorch backend, trtllm-bench)"


def every_cell() -> list[dict]:
    """Every non-empty cell, the published set's 4 included."""
    return trtllm020.rows(HERE / "table.md", "trtllm019", ENGINE, SOURCE)


def published_twins(rows: list[dict]) -> dict[str, tuple[str, float]]:
    """Each row's published twin (same model, GPU, dtype, TP and lengths in a `trtllm019-*` row): id → (twin, value)."""
    published = {(r.model, r.accelerator, r.weights_dtype, r.num_gpus, r.input_tokens, r.output_tokens): r
                 for r in load_published() if r.id.startswith("trtllm019-")}
    out = {}
    for r in rows:
        twin = published.get((r["model"], r["accelerator"], r["weights_dtype"], r["num_gpus"], r["input_tokens"],
                              r["output_tokens"]))
        if twin is not None:
            out[r["id"]] = (twin.id, twin.value)
    return out


def rows() -> list[dict]:
    """Every non-empty cell but the published set's 4 (the rule)."""
    every = every_cell()
    twins = published_twins(every)
    return [r for r in every if r["id"] not in twins]


def files() -> dict[Path, str]:
    return {HERE / "rows.toml": tables.rows_file(f"{__package__}.build", rows(), SOURCE)}


if __name__ == "__main__":
    tables.write(files())
