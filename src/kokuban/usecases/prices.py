"""Price sheets read backwards as use cases: `kokuban prices list | explain | infer | compare | fleet`.

Each use case X has a request `XRequest` (frozen, checked; every default and policy decided here), a typed
frozen result whose `as_dict()` is the JSON, and `run_X(request)`. The wing (`kokuban.prices`) does the
arithmetic; this layer decides what to evaluate:

- the price: a sheet row named by `name` (PROVIDER/MODEL, bundled rows plus `files`), or one typed by hand
  (`input_price` and `output_price` together, `cached_price` optional; `name` then may name its open model);
- the deployment (`DeploymentRequest`'s policies, with the prices commands' defaults): accelerator `h100-sxm`,
  `gpus=None` (the fewest that hold a batch of `AUTO_GPUS_BATCH` at the context), `layout=None` (EP for MoE),
  the calibrated efficiencies with the request's overrides, context 8192 tokens; the model served is the
  row's open model, or for a closed row a stand-in (`explain`: by price tier unless `model` is given);
- every context within the model's window (`ModelSpec.require_context`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import Field, InstanceOf, StringConstraints

from kokuban.errors import KokubanError
from kokuban.prices.costing import FleetDay, NodeThroughput, Record
from kokuban.prices.explain import Feature
from kokuban.prices.infer import ClosedInference, Comparison, OpenInference
from kokuban.prices.sheets import PriceRow
from kokuban.specs.deployment import Deployment
from kokuban.specs.hardware import Accelerator
from kokuban.specs.model import ModelSpec
from kokuban.usecases.request import DeploymentRequest, EfficiencyRequest, Name, Positive, Price, Request, Tokens

#: Context the prices commands decode at unless told (tokens).
DEFAULT_CONTEXT = 8192
#: Accelerator the prices commands self-host on unless told.
DEFAULT_GPU = "h100-sxm"

TokenCount = Annotated[float, Field(gt=0, le=1e18, allow_inf_nan=False)]
Gpus = Annotated[int, Field(gt=0, le=4096)]
Files = tuple[str, ...]


@contextmanager
def about(field: str, value: Any, wing_field: str | None = None) -> Iterator[None]:
    """An error raised inside about the wing's parameter `wing_field` (None: one naming no field) is about the
    request's `field`, whose `value` fed that parameter: re-raised naming the request field."""
    try:
        yield
    except KokubanError as exc:
        if exc.field != wing_field:
            raise
        raise KokubanError(exc.reason, field=field, value=value) from None


#: The wing's name for a per-user speed (`costing.batch_for_speed`), the request's `speed`.
WING_SPEED = "tokens_per_s_per_user"


# ---- the price a request reads ------------------------------------------------------------------------
class PriceRequest(Request):
    """A sheet row by name, or a price typed by hand (USD per million tokens)."""

    name: str | None = None
    input_price: Price | None = None
    output_price: Price | None = None
    cached_price: Price | None = None
    files: Files = ()

    def check(self) -> None:
        if (self.input_price is None) != (self.output_price is None):
            raise KokubanError("an input and an output price go together: give both",
                               field="input_price" if self.input_price is None else "output_price")
        if self.cached_price is not None and self.input_price is None:
            raise KokubanError("a cached-input price goes with a price by hand (input and output prices)",
                               field="cached_price", value=self.cached_price)
        if self.input_price is None and not self.name:
            raise KokubanError("give a price row, provider/model (see `kokuban prices list`), or a price by hand "
                               "(input and output prices)", field="name")
        super().check()

    def price_row(self) -> PriceRow:
        """The row named by `name`, or the one typed by hand (`name` then names its open model, if a catalog one)."""
        from kokuban.prices.sheets import find_price, hand_price, load_prices
        from kokuban.specs.catalog import model_catalog

        if self.input_price is not None:
            name = self.name.lower() if self.name else ""
            return hand_price(self.input_price, self.output_price, cached_input_usd_per_m=self.cached_price,
                              open_model=name if name in model_catalog() else "", name=self.name or "given")
        rows = load_prices(self.files)
        with about("name", self.name):
            return find_price(self.name, rows)


class PricedDeploymentRequest(PriceRequest, DeploymentRequest):
    """A price and the deployment it is read against: `DeploymentRequest` with the prices commands' defaults
    (accelerator `DEFAULT_GPU`, automatic GPU count and layout, context `DEFAULT_CONTEXT`); `model` is the open
    model served (default: the row's own, or a stand-in for a closed row)."""

    model: str | InstanceOf[ModelSpec] | None = None
    gpu: str | InstanceOf[Accelerator] = DEFAULT_GPU
    gpus: Gpus | None = None
    layout: Literal["tp", "ep"] | None = None
    context: Tokens = DEFAULT_CONTEXT

    def deployment_of(self, model: str | ModelSpec) -> Deployment:
        """The deployment serving `model` (the policies of `DeploymentRequest.deployment` at `context`), priced."""
        from kokuban.specs.catalog import load_model

        spec = model if isinstance(model, ModelSpec) else load_model(model)
        spec.require_context(self.context)
        dep = self.model_copy(update={"model": spec}).deployment(self.context)
        require_hourly_price(dep)
        return dep


def require_hourly_price(dep: Deployment) -> None:
    """Self-hosting costs need a price per accelerator-hour: the catalog's or the request's."""
    if not dep.price_per_hour_usd > 0:
        raise KokubanError(f"self-hosting on {dep.accelerator.id} needs a price per accelerator-hour above 0 (the "
                           f"catalog's: {dep.accelerator.price_per_hour_usd:g}); give one",
                           field="price_per_hour", value=dep.price_per_hour_usd)


# ---- prices list --------------------------------------------------------------------------------------
class ListRequest(Request):
    """`kokuban prices list`: the bundled sheet rows plus `files`, only `provider`'s when given."""

    provider: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)] | None = None
    files: Files = ()


@dataclass(frozen=True)
class PriceList:
    """The rows, validated on load. `as_dict()` is the JSON: a list of rows."""

    rows: tuple[PriceRow, ...]

    def as_dict(self) -> list[dict[str, Any]]:
        return [r.as_dict() for r in self.rows]


def run_list(request: ListRequest) -> PriceList:
    """The price-sheet dataset; an unknown provider is an error suggesting close names."""
    from kokuban.errors import unknown_name
    from kokuban.prices.sheets import load_prices

    rows = load_prices(request.files)
    if request.provider:
        known = {r.provider for r in rows}
        if request.provider.lower() not in known:
            err = unknown_name("provider", request.provider, known, field="provider")
            raise KokubanError(err.reason.replace("`kokuban providers`", "`kokuban prices list`"), field="provider",
                               value=request.provider)
        rows = [r for r in rows if r.provider == request.provider.lower()]
    return PriceList(rows=tuple(rows))


# ---- prices explain -----------------------------------------------------------------------------------
class ExplainRequest(PricedDeploymentRequest):
    """`kokuban prices explain`: each feature of a sheet against the cost model. `model`: the open model whose
    physics stands in (default: the row's, or one by price tier for a closed row); `prompt`: the prefill side
    (default: the context); `speed`: the standard lane's tokens/s per user (default: the sheet's, else the
    memory-limited batch)."""

    prompt: Tokens | None = None
    speed: Positive | None = None


@dataclass(frozen=True)
class Explanation(Record):
    """The sheet row, the physics it is read with (and why that model), and the five features."""

    price: PriceRow
    model: str
    stand_in: str
    deployment: Deployment
    context: int
    features: tuple[Feature, ...]

    def as_dict(self) -> dict[str, Any]:
        dep = self.deployment
        return {"price": self.price.as_dict(), "model": self.model, "stand_in": self.stand_in,
                "deployment": dep.describe(), "gpus": dep.num_gpus, "usd_per_gpu_hour": dep.price_per_hour_usd,
                "context": self.context, "features": [f.as_dict() for f in self.features]}


def run_explain(request: ExplainRequest) -> Explanation:
    """Read the sheet's five features (output ÷ input, long context, fast lane, batch lane, cached input)."""
    from kokuban.prices.explain import explain, stand_in_model

    r = request
    row = r.price_row()
    model_id, why = stand_in_model(row)
    if r.model is not None:
        model_id = r.model if isinstance(r.model, str) else r.model.name
        why = f"ASSUMPTION: physics of {model_id} (given as the stand-in model)"
    dep = r.deployment_of(r.model if r.model is not None else model_id)
    with about("speed", r.speed, WING_SPEED):
        features = explain(row, dep, context=r.context, prompt_tokens=r.prompt, speed=r.speed)
    return Explanation(price=row, model=model_id, stand_in=why, deployment=dep, context=r.context, features=features)


# ---- prices infer -------------------------------------------------------------------------------------
class InferRequest(PricedDeploymentRequest):
    """`kokuban prices infer`: what a price (and a speed) imply. Open models (`model`, default the row's own):
    break-even batch and margins over the efficiency corners (`batch`: also the margin there; `prompt`: the
    prefill side, default the context). Closed rows without a `model`, or `closed=True`: the active sizes and
    batches consistent with the price and `speed` (needed: the request's, else the sheet's), for a coarse model
    of `kv_per_token` KV bytes per token and `total_over_active` total ÷ active parameters (weights default fp8);
    `plot`: where the face saves the feasible region."""

    speed: Positive | None = None
    batch: Tokens | None = None
    prompt: Tokens | None = None
    closed: bool = False
    kv_per_token: Annotated[float, Field(ge=1, le=1e12, allow_inf_nan=False)] = 160e3  # bytes: at least one
    total_over_active: Annotated[float, Field(ge=1, le=1e4, allow_inf_nan=False)] = 1.0
    plot: str | None = None


@dataclass(frozen=True)
class OpenPriceInference(Record):
    """An open model's row read backwards (`prices.infer.OpenInference`); its `as_dict()` is the JSON."""

    inference: OpenInference
    deployment: Deployment

    def as_dict(self) -> dict[str, Any]:
        return self.inference.as_dict()


@dataclass(frozen=True)
class ClosedPriceInference(Record):
    """A closed model's row read backwards (`prices.infer.ClosedInference`), the figure's path, and the row."""

    inference: ClosedInference
    price: PriceRow
    plot: str | None

    def as_dict(self) -> dict[str, Any]:
        return self.inference.as_dict() | ({"plot": self.plot} if self.plot else {}) | {"price": self.price.as_dict()}


def run_infer(request: InferRequest) -> OpenPriceInference | ClosedPriceInference:
    """Back-calculate (逆算) what the price implies for the provider: open model or closed (see `InferRequest`)."""
    from kokuban.prices.infer import infer_closed, infer_open

    r = request
    row = r.price_row()
    speed = r.speed or row.output_tokens_per_s
    served = r.model or row.open_model
    if r.closed or not served:
        if not speed:
            raise KokubanError(f"{row.key} is closed: give its measured output tokens/s per user", field="speed")
        if not row.output_usd_per_m > 0:
            raise KokubanError(f"{row.key}'s output price is {row.output_usd_per_m:g}: a closed model is sized from a "
                               f"price above 0", field="output_price" if r.output_price is not None else "name",
                               value=row.output_usd_per_m)
        inference = infer_closed(row.output_usd_per_m, speed, r.accelerator(), usd_per_gpu_hour=r.price_per_hour,
                                 context=r.context, kv_bytes_per_token=r.kv_per_token,
                                 total_over_active=r.total_over_active, weights_dtype=r.weights or "fp8",
                                 efficiency=r.efficiency_spec())
        return ClosedPriceInference(inference=inference, price=row, plot=r.plot)
    dep = r.deployment_of(served)
    with about("speed", speed, WING_SPEED):
        inference = infer_open(row, dep, context=r.context, prompt_tokens=r.prompt, speed=speed, batch=r.batch)
    return OpenPriceInference(inference=inference, deployment=dep)


# ---- prices compare -----------------------------------------------------------------------------------
class CompareRequest(EfficiencyRequest):
    """`kokuban prices compare`: `requests` requests of `prompt` in / `output` out tokens (a `cache_hit` share of
    each prompt cached) on each sheet row serving `model` (or the rows named in `apis`, or every row with
    `all_apis`) in `lane`, beside self-hosting `model` on each catalog accelerator at `speed` tokens/s per user."""

    model: str | InstanceOf[ModelSpec]
    prompt: Tokens
    output: Tokens
    requests: Annotated[int, Field(gt=0, le=10**15)] = 1
    cache_hit: Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)] = 0.0
    speed: Positive = 30.0
    apis: tuple[str, ...] = ()
    all_apis: bool = False
    lane: Literal["standard", "batch", "flex", "priority"] = "standard"
    weights: str | None = None
    files: Files = ()

    def check(self) -> None:
        from kokuban.specs.dtypes import check_dtype

        if self.weights is not None:  # once here, not once per accelerator row
            check_dtype(self.weights, "weights")


def run_compare(request: CompareRequest) -> Comparison:
    """The workload's cost on each API and self-hosted on each accelerator, cheapest first."""
    from kokuban.prices.infer import compare
    from kokuban.prices.sheets import find_price, load_prices
    from kokuban.specs.catalog import load_model

    r = request
    spec = r.model if isinstance(r.model, ModelSpec) else load_model(r.model)
    spec.require_context(r.prompt + r.output, field="output")
    rows = load_prices(r.files)
    if r.all_apis:
        chosen = rows
    elif r.apis:
        chosen = []
        for name in r.apis:
            with about("apis", name):
                chosen.append(find_price(name, rows))
    else:
        chosen = [row for row in rows if row.open_model == spec.name]
    return compare(spec, chosen, prompt_tokens=r.prompt, output_tokens=r.output, requests=r.requests,
                   cache_hit=r.cache_hit, tokens_per_s_per_user=r.speed, weights_dtype=r.weights,
                   efficiency=r.efficiency_spec())


# ---- prices fleet -------------------------------------------------------------------------------------
class FleetRequest(PriceRequest, EfficiencyRequest):
    """`kokuban prices fleet`: a day of a disaggregated fleet (DeepSeek's Day-6 account). Prefill units of
    `prefill_gpus` and decode units of `decode_gpus` accelerators (each a `DeploymentRequest` with the
    automatic layout: EP for MoE), `gpus_per_node` to a node; `model` the open model served (default: the
    row's). Per-node throughputs from the roofline (decode at `context` keeping `speed` tokens/s per user,
    prefill of `prompt`-token prompts, default the context) unless measured ones are given (`prefill_tps`,
    `decode_tps`). Day: `input_tokens` (of which `cached_tokens` hit the prefix cache) and `output_tokens`."""

    model: Name | None = None
    gpu: str = DEFAULT_GPU
    gpu_file: str | None = None
    price_per_hour: Price | None = None
    gpus_per_node: Annotated[int, Field(gt=0, le=1024)] = 8
    prefill_gpus: Gpus = 32
    decode_gpus: Gpus = 144
    input_tokens: TokenCount
    cached_tokens: Annotated[float, Field(ge=0, le=1e18, allow_inf_nan=False)] = 0.0
    output_tokens: TokenCount
    context: Tokens
    speed: Positive
    prompt: Tokens | None = None
    prefill_tps: Positive | None = None
    decode_tps: Positive | None = None

    def check(self) -> None:
        if self.cached_tokens > self.input_tokens:
            raise KokubanError(f"must be at most the input tokens ({self.input_tokens:g}), got {self.cached_tokens:g}",
                               field="cached_tokens", value=self.cached_tokens)
        if self.cached_tokens == self.input_tokens and self.prefill_tps is None:
            raise KokubanError("every input token is cached, so the roofline prefill does no work; give a measured "
                               "prefill throughput or fewer cached tokens", field="cached_tokens",
                               value=self.cached_tokens)
        super().check()

    def deployment(self, model: str, gpus: int) -> Deployment:
        """A prefill or decode unit of `gpus` accelerators serving `model` (`DeploymentRequest`, automatic layout)."""
        dep = DeploymentRequest(model=model, gpu=self.gpu, gpus=gpus, layout=None, gpu_file=self.gpu_file,
                                price_per_hour=self.price_per_hour, efficiency=self.efficiency_spec()).deployment()
        require_hourly_price(dep)
        return dep


@dataclass(frozen=True)
class FleetAccount(Record):
    """A day of the fleet: the roofline's node throughputs, which ones were used, the day's account."""

    price: PriceRow
    model: str
    prefill: Deployment
    decode: Deployment
    context: int
    cache_hit: float
    throughput_model: NodeThroughput
    throughput_used: dict[str, str]
    day: FleetDay

    def as_dict(self) -> dict[str, Any]:
        dep = self.decode
        return {"price": self.price.as_dict(), "model": self.model, "accelerator": dep.accelerator.id,
                "layout": dep.layout, "throughput_model": self.throughput_model.as_dict(),
                "throughput_used": dict(self.throughput_used), "day": self.day.as_dict(),
                "efficiency": dep.efficiency.as_dict()}


def run_fleet(request: FleetRequest) -> FleetAccount:
    """Node throughput (roofline, or measured), node-hours, cost, revenue and margin of a day of serving."""
    from kokuban.prices.costing import fleet_day, node_throughput
    from kokuban.specs.catalog import load_model

    r = request
    row = r.price_row()
    model_id = r.model or row.open_model
    if not model_id:
        raise KokubanError(f"{row.key} is closed: give the open model that stands in for it", field="model")
    load_model(model_id).require_context(r.context)
    pre, dec = r.deployment(model_id, r.prefill_gpus), r.deployment(model_id, r.decode_gpus)
    hit = r.cached_tokens / r.input_tokens
    with about("speed", r.speed, WING_SPEED):
        tp = node_throughput(pre, dec, context=r.context, prompt_tokens=r.prompt or r.context, cache_hit=hit,
                             tokens_per_s_per_user=r.speed, gpus_per_node=r.gpus_per_node)
    day = fleet_day(row, r.input_tokens, r.cached_tokens, r.output_tokens,
                    r.prefill_tps or tp.prefill_tokens_per_s_per_node, r.decode_tps or tp.decode_tokens_per_s_per_node,
                    gpus_per_node=r.gpus_per_node, usd_per_gpu_hour=dec.price_per_hour_usd)
    return FleetAccount(
        price=row, model=model_id, prefill=pre, decode=dec, context=r.context, cache_hit=hit, throughput_model=tp,
        throughput_used={"prefill": "measured" if r.prefill_tps else "roofline",
                         "decode": "measured" if r.decode_tps else "roofline"},
        day=day)


__all__ = [
    "ClosedPriceInference", "CompareRequest", "ExplainRequest", "Explanation", "FleetAccount", "FleetRequest",
    "InferRequest", "ListRequest", "OpenPriceInference", "PriceList", "PriceRequest", "PricedDeploymentRequest",
    "run_compare", "run_explain", "run_fleet", "run_infer", "run_list",
]
