"""The web face: an HTTP API over the use cases, and the blackboard page that calls it.

Every endpoint is one registration in `ENDPOINTS`: a path, the use case's request class and its run function.
The JSON body is the request's fields (the same names as the CLI's flags without dashes, and the same keys out
as `--json`, through the one serialiser `present.jsonout.to_json`). Three fields are the server's own business and
are not accepted: `gpu_file` and `efficiency_file` (paths on the server) and `efficiency` (a Python object; the
`*_eff` fields set it).
`model` is a catalog id, a catalog model's Hugging Face repository, a `coarse:` spec, or the content of a
config.json (a JSON object) — never a path.

Every response carries the headers `X-Kokuban-Version` and `X-Kokuban-Schema-Version` (`VersionHeaders`); a
body is the result itself — `--json`'s keys without its envelope (`kokuban_version`, `schema_version`, `command`).

Errors: a bad field — whether FastAPI's body validation or the use case finds it — is a 422 with
`{"error": {"field", "value", "reason", "message"}}`; a body over `MAX_BODY_BYTES` is a 413; nothing is a 500.
Work is bounded by the requests' own limits (token counts ≤ 2³¹, ≤ 4096 accelerators, curves ≤ 64 rows of
≤ 65,536 batches, config.json ≤ 1024 layers), by the body size, and for a simulation by the web's own caps
(`MAX_SIM_*`: requests, tokens per request, output and all tokens in all).
"""

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib.resources import files
from typing import Annotated, Any

from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, ConfigDict, Field, create_model
from starlette.exceptions import HTTPException as StarletteHTTPException

from kokuban.errors import KokubanError
from kokuban.present.jsonout import to_json
from kokuban.usecases.agent import SHAPE_FIELDS, AgentRequest, run_agent
from kokuban.usecases.board import run_blackboard
from kokuban.usecases.catalog import (
    MAX_LAYERS,
    catalog_model_name,
    model_from_config,
    run_agent_presets,
    run_gpus,
    run_models,
)
from kokuban.usecases.curves import (
    MAX_CURVE_BATCH,
    MAX_POINTS,
    BatchCurveRequest,
    ContextWallRequest,
    run_batch_curve,
    run_context_wall,
)
from kokuban.usecases.estimate import run_estimate
from kokuban.usecases.prices import ExplainRequest, InferRequest, ListRequest, run_explain, run_infer, run_list
from kokuban.usecases.request import EstimateRequest, Request, error_from_validation
from kokuban.usecases.simulate import SimulateRequest, Simulation, run_simulate

#: The largest request body accepted, in bytes (a config.json upload travels in the body).
MAX_BODY_BYTES = 512 * 1024
#: Request fields a web client may not set: a server-side path, and a Python object.
SERVER_ONLY = ("gpu_file", "efficiency_file", "efficiency")
#: What `model` may be over HTTP: a name (see `catalog_model_name`) or a config.json's content.
ModelField = str | dict[str, Any]
#: The most sampled agent runs, and compaction policies compared, one request may ask for.
MAX_AGENT_RUNS, MAX_AGENT_POLICIES = 200, 5
#: A web simulation's bounds: requests, tokens of any one prompt or output, output tokens in all and tokens
#: (prompt + output) in all. A run's steps grow with its output tokens (one step each when requests run one at a
#: time) and its prefill chunks; the slowest measured at these caps took ~0.6 s (docs/web.md has the numbers).
MAX_SIM_REQUESTS, MAX_SIM_TOKENS, MAX_SIM_OUTPUT_TOKENS, MAX_SIM_ALL_TOKENS = 300, 8192, 2**18, 2**19
#: Simulator fields not offered over HTTP: a trace file, and the knobs that multiply a run's steps (a step
#: budget, a KV pool or memory fraction small enough to thrash, prefixes, ranks and replicas, a host KV tier,
#: disaggregated pools).
SIM_REFUSE = ("trace", "max_num_seqs", "max_num_batched_tokens", "block_size", "kv_blocks", "max_concurrency",
              "batch_timeout", "gpu_memory_utilization", "engine", "shared_prefix", "num_prefixes", "router",
              "replicas", "cpu_offload", "offload_bandwidth", "disaggregate", "kv_link_bandwidth", "kv_link_latency")

STATIC = files("kokuban.web") / "static"
WIRE_DOCS = {
    "model": "A catalog id (GET /api/models), a catalog model's Hugging Face repository, a `coarse:` spec, "
             f"or a config.json as a JSON object (at most {MAX_LAYERS} layers).",
    "gpu": "An accelerator id (GET /api/gpus) or `custom:bf16=…,bw=…,mem=…`.",
}


@dataclass(frozen=True)
class Endpoint:
    """One API route: POST `path` with a `request` body runs `run(request)`; GET (no request) runs `run()`."""

    path: str
    request: type[Request] | None
    run: Callable[..., Any]
    summary: str
    refuse: tuple[str, ...] = ()  # more request fields not accepted over HTTP (server paths, unbounded work)
    tighter: dict[str, tuple[Any, Any]] = field(default_factory=dict)  # field → (annotation, default or ...)


@dataclass(frozen=True)
class SampledSimulation:
    """A web simulation: `kokuban simulate --json`'s summary plus `samples_s`, every request's TTFT, TPOT and
    E2E latency in seconds, sorted (the page draws their CDFs; at most `MAX_SIM_REQUESTS` of each; TPOT leaves
    out one-token outputs, which have none)."""

    simulation: Simulation

    def as_dict(self) -> dict[str, Any]:
        import numpy as np

        r = self.simulation.result
        samples = {k: np.sort(v[~np.isnan(v)]).tolist() for k, v in
                   (("ttft", r.ttft_s), ("tpot", r.tpot_s), ("e2e", r.e2e_s))}
        return self.simulation.as_dict() | {"samples_s": samples}


def run_web_simulate(request: SimulateRequest) -> SampledSimulation:
    """`run_simulate` held to the web's bounds: the drawn workload's longest prompt and output at most
    `MAX_SIM_TOKENS` tokens, its output tokens in all at most `MAX_SIM_OUTPUT_TOKENS`, prompt and output tokens
    in all at most `MAX_SIM_ALL_TOKENS` (KokubanError naming `prompt` or `output`). The workload is drawn here
    and again by the run: the same seed, the same draw."""
    import numpy as np

    from kokuban.sim.workload.lengths import lengths

    for name in ("prompt", "output"):  # a spec whose draws overflow int64 is refused before the run draws it
        spec = getattr(request, name)
        try:
            with np.errstate(all="ignore"):
                ok = lengths(spec, request.requests, field=name).min() >= 1
        except (OverflowError, ValueError):
            ok = False
        if not ok:
            raise KokubanError(f"'{spec}' draws lengths too large to count; the web's limit is {MAX_SIM_TOKENS:,}",
                               field=name, value=spec)
    wl = request.workload()
    for name, tokens in (("prompt", wl.prompt_tokens), ("output", wl.output_tokens)):
        if not 1 <= int(tokens.min()) <= int(tokens.max()) <= MAX_SIM_TOKENS:
            raise KokubanError(f"a drawn {name} of {int(tokens.max()):,} tokens is over the web's limit of "
                               f"{MAX_SIM_TOKENS:,} per request (use `kokuban simulate` for longer ones)",
                               field=name, value=getattr(request, name))
    total = int(wl.output_tokens.sum())
    if total > MAX_SIM_OUTPUT_TOKENS:
        raise KokubanError(f"the run would decode {total:,} output tokens in all (requests × output); the web "
                           f"runs at most {MAX_SIM_OUTPUT_TOKENS:,} (use `kokuban simulate` for longer runs)",
                           field="output", value=request.output)
    total += int(wl.prompt_tokens.sum())
    if total > MAX_SIM_ALL_TOKENS:
        raise KokubanError(f"the run holds {total:,} prompt and output tokens in all (requests × (prompt + "
                           f"output)); the web runs at most {MAX_SIM_ALL_TOKENS:,} (use `kokuban simulate` for "
                           "longer runs)", field="prompt", value=request.prompt)
    return SampledSimulation(run_simulate(request))


ENDPOINTS = (
    Endpoint("/api/models", None, run_models, "The model catalog: the rows of `kokuban models --json`, with hf_repo."),
    Endpoint("/api/gpus", None, run_gpus, "The accelerator catalog: the rows of `kokuban gpus --json`."),
    Endpoint("/api/estimate", EstimateRequest, run_estimate,
             "One configuration, every term: `kokuban estimate --json`."),
    Endpoint("/api/blackboard", EstimateRequest, run_blackboard,
             "The estimate, its roofline operating points, output/input cost ratio and the why."),
    Endpoint("/api/batch-curve", BatchCurveRequest, run_batch_curve,
             f"Cost of a decode token against batch (at most {MAX_POINTS} rows of batches up to {MAX_CURVE_BATCH:,})."),
    Endpoint("/api/context-wall", ContextWallRequest, run_context_wall,
             f"Cost against context at the largest batch that fits (at most {MAX_POINTS} contexts)."),
    Endpoint("/api/prices/list", ListRequest, run_list, "The bundled price sheets' rows (`kokuban prices list`).",
             refuse=("files",)),
    Endpoint("/api/prices/explain", ExplainRequest, run_explain,
             "A price row read backwards: what each feature of the sheet implies (`kokuban prices explain`).",
             refuse=("files",)),
    Endpoint("/api/prices/infer", InferRequest, run_infer,
             "The deployments a price row is consistent with (`kokuban prices infer`).", refuse=("files", "plot")),
    Endpoint("/api/agent/presets", None, run_agent_presets, "The bundled agent scenarios (`kokuban agent presets`)."),
    Endpoint("/api/agent", AgentRequest, run_agent,
             f"What an agent run costs (`kokuban agent api|self-hosted --json`): a bundled preset, at most "
             f"{MAX_AGENT_RUNS} runs and {MAX_AGENT_POLICIES} compaction policies.",
             refuse=("scenario_file", "trace", "price_file", *SHAPE_FIELDS),
             tighter={"preset": (str, ...),
                      "runs": (Annotated[int, Field(gt=0, le=MAX_AGENT_RUNS)] | None, None),
                      "compaction": (Annotated[tuple[Annotated[str, Field(max_length=100)], ...],
                                               Field(min_length=1, max_length=MAX_AGENT_POLICIES)], ("none",))}),
    Endpoint("/api/simulate", SimulateRequest, run_web_simulate,
             f"A short serving simulation (`kokuban simulate --json`) plus every request's latencies (`samples_s`): "
             f"at most {MAX_SIM_REQUESTS} requests, {MAX_SIM_TOKENS:,} tokens per prompt or output and "
             f"{MAX_SIM_OUTPUT_TOKENS:,} output ({MAX_SIM_ALL_TOKENS:,} prompt + output) tokens in all; no trace "
             "files or scheduler limits.",
             refuse=SIM_REFUSE,
             tighter={"requests": (Annotated[int, Field(gt=0, le=MAX_SIM_REQUESTS)], 200),
                      "prompt": (Annotated[str, Field(max_length=200)] | int, "1000"),
                      "output": (Annotated[str, Field(max_length=200)] | int, "200")}),
)


def body_model(ep: Endpoint) -> type[BaseModel]:
    """The JSON body of `ep.request`: its fields and checks, less `SERVER_ONLY` and `ep.refuse`, with `model`
    and `gpu` as JSON types and `ep.tighter`'s bounds."""
    cls = ep.request
    assert cls is not None
    fields: dict[str, Any] = {}
    for name, info in cls.model_fields.items():
        if name in SERVER_ONLY or name in ep.refuse:
            continue
        if name in ep.tighter:
            annotation, default = ep.tighter[name]
            fields[name] = (annotation, Field(default, description=info.description))
        elif name in WIRE_DOCS:
            annotation = ModelField if name == "model" else str
            required = info.is_required()
            fields[name] = (annotation if required else annotation | None,
                            Field(... if required else info.default, description=WIRE_DOCS[name]))
        else:
            fields[name] = (info.annotation, info)
    return create_model(f"{cls.__name__}Body", __config__=ConfigDict(extra="forbid"), __doc__=cls.__doc__, **fields)



def build_request(cls: type[Request], body: BaseModel) -> Request:
    """The use case's request from a validated body: a config.json object becomes a ModelSpec, a name is
    resolved without ever reading a file; the request's own checks run (KokubanError on a bad field)."""
    fields = body.model_dump(exclude_unset=True)
    model = fields.get("model")
    if isinstance(model, dict):
        fields["model"] = model_from_config(model, name=str(model.get("_name_or_path") or "uploaded")[:80])
    elif isinstance(model, str):
        fields["model"] = catalog_model_name(model)
    return cls(**fields)


def _finite(data: Any, path: str = "") -> str | None:
    """The first key path under `data` holding NaN or ±inf, else None."""
    if isinstance(data, float):
        return None if math.isfinite(data) else path or "result"
    if isinstance(data, dict):
        items: Any = data.items()
    elif isinstance(data, (list, tuple)):
        items = enumerate(data)
    else:
        return None
    for key, value in items:
        bad = _finite(value, f"{path}.{key}" if path else str(key))
        if bad:
            return bad
    return None


def json_response(data: Any) -> Response:
    """`data` through the one serialiser; a non-finite number is refused (never sent as a result)."""
    bad = _finite(data)
    if bad:
        raise KokubanError(f"the inputs give a non-finite {bad}; they are outside what the model describes")
    return Response(to_json(data), media_type="application/json")


def error_response(err: KokubanError, status: int = 422) -> JSONResponse:
    """`{"error": err.as_dict()}`; a non-finite value given is echoed as text (JSON has no inf or NaN)."""
    error = err.as_dict()
    if isinstance(error["value"], float) and not math.isfinite(error["value"]):
        error["value"] = repr(error["value"])
    return JSONResponse({"error": error}, status_code=status)


class _BodyErrors:
    """FastAPI's body errors with the leading "body" dropped, shaped as pydantic's for `error_from_validation`."""

    def __init__(self, errors: list[dict[str, Any]]) -> None:
        self._errors = []
        for e in errors:
            loc = tuple(e.get("loc", ()))
            self._errors.append(e | {"loc": loc[1:] if loc[:1] == ("body",) else loc}
                                | ({"input": None} if e.get("type") == "missing" else {}))

    def errors(self, include_url: bool = False) -> list[dict[str, Any]]:
        return self._errors


def validation_error(errors: list[dict[str, Any]]) -> KokubanError:
    """The first bad field of FastAPI's errors, worded as the use cases word theirs."""
    shaped = _BodyErrors(errors)
    first = shaped.errors()[0] if shaped.errors() else {"type": "missing", "loc": (), "msg": "Body is required"}
    if first["type"] == "json_invalid" or not shaped.errors():
        reason = first.get("ctx", {}).get("error", first["msg"]) if isinstance(first.get("ctx"), dict) else first["msg"]
        return KokubanError(f"the body is not valid JSON: {reason}", field=None)
    if not first["loc"] or not isinstance(first["loc"][0], str):
        return KokubanError(f"the body must be a JSON object: {first['msg'].lower()}", field=None)
    return error_from_validation(shaped)  # type: ignore[arg-type]


class BodyLimit:
    """ASGI middleware: refuse a request body over `limit` bytes (by its Content-Length, or as it streams)."""

    def __init__(self, app: Any, limit: int = MAX_BODY_BYTES) -> None:
        self.app, self.limit = app, limit

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        too_big = JSONResponse({"error": KokubanError(f"the request body is over the limit of {self.limit:,} bytes",
                                                      field=None).as_dict()}, status_code=413)
        length = dict(scope.get("headers") or []).get(b"content-length")
        if length is not None and (not length.isdigit() or int(length) > self.limit):
            await too_big(scope, receive, send)
            return
        seen = 0

        async def limited() -> Any:
            nonlocal seen
            message = await receive()
            seen += len(message.get("body", b""))
            if seen > self.limit:
                raise _TooBig
            return message

        try:
            await self.app(scope, limited, send)
        except _TooBig:
            await too_big(scope, receive, send)


class _TooBig(Exception):
    pass


class VersionHeaders:
    """ASGI middleware: every response says which kokuban and which JSON schema made it, in the headers
    `X-Kokuban-Version` and `X-Kokuban-Schema-Version` (the bodies are the results themselves, the keys of
    `--json` without its envelope)."""

    def __init__(self, app: Any) -> None:
        from kokuban import __version__
        from kokuban.present.jsonout import SCHEMA_VERSION

        self.app = app
        self.headers = [(b"x-kokuban-version", __version__.encode()),
                        (b"x-kokuban-schema-version", str(SCHEMA_VERSION).encode())]

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_versions(message: Any) -> None:
            if message["type"] == "http.response.start":
                message = message | {"headers": [*message.get("headers", []), *self.headers]}
            await send(message)

        await self.app(scope, receive, send_with_versions)


#: The page's policy: every script, style, image and font from this server, none from anywhere else.
CSP = ("default-src 'self'; img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; "
       "form-action 'none'")


def create_app() -> FastAPI:
    """The FastAPI application: the API routes of `ENDPOINTS`, `/api/limits`, the page at `/`, its assets at
    `/static/`."""
    # no /docs or /redoc: FastAPI's pages for them load scripts from a CDN; the schema is at /openapi.json
    app = FastAPI(title="kokuban", version=_version(), docs_url=None, redoc_url=None,
                  summary="What running an LLM costs and how fast it goes: the use cases of the kokuban CLI as JSON "
                  "over HTTP (SI units, the same keys as --json).")

    @app.exception_handler(KokubanError)
    async def _kokuban(_: Any, exc: KokubanError) -> JSONResponse:
        return error_response(exc)

    @app.exception_handler(RequestValidationError)
    async def _invalid(_: Any, exc: RequestValidationError) -> JSONResponse:
        return error_response(validation_error(list(exc.errors())))

    @app.exception_handler(StarletteHTTPException)
    async def _http(_: Any, exc: StarletteHTTPException) -> JSONResponse:
        return error_response(KokubanError(str(exc.detail)), exc.status_code)

    @app.exception_handler(RecursionError)
    async def _deep(_: Any, exc: RecursionError) -> JSONResponse:
        return error_response(KokubanError("the body is nested too deeply to read"))

    for ep in ENDPOINTS:
        _register(app, ep)

    @app.get("/api/limits", summary="The bounds every request is held to.")
    def limits() -> dict[str, int]:
        return {"max_body_bytes": MAX_BODY_BYTES, "max_curve_batch": MAX_CURVE_BATCH, "max_points": MAX_POINTS,
                "max_config_layers": MAX_LAYERS, "max_gpus": 4096, "max_tokens": 2**31,
                "max_sim_requests": MAX_SIM_REQUESTS, "max_sim_tokens": MAX_SIM_TOKENS,
                "max_sim_output_tokens": MAX_SIM_OUTPUT_TOKENS, "max_sim_all_tokens": MAX_SIM_ALL_TOKENS}

    @app.get("/", include_in_schema=False)
    def page() -> FileResponse:
        return FileResponse(str(STATIC / "index.html"), headers={"Content-Security-Policy": CSP})

    app.mount("/static", StaticFiles(packages=[("kokuban.web", "static")]), name="static")
    app.add_middleware(BodyLimit)
    app.add_middleware(VersionHeaders)
    return app


def _register(app: FastAPI, ep: Endpoint) -> None:
    """Add `ep` to `app`: GET without a body, else POST with the request's body model."""
    if ep.request is None:
        def get() -> Response:
            return json_response(ep.run().as_dict())
        app.get(ep.path, summary=ep.summary, name=ep.path)(get)
        return
    cls, body_cls = ep.request, body_model(ep)

    def post(body: Any) -> Response:
        return json_response(ep.run(build_request(cls, body)).as_dict())
    post.__annotations__ = {"body": body_cls, "return": Response}
    app.post(ep.path, summary=ep.summary, name=ep.path)(post)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("kokuban")
    except PackageNotFoundError:
        return "0"


def serve(port: int = 8000, host: str = "127.0.0.1") -> None:
    """Run the app with uvicorn on `host:port` (127.0.0.1: this machine only) until interrupted."""
    import uvicorn

    uvicorn.run(create_app(), host=host, port=port, log_level="warning")
