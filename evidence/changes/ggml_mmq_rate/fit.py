"""The fit of MMQ's operations per SM per cycle (`KernelCurves.ggml_mmq_ops_per_cycle`) by the rule of
`evidence/sources/llamacpp_sm/inclusion_rule.md`: least mean squared log error on the six pp512 rows of
`evidence/sources/llamacpp_cuda/`, grid 50 … 3000 by 5, MMVQ's stream bound off (0: the model without the rate):

    python -m evidence.changes.ggml_mmq_rate.fit
"""

from __future__ import annotations

from evidence.changes import grid
from evidence.changes.ggml_per_sm import candidate, fit_rows

GRID = tuple(50.0 + 5.0 * i for i in range(591))  # operations per SM per cycle


def scores() -> dict[float, tuple[float, float, float]]:
    return grid.scores(fit_rows("time_to_first_token_s"), (0.0, *GRID), lambda r: candidate(mmq_ops_per_cycle=r))


if __name__ == "__main__":
    grid.show("MMQ operations per SM per cycle, 6 pp512 rows", scores())
