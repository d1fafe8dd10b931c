"""Turn `table.md` (a v0.19-era revision of TensorRT-LLM's throughput tables, copied) into `rows.toml`, by the rule of
`../trtllm021/inclusion-rule.md` (v0.20's layout and parser, `../trtllm020/build_rows.py`); the 4 cells the published
set already holds (`trtllm019-*` rows, quoted from 0.19.0's page) are left out and compared:

    python validation/clean-checks/trtllm019/build_rows.py
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from kokuban.validation.accuracy import load_published

HERE = Path(__file__).parent
SOURCE = ("NVIDIA/TensorRT-LLM docs/source/performance/perf-overview.md, a revision after v0.19's switch to the "
          "PyTorch backend (tool library index file id 2997649200; commit not named by the index)")
_spec = importlib.util.spec_from_file_location("build020", HERE.parent / "trtllm020" / "build_rows.py")
BUILD = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(BUILD)


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
    every = BUILD.rows(HERE / "table.md", "trtllm019", "TensorRT-LLM 0.19+ (PyTorch backend, trtllm-bench)", SOURCE)
    twins = published_twins(every)
    return [r for r in every if r["id"] not in twins]


if __name__ == "__main__":
    BUILD.TABLE.write(HERE, rows(), SOURCE)
