"""The fit of the bytes/s one SM draws through MMVQ (`KernelCurves.ggml_sm_stream_bytes_per_s`, candidate A, not
shipped) by the rule of `evidence/sources/llamacpp_sm/inclusion_rule.md`: least mean squared log error on the six
tg128 rows of `evidence/sources/llamacpp_cuda/`, grid 2.0e9 … 20.0e9 B/s by 0.1e9, MMQ's rate off (0: without it):

    python -m evidence.changes.ggml_mmvq_stream_per_sm.fit
"""

from __future__ import annotations

from evidence.changes import grid
from evidence.changes.ggml_per_sm import candidate, fit_rows

GRID = tuple(round(2.0e9 + 0.1e9 * i, -6) for i in range(181))  # B/s per SM


def scores() -> dict[float, tuple[float, float, float]]:
    return grid.scores(fit_rows("tokens_per_s_per_user"), (0.0, *GRID), lambda b: candidate(stream_bytes_per_s=b))


if __name__ == "__main__":
    grid.show("MMVQ stream per SM, 6 tg128 rows", scores(), "B/s")
