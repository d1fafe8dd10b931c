"""The fit of MMVQ's bytes per SM per clock cycle (`KernelCurves.ggml_sm_stream_bytes_per_cycle`, candidate A2) by
the rule of `evidence/sources/llamacpp_xd/inclusion_rule.md`: least mean squared log error on every scoreboard decode
row read before its judges (the six tg128 rows of `evidence/sources/llamacpp_cuda/` and the thirty of
`evidence/sources/llamacpp_sm/`), grid 1.00 … 12.00 by 0.05, MMQ's rate as shipped (0: without the bound):

    python -m evidence.changes.ggml_mmvq_stream_per_cycle.fit
"""

from __future__ import annotations

from evidence.changes import grid
from evidence.changes.ggml_per_sm import MMQ_OPS_PER_CYCLE, candidate, fit_rows

GRID = tuple(round(1.0 + 0.05 * i, 2) for i in range(221))  # bytes per SM per cycle


def scores() -> dict[float, tuple[float, float, float]]:
    rows = fit_rows("tokens_per_s_per_user", ("llamacpp_cuda", "llamacpp_sm"))
    return grid.scores(rows, (0.0, *GRID),
                       lambda c: candidate(mmq_ops_per_cycle=MMQ_OPS_PER_CYCLE, stream_bytes_per_cycle=c))


if __name__ == "__main__":
    grid.show("MMVQ bytes per SM per cycle, 36 tg128 rows", scores(), "B")
