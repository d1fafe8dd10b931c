"""Session 34's two fits of llama.cpp's quantized CUDA kernels bound per SM (`core.roofline.ggml_per_sm`), by the rule
of `llamacpp-sm/inclusion-rule.md`, each on the rows of session 33's scoreboard check (`llamacpp-cuda/rows.toml`: RTX
5090, RTX 3090 Ti, A100 80 GB; Llama 2 7B Q4_0), least mean squared log error:

    python validation/clean-checks/fit_session34.py

- A, `stream_scores`: the bytes/s one SM draws through MMVQ (`KernelCurves.ggml_sm_stream_bytes_per_s`), on the six
  tg128 rows, grid 2.0e9 … 20.0e9 by 0.1e9, with MMQ's rate off.
- B, `mmq_scores`: the operations one SM completes per cycle in MMQ (`KernelCurves.ggml_mmq_ops_per_cycle`), on the
  six pp512 rows, grid 50 … 3000 by 5, with the stream bound off.

Each point is today's model (`Efficiency.shipped()`) with that one constant set; 0 is the model without it.

- A2, `cycle_scores`, by the rule of `llamacpp-xd/inclusion-rule.md` (after A was judged and not shipped): MMVQ's
  bytes per SM per clock cycle (`KernelCurves.ggml_sm_stream_bytes_per_cycle`), on every decode row read by then (the
  six tg128 rows above and the thirty of `llamacpp-sm/rows.toml`), grid 1.00 … 12.00 by 0.05, MMQ's rate as shipped.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from kokuban.specs.hardware import Efficiency
from kokuban.usecases.validation import read_measurements
from kokuban.validation.accuracy import predict_row

HERE = Path(__file__).parent
STREAM_GRID = tuple(round(2.0e9 + 0.1e9 * i, -6) for i in range(181))  # B/s per SM
MMQ_GRID = tuple(50.0 + 5.0 * i for i in range(591))  # operations per SM per cycle
CYCLE_GRID = tuple(round(1.0 + 0.05 * i, 2) for i in range(221))  # bytes per SM per cycle


def fit_rows(metric: str, checks: tuple[str, ...] = ("llamacpp-cuda",)) -> list:
    """The scoreboard rows of `checks` measuring `metric` (tg128: a user's speed; pp512: a first token)."""
    return [r for c in checks for r in read_measurements(str(HERE / c / "rows.toml")) if r.metric == metric]


def candidate(stream_bytes_per_s: float = 0.0, mmq_ops_per_cycle: float = 0.0,
              stream_bytes_per_cycle: float = 0.0) -> Efficiency:
    """Today's model with llama.cpp's per-SM constants set (0: that bound off)."""
    return Efficiency.shipped().with_kernels(ggml_sm_stream_bytes_per_s=stream_bytes_per_s,
                                             ggml_mmq_ops_per_cycle=mmq_ops_per_cycle,
                                             ggml_sm_stream_bytes_per_cycle=stream_bytes_per_cycle)


def scores(rows: list, grid: tuple[float, ...], make) -> dict[float, tuple[float, float]]:
    """{point: (mean squared log error, median |error|)} of `make(point)` on `rows`, for every grid point and 0."""
    out = {}
    for point in (0.0, *grid):
        preds = [predict_row(r, make(point)) for r in rows]
        log_err = np.log([p.predicted / p.measured for p in preds])
        out[point] = (float(np.mean(log_err ** 2)), float(np.median([p.error for p in preds])))
    return out


def stream_scores() -> dict[float, tuple[float, float]]:
    return scores(fit_rows("tokens_per_s_per_user"), STREAM_GRID, lambda b: candidate(stream_bytes_per_s=b))


def mmq_scores() -> dict[float, tuple[float, float]]:
    return scores(fit_rows("time_to_first_token_s"), MMQ_GRID, lambda r: candidate(mmq_ops_per_cycle=r))


def cycle_scores() -> dict[float, tuple[float, float]]:
    rows = fit_rows("tokens_per_s_per_user", ("llamacpp-cuda", "llamacpp-sm"))
    return scores(rows, CYCLE_GRID, lambda c: candidate(mmq_ops_per_cycle=520.0, stream_bytes_per_cycle=c))


def least(table: dict[float, tuple[float, float]]) -> float:
    """The grid point of least mean squared log error (0, the model without the bound, is not a candidate)."""
    return min((p for p in table if p), key=lambda p: table[p][0])


if __name__ == "__main__":
    for name, table, unit in (("A: MMVQ stream per SM, 6 tg128 rows", stream_scores(), "B/s"),
                              ("B: MMQ operations per SM per cycle, 6 pp512 rows", mmq_scores(), ""),
                              ("A2: MMVQ bytes per SM per cycle, 36 tg128 rows", cycle_scores(), "B")):
        best = least(table)
        print(name)
        for point in (0.0, best):
            msle, median = table[point]
            print(f"  {point:.4g} {unit}  MSLE {msle:.4f}  median |error| {100 * median:.1f} %")
