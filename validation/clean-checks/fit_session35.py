"""Session 35's fit of a tensor-parallel group's barrier wait (`KernelCurves.tp_sync_loss`,
`core.roofline.tp_sync_loss`) by the rule of `trtllm010/inclusion-rule.md`: least mean squared log error on the rows
it changes (a TP group of two or more NVLink GPUs) among the TensorRT-LLM tables today's model was already fitted on or
judged with (0.13, 0.14, 0.15, 0.17, v0.20: the development set), each measurement once:

    python validation/clean-checks/fit_session35.py

Grid 0 … 0.40 by 0.01; each point is today's model (`Efficiency.shipped()`) with that loss, 0 the model without it.
"""

from __future__ import annotations

import importlib.util
import tempfile
from pathlib import Path

import numpy as np

from kokuban.core.roofline import tp_sync_loss
from kokuban.specs.hardware import Efficiency
from kokuban.usecases.validation import read_measurements
from kokuban.validation.accuracy import predict_row, replica_layout

HERE = Path(__file__).parent
DEVELOPMENT = ("trtllm013", "trtllm014", "trtllm015", "trtllm017", "trtllm020")
GRID = tuple(round(0.01 * i, 2) for i in range(41))

_spec = importlib.util.spec_from_file_location("session33", HERE / "session33.py")
S33 = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(S33)


def candidate(loss: float) -> Efficiency:
    """Today's model with a TP group's barrier wait at `loss` of its step's body (0: none)."""
    return Efficiency.shipped().with_kernels(tp_sync_loss=loss)


def changed(rows: list) -> list:
    """The rows whose deployment a loss would change (a TP group of two or more GPUs on NVLink)."""
    probe = candidate(0.1)
    return [r for r in rows if tp_sync_loss(replica_layout(r, probe)[0]) > 0]


def fit_rows() -> list:
    """The development rows the loss changes, each measurement once (`session32.distinct_rows`)."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "rows.toml"
        path.write_text(S33.TABLE.toml(S33.S32.distinct_rows(list(DEVELOPMENT))))
        return changed(read_measurements(str(path)))


def scores(rows: list) -> dict[float, tuple[float, float, float]]:
    """{loss: (mean squared log error, median |error|, median signed error)} on `rows`, for every grid point."""
    out = {}
    for loss in GRID:
        preds = [predict_row(r, candidate(loss)) for r in rows]
        log_err = np.log([p.predicted / p.measured for p in preds])
        out[loss] = (float(np.mean(log_err ** 2)), float(np.median([p.error for p in preds])),
                     float(np.median([p.signed_error for p in preds])))
    return out


def least(table: dict[float, tuple[float, float, float]]) -> float:
    return min((p for p in table if p), key=lambda p: table[p][0])


if __name__ == "__main__":
    rows = fit_rows()
    table = scores(rows)
    best = least(table)
    print(f"{len(rows)} development rows of TP groups on NVLink")
    for loss in (0.0, best):
        msle, median, signed = table[loss]
        print(f"  loss {loss:.2f}  MSLE {msle:.4f}  median |error| {100 * median:.1f} %  "
              f"median signed {100 * signed:+.1f} %")


def missing_share(tables: tuple[str, ...] = DEVELOPMENT) -> dict[int, tuple[int, float, float]]:
    """What the rule saw (`trtllm010/inclusion-rule.md`), with session 34's final model (no barrier wait): over the
    in-flight rows of dense models on H100, H200, A100 and B200 in `tables` (each table's rows as printed), by TP
    degree: (rows, median of (measured step − predicted step) ÷ predicted step, median of the collectives' share of the
    predicted step). A step is batch ÷ throughput at the predicted batch."""
    from kokuban.specs.hardware import PROFILES

    before, out = PROFILES["kernel-2026-12-05c"](), {}
    for check in tables:
        for r in read_measurements(str(HERE / check / "rows.toml")):
            if r.accelerator not in ("h100-sxm", "h200", "a100-80gb", "b200") or r.model.startswith(
                    ("mixtral", "llama-4")):
                continue
            p = predict_row(r, before)
            if p.phase != "inflight":
                continue
            predicted_s, measured_s = p.predicted, p.measured  # the same batch: steps scale as 1 ÷ throughput
            comm_share = float(p.step.terms.comm_s / p.step.step_time_s)
            out.setdefault(r.num_gpus, []).append((predicted_s / measured_s - 1.0, comm_share))
    return {tp: (len(v), float(np.median([m for m, _ in v])), float(np.median([c for _, c in v])))
            for tp, v in sorted(out.items())}
