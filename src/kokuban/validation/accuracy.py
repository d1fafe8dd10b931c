"""kokuban's error against published serving results (data/published_results.toml), and error statistics.

How each published row is predicted from the core (pure functions below, one rule each):

- Unknown lengths (0 in the data): input `UNKNOWN_INPUT_TOKENS`, output `UNKNOWN_OUTPUT_TOKENS`.
- Parallel layout (`replica_layout`): expert_parallel → one EP group over all `num_gpus`; otherwise
  tensor parallel of `tensor_parallel` GPUs, or when that is 0 (not stated) the smallest power of two
  whose TP group holds the weights and one request; `num_gpus ÷ tp` independent replicas. A row
  whose model does not fit on its `num_gpus` (a per-node figure of a larger deployment) is
  predicted on the smallest power-of-two count that fits one request, scaled by num_gpus ÷ that
  count (so `replicas` may be a fraction).
- `tokens_per_s_per_user` = 1 ÷ decode step at the row's batch (1 if not stated) and the mean
  context of the generation, input + output/2. Prefill is left out (engines quote decode speed).
- `output_tokens_per_s`: replicas × batch·output ÷ (prefill of the batch + the output−1 decode steps)
  (`estimate.generation`), batch = the stated one, or for batch 0 (engine-chosen) the largest that
  fits at input+output tokens (`memory.max_batch`), capped at `OFFLINE_BATCH_CAP`. Rows whose engine
  is a prefill/decode-disaggregated deployment are decode nodes: decode steps only.
- per_gpu rows: the prediction ÷ num_gpus.
- Regime: the bound of the phase that takes longest (prefill → its bound, usually 'compute';
  else the decode step at the mean context).
Errors are relative, |predicted − measured| ÷ measured, on the metric itself (tokens/s).
"""

from __future__ import annotations

import tomllib
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from kokuban.errors import KokubanError
from kokuban.specs.hardware import Efficiency

UNKNOWN_INPUT_TOKENS = 512  # assumption where a source does not state its prompt length
UNKNOWN_OUTPUT_TOKENS = 256  # assumption where a source does not state its output length
OFFLINE_BATCH_CAP = 2048  # TensorRT-LLM's default max_batch_size; vLLM's max_num_seqs is lower (256–1024)
METRICS = ("output_tokens_per_s", "tokens_per_s_per_user")


# ---- error statistics (shared by validate, accuracy, calibrate) -------------------------------------
def relative_error(predicted: Any, measured: Any) -> np.ndarray:
    """|predicted − measured| ÷ measured (a fraction; 0.1 = 10 %)."""
    p, m = np.asarray(predicted, dtype=np.float64), np.asarray(measured, dtype=np.float64)
    return np.abs(p - m) / m


def _stats(err: np.ndarray, signed: np.ndarray) -> dict[str, Any]:
    if err.size == 0:
        return {"count": 0}
    return {"count": int(err.size), "median_abs_error": float(np.median(err)),
            "p90_abs_error": float(np.percentile(err, 90)), "max_abs_error": float(err.max()),
            "median_signed_error": float(np.median(signed))}


def error_summary(measured: Sequence[float], predicted: Sequence[float], regimes: Sequence[str] | None = None,
                  groups: Sequence[str] | None = None) -> dict[str, Any]:
    """Median, 90th percentile and max of the relative error, overall and split by regime (and group).

    `median_signed_error` > 0 means kokuban predicts too high a value on the median row.
    """
    m, p = np.asarray(measured, dtype=np.float64), np.asarray(predicted, dtype=np.float64)
    err, signed = relative_error(p, m), (p - m) / m
    out = _stats(err, signed)
    for key, labels in (("by_regime", regimes), ("by_phase", groups)):
        if labels is not None:
            lab = np.asarray(labels)
            out[key] = {str(k): _stats(err[lab == k], signed[lab == k]) for k in sorted(set(lab.tolist()))}
    return out


# ---- the dataset --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PublishedResult:
    """One row of data/published_results.toml (0 = unknown for lengths, batch, tensor_parallel)."""

    id: str
    model: str
    accelerator: str
    num_gpus: int
    tensor_parallel: int
    expert_parallel: bool
    weights_dtype: str
    kv_dtype: str
    engine: str
    metric: str
    value: float
    per_gpu: bool
    batch: int
    input_tokens: int
    output_tokens: int
    scenario: str
    source: str


def load_published(path: str | None = None) -> list[PublishedResult]:
    """The bundled published results (or a file in the same schema)."""
    from kokuban.specs.catalog import DATA

    try:
        if path:
            with open(path, "rb") as fh:
                data = tomllib.load(fh)
        else:
            with (DATA / "published_results.toml").open("rb") as fh:
                data = tomllib.load(fh)
    except OSError as exc:
        raise KokubanError(f"cannot read published results '{path}': {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise KokubanError(f"published results file is not valid TOML: {exc}") from None
    keys = PublishedResult.__dataclass_fields__
    rows = [PublishedResult(**{k: r[k] for k in keys}) for r in data.get("result", [])]
    for r in rows:
        if r.metric not in METRICS:
            raise KokubanError(f"published result '{r.id}' has metric '{r.metric}'; allowed: {', '.join(METRICS)}")
    return rows


# ---- the rules ------------------------------------------------------------------------------------------
def assumed_lengths(row: PublishedResult) -> tuple[int, int]:
    """(input, output) tokens, unknowns (0) replaced by UNKNOWN_INPUT_TOKENS / UNKNOWN_OUTPUT_TOKENS."""
    return row.input_tokens or UNKNOWN_INPUT_TOKENS, row.output_tokens or UNKNOWN_OUTPUT_TOKENS


def is_decode_only(row: PublishedResult) -> bool:
    """A decode node of a prefill/decode-disaggregated deployment (its engine string says so)."""
    return "PD disaggregation" in row.engine


def replica_layout(row: PublishedResult, efficiency: Efficiency | None = None):
    """(Deployment of one replica, number of replicas) for the row (see the module docstring)."""
    from kokuban.core.memory import GPU_COUNTS, max_batch
    from kokuban.specs.catalog import load_accelerator, load_model
    from kokuban.specs.deployment import Deployment

    model, acc = load_model(row.model), load_accelerator(row.accelerator)

    def make(n: int, layout: str) -> Deployment:
        return Deployment.make(model, acc, n, layout=layout, weights_dtype=row.weights_dtype, kv_dtype=row.kv_dtype,
                               efficiency=efficiency)

    inp, out = assumed_lengths(row)
    if row.expert_parallel:
        n = next(
            (
                k
                for k in (row.num_gpus, *GPU_COUNTS)
                if k >= row.num_gpus and int(max_batch(make(k, "ep"), inp + out)) >= 1
            ),
            None,
        )
        if n is None:
            raise KokubanError(
                f"published result '{row.id}': {row.model} fits on no EP group up to {GPU_COUNTS[-1]} GPUs"
            )
        return make(n, "ep"), row.num_gpus / n
    tp = row.tensor_parallel
    if not tp:
        tp = next((n for n in (1, 2, 4, 8, 16) if n <= row.num_gpus and row.num_gpus % n == 0
                   and int(max_batch(make(n, "tp"), inp + out)) >= 1), row.num_gpus)
    if row.num_gpus % tp:
        raise KokubanError(f"published result '{row.id}': {row.num_gpus} GPUs is not a multiple of TP {tp}")
    return make(tp, "tp"), row.num_gpus // tp


def offline_batch(dep: Any, row: PublishedResult) -> int:
    """The stated batch, else the largest that fits at input+output tokens, capped at OFFLINE_BATCH_CAP.

    A stated batch larger than the replica holds is split evenly across replicas upstream: see
    `predict_row` (batch per replica = stated ÷ replicas).
    """
    from kokuban.core.memory import max_batch

    inp, out = assumed_lengths(row)
    fit = int(max_batch(dep, inp + out))
    if fit < 1:
        raise KokubanError(
            f"published result '{row.id}': {row.model} does not fit on {dep.num_gpus}× {dep.accelerator.id}"
        )
    return min(fit, OFFLINE_BATCH_CAP)


@dataclass(frozen=True)
class Prediction:
    """kokuban's value for one published row and how it was obtained."""

    id: str
    metric: str
    measured: float
    predicted: float
    error: float
    regime: str
    batch_per_replica: int
    replicas: float
    tp_or_ep: str
    input_tokens: int
    output_tokens: int
    lengths_assumed: bool

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def predict_row(row: PublishedResult, efficiency: Efficiency | None = None) -> Prediction:
    """Predict the row's metric (rules in the module docstring)."""
    from kokuban.core.generation import generation
    from kokuban.core.roofline import decode_step, prefill

    dep, replicas = replica_layout(row, efficiency)
    inp, out = assumed_lengths(row)
    mid_context = inp + out / 2
    if row.metric == "tokens_per_s_per_user":
        batch = max(int(row.batch // replicas), 1) if row.batch else 1
        step = decode_step(dep, batch, mid_context)
        value, regime = 1.0 / float(step.step_time_s), str(step.bound)
    else:
        batch = max(int(row.batch // replicas), 1) if row.batch else offline_batch(dep, row)
        step = decode_step(dep, batch, mid_context)
        if is_decode_only(row):
            value, regime = replicas * batch / float(step.step_time_s), str(step.bound)
        else:
            gen = generation(dep, batch, inp, out)
            value = replicas * gen.output_tokens_per_s
            regime = str(prefill(dep, batch, inp).bound) if gen.ttft_s > gen.decode_time_s else str(step.bound)
    if row.per_gpu:
        value /= row.num_gpus
    return Prediction(
        id=row.id,
        metric=row.metric,
        measured=row.value,
        predicted=value,
        error=float(relative_error(value, row.value)),
        regime=regime,
        batch_per_replica=int(batch),
        replicas=replicas,
        tp_or_ep=f"{dep.layout}{dep.num_gpus}",
        input_tokens=inp,
        output_tokens=out,
        lengths_assumed=not (row.input_tokens and row.output_tokens),
    )


@dataclass(frozen=True)
class Accuracy:
    """Every published row predicted, the error summary (overall, by regime, by metric) and the fractions used."""

    predictions: tuple[Prediction, ...]
    summary: dict[str, Any]
    efficiency: Efficiency

    def as_dict(self) -> dict[str, Any]:
        return {"rows": [p.as_dict() for p in self.predictions], "summary": self.summary,
                "efficiency": self.efficiency.as_dict()}


def accuracy(efficiency: Efficiency | None = None, rows: Sequence[PublishedResult] | None = None) -> Accuracy:
    """Every published row predicted at `efficiency` (default: the shipped calibrated `Efficiency()`, what
    every estimate uses), and the error summary (overall, by regime, by metric)."""
    efficiency = efficiency or Efficiency()
    rows = load_published() if rows is None else rows
    preds = tuple(predict_row(r, efficiency) for r in rows)
    summary = error_summary([p.measured for p in preds], [p.predicted for p in preds], [p.regime for p in preds],
                            [p.metric for p in preds])
    summary["by_metric"] = summary.pop("by_phase")
    return Accuracy(predictions=preds, summary=summary, efficiency=efficiency)
