"""Data-parallel attention + expert parallel as N per-rank schedulers behind a router (issue 12, item 3, step 1).

With DP attention + EP (the "ep" layout on N GPUs: `Layout.data_parallel_ranks` = N), every rank runs its own
engine core: its own `max_num_seqs`, token budget and KV pool (vLLM `--data-parallel-size`, SGLang
`--enable-dp-attention`), and a router in front sends each request to one rank. Routing that does not look at the
ranks' state can be simulated exactly by splitting the arrival stream and running N engines:

    round_robin   request i (in arrival order) → rank i mod N
    random        each request → a rank drawn uniformly, seeded (`seed`); the split of a Poisson stream is N
                  independent Poisson streams of rate λ/N, so at low load each rank is an M/G/1-like queue

Per rank: the pool is the deployment's computed pool ÷ N (`kvcache.capacity_blocks` sums N equal per-rank pools),
or the scheduler's `kv_blocks` (one engine's pool, as its log reports it). A rank's step is timed as if every rank
carried the same load (`RankStepModel`): the experts' GEMMs and all-to-all see N× the rank's tokens, each rank's
attention its own requests; the ranks' lockstep (a rank waiting for the slowest one at each MoE layer) is not
simulated. Merged: the per-request arrays in the workload's order, every rank's steps and gaps together, the pools
summed (`RunRecord.ranks` = N: busy fraction and KV occupancy are per rank; batch and step counts over all ranks).
Replicas: `replicas` copies of the deployment behind the same router are replicas × N such ranks (a TP deployment
has N = 1: each replica is one scheduler, `RankStepModel` with N = 1 is its plain step model); the merged run
costs `replicas` deployments. Routers that read the ranks' state (least outstanding requests, prefix-cache aware)
need the ranks stepped together: not simulated yet.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from kokuban.errors import KokubanError, require_positive
from kokuban.sim.engine import simulate
from kokuban.sim.kvcache import capacity_blocks
from kokuban.sim.metrics import SimResult
from kokuban.sim.record import RunRecord
from kokuban.sim.scheduler import SchedulerConfig
from kokuban.sim.steptime import StepModel
from kokuban.sim.workload import Workload
from kokuban.specs.deployment import Deployment

ROUTERS = ("round_robin", "random")
_PER_REQUEST = ("arrival_s", "prompt_tokens", "output_tokens", "generated_tokens", "first_scheduled_s",
                "first_token_s", "finish_s", "preemptions", "recomputed_tokens", "cached_tokens")
_PER_STEP = ("step_start_s", "step_s", "step_tokens", "step_batch", "step_decodes", "step_kv_blocks")


class RankStepModel:
    """A `StepTimeModel` for one of N data-parallel ranks under symmetric load: a rank's step of T tokens
    (h sampled, per-request terms a, k) lasts the deployment's step of N·T tokens (N·h sampled, terms N·a, N·k),
    which the core spreads over the N GPUs (`StepModel` of the whole deployment, tables up to N·T tokens)."""

    def __init__(self, base: StepModel, ranks: int) -> None:
        self.base, self.ranks = base, int(ranks)

    def decode_terms(self, ctx: np.ndarray) -> tuple[float, float]:
        attn, kv = self.base.decode_terms(ctx)
        return attn * self.ranks, kv * self.ranks

    def chunk_terms(self, chunk_start: np.ndarray, chunk_end: np.ndarray) -> tuple[float, float]:
        attn, kv = self.base.chunk_terms(chunk_start, chunk_end)
        return attn * self.ranks, kv * self.ranks

    def one_chunk_terms(self, chunk_start: int, chunk_end: int) -> tuple[float, float]:
        attn, kv = self.base.one_chunk_terms(chunk_start, chunk_end)
        return attn * self.ranks, kv * self.ranks

    def seconds(self, tokens: int, heads: int, attn_s: float, kv_s: float) -> float:
        return self.base.seconds(self.ranks * tokens, self.ranks * heads, attn_s, kv_s)

    def decode_run_s(self, ctx: np.ndarray) -> np.ndarray:
        b, n = self.base, self.ranks
        return b.run_seconds(n * ctx.shape[1], b.decode_attn_s[ctx].sum(axis=1) * n, b.decode_kv_s[ctx].sum(axis=1) * n)


def route(n_requests: int, ranks: int, router: str, seed: int = 0) -> np.ndarray:
    """The rank of every request (in arrival order): i mod N (round_robin) or uniform draws seeded by `seed`."""
    if router not in ROUTERS:
        raise KokubanError(f"'{router}' is not a known router; allowed: {', '.join(ROUTERS)}", field="router",
                           value=router)
    if router == "round_robin":
        return np.arange(n_requests) % ranks
    return np.random.default_rng(seed).integers(0, ranks, n_requests)


def subset(wl: Workload, idx: np.ndarray) -> Workload:
    """The requests at positions `idx` (ascending, so still sorted by arrival)."""
    return Workload(wl.arrival_s[idx], wl.prompt_tokens[idx], wl.output_tokens[idx], wl.prefix_key[idx],
                    wl.prefix_tokens[idx], wl.session[idx], wl.name)


@dataclass(frozen=True)
class DataParallelRun:
    """The merged run (`merged`: the whole deployment) and every rank's own (`ranks`, cost and GPUs ÷ N)."""

    merged: SimResult
    ranks: tuple[SimResult, ...]
    router: str


def merge(records: list[RunRecord], idx: list[np.ndarray], n_requests: int) -> RunRecord:
    """One record of N ranks' records; `idx[r]` = the workload positions of rank r's requests."""
    out: dict[str, object] = {}
    for name in _PER_REQUEST:
        first = getattr(records[0], name)
        arr = np.empty(n_requests, first.dtype)
        for rec, where in zip(records, idx, strict=True):
            arr[where] = getattr(rec, name)
        out[name] = arr
    start = np.concatenate([r.step_start_s for r in records])
    order = np.argsort(start, kind="stable")
    for name in _PER_STEP:
        out[name] = np.concatenate([getattr(r, name) for r in records])[order]
    out["itl_values_s"] = np.concatenate([r.itl_values_s for r in records])
    out["itl_weights"] = np.concatenate([r.itl_weights for r in records])
    out["end_s"] = max(r.end_s for r in records)
    out["kv_capacity_blocks"] = sum(r.kv_capacity_blocks for r in records)
    out["block_size"] = records[0].block_size
    out["kv_blocks_free_at_end"] = sum(r.kv_blocks_free_at_end for r in records)
    out["ranks"] = len(records)
    return RunRecord(**out)  # type: ignore[arg-type]


def simulate_data_parallel(dep: Deployment, workload: Workload, scheduler: SchedulerConfig | None = None, *,
                           router: str = "round_robin", seed: int = 0, replicas: int = 1) -> DataParallelRun:
    """Serve `workload` on the N = `dep.parallel.data_parallel_ranks` ranks of each of `replicas` copies of `dep`,
    every rank a scheduler with `scheduler`'s limits and a pool of its own, all behind one `router` (see the module
    docstring). Rank r belongs to replica r // N. The merged result costs `replicas` deployments."""
    cfg = (scheduler or SchedulerConfig()).resolve(dep.accelerator)
    if cfg.max_concurrency is not None:
        raise KokubanError("a client cap across data-parallel ranks is not simulated yet", field="max_concurrency",
                           value=cfg.max_concurrency)
    require_positive("replicas", replicas, integer=True)
    n = int(dep.parallel.data_parallel_ranks)
    total = n * int(replicas)
    ranks = route(len(workload), total, router, seed)
    idx = [np.flatnonzero(ranks == r) for r in range(total)]
    empty = [r for r, i in enumerate(idx) if i.size == 0]
    if empty:
        raise KokubanError(f"the router sent no request to rank {empty[0]} of {total}: send at least {total} "
                           f"requests", field="requests", value=len(workload))
    blocks = cfg.kv_blocks or capacity_blocks(dep, cfg.block_size, n * int(cfg.max_num_seqs)) // n
    context = int((workload.prompt_tokens + workload.output_tokens).max())
    model = RankStepModel(StepModel(dep, n * int(cfg.max_num_batched_tokens), context), n)
    per_rank = dep.usd_per_s / n
    results = []
    for where in idx:
        res = simulate(dep, subset(workload, where), cfg, kv_blocks=blocks, step_model=model)
        results.append(replace(res, num_gpus=max(dep.num_gpus // n, 1), usd_per_s=per_rank))
    merged = merge(results, idx, len(workload))
    full = SimResult.build(merged, dep, cfg)
    if replicas > 1:
        full = replace(full, description=f"{replicas} replicas of {full.description}",
                       num_gpus=full.num_gpus * replicas, usd_per_s=full.usd_per_s * replicas)
    return DataParallelRun(full, tuple(results), router)


__all__ = ["ROUTERS", "DataParallelRun", "RankStepModel", "merge", "route", "simulate_data_parallel", "subset"]
