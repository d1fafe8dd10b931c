"""Session 33's fit, by the rule of `amd-vllm-judge/inclusion-rule.md`: the MI300X's memory stream ratio (its weight
and KV reads at `ratio` × the fitted memory fraction) on the 144 AMD vLLM latency rows session 33 had seen
(`amd-vllm/rows.toml`, `versions.toml`), grid 0.40–1.00 by 0.05, least mean squared log error:

    python validation/clean-checks/fit_session33.py

The candidate was judged as a catalog constant of the MI300X (`kernel_memory_ratio`, plumbed through the kernel curves
for the judgement) and rejected by its rule, so it is not in the code: `candidate` prices it here, exactly (every row
of these files is an MI300X row, and the constant scaled the two fractions below and nothing else).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np

from kokuban.specs.hardware import Efficiency
from kokuban.usecases.validation import read_measurements
from kokuban.validation.accuracy import predict_row

HERE = Path(__file__).parent
GRID = tuple(round(0.40 + 0.05 * i, 2) for i in range(13))


def candidate(ratio: float, efficiency: Efficiency | None = None) -> Efficiency:
    """`efficiency` (today's shipped model) with the MI300X's weight and KV streams at `ratio` of its fractions: the
    rejected candidate, for MI300X rows only."""
    eff = Efficiency.shipped() if efficiency is None else efficiency
    return replace(eff, memory=eff.memory * ratio, kv_memory=eff.kv_memory_fraction * ratio)


def seen_rows() -> list:
    return [r for name in ("rows.toml", "versions.toml") for r in read_measurements(str(HERE / "amd-vllm" / name))]


def ratio_scores(rows: list | None = None) -> dict[float, tuple[float, float]]:
    """{ratio: (mean squared log error, median |error|)} of today's model with the MI300X's stream at `ratio` of the
    fitted memory fraction (`candidate`)."""
    rows = seen_rows() if rows is None else rows
    assert all(r.accelerator == "mi300x" for r in rows)
    out = {}
    for ratio in GRID:
        preds = [predict_row(r, candidate(ratio)) for r in rows]
        log_err = np.log([p.predicted / p.measured for p in preds])
        out[ratio] = (float(np.mean(log_err ** 2)), float(np.median([p.error for p in preds])))
    return out


if __name__ == "__main__":
    scores = ratio_scores()
    for ratio, (msle, median) in scores.items():
        print(f"{ratio:.2f}  MSLE {msle:.4f}  median |error| {100 * median:.1f} %")
    print("least:", min(scores, key=lambda r: scores[r][0]))
