"""Session 33's two fits of the MI300X under vLLM, grid 0.40–1.00 by 0.05, least mean squared log error:

    python validation/clean-checks/fit_session33.py

- `ratio_scores`, by the rule of `amd-vllm-judge/inclusion-rule.md`: its memory stream ratio (weight and KV reads at
  `ratio` × the fitted memory fraction) on the 144 AMD latency rows first seen (`amd-vllm/rows.toml`, `versions.toml`).
- `weight_ratio_scores`, by the rule of `amd-vllm-nov/inclusion-rule.md`: its weight stream ratio (weights only, the
  catalog's `kernel_weight_memory_ratio`) on those and the first candidate's judging rows (`amd-vllm-judge/rows.toml`).

The candidate was judged as a catalog constant of the MI300X (`kernel_memory_ratio`, plumbed through the kernel curves
for the judgement) and rejected by its rule, so it is not in the code: `candidate` prices it here, exactly (every row
of these files is an MI300X row, and the constant scaled the two fractions below and nothing else).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np

from kokuban.specs.hardware import PROFILES, Efficiency
from kokuban.usecases.validation import read_measurements
from kokuban.validation.accuracy import predict_row

HERE = Path(__file__).parent
GRID = tuple(round(0.40 + 0.05 * i, 2) for i in range(13))


def candidate(ratio: float, efficiency: Efficiency) -> Efficiency:
    """`efficiency` (session 32's final model, "kernel-2026-12-05a": today's would add the shipped weight ratio) with
    the MI300X's weight and KV streams at `ratio` of its fractions: the rejected candidate, for MI300X rows only."""
    return replace(efficiency, memory=efficiency.memory * ratio, kv_memory=efficiency.kv_memory_fraction * ratio)


def seen_rows() -> list:
    return [r for name in ("rows.toml", "versions.toml") for r in read_measurements(str(HERE / "amd-vllm" / name))]


def _scores(rows: list, make) -> dict[float, tuple[float, float]]:
    """{grid point: (mean squared log error, median |error|)} of `make(point)` on `rows` (all MI300X rows)."""
    assert all(r.accelerator == "mi300x" for r in rows)
    out = {}
    for point in GRID:
        preds = [predict_row(r, make(point)) for r in rows]
        log_err = np.log([p.predicted / p.measured for p in preds])
        out[point] = (float(np.mean(log_err ** 2)), float(np.median([p.error for p in preds])))
    return out


def all_seen_rows() -> list:
    """Every AMD vLLM row seen before the second candidate: the first fit's 144 and its judges' 126."""
    return seen_rows() + read_measurements(str(HERE / "amd-vllm-judge" / "rows.toml"))


def weight_ratio_scores(rows: list | None = None) -> dict[float, tuple[float, float]]:
    """The second candidate's grid on `all_seen_rows`: today's model with the MI300X's weights read at `ratio` of the
    fitted memory fraction (its own catalog value switched off, `own_weight_memory`, so each point is itself)."""
    return _scores(all_seen_rows() if rows is None else rows,
                   lambda r: Efficiency.shipped().with_kernels(weight_memory_ratio=r, own_weight_memory=False))


def ratio_scores(rows: list | None = None) -> dict[float, tuple[float, float]]:
    """{ratio: (mean squared log error, median |error|)} of the first candidate (`candidate`) on `seen_rows`."""
    return _scores(seen_rows() if rows is None else rows,
                   lambda r: candidate(r, PROFILES["kernel-2026-12-05a"]()))  # the model then shipped


if __name__ == "__main__":
    for name, scores in (("memory stream ratio (144 rows)", ratio_scores()),
                         ("weight stream ratio (270 rows)", weight_ratio_scores())):
        print(name)
        for ratio, (msle, median) in scores.items():
            print(f"  {ratio:.2f}  MSLE {msle:.4f}  median |error| {100 * median:.1f} %")
        print("  least:", min(scores, key=lambda r: scores[r][0]))
