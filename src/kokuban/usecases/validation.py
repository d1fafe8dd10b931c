"""The validation wing's use cases: `probe` (measure this machine), `validate` (a real model's step times
beside the prediction), `accuracy` (the error against published results), `calibrate` (fit the fractions).

Each has a request that owns its defaults and checks (every number finite and bounded), a typed frozen
result whose `as_dict()` is the JSON, and one `run_*` function. Which achievable fractions apply is policy,
decided here once:

- `accuracy` judges what kokuban ships, so it predicts with the calibrated `Efficiency()` (as every
  estimate does);
- `validate` and `calibrate` start from `Efficiency.textbook()` (`TextbookEfficiencyRequest`): a bare
  PyTorch loop has no serving engine's per-step overhead to calibrate away, and a calibration is judged
  by how far it moves the held-out error from the uncalibrated fractions (docs/validation.md).
Flags such as `--compute-eff` replace single fields of that base, from the CLI and from Python alike.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import Field, ValidationInfo, field_validator

from kokuban.errors import KokubanError
from kokuban.specs.hardware import Accelerator, Efficiency
from kokuban.usecases.request import EfficiencyRequest, Request, Tokens
from kokuban.validation.accuracy import Accuracy
from kokuban.validation.calibrate import (
    FRACTIONS,
    HOLD_OUT_FIELDS,
    PUBLISHED_PARAMS,
    SECONDS,
    VALIDATION_PARAMS,
    Calibration,
)
from kokuban.validation.harness import LINEAR_BACKENDS, TORCH_DTYPES, ValidationReport
from kokuban.validation.probe import DTYPES

#: Seconds a measurement may be given: positive, finite, at most an hour (probe and validate are minutes).
Seconds = Annotated[float, Field(gt=0, le=3600, allow_inf_nan=False)]
#: Requests measured together: a positive integer up to 2²⁰.
Batch = Annotated[int, Field(gt=0, le=2**20)]
Device = Literal["auto", "cpu", "cuda"]
Dtype = Literal[tuple(TORCH_DTYPES)]  # type: ignore[valid-type]
Linear = Literal[tuple(LINEAR_BACKENDS)]  # type: ignore[valid-type]
Param = Literal[FRACTIONS + SECONDS]  # type: ignore[valid-type]
HoldOutField = Literal[HOLD_OUT_FIELDS]  # type: ignore[valid-type]


def comma_separated(value: Any, kind: type = int) -> Any:
    """'1, 2,4' → (1, 2, 4) (the text form a face may hand in); anything else is left to the field's type."""
    if not isinstance(value, str):
        return value
    parts = tuple(v.strip() for v in value.split(",") if v.strip())
    if kind is int:
        try:
            return tuple(int(v) for v in parts)
        except ValueError:
            raise ValueError("must be comma-separated integers") from None
    return parts


class TextbookEfficiencyRequest(EfficiencyRequest):
    """An efficiency request whose unset fractions are the textbook ones (`Efficiency.textbook()`), not the
    shipped calibrated set: the one default of `validate` and `calibrate`, from every face."""

    @staticmethod
    def base_efficiency() -> Efficiency:
        return Efficiency.textbook()

    def efficiency_spec(self, base: Efficiency | None = None) -> Efficiency:
        return super().efficiency_spec(base or self.base_efficiency())


# ---- probe -------------------------------------------------------------------------------------------
class ProbeRequest(Request):
    """`kokuban probe`: measure `device` for about `seconds` in each of `dtypes`; `entry_id` names the entry
    (default probed-DEVICE)."""

    device: Device = "auto"
    seconds: Seconds = 3.0
    entry_id: Annotated[str, Field(min_length=1, max_length=100)] | None = None
    dtypes: Annotated[tuple[Literal[DTYPES], ...], Field(min_length=1)] = DTYPES  # type: ignore[valid-type]

    @field_validator("dtypes", mode="before")
    @classmethod
    def _split(cls, value: Any) -> Any:
        return comma_separated(value, str)


@dataclass(frozen=True)
class Probe:
    """A measured accelerator entry in the catalog's schema (`accelerators.toml` keys, plus `measured_on`,
    `device`, `method` and `medians` saying how). `as_dict()` is the entry."""

    entry: dict[str, Any]

    def accelerator(self) -> Accelerator:
        return Accelerator.from_dict(self.entry)

    def as_dict(self) -> dict[str, Any]:
        return dict(self.entry)


def run_probe(request: ProbeRequest, *, progress: bool = False) -> Probe:
    """Measure this machine's read bandwidth and matmul FLOP/s (`validation.probe.probe`); a progress bar on
    stderr if asked."""
    from kokuban.validation.probe import probe

    r = request
    return Probe(probe(r.device, seconds=r.seconds, dtypes=r.dtypes, entry_id=r.entry_id, progress=progress))


# ---- validate ----------------------------------------------------------------------------------------
class ValidateRequest(TextbookEfficiencyRequest):
    """`kokuban validate`: build `model` (catalog id or config.json; `layers` of its layers, 0 = all; hidden
    size scaled to `hidden`), time decode at every (batch, context) and prefill of `prefill_batch` prompts at
    every prompt length, and predict each with the textbook fractions (overridable field by field).

    The accelerator predicted with is `gpu` in `gpu_file` (a probe file), else this machine probed for
    `probe_seconds`. `max_kv_gb` (1 GB = 1e9 B) skips points whose KV cache is larger (default 25 % of the
    device's memory). `dtype` None: fp32 on a CPU, bf16 on a GPU.
    """

    model: Annotated[str, Field(min_length=1)] = "llama-3.2-1b"
    layers: Annotated[int, Field(ge=0, le=10_000)] = 4
    hidden: Annotated[int, Field(gt=0, le=2**20)] | None = None
    device: Device = "cpu"
    dtype: Dtype | None = None
    linear: Linear = "auto"
    batches: Annotated[tuple[Batch, ...], Field(min_length=1)] = (1, 2, 4, 8, 16, 32, 64)
    contexts: Annotated[tuple[Tokens, ...], Field(min_length=1)] = (128, 1024, 4096)
    prompts: tuple[Tokens, ...] = (16, 64, 256)
    prefill_batch: Batch = 1
    warmup: Annotated[int, Field(ge=0, le=1000)] = 1
    repeats: Annotated[int, Field(ge=1, le=1000)] = 5
    max_kv_gb: Annotated[float, Field(gt=0, le=1e6, allow_inf_nan=False)] | None = None
    gpu: str | None = None
    gpu_file: str | None = None
    probe_seconds: Seconds = 3.0
    seed: Annotated[int, Field(ge=0, le=2**32)] = 0

    @field_validator("batches", "contexts", "prompts", mode="before")
    @classmethod
    def _split(cls, value: Any, info: ValidationInfo) -> Any:
        values = comma_separated(value)
        if info.field_name != "prompts" and not values:
            raise ValueError("must list at least one positive integer (comma-separated)")
        return values

    def check(self) -> None:
        if self.gpu and not self.gpu_file:
            raise KokubanError("names an entry of gpu_file (an accelerator file that probe wrote): give both, or "
                               "neither to probe this machine", field="gpu", value=self.gpu)

    def accelerator_entry(self) -> dict[str, Any] | None:
        """The probe file's entry `gpu` (default its first), or None (validate then probes)."""
        from kokuban.validation.harness import read_probe_entry

        if not self.gpu_file:
            return None
        try:
            return read_probe_entry(self.gpu_file, self.gpu)
        except KokubanError as exc:
            field = {"path": "gpu_file", "entry_id": "gpu"}.get(exc.field or "", exc.field)
            raise KokubanError(exc.reason, field=field, value=exc.value) from None


def run_validate(request: ValidateRequest, *, progress: bool = False) -> ValidationReport:
    """Probe (unless the request names a probe file), build, measure and predict (`harness.run_validation`)."""
    from kokuban.validation.harness import run_validation

    r = request
    return run_validation(
        r.model, efficiency=r.efficiency_spec(), device=r.device, dtype=r.dtype, num_layers=r.layers or None,
        hidden_size=r.hidden, batches=r.batches, contexts=r.contexts, prompts=r.prompts,
        prefill_batch=r.prefill_batch, accelerator_entry=r.accelerator_entry(), warmup=r.warmup, repeats=r.repeats,
        max_kv_bytes=r.max_kv_gb * 1e9 if r.max_kv_gb is not None else None, probe_seconds=r.probe_seconds,
        progress=progress, seed=r.seed, linear=r.linear,
    )


# ---- accuracy ----------------------------------------------------------------------------------------
class AccuracyRequest(EfficiencyRequest):
    """`kokuban accuracy`: every published result predicted at the shipped calibrated fractions (the ones
    every estimate uses), each overridable."""


def run_accuracy(request: AccuracyRequest) -> Accuracy:
    """kokuban's error against data/published_results.toml, per row and in summary (`validation.accuracy`)."""
    from kokuban.validation.accuracy import accuracy

    return accuracy(request.efficiency_spec())


# ---- calibrate ---------------------------------------------------------------------------------------
class CalibrateRequest(TextbookEfficiencyRequest):
    """`kokuban calibrate`: fit `params` (default: `PUBLISHED_PARAMS` or `VALIDATION_PARAMS` by source),
    starting from the textbook fractions, on the rows outside the held-out split, and judge it on those in.

    `source` "published" fits data/published_results.toml; "validate-csv" the report at `csv_path` (a
    validate report's validate.csv, optionally only its `phase` rows). The split holds out a
    `holdout` fraction by a hash of the row id salted by `seed`, or with `hold_out` = (field, values) every
    validate row whose batch, context or prompt_tokens is one of the values.
    """

    source: Literal["published", "validate-csv"]
    csv_path: str | None = None
    phase: Literal["decode", "prefill"] | None = None
    params: Annotated[tuple[Param, ...], Field(min_length=1)] | None = None
    holdout: Annotated[float, Field(gt=0, lt=1, allow_inf_nan=False)] = 1 / 3
    seed: Annotated[int, Field(ge=0, le=2**32)] = 0
    hold_out: tuple[HoldOutField, Annotated[tuple[int, ...], Field(min_length=1)]] | None = None

    @field_validator("params", mode="before")
    @classmethod
    def _split_params(cls, value: Any) -> Any:
        return comma_separated(value, str)

    @field_validator("hold_out", mode="before")
    @classmethod
    def _split_hold_out(cls, value: Any) -> Any:
        if not isinstance(value, str):
            return value
        field, sep, values = value.partition("=")
        try:
            numbers = comma_separated(values)
        except ValueError:
            numbers = ()
        if not sep or not numbers:
            raise ValueError("must look like FIELD=V1,V2 (e.g. context=4096)")
        return field.strip(), numbers

    def check(self) -> None:
        if self.source == "published":
            given = [f for f in ("csv_path", "phase", "hold_out") if getattr(self, f) is not None]
            if given:
                raise KokubanError("applies to the validate-csv source only", field=given[0],
                                   value=getattr(self, given[0]))
        elif not self.csv_path:
            raise KokubanError("the validate-csv source needs a validate report's validate.csv (with its "
                               "validate.json beside it)", field="csv_path")

    def fitted_params(self) -> tuple[str, ...]:
        """The fields fitted: `params`, else the source's default."""
        return self.params or (PUBLISHED_PARAMS if self.source == "published" else VALIDATION_PARAMS)


def run_calibrate(request: CalibrateRequest) -> Calibration:
    """Fit and judge (`validation.calibrate`): the fitted efficiency and the held-out error before and after."""
    from kokuban.validation.calibrate import calibrate_published, calibrate_validation

    r = request
    start = r.efficiency_spec()
    if r.source == "published":
        return calibrate_published(r.fitted_params(), start=start, holdout_fraction=r.holdout, seed=r.seed)
    return calibrate_validation(r.csv_path, r.fitted_params(), start=start, phase=r.phase, holdout_fraction=r.holdout,
                                seed=r.seed, hold_out=r.hold_out)
