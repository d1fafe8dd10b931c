"""A candidate constant fitted on a grid: each point's mean squared log error (the loss every fit here minimises) and
median |error| and median signed error on the fitting rows, and the point of least loss."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from kokuban.specs.hardware import Efficiency
from kokuban.validation.accuracy import PublishedResult, predict_row


def scores(rows: Sequence[PublishedResult], grid: Sequence[float],
           make: Callable[[float], Efficiency]) -> dict[float, tuple[float, float, float]]:
    """{point: (mean of log(predicted ÷ measured)², median |error|, median signed error)} of `make(point)` on `rows`."""
    out = {}
    for point in grid:
        preds = [predict_row(r, make(point)) for r in rows]
        log_err = np.log([p.predicted / p.measured for p in preds])
        out[point] = (float(np.mean(log_err ** 2)), float(np.median([p.error for p in preds])),
                      float(np.median([p.signed_error for p in preds])))
    return out


def least(table: dict[float, tuple[float, ...]]) -> float:
    """The grid point of least loss; 0 (the model without the candidate) is not a candidate."""
    return min((p for p in table if p), key=lambda p: table[p][0])


def show(title: str, table: dict[float, tuple[float, ...]], unit: str = "") -> None:
    """Print the model without the candidate (0) and the least point."""
    print(title)
    for point in (0.0, least(table)):
        msle, median, signed = table[point]
        print(f"  {point:.4g} {unit}  MSLE {msle:.4f}  median |error| {100 * median:.1f} %  "
              f"median signed {100 * signed:+.1f} %")
