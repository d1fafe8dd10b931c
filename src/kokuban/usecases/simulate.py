"""Use cases of the serving simulator: `run_simulate` (one run) and `run_capacity` (the highest rate within an
SLO, or the cheapest deployment serving a target rate).

Requests own every default and check (field names = the CLI's flags with dashes); results are typed and their
`as_dict()` is the JSON.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import Field, field_validator

from kokuban.errors import KokubanError
from kokuban.progress import Progress
from kokuban.usecases.request import DeploymentRequest, NonNegative, Positive

if TYPE_CHECKING:
    from kokuban.sim.capacity import CandidateCapacity, Capacity, WorkloadShape
    from kokuban.sim.metrics import SLO, SimResult
    from kokuban.sim.profiles import EngineProfile
    from kokuban.sim.scheduler import SchedulerConfig
    from kokuban.sim.workload import Workload
    from kokuban.specs.hardware import Efficiency

#: A count of requests (or prefixes): bounded so a run fits in memory (~10⁷ requests is a few GB of arrays).
Count = Annotated[int, Field(gt=0, le=10**7)]
#: The routers in front of data-parallel ranks and replicas (`sim.dataparallel.ROUTERS`).
Router = Literal["round_robin", "random", "least_outstanding", "prefix_aware"]
#: Tokens per step at most: the step tables hold one entry per token count.
MAX_STEP_TOKENS = 2**20


def _comma_list(value: Any) -> Any:
    """"a,b,c" → ["a", "b", "c"] (blanks dropped); lists pass through."""
    if isinstance(value, str):
        return [item.strip() for item in value.split(",") if item.strip()]
    return value


class ServingRequest(DeploymentRequest):
    """What `simulate` and `capacity` share: the synthetic workload's shape and the scheduler's limits.

    Defaults: 1,000 requests of 1,000 prompt and 200 output tokens, Poisson arrivals, seed 0; continuous batching
    with vLLM's limits for the accelerator (`sim.scheduler.vllm_defaults`), 16-token blocks, prefix caching on.
    Length specs: N, uniform:LO,HI, lognormal:MEDIAN,SIGMA or hist:V=W,… (`sim.workload.lengths`).
    `engine` names a profile (`sim.profiles`, data/engines.toml): its scheduler defaults fill `scheduler`,
    `max_num_seqs`, `max_num_batched_tokens`, `block_size` and `prefix_caching` when those are None, its step
    overhead is the default of `step_overhead`, and its other overheads time the run; the default profile,
    "kokuban", sets nothing. The profile's memory rule sizes the KV pool (`specs.deployment.MemoryRule`);
    `gpu_memory_utilization` is that rule's fraction (vLLM's `--gpu-memory-utilization`, SGLang's
    `--mem-fraction-static`, TensorRT-LLM's `free_gpu_memory_fraction`; None: the engine's default, 0.9 for kokuban);
    `kv_blocks` replaces the computed KV pool of one scheduler. `router` runs each data-parallel rank of an "ep"
    deployment as a scheduler of its own behind it (`sim.dataparallel`): round_robin or random (seeded by `seed`)
    split the arrival stream; least_outstanding and prefix_aware read the ranks' state (the ranks stepped
    together); None: one scheduler for the whole deployment. `cpu_offload` bytes of host memory per scheduler hold
    preempted requests' KV and evicted prefixes (`sim.kvcache.HostTier`), reloaded over each GPU's host link at
    `offload_bandwidth` bytes/s (default PCIe 5.0 x16).
    """

    requests: Count = 1000
    prompt: str | int = "1000"
    output: str | int = "200"
    arrival: str = "poisson"
    burstiness: Positive = 1.0
    seed: Annotated[int, Field(ge=0, le=2**63 - 1)] = 0
    scheduler: str | None = None
    max_num_seqs: Annotated[int, Field(gt=0, le=2**20)] | None = None
    max_num_batched_tokens: Annotated[int, Field(gt=0, le=MAX_STEP_TOKENS)] | None = None
    block_size: Annotated[int, Field(gt=0, le=4096)] | None = None
    prefix_caching: bool | None = None
    batch_timeout: NonNegative = 0.0
    max_concurrency: Count | None = None
    engine: str = "kokuban"
    gpu_memory_utilization: Annotated[float, Field(gt=0, le=1, allow_inf_nan=False)] | None = None
    kv_blocks: Annotated[int, Field(gt=0, le=2**40)] | None = None
    router: Router | None = None
    cpu_offload: Annotated[float, Field(gt=0, le=2**60, allow_inf_nan=False)] | None = None
    offload_bandwidth: Annotated[float, Field(gt=0, le=1e15, allow_inf_nan=False)] | None = None

    def check(self) -> None:
        from kokuban.sim.scheduler import POLICIES
        from kokuban.sim.workload import ARRIVALS, length_distribution

        length_distribution(self.prompt, "prompt")
        length_distribution(self.output, "output")
        if self.arrival not in ARRIVALS:
            raise KokubanError(f"'{self.arrival}' is not a known arrival process; allowed: {', '.join(ARRIVALS)}",
                               field="arrival", value=self.arrival)
        from kokuban.sim.profiles import load_profile

        load_profile(self.engine)
        if self.scheduler is not None and self.scheduler not in POLICIES:
            raise KokubanError(f"'{self.scheduler}' is not a known scheduler; allowed: {', '.join(POLICIES)}",
                               field="scheduler", value=self.scheduler)

    def profile(self) -> EngineProfile:
        """The engine profile `engine` names."""
        from kokuban.sim.profiles import load_profile

        return load_profile(self.engine)

    def scheduler_config(self) -> SchedulerConfig:
        """The `SchedulerConfig` these fields name: a field left None takes the engine profile's default, then
        kokuban's (continuous batching, 16-token blocks, prefix caching on; limits: vLLM's when resolved)."""
        from kokuban.sim.scheduler import SchedulerConfig

        # a profile's "max_model_len" budget, at most the step tables' MAX_STEP_TOKENS
        return SchedulerConfig.for_engine(
            self.profile(), min(self.model_spec().max_context, MAX_STEP_TOKENS), policy=self.scheduler,
            max_num_seqs=self.max_num_seqs, max_num_batched_tokens=self.max_num_batched_tokens,
            block_size=self.block_size, prefix_caching=self.prefix_caching, batch_timeout_s=self.batch_timeout,
            max_concurrency=self.max_concurrency, kv_blocks=self.kv_blocks, cpu_offload_bytes=self.cpu_offload,
            offload_bytes_per_s=self.offload_bandwidth)

    def deployment(self, context: int | None = None, *, efficiency: Efficiency | None = None):
        """`DeploymentRequest.deployment` with the profile's memory rule at `gpu_memory_utilization` (None: the
        engine's default fraction) and its step model (`engine_deployment`)."""
        p = self.profile()
        return self.engine_deployment(p, self.gpu_memory_utilization, context, efficiency=efficiency,
                                      chunk_tokens=self.max_num_batched_tokens)

    def shape(self) -> WorkloadShape:
        """The synthetic workload's shape, apart from its rate (`sim.capacity.WorkloadShape`)."""
        from kokuban.sim.capacity import WorkloadShape

        return WorkloadShape(self.requests, str(self.prompt), str(self.output), self.arrival, self.burstiness,
                             self.seed)


class SimulateRequest(ServingRequest):
    """`kokuban simulate`: serve a synthetic workload at `rate` requests/s ('inf': all at t = 0), or replay a
    `trace` file (then the synthetic fields are unused). `shared_prefix` tokens of one of `num_prefixes` system
    prompts start every synthetic prompt. `ttft_slo`/`tpot_slo` (s) add goodput to the result. `replicas`
    copies of the deployment serve behind the same `router` (round_robin unless `router` says otherwise).
    `disaggregate` (P, D) serves prefill on P copies (behind `router`) and decode on D copies, each prompt's KV sent
    over a link of `kv_link_bandwidth` bytes/s per GPU (default: the accelerator's interconnect) with
    `kv_link_latency` seconds (`sim.disaggregated`)."""

    rate: float | None = None
    trace: str | None = None
    shared_prefix: Annotated[int, Field(ge=0, le=2**31)] = 0
    num_prefixes: Count = 1
    ttft_slo: Positive | None = None
    tpot_slo: Positive | None = None
    replicas: Annotated[int, Field(gt=0, le=4096)] = 1
    disaggregate: tuple[Annotated[int, Field(gt=0, le=4096)], Annotated[int, Field(gt=0, le=4096)]] | None = None
    kv_link_bandwidth: Annotated[float, Field(gt=0, le=1e15, allow_inf_nan=False)] | None = None
    kv_link_latency: NonNegative = 0.0

    @field_validator("disaggregate", mode="before")
    @classmethod
    def _pools(cls, value: Any) -> Any:
        if isinstance(value, str):
            head, sep, tail = value.partition(":")
            if not sep or not head.strip().isdigit() or not tail.strip().isdigit():
                raise ValueError("must be P:D, prefill and decode deployments (e.g. 1:2)")
            return int(head), int(tail)
        return value

    @field_validator("rate", mode="before")
    @classmethod
    def _rate(cls, value: Any) -> Any:
        if value is None:
            return None
        try:
            rate = float(value)
        except (TypeError, ValueError):
            raise ValueError("must be a number of requests per second or 'inf'") from None
        if not rate > 0:  # also NaN
            raise ValueError("must be > 0 requests/s (or 'inf' to send everything at once)")
        return rate

    def check(self) -> None:
        super().check()
        if self.rate is None and self.trace is None:
            raise KokubanError("give a rate (requests/s) or a trace file", field="rate")

    def workload(self) -> Workload:
        """The workload: the trace, else the seeded synthetic one."""
        from kokuban.sim.workload import read_trace, synthetic

        if self.trace:
            return read_trace(self.trace)
        return synthetic(self.requests, self.rate, self.prompt, self.output, arrival=self.arrival,
                         burstiness=self.burstiness, seed=self.seed, shared_prefix_tokens=self.shared_prefix,
                         num_prefixes=self.num_prefixes)


@dataclass(frozen=True)
class Simulation:
    """A simulated run (`sim.SimResult`: per-request and per-step arrays) and the SLO it is judged by."""

    result: SimResult
    slo: SLO | None
    ranks: tuple[SimResult, ...] = ()
    router: str | None = None
    pools: dict[str, Any] | None = None  # a disaggregated run: the pools' sizes, summaries and transfer times

    def as_dict(self) -> dict[str, Any]:
        """The run's summary (`SimResult.summary`): stable keys, SI units; with a router, also `router` and
        `ranks` (every rank's own summary); disaggregated, also `disaggregated` (the pools)."""
        out = self.result.summary(self.slo)
        if self.pools is not None:
            out = out | {"disaggregated": self.pools}
        if self.router is None:
            return out
        return out | {"router": self.router, "ranks": [rank.summary(self.slo) for rank in self.ranks]}


def run_simulate(request: SimulateRequest, *, progress: Progress | None = None) -> Simulation:
    """Serve the request's workload on its deployment (every step timed by the core). The automatic GPU count
    (`gpus=None`) is sized for the longest request. A request that cannot fit the KV cache is an error naming
    the field its length came from (`prompt`, or `trace`). `progress(finished, requests)` follows a
    single-scheduler run (`kokuban.progress`)."""
    from kokuban.sim import SLO, simulate
    from kokuban.sim.dataparallel import simulate_data_parallel

    r = request
    wl = r.workload()
    dep = r.deployment(int((wl.prompt_tokens + wl.output_tokens).max()))
    ranks: tuple[SimResult, ...] = ()
    router = r.router or ("round_robin" if r.replicas > 1 else None)  # replicas need a router: round robin
    pools = None
    try:
        if r.disaggregate is not None:
            result, pools = _disaggregated(r, dep, wl)
        elif router is None:
            result = simulate(dep, wl, r.scheduler_config(), progress=progress)
        else:
            dp = simulate_data_parallel(dep, wl, r.scheduler_config(), router=router, seed=r.seed,
                                        replicas=r.replicas)
            result, ranks = dp.merged, dp.ranks
    except KokubanError as exc:
        if exc.field != "workload":
            raise
        raise KokubanError(exc.reason, field="trace" if r.trace else "prompt", value=r.trace or r.prompt) from None
    slo = SLO(r.ttft_slo, r.tpot_slo) if r.ttft_slo is not None or r.tpot_slo is not None else None
    return Simulation(result, slo, ranks, router if pools is None else None, pools)


def _disaggregated(r: SimulateRequest, dep: Any, wl: Workload) -> tuple[SimResult, dict[str, Any]]:
    """`sim.disaggregated.simulate_disaggregated` for the request, and the pools' part of the JSON."""
    from kokuban.sim.disaggregated import simulate_disaggregated
    from kokuban.sim.metrics import _stats

    if r.replicas > 1:
        raise KokubanError("a disaggregated run takes its pools' sizes from disaggregate (P:D), not replicas",
                           field="replicas", value=r.replicas)
    p, d = r.disaggregate  # type: ignore[misc]
    run = simulate_disaggregated(dep, wl, r.scheduler_config(), prefill=p, decode=d,
                                 link_bytes_per_s=r.kv_link_bandwidth, latency_s=r.kv_link_latency,
                                 router=r.router or "round_robin", seed=r.seed)
    pools = {"prefill_deployments": p, "decode_deployments": d, "kv_transfer_s": _stats(run.transfer_s),
             "prefill": run.prefill.summary(), "decode": run.decode.summary() if run.decode is not None else None}
    return run.merged, pools


class CapacityRequest(ServingRequest):
    """`kokuban capacity`: the highest request rate whose run meets the p99 SLO (`ttft_p99`, `tpot_p99`, seconds;
    at least one); with `target_rate`, the cheapest deployment serving it among `candidates` (accelerator ids;
    default: `gpu`) × `counts` (GPU counts) × `seqs` (max_num_seqs values; default vLLM's). The sweep runs on
    `workers` local processes (default: all cores) or on a Ray cluster at `ray_address`. Lists may be given as
comma-separated strings. An automatic GPU count (`gpus=None`) is not offered: the search needs a deployment."""

    ttft_p99: Positive | None = None
    tpot_p99: Positive | None = None
    target_rate: Positive | None = None
    candidates: Annotated[tuple[str, ...], Field(min_length=1)] | None = None
    counts: Annotated[tuple[Annotated[int, Field(gt=0, le=4096)], ...], Field(min_length=1)] = (1, 2, 4, 8)
    seqs: Annotated[tuple[Annotated[int, Field(gt=0, le=2**20)], ...], Field(min_length=1)] | None = None
    workers: Annotated[int, Field(gt=0, le=1024)] | None = None
    #: "auto", "local", or a cluster's HOST:PORT (or ray://HOST:PORT), as `ray.init(address=…)` takes it.
    ray_address: str | None = None

    @field_validator("ray_address")
    @classmethod
    def _ray_address(cls, value: str | None) -> str | None:
        import re

        if value is not None and not re.fullmatch(r"auto|local|(ray://)?[A-Za-z0-9_.\-]+:[0-9]{1,5}", value):
            raise ValueError("should be auto, local, HOST:PORT or ray://HOST:PORT")
        return value

    @field_validator("candidates", "counts", "seqs", mode="before")
    @classmethod
    def _lists(cls, value: Any) -> Any:
        return _comma_list(value)

    def check(self) -> None:
        super().check()
        if self.ttft_p99 is None and self.tpot_p99 is None:
            raise KokubanError("an SLO needs a p99 TTFT and/or a p99 TPOT target", field="ttft_p99")
        if self.candidates and self.target_rate is None:  # they would be silently ignored
            raise KokubanError("candidates are searched only for a target rate: give one too",
                               field="candidates", value=",".join(map(str, self.candidates)))


@dataclass(frozen=True)
class CheapestDeployments:
    """Every candidate's max rate within the SLO, the replicas the target rate needs and their USD/hour,
    cheapest first (`sim.capacity.cheapest`)."""

    target_rate_per_s: float
    slo: SLO
    rows: tuple[CandidateCapacity, ...]

    def as_dict(self) -> dict[str, Any]:
        """The JSON: the target rate, the SLO and the candidate rows, cheapest first."""
        return {"target_rate_per_s": self.target_rate_per_s, "slo": self.slo.as_dict(),
                "candidates": [row.as_dict() for row in self.rows]}


def run_capacity(request: CapacityRequest, *, progress: Progress | None = None) -> Capacity | CheapestDeployments:
    """`sim.capacity.max_rate` on the request's deployment (a `Capacity`), or with `target_rate`,
    `sim.capacity.cheapest` over the candidates (`CheapestDeployments`); `progress(done, planned)` follows the
    simulations (or the candidates)."""
    from kokuban.sim import SLO
    from kokuban.sim.capacity import Candidate, cheapest, max_rate

    r = request
    slo, shape, sched = SLO(r.ttft_p99, r.tpot_p99), r.shape(), r.scheduler_config()
    if r.target_rate is None:
        return max_rate(r.deployment(), slo, shape, sched, workers=r.workers, ray_address=r.ray_address,
                        router=r.router, progress=progress)
    home = r.accelerator().id

    def make(gpu: str, num_gpus: int, layout: str | None):
        price = r.price_per_hour if gpu == home else None  # a price given is the home accelerator's
        return r.model_copy(update={"gpu": gpu, "gpus": num_gpus, "layout": layout, "price_per_hour": price}
                            ).deployment()

    cands = [Candidate(g, n, r.layout, s) for g in (r.candidates or (home,)) for n in r.counts
             for s in (r.seqs or (r.max_num_seqs,))]
    rows = cheapest(make, cands, r.target_rate, slo, shape, sched, workers=r.workers, ray_address=r.ray_address,
                    router=r.router, progress=progress)
    return CheapestDeployments(r.target_rate, slo, tuple(rows))
