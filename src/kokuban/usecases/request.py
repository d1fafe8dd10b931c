"""Typed requests: every face (CLI, Python, HTTP) hands a use case one of these, and every default and input
check lives here once. Field names are the use cases' vocabulary (`price_per_hour`, `compute_eff`); the CLI's
flags are the same names with dashes, the web API's JSON keys the same names.

A request is a frozen pydantic model: constructing one checks it (types, ranges, finiteness) and a bad field
raises `KokubanError(field=…)` naming the field, the value and what is allowed — one line, no traceback.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, InstanceOf, ValidationError

from kokuban.errors import KokubanError, short_numbers
from kokuban.specs.deployment import MEMORY_UTILIZATION, MemoryRule
from kokuban.specs.hardware import FIXED_TIME_MAX_S, FRACTION_MIN, Accelerator, Efficiency
from kokuban.specs.model import ModelSpec
from kokuban.usecases.defaults import AUTO_GPUS_BATCH, DEFAULT_CONTEXT

if TYPE_CHECKING:
    from kokuban.sim.profiles import EngineProfile

#: Tokens: a positive integer no larger than 2³¹ (every catalog window is far below this).
Tokens = Annotated[int, Field(gt=0, le=2**31, strict=False)]
#: An achievable fraction of a peak (hardware.FRACTION_MIN: below it, times overflow).
Fraction = Annotated[float, Field(ge=FRACTION_MIN, le=1, allow_inf_nan=False)]
#: A finite quantity ≥ 0 (prices, waits), bounded as `Positive` is so that the sums built from it stay finite.
NonNegative = Annotated[float, Field(ge=0, le=1e12, allow_inf_nan=False)]
#: The smallest price above zero kokuban takes, in USD (per hour, or per million tokens): a millionth of a cent.
#: A subnormal price such as 1e-320 is above zero but every ratio divided by it overflows to infinity.
PRICE_MIN_USD = 1e-8


def _zero_or_a_price(value: float) -> float:
    if 0 < value < PRICE_MIN_USD:
        raise ValueError(f"should be 0 or at least {PRICE_MIN_USD:g} USD")
    return value


#: A price in USD: 0 (free) or from a millionth of a cent up to 10¹².
Price = Annotated[float, Field(ge=0, le=1e12, allow_inf_nan=False), AfterValidator(_zero_or_a_price)]
#: A name (a file, a model): not empty.
Name = Annotated[str, Field(min_length=1, max_length=4096)]


def _a_dtype(value: str) -> str:
    """A weights/KV/compute dtype kokuban knows (`dtypes.check_dtype`), checked here for every command, also
    those that use it only on some rows; the value is kept as given."""
    from kokuban.specs.dtypes import check_dtype

    try:
        check_dtype(value)
    except KokubanError as exc:
        raise ValueError(exc.reason) from None
    return value


#: A weights, KV or compute dtype (`_a_dtype`).
Dtype = Annotated[str, Field(min_length=1, max_length=100), AfterValidator(_a_dtype)]
#: A fixed time per step (hardware.FIXED_TIME_MAX_S: an hour).
FixedSeconds = Annotated[float, Field(ge=0, le=FIXED_TIME_MAX_S, allow_inf_nan=False)]
#: A positive finite quantity (rates, speeds, seconds, bytes), bounded so that work stays bounded.
Positive = Annotated[float, Field(gt=0, le=1e12, allow_inf_nan=False)]


def default_context(model: ModelSpec, context: int | None, prompt: int | None = None, output: int | None = None) -> int:
    """The context a request means: `context`, else prompt + output when both are given, else `DEFAULT_CONTEXT`
    (or the model's maximum if smaller)."""
    if context is not None:
        return context
    if prompt is not None and output is not None:
        return prompt + output
    return min(DEFAULT_CONTEXT, model.max_context)


def error_from_validation(exc: ValidationError) -> KokubanError:
    """The first bad field of a pydantic error as one line: the field, what is allowed (each member of a
    union: "input should be greater than 0 or 'max'"), and the value given."""
    errors = exc.errors(include_url=False)
    first = errors[0]
    top = first["loc"][:1]
    field = ".".join(str(part) for part in top) or None
    msgs: list[str] = []
    for err in errors:
        if err["loc"][:1] == top:
            msg = short_numbers(err["msg"].removeprefix("Value error, "))
            msgs.append(msg if not msgs else msg.removeprefix("Input should be "))
    reason = " or ".join(dict.fromkeys(msgs))
    reason = reason[0].lower() + reason[1:]
    value = first.get("input")
    if first["type"] not in ("missing", "extra_forbidden") and not isinstance(value, dict):
        reason = f"{reason}, got {value!r}"
    return KokubanError(reason, field=field, value=value)


class Request(BaseModel):
    """Base of every use case's request: frozen, unknown fields refused, errors as `KokubanError`."""

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    def __init__(self, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as exc:
            raise error_from_validation(exc) from None
        self.check()

    def check(self) -> None:
        """Checks across fields, raising `KokubanError(field=…)`; the field types and ranges are checked before."""


class EfficiencyRequest(Request):
    """The achievable fractions a request may override; unset ones come from `efficiency` (default: the
    shipped step model, `Efficiency.shipped()`: the kernel profile)."""

    efficiency: InstanceOf[Efficiency] | None = None
    efficiency_file: str | None = None
    compute_eff: Fraction | None = None
    memory_eff: Fraction | None = None
    kv_eff: Fraction | None = None
    link_eff: Fraction | None = None
    overlap: Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)] | None = None
    step_overhead: FixedSeconds | None = None

    def efficiency_given(self) -> bool:
        """Whether this request asks for any efficiency (a set, a file or one fraction)."""
        return any(v is not None for v in (self.efficiency, self.efficiency_file, self.compute_eff, self.memory_eff,
                                           self.kv_eff, self.link_eff, self.overlap, self.step_overhead))

    def efficiency_spec(self, base: Efficiency | None = None) -> Efficiency:
        """`Efficiency` with this request's overrides on `self.efficiency`, else the set saved in
        `efficiency_file` (e.g. the JSON `kokuban calibrate` prints), else `base`, else the shipped step model."""
        if self.efficiency is None and self.efficiency_file is not None:
            base = Efficiency.from_file(self.efficiency_file)
        return (self.efficiency or base or Efficiency.shipped()).updated(
            compute=self.compute_eff, memory=self.memory_eff, kv_memory=self.kv_eff, interconnect=self.link_eff,
            overlap=self.overlap, step_overhead_s=self.step_overhead)


class DeploymentRequest(EfficiencyRequest):
    """What is run and on what: model, accelerator and count, layout, precisions, hourly price.

    Policies (each applied here and nowhere else):
    - `gpus=None`: the fewest accelerators that hold a batch of `AUTO_GPUS_BATCH` at the context (else batch 1);
    - `layout=None`: expert parallel ("ep") for a mixture-of-experts model, tensor parallel ("tp") otherwise;
    - `weights`/`kv`/`compute` None: the checkpoint's dtype, bf16, what the accelerator runs the weights in;
    - `experts` None: a MoE model's routed experts stored like the weights (the checkpoint's own expert format, e.g.
      gpt-oss's MXFP4 beside bf16 attention, when `weights` is None too); set, they are stored (and multiplied) apart;
    - `price_per_hour` None: the catalog's typical price per accelerator-hour.
    """

    model: str | InstanceOf[ModelSpec]
    gpu: str | InstanceOf[Accelerator]
    gpus: Annotated[int, Field(gt=0, le=4096)] | None = 1
    layout: Literal["tp", "ep"] | None = "tp"
    weights: Dtype | None = None
    kv: Dtype | None = None
    compute: Dtype | None = None
    experts: Dtype | None = None
    price_per_hour: Price | None = None
    gpu_file: Name | None = None

    def model_spec(self) -> ModelSpec:
        from kokuban.specs.catalog import load_model

        return self.model if isinstance(self.model, ModelSpec) else load_model(self.model)

    def accelerator(self) -> Accelerator:
        from kokuban.specs.catalog import load_accelerator

        return self.gpu if isinstance(self.gpu, Accelerator) else load_accelerator(self.gpu, self.gpu_file)

    def deployment(self, context: int | None = None, *, efficiency: Efficiency | None = None,
                   memory_utilization: float = MEMORY_UTILIZATION, memory_rule: MemoryRule | None = None):
        """The `Deployment` this request names; `context` sizes the automatic GPU count (`gpus=None`);
        `memory_utilization` is the fraction of each accelerator's memory the engine may use, by `memory_rule`
        (default: `MemoryRule()`)."""
        from kokuban.core.memory import min_gpus_to_fit
        from kokuban.specs.deployment import Deployment

        model, acc = self.model_spec(), self.accelerator()
        layout = self.layout or ("ep" if model.is_moe else "tp")
        _note_override(model, self.weights)
        dep = Deployment.make(model, acc, self.gpus or 1, layout=layout, weights_dtype=self.weights,
                              kv_dtype=self.kv, compute_dtype=self.compute, experts_dtype=self.experts,
                              efficiency=self.efficiency_spec(efficiency),
                              price_per_hour_usd=self.price_per_hour, memory_utilization=memory_utilization,
                              memory_rule=memory_rule)
        if self.gpus is not None:
            return dep
        if context is None:
            raise KokubanError("an automatic GPU count needs a context to size it", field="gpus")
        n = min_gpus_to_fit(dep, AUTO_GPUS_BATCH, context) or min_gpus_to_fit(dep, 1, context)
        if n is None:
            raise KokubanError(f"{model.name} does not fit on up to 1024× {acc.id} at context {context:,}",
                               field="gpus", value=None)
        return dep.with_gpus(n)


    def engine_deployment(self, profile: EngineProfile, fraction: float | None, context: int | None = None, *,
                          efficiency: Efficiency | None = None, chunk_tokens: int | None = None):
        """`DeploymentRequest.deployment` sized by the engine `profile`'s memory rule at `fraction` (None: the
        profile's default for the accelerator and GPU count, `EngineProfile.utilization`), its step model
        (`EngineProfile.base_efficiency`: efficiency profile and step overhead) the base that `efficiency` (else
        the request's efficiency fields) overrides. One policy for `simulate`, `capacity` and `estimate --engine`;
        `chunk_tokens` is the token budget when given."""
        if efficiency is None:
            efficiency = profile.base_efficiency()
        if fraction is None:
            fraction = profile.utilization(self.accelerator().memory_bytes, chunk_tokens, self.gpus or 1)
        return DeploymentRequest.deployment(self, context, efficiency=efficiency, memory_utilization=fraction,
                                            memory_rule=profile.memory_rule)


def _note_override(model: ModelSpec, weights: str | None) -> None:
    """Policy: an explicit weights dtype overrides a quantized checkpoint's stored format, with a note saying so."""
    from kokuban.notes import note
    from kokuban.specs.dtypes import check_dtype, quant_format

    if not (weights and model.native_dtype) or quant_format(model.native_dtype).kind == "float":
        return
    chosen = check_dtype(weights, "weights")
    if chosen != model.native_dtype:
        note(f"weights priced as {chosen}, not the checkpoint's stored {model.native_dtype} ({model.quantization})")


class EstimateRequest(DeploymentRequest):
    """`kokuban estimate`: one configuration, every term. `batch="max"` takes the largest batch that fits;
    context defaults to prompt + output when both are given, else 4096 (or the model's window if smaller).
    `engine` (an engine profile's name) sizes the memory by that engine's rule, at `gpu_memory_utilization` when
    given (its fraction; default the engine's)."""

    batch: Tokens | Literal["max"] = 1
    context: Tokens | None = None
    prompt: Tokens | None = None
    output: Tokens | None = None
    allow_beyond_max_context: bool = False
    engine: str | None = None
    gpu_memory_utilization: Annotated[float, Field(gt=0, le=1, allow_inf_nan=False)] | None = None

    def deployment(self, context: int | None = None, *, efficiency: Efficiency | None = None):
        """`DeploymentRequest.deployment`; with `engine` (a profile of `sim.profiles`) or `gpu_memory_utilization`,
        sized by that engine's memory rule (`engine_deployment`; no engine: kokuban's rule at that fraction)."""
        if self.engine is None and self.gpu_memory_utilization is None:
            return super().deployment(context, efficiency=efficiency)
        from kokuban.sim.profiles import DEFAULT_ENGINE, load_profile

        profile = load_profile(self.engine or DEFAULT_ENGINE)
        return self.engine_deployment(profile, self.gpu_memory_utilization, context, efficiency=efficiency)

    def check(self) -> None:
        if (self.prompt is None) != (self.output is None):
            raise KokubanError("prompt and output go together: give both or neither",
                               field="prompt" if self.prompt is None else "output")
