"""Data-parallel attention + expert parallel as N per-rank schedulers behind a router.

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
costs `replicas` deployments.

Routers that read the ranks' state need the ranks stepped together (`run_routed`): every rank is an `Engine` with
the whole workload and a `RoutedClient` that releases only what the router sent it; the engines are advanced one
turn at a time (`Engine.advance`), always the rank whose clock is earliest, until every rank's clock has reached
the next arrival; then the router places that arrival, reading each rank's state at that moment (outstanding:
sent and not finished by the arrival, finishes as the client sees them, after an engine profile's front end;
prefix keys: the router's own record of where it sent them):

    least_outstanding   the rank with the fewest outstanding requests (sent to it, not finished; ties: the next
                        rank in round-robin order from the request's index), as vLLM's data-parallel load balancer
                        and sglang-router's shortest_queue policy do
    prefix_aware        sglang-router's cache_aware policy (sgl-router RouterArgs defaults cache_threshold 0.5,
                        balance_abs_threshold 32, balance_rel_threshold 1.0001; launch_router.py): when the ranks
                        are imbalanced (max − min outstanding > 32 and max > 1.0001·min) the least outstanding
                        rank; else a request whose prefix key the router has sent before, with a match rate
                        (prefix ÷ prompt tokens) above 0.5, goes to that rank (the router's own tree: a key is
                        placed when its first request is routed, not when the rank has cached it); else the least
                        outstanding rank (sglang-router: the rank with the smallest tree; not modelled)
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial

import numpy as np

from kokuban.errors import KokubanError, require_positive
from kokuban.sim.engine import Engine, build_engine, simulate
from kokuban.sim.kvcache import capacity_blocks
from kokuban.sim.metrics import SimResult
from kokuban.sim.profiles import client_view
from kokuban.sim.record import RunRecord
from kokuban.sim.scheduler import SchedulerConfig
from kokuban.sim.steptime import StepModel
from kokuban.sim.workload import Workload
from kokuban.specs.deployment import Deployment

SPLIT_ROUTERS = ("round_robin", "random")  # decided from the arrival stream alone: the split path
STATE_ROUTERS = ("least_outstanding", "prefix_aware")  # read the ranks' state: the ranks stepped together
ROUTERS = SPLIT_ROUTERS + STATE_ROUTERS
#: sglang-router's cache_aware defaults (RouterArgs in sgl-router's launch_router.py)
CACHE_THRESHOLD, BALANCE_ABS_THRESHOLD, BALANCE_REL_THRESHOLD = 0.5, 32, 1.0001
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
    """The rank of every request (in arrival order): i mod N (round_robin) or uniform draws seeded by `seed`
    (the routers that read the ranks' state decide during the run: `run_routed`)."""
    if router not in SPLIT_ROUTERS:
        raise KokubanError(f"'{router}' is not a known router; allowed: {', '.join(ROUTERS)}", field="router",
                           value=router)
    if router == "round_robin":
        return np.arange(n_requests) % ranks
    return np.random.default_rng(seed).integers(0, ranks, n_requests)


def subset(wl: Workload, idx: np.ndarray) -> Workload:
    """The requests at positions `idx` (ascending, so still sorted by arrival)."""
    return Workload(wl.arrival_s[idx], wl.prompt_tokens[idx], wl.output_tokens[idx], wl.prefix_key[idx],
                    wl.prefix_tokens[idx], wl.session[idx], wl.name)


class RoutedClient:
    """A rank's client under a router that reads the ranks' state: it releases the requests the router sent it, at
    their arrival; the next release it announces is the earlier of its own next one and the next arrival not yet
    routed (`feed.next_s`: it may be sent here, so event skipping stops there). It hears every finish (closed
    loop, so event skipping also stops at completions) and keeps their times (`done_s`, a heap) for the router."""

    closed_loop = True

    def __init__(self, arrival_s: np.ndarray, arrival: list[float], feed: Feed) -> None:
        self.sent_s = arrival_s  # shared and never written: every request is sent at its arrival
        self._arrival, self.feed = arrival, feed
        self.queue: deque[int] = deque()
        self.done_s: list[float] = []  # finish times the router has not counted yet

    def next_release_s(self) -> float:
        own = self._arrival[self.queue[0]] if self.queue else np.inf
        return min(own, self.feed.next_s)

    def release(self, t: float, waiting: deque[int]) -> None:
        queue, arrival = self.queue, self._arrival
        while queue and arrival[queue[0]] <= t:
            waiting.append(queue.popleft())

    def finished(self, r: int, t: float) -> None:
        heapq.heappush(self.done_s, t)

    def count_done(self, t: float) -> int:
        """How many of the finishes not counted yet happened by time t (and count them)."""
        done, k = self.done_s, 0
        while done and done[0] <= t:
            heapq.heappop(done)
            k += 1
        return k


@dataclass
class Feed:
    next_s: float = 0.0  # the next arrival the router has not placed yet (inf: none left)


def choose_rank(router: str, outstanding: list[int], i: int, key: int, match: float,
                placed: dict[int, int]) -> int:
    """The rank `router` sends request i to (see the module docstring): `outstanding` per rank, the request's prefix
    `key` (−1: none), its `match` rate (prefix ÷ prompt tokens) and `placed`, the router's key → rank map."""
    n = len(outstanding)
    low = min(outstanding)
    if router == "prefix_aware" and key >= 0 and key in placed and match > CACHE_THRESHOLD:
        high = max(outstanding)
        if not (high - low > BALANCE_ABS_THRESHOLD and high > BALANCE_REL_THRESHOLD * low):
            return placed[key]
    for k in range(n):  # the least outstanding, ties broken round robin from i
        r = (i + k) % n
        if outstanding[r] == low:
            return r
    raise AssertionError("unreachable")


def run_routed(engines: list[Engine], clients: list[RoutedClient], feed: Feed, wl: Workload,
               choose: Callable[..., int]) -> tuple[np.ndarray, list[float]]:
    """Advance `engines` in time order and route every arrival of `wl` when it comes to the rank
    `choose(outstanding, i, key, match, placed)` names (`choose_rank`'s arguments; see the module docstring).
    Returns each request's rank and each rank's end time."""
    arrival = wl.arrival_s.tolist()
    keys, prefix, prompt = wl.prefix_key.tolist(), wl.prefix_tokens.tolist(), wl.prompt_tokens.tolist()
    n, ranks = len(arrival), len(engines)
    owner = np.empty(n, np.int64)
    sent, done, clocks, queued = [0] * ranks, [0] * ranks, [0.0] * ranks, [False] * ranks
    placed: dict[int, int] = {}
    heap: list[tuple[float, int]] = []  # (clock, rank) of the ranks with work
    i = 0
    while True:
        a = arrival[i] if i < n else np.inf
        feed.next_s = a
        if heap and heap[0][0] < a:  # a rank with work whose clock is before the next arrival: one turn
            t, r = heapq.heappop(heap)
            e = engines[r]
            t, _ = e.advance(t)
            clocks[r] = t
            if e.num_running or e.waiting or clients[r].queue:
                heapq.heappush(heap, (t, r))
            else:
                queued[r] = False
            continue
        if i == n:
            break
        for r in range(ranks):  # finishes by the arrival (a rank mid-step has finished nothing of that step yet)
            done[r] += clients[r].count_done(a)
        outstanding = [sent[r] - done[r] for r in range(ranks)]
        key = keys[i]
        r = choose(outstanding, i, key, prefix[i] / prompt[i], placed)
        if key >= 0 and key not in placed:
            placed[key] = r
        owner[i] = r
        sent[r] += 1
        clients[r].queue.append(i)
        if not queued[r]:
            queued[r] = True
            clocks[r] = max(clocks[r], a)
            heapq.heappush(heap, (clocks[r], r))
        i += 1
    return owner, clocks


def take(record: RunRecord, where: np.ndarray) -> RunRecord:
    """`record` with its per-request arrays cut to the positions `where` (a rank's own requests)."""
    return replace(record, **{name: getattr(record, name)[where] for name in _PER_REQUEST})


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
    blocks = cfg.kv_blocks or capacity_blocks(dep, cfg.block_size, n * int(cfg.max_num_seqs)) // n
    context = int((workload.prompt_tokens + workload.output_tokens).max())
    model = RankStepModel(StepModel(dep, n * int(cfg.max_num_batched_tokens), context), n)
    if router in STATE_ROUTERS:
        feed, arrival = Feed(), workload.arrival_s.tolist()
        clients = [RoutedClient(workload.arrival_s, arrival, feed) for _ in range(total)]
        engines = [build_engine(dep, workload, cfg, kv_blocks=blocks, step_model=model, client=c) for c in clients]
        ranks, ends = run_routed(engines, clients, feed, workload, partial(choose_rank, router))
        records = [client_view(e.record(end), cfg.overheads) for e, end in zip(engines, ends, strict=True)]
    else:
        ranks = route(len(workload), total, router, seed)
    idx = [np.flatnonzero(ranks == r) for r in range(total)]
    empty = [r for r, i in enumerate(idx) if i.size == 0]
    if empty:
        why = f"send at least {total} requests" if router in SPLIT_ROUTERS else (
            f"{router} kept every request elsewhere; send more requests, use fewer ranks or another router")
        raise KokubanError(f"the router sent no request to rank {empty[0]} of {total}: {why}", field="requests",
                           value=len(workload))
    per_rank = dep.usd_per_s / n
    results = []
    for r, where in enumerate(idx):
        if router in STATE_ROUTERS:
            res = SimResult.build(take(records[r], where), dep, cfg)
        else:
            res = simulate(dep, subset(workload, where), cfg, kv_blocks=blocks, step_model=model)
        results.append(replace(res, num_gpus=max(dep.num_gpus // n, 1), usd_per_s=per_rank))
    merged = merge(results, idx, len(workload))
    full = SimResult.build(merged, dep, cfg)
    if replicas > 1:
        full = replace(full, description=f"{replicas} replicas of {full.description}",
                       num_gpus=full.num_gpus * replicas, usd_per_s=full.usd_per_s * replicas)
    return DataParallelRun(full, tuple(results), router)


__all__ = ["ROUTERS", "STATE_ROUTERS", "DataParallelRun", "RankStepModel", "RoutedClient", "choose_rank", "merge",
           "route", "run_routed", "simulate_data_parallel", "subset", "take"]
