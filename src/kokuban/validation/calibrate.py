"""Fit the achievable fractions (`Efficiency`) to measurements, on one subset, judged on another.

    loss(θ) = mean over training rows of ln(predicted_θ ÷ measured)²    (published rows: Huber's, `PUBLISHED_LOSS`)

θ is a few `Efficiency` fields (compute, memory, kv_memory, interconnect, overlap fractions in (0, 1]; step_overhead_s
≥ 0 seconds). Fractions are searched as logistic(z), the overhead as 10^z seconds, with SciPy's
Nelder–Mead from several starts (the core's defaults among them); the best fit is kept. The loss is
symmetric in over- and under-prediction and not dominated by the slowest rows. Two more robust losses
(`LOSSES`: Huber on the log ratio, and its absolute value) can be compared with it over several splits
(`evidence/fractions --loss`). Fits to the published rows use Huber's (`PUBLISHED_LOSS`, from 2026-12-04:
it beat the squared loss on the training median of all five splits, evidence/fractions/); fits to a `validate`
report keep the squared one.

Rows are split by a hash of their id (`holdout_mask`), so a row's side does not depend on the order
of the file. Errors are reported before (the efficiency given) and after, on the held-out rows only; the
held-out summaries carry a bootstrap interval of each median |error| (`accuracy.add_intervals`), computed on
the held-out rows alone, by regime (and, for published rows, by workload, weights dtype and engine).

The starting fractions are an argument everywhere here, with no default: which fractions a calibration
starts from is the request's policy (`usecases.validation.CalibrateRequest`: the textbook ones).
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from kokuban.errors import KokubanError
from kokuban.progress import Progress, tick
from kokuban.specs.hardware import Efficiency
from kokuban.validation.accuracy import add_intervals, error_summary

FRACTIONS = ("compute", "memory", "interconnect", "kv_memory", "overlap", "kv_reread", "dequant_memory")
SECONDS = ("step_overhead_s", "collective_latency_s", "loop_overhead_s")
MIN_SECONDS, MAX_SECONDS = 1e-7, 1.0
#: The fields fitted when none are named: published rows pin down the serving fractions and the fixed step
#: cost; a validate report (one device, no interconnect) the KV-read fraction and the overlap as well.
PUBLISHED_PARAMS = ("compute", "memory", "interconnect", "step_overhead_s")
#: Fitted with the kernel profile (`Efficiency.kernel_calibrated`): its curves set the collectives and the GEMM
#: shape by dtype and token count, so the rows fit the bf16 GEMM fraction the dtype ratios scale, the weight-read
#: fraction and the fixed step cost. Each field earns its place on the training rows (means of five splits): compute
#: fitted rather than held at a scalar-set value (which blends every dtype, mostly fp8, so that the fp8 ratio is
#: applied twice): training median 10.3 % against 17.2 %; `kv_reread`, the share of a pre-XQA TensorRT-LLM decode
#: kernel's repeated KV-head loads that reach HBM (`core.bytes.decode_kv_read_factor`): training median 9.48 % →
#: 8.51 %, p90 38.9 % → 25.4 % (Huber loss, on 77 rows; it fitted 0.47–0.51 on every split); `dequant_memory` (fused
#: dequantising kernels) and `loop_overhead_s` (the fixed step of single-request decode loops,
#: `accuracy.LOOP_ENGINES`): training median 11.3 % → 8.7 %, p90 39.1 % → 25.8 % (on 100 rows).
KERNEL_PARAMS = ("compute", "memory", "step_overhead_s", "kv_reread", "dequant_memory", "loop_overhead_s")
VALIDATION_PARAMS = ("compute", "memory", "kv_memory", "overlap", "step_overhead_s")


def holdout_mask(ids: Sequence[str], fraction: float = 1 / 3, seed: int = 0) -> np.ndarray:
    """True for held-out rows: crc32("seed:id") mod 10 000 < fraction·10 000 (stable, order-free)."""
    if not 0 < fraction < 1:
        raise KokubanError(
            f"held-out fraction must be between 0 and 1, got {fraction!r}", field="fraction", value=fraction
        )
    return np.array([zlib.crc32(f"{seed}:{i}".encode()) % 10_000 < fraction * 10_000 for i in ids], dtype=bool)


def param_value(eff: Efficiency, name: str) -> float:
    """The value of a fittable field (kv_memory unset reads as the memory fraction it follows, loop_overhead_s as
    the step overhead)."""
    if name == "kv_memory":
        return eff.kv_memory_fraction
    return eff.loop_overhead if name == "loop_overhead_s" else float(getattr(eff, name))


def encode_params(eff: Efficiency, params: Sequence[str]) -> np.ndarray:
    """`params` of `eff` as the optimiser's free variables: a fraction f as logit(f) (clipped to 1e-4…1 − 1e-4),
    seconds as log10 (clipped to MIN_SECONDS…MAX_SECONDS). `decode_params` is its inverse."""
    z = []
    for p in params:
        v = param_value(eff, p)
        if p in FRACTIONS:
            v = min(max(v, 1e-4), 1 - 1e-4)
            z.append(np.log(v / (1 - v)))
        else:
            z.append(np.log10(min(max(v, MIN_SECONDS), MAX_SECONDS)))
    return np.asarray(z, dtype=np.float64)


def decode_params(z: np.ndarray, base: Efficiency, params: Sequence[str]) -> Efficiency:
    """`base` with `params` set from the free variables `z` (`encode_params`'s inverse; seconds at the floor
    MIN_SECONDS read as 0)."""
    changes = {}
    for p, v in zip(params, z, strict=True):
        if p in FRACTIONS:
            changes[p] = float(1 / (1 + np.exp(-v)))
        else:
            s = float(10 ** np.clip(v, np.log10(MIN_SECONDS), np.log10(MAX_SECONDS)))
            changes[p] = 0.0 if s <= MIN_SECONDS * 1.0001 else s
    return base.updated(**changes)


def _log_ratio(predicted: np.ndarray, measured: np.ndarray) -> np.ndarray:
    """ln(predicted ÷ measured), row by row: the error every loss below is a function of."""
    return np.log(np.asarray(predicted) / np.asarray(measured))


def log_loss(predicted: np.ndarray, measured: np.ndarray) -> float:
    """mean(ln(predicted ÷ measured)²): the shipped fits' loss."""
    return float(np.mean(_log_ratio(predicted, measured) ** 2))


#: The Huber loss's corner on |ln(predicted ÷ measured)|: 0.1 ≈ a 10 % error, the issue's median bar.
HUBER_DELTA = 0.1


def log_huber_loss(predicted: np.ndarray, measured: np.ndarray) -> float:
    """mean of r²/2 for r ≤ δ, δ(r − δ/2) beyond, r = |ln(predicted ÷ measured)|, δ = `HUBER_DELTA`: quadratic
    near the fit, linear in the tails, so a row 80 % off weighs as much as ~12 rows 10 % off instead of ~38."""
    r = np.abs(_log_ratio(predicted, measured))
    d = HUBER_DELTA
    return float(np.mean(np.where(r <= d, 0.5 * r * r, d * (r - 0.5 * d))))


def log_abs_loss(predicted: np.ndarray, measured: np.ndarray) -> float:
    """mean(|ln(predicted ÷ measured)|): the median-fitting loss (not smooth; Nelder–Mead copes, slowly)."""
    return float(np.mean(np.abs(_log_ratio(predicted, measured))))


Loss = Callable[[np.ndarray, np.ndarray], float]
#: The losses a calibration can minimise, by name (`evidence/fractions --loss`), compared on 2026-12-04
#: (docs/history/validation-journal.md).
LOSSES: dict[str, Loss] = {"log_squared": log_loss, "log_huber": log_huber_loss, "log_abs": log_abs_loss}
#: The loss of fits to the published rows (`calibrate_published`, `profile_procedures`): before step-v3 the squared
#: log error; Huber's since it beat that on the training median of all five splits (9.48 % against 11.21 %, mean of
#: the splits, 77 rows; with `kv_reread` fitted 8.51 % against 10.02 %).
PUBLISHED_LOSS = "log_huber"


def fit_efficiency(predict: Callable[[Efficiency], np.ndarray], measured: Sequence[float], params: Sequence[str],
                   start: Efficiency, progress: Progress | None = None,
                   loss_of: Loss = log_loss) -> tuple[Efficiency, float]:
    """The Efficiency (only `params` changed from `start`) minimising `loss_of` (`log_loss`) on these rows.
    `progress(iterations, budget)`: Nelder-Mead iterations of the four starts' budget (a start that converges
    early counts its whole share)."""
    from scipy.optimize import minimize

    bad = [p for p in params if p not in FRACTIONS + SECONDS]
    if bad or not params:
        raise KokubanError(f"cannot fit {bad or 'nothing'}; allowed parameters: {', '.join(FRACTIONS + SECONDS)}",
                           field="params", value=list(params))
    m = np.asarray(measured, dtype=np.float64)

    def loss(z: np.ndarray) -> float:
        return loss_of(predict(decode_params(z, start, params)), m)

    starts = [encode_params(start, params)]
    for frac, secs in ((0.9, 1e-4), (0.4, 1e-3), (0.7, 1e-2)):
        alt = start.updated(**{p: (frac if p in FRACTIONS else secs) for p in params})
        starts.append(encode_params(alt, params))
    best = None
    maxiter = 400 * len(params)
    budget = maxiter * len(starts)
    for i, z0 in enumerate(starts):
        iterations = [i * maxiter]

        def step(_: Any, count: list[int] = iterations) -> None:
            count[0] += 1
            tick(progress, min(count[0], budget), budget)

        res = minimize(loss, z0, method="Nelder-Mead", callback=step,
                       options={"xatol": 1e-3, "fatol": 1e-6, "maxiter": maxiter})
        tick(progress, (i + 1) * maxiter, budget)
        if best is None or res.fun < best.fun:
            best = res
    return decode_params(best.x, start, params), float(best.fun)


@dataclass(frozen=True)
class Calibration:
    """Fitted efficiency and the error on held-out rows before and after."""

    source: str
    params: tuple[str, ...]
    before: Efficiency
    after: Efficiency
    train_rows: int
    holdout_rows: int
    holdout_before: dict[str, Any]
    holdout_after: dict[str, Any]
    train_before: dict[str, Any]
    train_after: dict[str, Any]
    holdout_ids: tuple[str, ...]
    rows: tuple[dict[str, Any], ...] = ()  # per row: id, measured, predicted before/after, regime after, held_out

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        def fields_of(eff: Efficiency) -> dict[str, Any]:  # as set (kv_memory may be None); no curves: no key
            return {k: v for k, v in asdict(eff).items() if not (k == "kernels" and v is None)}

        out["before"], out["after"] = fields_of(self.before), fields_of(self.after)
        return out


def calibrate(
    source: str,
    ids: Sequence[str],
    measured: Sequence[float],
    predict: Callable[[Efficiency], tuple[np.ndarray, np.ndarray]],
    params: Sequence[str],
    *,
    start: Efficiency,
    holdout_fraction: float = 1 / 3,
    seed: int = 0,
    held_out: Sequence[bool] | None = None,
    groups: Callable[[Efficiency], dict[str, list[tuple[str, ...]]]] | None = None,
    progress: Progress | None = None,
    loss_of: Loss = log_loss,
    direction: Sequence[float] | None = None,
) -> Calibration:
    """Split, fit on the training rows, and summarise both sides before and after.

    `predict(eff)` returns (predicted values, regime labels) for all rows, in the order of `ids`.
    `direction` (per row, `accuracy.speed_direction`) signs the summaries' signed errors; default +1.
    The split is `holdout_mask(ids, holdout_fraction, seed)` unless `held_out` gives it row by row.
    `groups(eff)`, if given, names further splits of the held-out summaries ({key: per row, its groups}).
    `progress` follows the fit (`fit_efficiency`, minimising `loss_of`).
    """
    m = np.asarray(measured, dtype=np.float64)
    held = holdout_mask(ids, holdout_fraction, seed) if held_out is None else np.asarray(held_out, dtype=bool)
    if held.all() or not held.any():
        raise KokubanError(f"the split left {int((~held).sum())} training and {int(held.sum())} held-out rows; "
                           "change the held-out fraction, the seed or the held-out field", field="holdout_fraction",
                           value=holdout_fraction)
    after, _ = fit_efficiency(lambda e: predict(e)[0][~held], m[~held], params, start, progress, loss_of)
    (pred_b, reg_b), (pred_a, reg_a) = (tuple(np.asarray(x) for x in predict(e)) for e in (start, after))

    sign = np.ones_like(m) if direction is None else np.asarray(direction, dtype=np.float64)

    def side(pred: np.ndarray, regime: np.ndarray, mask: np.ndarray) -> dict[str, Any]:
        return error_summary(m[mask], pred[mask], regime[mask], direction=sign[mask])

    def held_side(pred: np.ndarray, regime: np.ndarray, eff: Efficiency) -> dict[str, Any]:
        """The held-out summary with bootstrap intervals, on held-out rows only."""
        extra = {k: [g for g, h in zip(v, held, strict=True) if h] for k, v in (groups(eff) if groups else {}).items()}
        return add_intervals(side(pred, regime, held), m[held], pred[held], {"by_regime": regime[held]}, extra,
                             sign[held])

    rows = tuple({"id": str(i), "measured": float(v), "predicted_before": float(b), "predicted_after": float(a),
                  "regime_after": str(r), "held_out": bool(h)}
                 for i, v, b, a, r, h in zip(ids, m, pred_b, pred_a, reg_a, held, strict=True))
    return Calibration(
        source=source, params=tuple(params), before=start, after=after, train_rows=int((~held).sum()),
        holdout_rows=int(held.sum()), holdout_before=held_side(pred_b, reg_b, start),
        holdout_after=held_side(pred_a, reg_a, after),
        train_before=side(pred_b, reg_b, ~held), train_after=side(pred_a, reg_a, ~held),
        holdout_ids=tuple(i for i, h in zip(ids, held, strict=True) if h), rows=rows,
    )


# ---- the two sources -------------------------------------------------------------------------------
def calibrate_published(params: Sequence[str] = PUBLISHED_PARAMS, *, start: Efficiency, holdout_fraction: float = 1 / 3,
                        seed: int = 0, progress: Progress | None = None,
                        loss_of: Loss | None = None, rows: Sequence[Any] | None = None) -> Calibration:
    """Fit to data/published_results.toml (rules of `accuracy.predict_row`), or to `rows` of it, minimising `loss_of`
    (default `PUBLISHED_LOSS`); `progress` follows the fit."""
    from kokuban.validation.accuracy import load_published, predict_row, prediction_groups, speed_direction

    rows = load_published() if rows is None else list(rows)

    def predict(eff: Efficiency) -> tuple[np.ndarray, np.ndarray]:
        preds = [predict_row(r, eff) for r in rows]
        return np.array([p.predicted for p in preds]), np.array([p.regime for p in preds])

    def groups(eff: Efficiency) -> dict[str, list[tuple[str, ...]]]:
        return prediction_groups([predict_row(r, eff) for r in rows])

    return calibrate("published", [r.id for r in rows], [r.value for r in rows], predict, params, start=start,
                     holdout_fraction=holdout_fraction, seed=seed, groups=groups, progress=progress,
                     loss_of=loss_of or LOSSES[PUBLISHED_LOSS],
                     direction=[speed_direction(r.metric) for r in rows])


def read_validation(csv_path: str) -> tuple[Any, dict[str, Any]]:
    """A validate report: its CSV rows (pandas) and the setup saved beside it (same stem, .json)."""
    from pathlib import Path

    import pandas as pd

    from kokuban.specs.files import read_json, read_text

    path = Path(csv_path)
    setup_path = path.with_suffix(".json")

    def bad(why: str) -> KokubanError:
        return KokubanError(f"validation report '{path}' is not one `kokuban validate` wrote: {why}",
                            field="csv_path", value=csv_path)

    try:
        read_text(path, "validation report")  # one line for a missing, empty, non-UTF-8 file or a folder
        if not setup_path.is_file():
            raise KokubanError(f"cannot read validation report '{setup_path}' (validate writes NAME.csv and "
                               "NAME.json)")
        setup = read_json(setup_path, "validation setup")
        frame = pd.read_csv(path)
    except KokubanError as exc:
        raise KokubanError(exc.reason, field="csv_path", value=csv_path) from None
    except (ValueError, pd.errors.ParserError) as exc:
        raise bad(str(exc).splitlines()[0]) from None
    setup = setup.get("setup") if isinstance(setup, dict) else None
    if not (isinstance(setup, dict) and isinstance(setup.get("config"), dict)
            and isinstance(setup.get("accelerator"), dict) and isinstance(setup.get("dtype"), str)):
        raise bad(f"'{setup_path}' needs a \"setup\" object with config, accelerator and dtype")
    missing = {"phase", "batch", "context", "prompt_tokens", "measured_s"} - set(frame.columns)
    if missing:
        raise KokubanError(
            f"validation CSV '{path}' lacks the column(s) {sorted(missing)}", field="csv_path", value=csv_path
        )
    for column, integer in (("batch", True), ("context", True), ("prompt_tokens", True), ("measured_s", False)):
        values = pd.to_numeric(frame[column], errors="coerce").to_numpy(dtype=float)
        ok = np.isfinite(values) & (values > 0 if column in ("batch", "measured_s") else values >= 0)
        ok &= values <= 2**31
        if integer:
            ok &= values == np.round(values)
        if not ok.all():
            row = int(np.flatnonzero(~ok)[0])
            kind = "a whole number" if integer else "seconds above 0"
            raise bad(f"row {row + 2}: {column} must be {kind}, got {frame[column].iloc[row]!r}")
        frame[column] = values.astype(np.int64) if integer else values
    return frame, setup


HOLD_OUT_FIELDS = ("batch", "context", "prompt_tokens")


def calibrate_validation(csv_path: str, params: Sequence[str] = VALIDATION_PARAMS, *, start: Efficiency,
                         phase: str | None = None, holdout_fraction: float = 1 / 3, seed: int = 0,
                         hold_out: tuple[str, Sequence[int]] | None = None,
                         progress: Progress | None = None) -> Calibration:
    """Fit to a `kokuban validate` report (optionally one phase), re-predicting with `validate.predict`.

    `hold_out` = (field, values) holds out every row whose `field` (batch, context or prompt_tokens) is one
    of `values` — a structured split that asks the fit to extrapolate to unseen batches or contexts —
    instead of the hash split. `progress` follows the fit."""
    from kokuban.validation.harness import deployment_from_setup, predict

    frame, setup = read_validation(csv_path)
    try:
        deployment_from_setup(setup, start)
    except KokubanError as exc:
        raise KokubanError(f"validation setup of '{csv_path}': {exc}", field="csv_path", value=csv_path) from None
    except (KeyError, TypeError, ValueError) as exc:
        raise KokubanError(f"validation setup of '{csv_path}' cannot be read: {type(exc).__name__} {exc}",
                           field="csv_path", value=csv_path) from None
    if phase:
        frame = frame[frame["phase"] == phase]
        if frame.empty:
            raise KokubanError(f"validation report '{csv_path}' has no '{phase}' rows", field="phase", value=phase)
    tokens = np.where(frame["phase"] == "decode", frame["context"], frame["prompt_tokens"])
    ids = [f"{ph}-b{b}-t{t}" for ph, b, t in zip(frame["phase"], frame["batch"], tokens, strict=True)]

    def run(eff: Efficiency) -> tuple[np.ndarray, np.ndarray]:
        return predict(deployment_from_setup(setup, eff), list(frame["phase"]), list(frame["batch"]), list(tokens))

    held = None
    if hold_out is not None:
        field, values = hold_out
        if field not in HOLD_OUT_FIELDS:
            raise KokubanError(f"field '{field}' is not known; allowed: {', '.join(HOLD_OUT_FIELDS)}", field="hold_out",
                               value=field)
        held = frame[field].isin([int(v) for v in values]).to_numpy()
    return calibrate(f"validate:{csv_path}", ids, frame["measured_s"].to_numpy(), run, params, start=start,
                     holdout_fraction=holdout_fraction, seed=seed, held_out=held, progress=progress)


# ---- the two profiles over several splits ---------------------------------------------------------------
def profile_procedures(loss_of: Loss | None = None, *, rows: Sequence[Any] | None = None,
                       kernel_params: Sequence[str] = KERNEL_PARAMS) -> dict[str, Callable[[int, float], Calibration]]:
    """How each efficiency profile is calibrated on one split (`seed`, `holdout_fraction`), from the same rows:

    - "scalar": `PUBLISHED_PARAMS` fitted from the textbook fractions (how the scalar set `Efficiency.scalar()`
      was made);
    - "default": the kernel curves of `Efficiency.kernel_calibrated()` (the shipped step model), `KERNEL_PARAMS`
      fitted from its shipped fractions (`specs.hardware.KERNEL_PROFILE_FRACTIONS`, which this procedure made);
    so neither profile sees the split's held-out rows. Both minimise `loss_of` (default `PUBLISHED_LOSS`), on `rows`
    (default: all); the default fits `kernel_params` (how a change such as `kv_reread` was chosen: with and without)."""
    def scalar(seed: int, fraction: float) -> Calibration:
        return calibrate_published(PUBLISHED_PARAMS, start=Efficiency.textbook(), holdout_fraction=fraction, seed=seed,
                                   loss_of=loss_of, rows=rows)

    def default(seed: int, fraction: float) -> Calibration:
        return calibrate_published(kernel_params, start=Efficiency.kernel_calibrated(),
                                   holdout_fraction=fraction, seed=seed, loss_of=loss_of, rows=rows)

    return {"scalar": scalar, "default": default}


def repeated_holdout(seeds: Sequence[int], holdout_fraction: float = 1 / 3,
                     procedures: dict[str, Callable[[int, float], Calibration]] | None = None) -> dict[str, Any]:
    """Each profile calibrated on each split (`seeds`) and judged on that split's held-out rows; the held-out
    errors pooled over the splits (a row counts once per split that holds it out).

    Per profile: `per_seed` (the fitted fields, held-out median/p90 and training median/p90 of each split: a change
    of the model is chosen on the training figures, never on the held-out ones), `pooled` (the
    `accuracy.prediction_summary` of the pooled held-out rows: bootstrap intervals, by regime, metric, workload,
    weights dtype and engine). The pooled rows are not independent (a row recurs across splits, the
    fitted fractions are correlated), so the intervals are narrower than the truth; the per-seed spread is the
    other honest measure."""
    from kokuban.validation.accuracy import load_published, predict_row, prediction_summary

    rows = {r.id: r for r in load_published()}
    procedures = procedures or profile_procedures()
    out: dict[str, Any] = {"seeds": list(seeds), "holdout_fraction": holdout_fraction, "profiles": {}}
    for name, procedure in procedures.items():
        per_seed, preds = [], []
        for seed in seeds:
            cal = procedure(seed, holdout_fraction)
            held = [predict_row(rows[i], cal.after) for i in cal.holdout_ids]
            preds.extend(held)
            per_seed.append({"seed": seed, "fitted": {p: param_value(cal.after, p) for p in cal.params},
                             "holdout_rows": cal.holdout_rows,
                             "median_abs_error": cal.holdout_after["median_abs_error"],
                             "p90_abs_error": cal.holdout_after["p90_abs_error"],
                             "train_median_abs_error": cal.train_after["median_abs_error"],
                             "train_p90_abs_error": cal.train_after["p90_abs_error"]})
        out["profiles"][name] = {"per_seed": per_seed, "pooled": prediction_summary(preds)}
    return out
