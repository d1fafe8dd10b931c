"""Session 32's two fits on rows already read, reproduced: the memory TensorRT-LLM holds outside its KV pool (on the
0.17 rows alone) and the PCIe all-reduce fraction of NVIDIA's L40S and A100 PCIe servers (on each card's multi-GPU rows
of the 0.13, 0.14, 0.15 and 0.17 tables); each a grid, scored by mean squared log error, printed with the median
|error| (what data/engines.toml and data/accelerators.toml quote):

    python validation/clean-checks/fit_session32.py
"""

from __future__ import annotations

import math
import statistics
from dataclasses import replace
from pathlib import Path

from kokuban.specs.hardware import PROFILES
from kokuban.usecases.validation import read_measurements
from kokuban.validation.accuracy import predict_row

HERE = Path(__file__).parent
RESERVE_GRID_GB = (0.6, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 5.0)
PCIE_GRID = (0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.7, 0.85)
PCIE_TABLES = ("trtllm013", "trtllm014", "trtllm015", "trtllm017")


def score(rows: list, efficiency) -> tuple[float, float]:
    """(mean squared log error, median |error|) of `efficiency` on `rows`."""
    preds = [predict_row(r, efficiency) for r in rows]
    msle = sum(math.log(p.predicted / p.measured) ** 2 for p in preds) / len(preds)
    return msle, statistics.median(abs(p.signed_error) for p in preds)


def reserve_scores(grid_gb=RESERVE_GRID_GB) -> dict[float, tuple[float, float]]:
    """Session 31's model ("kernel-2026-12-04d", what the fit started from) with TensorRT-LLM's bytes outside its KV
    pool at each grid value, on the 0.17 rows."""
    rows = read_measurements(str(HERE / "trtllm017" / "rows.toml"))
    base = PROFILES["kernel-2026-12-04d"]()
    return {gb: score(rows, replace(base, engine_non_torch_bytes=gb * 1e9)) for gb in grid_gb}


def pcie_scores(gpu: str, grid=PCIE_GRID) -> dict[float, tuple[float, float]]:
    """Session 32's first model ("kernel-2026-12-04e", before the fractions) with every PCIe all-reduce at each grid
    fraction, on `gpu`'s rows on several GPUs of `PCIE_TABLES`."""
    rows = [r for t in PCIE_TABLES for r in read_measurements(str(HERE / t / "rows.toml"))
            if r.accelerator == gpu and r.num_gpus > 1]
    base = PROFILES["kernel-2026-12-04e"]()
    return {f: score(rows, base.with_kernels(pcie_allreduce_fraction=f)) for f in grid}


if __name__ == "__main__":
    for label, scores in (("TensorRT-LLM bytes outside the KV pool (GB), 0.17 rows", reserve_scores()),
                          ("L40S PCIe all-reduce fraction", pcie_scores("l40s")),
                          ("A100 PCIe all-reduce fraction", pcie_scores("a100-pcie-80gb"))):
        print(label)
        for value, (msle, median) in scores.items():
            print(f"  {value:5.2f}  msle {msle:.4f}  median |error| {100 * median:.1f} %")
