"""The validation wing's use cases: `probe` (measure this machine), `validate` (a real model's step times
beside the prediction), `accuracy` (the error against published results), `calibrate` (fit the fractions).

Each has a request that owns its defaults and checks (every number finite and bounded), a typed frozen
result whose `as_dict()` is the JSON, and one `run_*` function. Which achievable fractions apply is policy,
decided here once:

- `accuracy` judges what kokuban ships, so it predicts with the shipped step model `Efficiency.shipped()`
  (the kernel profile, as every estimate does);
- `validate` and `calibrate` start from `Efficiency.textbook()` (`TextbookEfficiencyRequest`): a bare
  PyTorch loop has no serving engine's per-step overhead to calibrate away, and a calibration is judged
  by how far it moves the held-out error from the uncalibrated fractions (docs/history/validation-journal.md).
Flags such as `--compute-eff` replace single fields of that base, from the CLI and from Python alike.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from kokuban.errors import KokubanError
from kokuban.progress import Progress
from kokuban.specs.hardware import Accelerator, Efficiency
from kokuban.usecases.request import EfficiencyRequest, Request, Tokens
from kokuban.validation.accuracy import METRICS, PER_GPU_METRICS, TIME_METRICS, Accuracy, PublishedResult
from kokuban.validation.calibrate import (
    FRACTIONS,
    HOLD_OUT_FIELDS,
    KERNEL_PARAMS,
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
    shipped step model (`Efficiency.shipped()`, the kernel profile): the one default of `validate` and
    `calibrate`, from every face."""

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
    entry_id: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=100)] | None = None
    dtypes: Annotated[tuple[Literal[DTYPES], ...], Field(min_length=1)] = DTYPES  # type: ignore[valid-type]

    @field_validator("entry_id")
    @classmethod
    def _an_id(cls, value: str | None) -> str | None:
        """An id as the catalog writes them (it is written into a TOML file): letters, digits and . _ + -."""
        import re

        if value is not None and not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.+\-]*", value):
            raise ValueError("should be letters, digits and . _ + - (an accelerator id such as lab-cpu)")
        return value

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


def run_probe(request: ProbeRequest, *, progress: Progress | None = None) -> Probe:
    """Measure this machine's read bandwidth and matmul FLOP/s (`validation.probe.probe`); `progress(tests done,
    tests)` as it goes."""
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


def run_validate(request: ValidateRequest, *, progress: Progress | None = None) -> ValidationReport:
    """Probe (unless the request names a probe file), build, measure and predict (`harness.run_validation`);
    `progress(done, total)` follows the probe, then the timed calls."""
    from kokuban.validation.harness import run_validation

    r = request
    try:
        return run_validation(
            r.model, efficiency=r.efficiency_spec(), device=r.device, dtype=r.dtype, num_layers=r.layers or None,
            hidden_size=r.hidden, batches=r.batches, contexts=r.contexts, prompts=r.prompts,
            prefill_batch=r.prefill_batch, accelerator_entry=r.accelerator_entry(), warmup=r.warmup,
            repeats=r.repeats, max_kv_bytes=r.max_kv_gb * 1e9 if r.max_kv_gb is not None else None,
            probe_seconds=r.probe_seconds, progress=progress, seed=r.seed, linear=r.linear,
        )
    except (MemoryError, RuntimeError) as exc:  # PyTorch's allocators raise RuntimeError (OutOfMemoryError)
        if not isinstance(exc, MemoryError) and "memory" not in str(exc).lower():
            raise
        raise KokubanError("the scaled model ran out of memory on this machine; make it smaller (fewer layers, a "
                           "smaller hidden size, shorter contexts or max_kv_gb)", field="max_kv_gb",
                           value=r.max_kv_gb) from None


# ---- accuracy ----------------------------------------------------------------------------------------
Count = Annotated[int, Field(ge=0, le=2**24)]
Positive = Annotated[float, Field(gt=0, le=1e12, allow_inf_nan=False)]
Text = Annotated[str, Field(min_length=1, max_length=1000)]
#: Units of a measured value: tokens/s (whole deployment), tokens/s/gpu (per GPU, per_gpu rows), for a
#: per-user decode speed its time per output token, s/token or ms/token (converted: tokens/s = 1 ÷ seconds),
#: and for a time to first token s or ms (converted to seconds).
UNITS = ("tokens/s", "tokens/s/gpu", "s/token", "ms/token", "s", "ms")
Metric = Literal[METRICS]  # type: ignore[valid-type]


class PublishedRow(BaseModel):
    """One `[[result]]` of a file in the schema of data/published_results.toml (0 = unknown for tensor_parallel,
    batch and lengths); `engine` and `scenario` may be left out."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    id: Text
    model: Text
    accelerator: Text
    num_gpus: Annotated[int, Field(gt=0, le=4096)]
    tensor_parallel: Annotated[int, Field(ge=0, le=4096)] = 0
    expert_parallel: bool = False
    weights_dtype: Text
    kv_dtype: Text = "bf16"
    experts_dtype: str = ""
    withdrawn: str = ""
    engine: str = ""
    metric: Metric
    value: Positive
    per_gpu: bool = False
    batch: Count = 0
    input_tokens: Count = 0
    output_tokens: Count = 0
    scenario: str = ""
    source: Text

    @model_validator(mode="after")
    def _per_gpu_is_a_rate(self) -> PublishedRow:
        if self.per_gpu and self.metric not in PER_GPU_METRICS:
            raise ValueError("per_gpu: only an output_tokens_per_s row is quoted per GPU")
        return self


class MeasurementRow(BaseModel):
    """One row of a user's CSV (docs/history/validation-journal.md, "Score your own measurements"); empty cells take the
    defaults. `layout` tp: one tensor-parallel group over all `gpus`; ep: one expert-parallel group."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = ""
    model: Text
    gpu: Text
    gpus: Annotated[int, Field(gt=0, le=4096)] = 1
    layout: Literal["tp", "ep"] = "tp"
    weights: Text = "bf16"
    kv: Text = "bf16"
    experts: str = ""
    batch: Count = 0
    prompt: Count = 0
    output: Count = 0
    metric: Metric
    value: Positive
    unit: Literal[UNITS]  # type: ignore[valid-type]
    engine: str = ""
    source: Text

    @model_validator(mode="after")
    def _unit_fits_metric(self) -> MeasurementRow:
        if self.unit in ("s/token", "ms/token") and self.metric != "tokens_per_s_per_user":
            raise ValueError("unit: a time per token is a per-user speed: use metric tokens_per_s_per_user")
        if self.unit == "tokens/s/gpu" and self.metric not in PER_GPU_METRICS:
            raise ValueError("unit: tokens/s/gpu is for metric output_tokens_per_s only (a per-user speed or a time "
                             "is not divided among GPUs)")
        if (self.unit in ("s", "ms")) != (self.metric in TIME_METRICS):
            raise ValueError("unit: a time to first token is in s or ms, and s or ms is only for "
                             "metric time_to_first_token_s")
        return self

    def published(self, default_id: str) -> dict[str, Any]:
        """The row in the published schema (rates in tokens/s, a time to first token in seconds)."""
        seconds = {"s/token": 1.0, "ms/token": 1e-3}.get(self.unit)
        value = 1.0 / (self.value * seconds) if seconds else self.value * {"ms": 1e-3}.get(self.unit, 1.0)
        return {"id": self.id or default_id, "model": self.model, "accelerator": self.gpu, "num_gpus": self.gpus,
                "tensor_parallel": self.gpus if self.layout == "tp" else 0, "expert_parallel": self.layout == "ep",
                "weights_dtype": self.weights, "kv_dtype": self.kv, "experts_dtype": self.experts,
                "engine": self.engine, "metric": self.metric,
                "value": value,
                "per_gpu": self.unit == "tokens/s/gpu", "batch": self.batch, "input_tokens": self.prompt,
                "output_tokens": self.output, "scenario": "user", "source": self.source}


def _row_error(path: str, row: str, exc: ValidationError | KokubanError) -> KokubanError:
    """One line naming the file, the row and the field: "FILE row N: FIELD: what is wrong (got V)"."""
    if isinstance(exc, KokubanError):  # its reason already quotes the value
        field, reason, value = exc.field or "", exc.reason, None
    else:
        first = exc.errors()[0]
        field = ".".join(str(x) for x in first["loc"]) or "row"
        reason, value = first["msg"].removeprefix("Value error, "), first.get("input")
        head, _, rest = reason.partition(": ")
        if field == "row" and head in ("unit", "per_gpu"):
            field, reason = head, rest
    got = "" if value is None or isinstance(value, dict) else f" (got {value!r})"
    return KokubanError(f"{path} {row}: {field}: {reason}{got}", field="file", value=path)


def read_measurements(path: str) -> list[PublishedResult]:
    """A user's measurements: a CSV of `MeasurementRow`s, or a TOML of `[[result]]` `PublishedRow`s. Every row is
    checked here (types, ranges, dtypes, a catalog model and GPU); the first bad one raises one line naming the
    file, the row (CSV: its line number; TOML: its index from 1) and the field."""
    import csv
    import io

    from kokuban.specs.catalog import load_accelerator, load_model
    from kokuban.specs.dtypes import check_dtype
    from kokuban.specs.files import read_text, read_toml

    rows: list[tuple[str, dict[str, Any]]] = []
    try:
        if path.lower().endswith(".toml"):
            results = read_toml(path, "measurements").get("result", [])
            raw = [("result " + str(i), r) for i, r in enumerate(results if isinstance(results, list) else [], 1)]
            for label, r in raw:
                try:
                    rows.append((label, PublishedRow.model_validate(r).model_dump()))
                except ValidationError as exc:
                    raise _row_error(path, label, exc) from None
        else:  # UTF-8 with or without the byte-order mark spreadsheets write, any line ending
            for n, r in enumerate(csv.DictReader(io.StringIO(read_text(path, "measurements"), newline="")), 2):
                cells = {str(k).strip(): v.strip() for k, v in r.items() if isinstance(v, str) and v.strip()}
                label = f"row {n}"
                try:
                    rows.append((label, MeasurementRow.model_validate(cells).published(f"{path}:{n}")))
                except ValidationError as exc:
                    raise _row_error(path, label, exc) from None
    except KokubanError as exc:
        if exc.field is not None:
            raise
        raise KokubanError(exc.reason, field="file", value=path) from None
    except csv.Error as exc:
        raise KokubanError(f"'{path}' is not a readable CSV file: {exc}", field="file", value=path) from None
    if not rows:
        raise KokubanError(f"'{path}' has no rows (CSV: a header line and one row per measurement; TOML: "
                           "[[result]] tables)", field="file", value=path)
    out = []
    names = {"weights_dtype": "weights", "kv_dtype": "kv", "experts_dtype": "experts", "model": "model",
             "accelerator": "gpu"}
    for label, r in rows:
        toml = label.startswith("result")
        try:
            for key in ("weights_dtype", "kv_dtype", "experts_dtype"):
                if r.get(key):  # an empty experts dtype: the experts are stored like the weights
                    r[key] = check_dtype(r[key], key if toml else names[key])
            for key, load in (("model", load_model), ("accelerator", load_accelerator)):
                try:
                    load(r[key])
                except KokubanError as exc:
                    raise KokubanError(exc.reason, field=key if toml else names[key], value=r[key]) from None
        except KokubanError as exc:
            raise _row_error(path, label, exc) from None
        out.append(PublishedResult(**{k: r[k] for k in PublishedResult.__dataclass_fields__ if k in r}))
    return out


class AccuracyRequest(EfficiencyRequest):
    """`kokuban accuracy`: every published result (or the measurements in `file`, CSV or TOML:
    `read_measurements`) predicted at the shipped step model (`Efficiency.shipped()`, the one every estimate
    uses), each fraction overridable."""

    file: Annotated[str, Field(min_length=1)] | None = None


def run_accuracy(request: AccuracyRequest) -> Accuracy:
    """kokuban's error against data/published_results.toml (or `file`), per row and in summary
    (`validation.accuracy`)."""
    from kokuban.validation.accuracy import accuracy

    if request.file is None:
        return accuracy(request.efficiency_spec())
    from kokuban.core import memory
    from kokuban.validation.accuracy import assumed_lengths, replica_layout

    rows, eff = read_measurements(request.file), request.efficiency_spec()
    try:
        for r in rows:  # a measured row must at least hold one request in kokuban's memory plan
            dep, _ = replica_layout(r, eff)
            mp = memory.plan(dep, 1, sum(assumed_lengths(r)))
            if not mp.fits:
                raise KokubanError(f"row '{r.id}': {memory.no_fit_message(dep, mp)}")
        return accuracy(eff, rows, source=request.file)
    except KokubanError as exc:  # a row that cannot be predicted (does not fit, bad layout): name the file
        raise KokubanError(f"{request.file}: {exc.reason}", field="file", value=request.file) from None


# ---- calibrate ---------------------------------------------------------------------------------------
class CalibrateRequest(TextbookEfficiencyRequest):
    """`kokuban calibrate`: fit `params` (default: `PUBLISHED_PARAMS` or `VALIDATION_PARAMS` by source, and
    `KERNEL_PARAMS` for published rows when the efficiency starts from the kernel profile),
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


def run_calibrate(request: CalibrateRequest, *, progress: Progress | None = None) -> Calibration:
    """Fit and judge (`validation.calibrate`): the fitted efficiency and the held-out error before and after;
    `progress(iterations, budget)` follows the fit."""
    from kokuban.validation.calibrate import calibrate_published, calibrate_validation

    r = request
    start = r.efficiency_spec()
    if r.source == "published":
        params = r.params or (KERNEL_PARAMS if start.kernels is not None else r.fitted_params())
        return calibrate_published(params, start=start, holdout_fraction=r.holdout, seed=r.seed,
                                   progress=progress)
    return calibrate_validation(r.csv_path, r.fitted_params(), start=start, phase=r.phase, holdout_fraction=r.holdout,
                                seed=r.seed, hold_out=r.hold_out, progress=progress)
