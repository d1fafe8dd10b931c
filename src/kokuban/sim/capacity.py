"""Capacity planning: the highest request rate a deployment serves within an SLO, and the cheapest
deployment that serves a target rate.

max_rate: every candidate rate is judged by simulating the same seeded workload shape (n requests,
    the given length distributions and arrival process) and checking p99 TTFT and p99 TPOT against the
    SLO (`SimResult.meets`). The search assumes that meeting the SLO is monotone in the rate. It first
    measures the saturated throughput (all requests at t = 0), which bounds the answer, then narrows
    the bracket [highest passing, lowest failing] with rounds of `points` rates evaluated in parallel,
    until the bracket is within `rel_tol` of the rate.
cheapest: for every candidate (accelerator, count, layout, max_num_seqs) the max rate is found as above;
    the target needs ⌈target ÷ max rate⌉ replicas; the answer is the candidate with the lowest
    replicas × GPUs × price per GPU-hour (the cost module's USD/hour of one replica × replicas). Candidates that
    cannot hold the model, or miss the SLO at every rate, say why and come last.

With a `router`, a deployment's data-parallel ranks (`--layout ep`) each run their own scheduler behind it
(`dataparallel.simulate_data_parallel`, one replica): the rate is the deployment's.

Sweeps run on all local cores (a process pool) by default, or on a Ray cluster (`ray_address`, e.g.
"auto", "ray://head:10001", or "local" for a fresh local instance).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from kokuban.core import cost
from kokuban.errors import KokubanError
from kokuban.progress import Progress, tick
from kokuban.sim.dataparallel import simulate_data_parallel
from kokuban.sim.engine import simulate
from kokuban.sim.metrics import SLO, SimResult
from kokuban.sim.scheduler import SchedulerConfig
from kokuban.sim.workload import Workload, synthetic
from kokuban.specs.deployment import Deployment


@dataclass(frozen=True)
class WorkloadShape:
    """What a synthetic workload looks like, apart from its rate (see `workload.synthetic`)."""

    requests: int = 1000
    prompt: str = "1000"
    output: str = "200"
    arrival: str = "poisson"
    burstiness: float = 1.0
    seed: int = 0

    def at(self, rate_per_s: float):
        return synthetic(self.requests, rate_per_s, self.prompt, self.output, arrival=self.arrival,
                         burstiness=self.burstiness, seed=self.seed)


# ---- parallel map: local processes or Ray ---------------------------------------------------------------
def parallel_map(fn: Callable[[Any], Any], items: Iterable[Any], *, workers: int | None = None,
                 ray_address: str | None = None, progress: Progress | None = None) -> list[Any]:
    """[fn(x) for x in items], on `workers` local processes (default: all cores) or on Ray; `progress(done,
    len(items))` as results come in (in order)."""
    items = list(items)
    if ray_address:
        try:
            import ray
        except ImportError:
            raise KokubanError("needs the 'ray' package: pip install 'kokuban[ray]'", field="ray_address",
                               value=ray_address) from None
        try:
            ray.init(address=ray_address, ignore_reinit_error=True, include_dashboard=False, log_to_driver=False)
        except (ConnectionError, ValueError, RuntimeError) as exc:
            raise KokubanError(f"cannot join the Ray cluster at '{ray_address}': {str(exc).splitlines()[0]}",
                               field="ray_address", value=ray_address) from None
        remote = ray.remote(fn)
        out = ray.get([remote.remote(x) for x in items])
        tick(progress, len(items), len(items))
        return out
    workers = workers or os.cpu_count() or 1
    if workers == 1 or len(items) <= 1:
        return _counted((fn(x) for x in items), len(items), progress)
    with ProcessPoolExecutor(max_workers=min(workers, len(items))) as pool:
        return _counted(pool.map(fn, items), len(items), progress)


def _counted(results: Iterable[Any], total: int, progress: Progress | None) -> list[Any]:
    """The results as a list, `progress(done, total)` after each."""
    out = []
    for result in results:
        out.append(result)
        tick(progress, len(out), total)
    return out


def serve(dep: Deployment, workload: Workload, sched: SchedulerConfig, router: str | None = None) -> SimResult:
    """One run: `simulate`, or with a `router` the deployment's data-parallel ranks behind it (merged)."""
    if router is None:
        return simulate(dep, workload, sched)
    return simulate_data_parallel(dep, workload, sched, router=router).merged


def _meets(args: tuple[Deployment, WorkloadShape, SchedulerConfig, SLO, float, str | None]
           ) -> tuple[float, bool, dict]:
    dep, shape, sched, slo, rate, router = args
    result = serve(dep, shape.at(rate), sched, router)
    s = result.summary()
    lat = s["latency_s"]
    return rate, result.meets(slo), {"ttft_p99_s": lat["ttft"]["p99"], "tpot_p99_s": lat["tpot"]["p99"],
                                     "requests_per_s": s["throughput"]["requests_per_s"]}


def saturation_rate(dep: Deployment, shape: WorkloadShape, sched: SchedulerConfig, router: str | None = None) -> float:
    """Requests/s served when every request arrives at once (the throughput ceiling)."""
    return float(serve(dep, shape.at(float("inf")), sched, router).summary()["throughput"]["requests_per_s"])


@dataclass(frozen=True)
class Capacity:
    """Result of `max_rate`: the highest passing rate found and every rate tried."""

    max_rate_per_s: float
    saturation_rate_per_s: float
    slo: SLO
    trials: tuple[dict[str, Any], ...]

    def as_dict(self) -> dict[str, Any]:
        return {"max_rate_per_s": self.max_rate_per_s, "saturation_rate_per_s": self.saturation_rate_per_s,
                "slo": self.slo.as_dict(), "trials": list(self.trials)}


def max_rate(dep: Deployment, slo: SLO, shape: WorkloadShape | None = None, scheduler: SchedulerConfig | None = None,
             *, rel_tol: float = 0.02, points: int | None = None, workers: int | None = None,
             ray_address: str | None = None, router: str | None = None, progress: Progress | None = None) -> Capacity:
    """Highest Poisson (or `shape.arrival`) rate whose run meets `slo` (see module docstring); `router`: the
    data-parallel ranks behind it (`serve`). `progress(runs done, runs planned)`: the bisection's length is not
    known ahead, so the plan is the runs so far plus one more round, until the last."""
    if slo.ttft_s is None and slo.tpot_s is None:
        raise KokubanError("an SLO needs a p99 TTFT and/or a p99 TPOT target", field="slo", value=slo)
    shape = shape or WorkloadShape()
    sched = scheduler or SchedulerConfig()
    workers = workers or os.cpu_count() or 1
    points = points or max(3, min(workers, 8))
    tick(progress, 0, 1 + points)
    sat = saturation_rate(dep, shape, sched, router)
    lo, hi = 0.0, 1.2 * sat
    trials: list[dict[str, Any]] = []

    def run(rates: list[float]) -> list[tuple[float, bool, dict]]:
        done = 1 + len(trials)
        res = parallel_map(_meets, [(dep, shape, sched, slo, r, router) for r in rates], workers=workers,
                           ray_address=ray_address,
                           progress=None if progress is None else lambda k, n: progress(done + k, done + n + points))
        trials.extend({"rate_per_s": r, "meets_slo": ok, **m} for r, ok, m in res)
        return res

    while hi - lo > rel_tol * max(hi, 1e-9):
        rates = list(np.linspace(lo, hi, points + 2)[1:-1])
        for rate, ok, _ in sorted(run(rates)):
            if ok:
                lo = max(lo, rate)
            else:
                hi = min(hi, rate)
                break
        if lo == 0.0 and hi < 1e-3 * sat:  # misses the SLO even almost idle
            break
    trials.sort(key=lambda d: d["rate_per_s"])
    tick(progress, 1 + len(trials), 1 + len(trials))
    return Capacity(max_rate_per_s=lo, saturation_rate_per_s=sat, slo=slo, trials=tuple(trials))


# ---- cheapest deployment -----------------------------------------------------------------------------
@dataclass(frozen=True)
class Candidate:
    """A deployment to try: accelerator id, count, layout (None: the request's automatic choice), max_num_seqs
    (None: vLLM's default)."""

    gpu: str
    num_gpus: int
    layout: str | None
    max_num_seqs: int | None


@dataclass(frozen=True)
class CandidateCapacity:
    """One candidate's answer: its max rate within the SLO, and for a target rate the replicas it needs and what
    they cost per hour (None when it cannot serve the target: `error` says why)."""

    candidate: Candidate
    max_rate_per_s: float
    saturation_rate_per_s: float | None = None
    usd_per_gpu_hour: float | None = None
    usd_per_replica_hour: float | None = None
    error: str | None = None
    replicas: int | None = None
    usd_per_hour: float | None = None

    def as_dict(self) -> dict[str, Any]:
        c = self.candidate
        return {"gpu": c.gpu, "gpus": c.num_gpus, "layout": c.layout, "max_num_seqs": c.max_num_seqs,
                "max_rate_per_s": self.max_rate_per_s, "saturation_rate_per_s": self.saturation_rate_per_s,
                "usd_per_gpu_hour": self.usd_per_gpu_hour, "error": self.error, "replicas": self.replicas,
                "usd_per_hour": self.usd_per_hour}


def _candidate_capacity(args: tuple[Deployment | str, Candidate, WorkloadShape, SchedulerConfig, SLO, str | None]
                        ) -> CandidateCapacity:
    dep, cand, shape, sched, slo, router = args
    if isinstance(dep, str):  # the deployment could not be built: the reason
        return CandidateCapacity(cand, 0.0, error=dep)
    try:
        cap = max_rate(dep, slo, shape, replace(sched, max_num_seqs=cand.max_num_seqs), workers=1, points=3,
                       rel_tol=0.04, router=router)
    except KokubanError as exc:
        return CandidateCapacity(cand, 0.0, error=str(exc))
    return CandidateCapacity(cand, cap.max_rate_per_s, cap.saturation_rate_per_s, dep.price_per_hour_usd,
                             cost.usd_of_seconds(dep, 3600.0))


def replicas_for(target_rate_per_s: float, max_rate_per_s: float) -> int:
    """Replicas of a deployment serving `max_rate_per_s` each that serve the target: ⌈target ÷ max rate⌉."""
    return math.ceil(target_rate_per_s / max_rate_per_s)


def cheapest(make: Callable[[str, int, str | None], Deployment], candidates: Iterable[Candidate],
             target_rate_per_s: float, slo: SLO, shape: WorkloadShape | None = None,
             scheduler: SchedulerConfig | None = None, *, workers: int | None = None,
             ray_address: str | None = None, router: str | None = None,
             progress: Progress | None = None) -> list[CandidateCapacity]:
    """Every candidate's max rate, replicas for `target_rate_per_s` and USD/hour (replicas × the deployment's
    USD/hour, `cost.usd_of_seconds`), cheapest first (then fewest GPUs); those that cannot serve it last.

    `make(gpu, num_gpus, layout)` builds a deployment (KokubanError if it cannot); `router` as in `max_rate`;
    `progress(candidates done, candidates)`.
    """
    shape, sched = shape or WorkloadShape(), scheduler or SchedulerConfig()
    jobs = []
    for cand in candidates:
        try:
            dep: Deployment | str = make(cand.gpu, cand.num_gpus, cand.layout)
        except KokubanError as exc:
            dep = str(exc)
        jobs.append((dep, cand, shape, sched, slo, router))
    rows = []
    for row in parallel_map(_candidate_capacity, jobs, workers=workers, ray_address=ray_address, progress=progress):
        if row.max_rate_per_s > 0 and row.usd_per_replica_hour is not None:
            n = replicas_for(target_rate_per_s, row.max_rate_per_s)
            row = replace(row, replicas=n, usd_per_hour=n * row.usd_per_replica_hour)
        else:
            row = replace(row, error=row.error or "misses the SLO at every rate")
        rows.append(row)
    rows.sort(key=lambda r: (math.inf if r.usd_per_hour is None else r.usd_per_hour, r.candidate.num_gpus))
    return rows
