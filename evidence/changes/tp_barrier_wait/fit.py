"""The fit of a tensor-parallel group's barrier wait ℓ (`KernelCurves.tp_sync_loss`, `core.roofline.tp_sync_loss`)
by the rule of `evidence/sources/trtllm010/inclusion_rule.md`: least mean squared log error on the rows it changes
(a TP group of two or more NVLink GPUs) of the development tables (TensorRT-LLM 0.13, 0.14, 0.15, 0.17, v0.20), each
measurement once; grid 0 … 0.40 by 0.01, each point the shipped model with that ℓ (0: without the wait):

    python -m evidence.changes.tp_barrier_wait.fit
"""

from __future__ import annotations

import numpy as np

from evidence.changes import grid
from evidence.pool import measurement
from evidence.sources import measurements
from kokuban.core.roofline import tp_sync_loss
from kokuban.specs.hardware import Efficiency
from kokuban.validation.accuracy import predict_row, replica_layout

DEVELOPMENT = ("trtllm013", "trtllm014", "trtllm015", "trtllm017", "trtllm020")
JUDGES = ("trtllm010", "trtllm011")
GRID = tuple(round(0.01 * i, 2) for i in range(41))
LOSS = 0.14  # the grid's least: the shipped `KernelCurves.tp_sync_loss`


def candidate(loss: float) -> Efficiency:
    """The shipped model with a TP group's barrier wait at `loss` of its step's body (0: none)."""
    return Efficiency.shipped().with_kernels(tp_sync_loss=loss)


def changed(rows: list) -> list:
    """The rows whose deployment a loss would change (a TP group of two or more GPUs on NVLink)."""
    probe = candidate(0.1)
    return [r for r in rows if tp_sync_loss(replica_layout(r, probe)[0]) > 0]


def distinct(sources: tuple[str, ...], seen_in: tuple[str, ...] = ()) -> list:
    """The rows of `sources`, each measurement once (`evidence.pool.measurement`), less those `seen_in` holds."""
    seen, out = {measurement(r) for s in seen_in for r in measurements(s)}, []
    for source in sources:
        for r in measurements(source):
            if measurement(r) not in seen:
                seen.add(measurement(r))
                out.append(r)
    return out


def fit_rows() -> list:
    """The development rows the loss changes, each measurement once (1,329)."""
    return changed(distinct(DEVELOPMENT))


def judging_rows() -> list:
    """The judges' rows: TensorRT-LLM 0.10's and 0.11's tables, each measurement once, none a development table
    holds (318)."""
    return distinct(JUDGES, DEVELOPMENT)


def scores(rows: list | None = None) -> dict[float, tuple[float, float, float]]:
    return grid.scores(fit_rows() if rows is None else rows, GRID, candidate)


def missing_share(tables: tuple[str, ...] = DEVELOPMENT) -> dict[int, tuple[int, float, float]]:
    """What the rule saw, with the model without the wait: over the in-flight rows of dense models on H100, H200, A100
    and B200 in `tables` (each table's rows as printed), by TP degree: (rows, median of (measured step − predicted
    step) ÷ predicted step, median of the collectives' share of the predicted step). A step is batch ÷ throughput at
    the predicted batch."""
    before, out = candidate(0.0), {}
    for source in tables:
        for r in measurements(source):
            if r.accelerator not in ("h100-sxm", "h200", "a100-80gb", "b200") or r.model.startswith(
                    ("mixtral", "llama-4")):
                continue
            p = predict_row(r, before)
            if p.phase != "inflight":
                continue
            comm_share = float(p.step.terms.comm_s / p.step.step_time_s)  # same batch: steps scale as 1 ÷ throughput
            out.setdefault(r.num_gpus, []).append((p.predicted / p.measured - 1.0, comm_share))
    return {tp: (len(v), float(np.median([m for m, _ in v])), float(np.median([c for _, c in v])))
            for tp, v in sorted(out.items())}


if __name__ == "__main__":
    rows = fit_rows()
    grid.show(f"{len(rows)} development rows of TP groups on NVLink: the barrier wait ℓ", scores(rows))
