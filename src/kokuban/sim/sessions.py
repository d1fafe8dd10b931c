"""Closed-loop agent sessions: many agents on one deployment, each a sequence of calls, each call sent only when
the session's previous call finished plus its tool/think gap (never before), and KV retention between calls as
a policy.

A session is one agent run's calls (`agents.compaction.Calls`): call k's prompt is the context so far (its KV
prefix, the previous call's prompt + output) plus the new tool result; its output; the gap before it. The
session's context is a prefix-cache entry of the engine (`Workload.session`: a finished call publishes its whole
context under the session's key; the next call reuses the cached full blocks and computes the rest). A
compaction starts a new key (the summary replaces the history, so nothing behind it is reused; S₀ is computed
again, since the engine keys one prefix per request).

Retention between a session's calls (`Retention`, spec strings):
    evict             the default, what the engine's prefix cache does: the context stays cached while nobody
                      needs the blocks, then is evicted least recently used first
    pin:TTL           the context is held (one more user of its cache entry, so the batch cannot use its blocks)
                      from the call's finish until the next call is admitted, or TTL seconds, whichever is first
    offload:BW,CAP    as evict, and at each finish the context is copied to a host tier of CAP bytes (least
                      recently used contexts dropped to make room); a next call whose context was evicted from
                      HBM is reloaded first: its blocks are taken (held while the copy lasts, then cached like
                      any context) and the call reaches the engine after
                      reload = b ÷ BW (`kvcache.reload_seconds`, the host tier `kvcache.HostTier`),
                      b = `roofline.attention_kv_bytes_per_request` of the blocks' tokens
                      (the deployment's KV bytes; BW in bytes/s). The copy out is assumed to overlap the gap.

Metrics per session (`SessionRun`), beside the per-request ones of `metrics.SimResult`:
    run latency   last call's finish − first call's arrival
    queue         per call: first scheduled − arrival (a reload counts as queueing)
    cache hit     a call after the first hits when its whole previous context came from the cache:
                  cached tokens ≥ ⌊(prefix − 1) ÷ block⌋ · block (the full blocks the finished call published;
                  its last token's KV is never computed); hit rate = hits ÷ calls with a context to reuse
    cost per run  the deployment's USD of the busy seconds (Σ step times, `core.cost.usd_of_seconds`), shared
                  by the tokens each session computed (prompt − cached + output − 1 + recomputed); idle time is
                  not billed to the agents (the deployment is assumed to serve other work then)
`max_sessions` finds how many concurrent agents a deployment holds within a run-latency target, by the
search pattern of `capacity.max_rate` (bracket, then narrow; it assumes meeting the target is monotone).
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from kokuban.core import cost, roofline
from kokuban.errors import KokubanError
from kokuban.progress import Progress, tick
from kokuban.sim.engine import simulate
from kokuban.sim.kvcache import HostTier
from kokuban.sim.metrics import SimResult
from kokuban.sim.metrics import _stats as stats  # mean and percentiles, None where undefined
from kokuban.sim.scheduler import SchedulerConfig
from kokuban.sim.workload import Workload
from kokuban.specs.deployment import Deployment

RETENTIONS = ("evict", "pin:TTL", "offload:BW,CAP")
KEYS_PER_SESSION = 1 << 20  # prefix keys of one session: one per compaction epoch


@dataclass(frozen=True)
class Retention:
    """How a session's KV survives between its calls (see the module docstring)."""

    kind: str = "evict"  # "evict", "pin", "offload"
    ttl_s: float = 0.0
    host_bytes_per_s: float = 0.0
    host_capacity_bytes: float = 0.0

    @property
    def spec(self) -> str:
        if self.kind == "pin":
            return f"pin:{self.ttl_s:g}"
        if self.kind == "offload":
            return f"offload:{self.host_bytes_per_s:g},{self.host_capacity_bytes:g}"
        return "evict"


def parse_retention(spec: str, field: str = "retention") -> Retention:
    """'evict' | 'pin:TTL' (seconds > 0) | 'offload:BW,CAP' (bytes/s > 0, bytes > 0); finite numbers."""
    text = str(spec).strip().lower()
    if text == "evict":
        return Retention()
    kind, _, args = text.partition(":")
    try:
        values = [float(x) for x in args.split(",")]
    except ValueError:
        values = []
    ok = all(math.isfinite(v) and v > 0 for v in values)
    if kind == "pin" and len(values) == 1 and ok:
        return Retention("pin", ttl_s=values[0])
    if kind == "offload" and len(values) == 2 and ok:
        return Retention("offload", host_bytes_per_s=values[0], host_capacity_bytes=values[1])
    raise KokubanError(f"'{spec}' is not a retention policy; use {', '.join(RETENTIONS)} with TTL in seconds, BW in "
                       "bytes/s and CAP in bytes, each finite and > 0", field=field, value=spec)


@dataclass(frozen=True)
class SessionPlan:
    """The sessions' calls as one workload (one request per call, sorted by nominal arrival), and per request its
    session, its call index in the session, the gap before it and the cache blocks a full hit reuses."""

    workload: Workload
    session: np.ndarray
    call: np.ndarray
    gap_s: np.ndarray
    reuse_blocks: np.ndarray
    sessions: int
    block_size: int


def plan_sessions(run: np.ndarray, prompt_tokens: np.ndarray, output_tokens: np.ndarray, gap_before_s: np.ndarray,
                  kv_prefix_tokens: np.ndarray, start_s: np.ndarray, block_size: int) -> SessionPlan:
    """The workload of sessions whose calls are given in order, session by session (as `Calls` holds them):
    `run` names each call's session (0 … S − 1), `start_s` each session's first send time. A call continues its
    session's context when its KV prefix is the previous call's prompt + output; otherwise (a session's first
    call, or the one after a compaction) it opens a new prefix key and reuses nothing."""
    run = np.asarray(run, np.int64)
    prompt, out = np.asarray(prompt_tokens, np.int64), np.asarray(output_tokens, np.int64)
    gap, kv = np.asarray(gap_before_s, np.float64), np.asarray(kv_prefix_tokens, np.int64)
    n = run.size
    first = np.r_[True, run[1:] != run[:-1]]
    prev_ctx = np.r_[0, (prompt + out)[:-1]]
    continues = ~first & (kv == prev_ctx) & (kv > 0)
    epoch = np.cumsum(~continues) - 1  # a new key at every call that does not continue the context
    key = run * KEYS_PER_SESSION + (epoch - epoch[np.flatnonzero(first)][np.cumsum(first) - 1])
    prefix = np.where(continues, kv, 0)
    reuse = np.where(continues, np.maximum(prefix - 1, 0) // block_size, 0)
    call = np.arange(n) - np.flatnonzero(first)[np.cumsum(first) - 1]
    nominal = np.asarray(start_s, np.float64)[run] + np.cumsum(gap) - np.cumsum(gap)[np.flatnonzero(first)][
        np.cumsum(first) - 1]  # start + the gaps so far: a lower bound of the real send time
    order = np.argsort(nominal, kind="stable")
    wl = Workload.make(nominal[order], prompt[order], out[order], key[order], prefix[order], np.ones(n, bool),
                       name=f"{int(run.max()) + 1} agent sessions")
    return SessionPlan(wl, run[order], call[order], gap[order], reuse[order], int(run.max()) + 1, int(block_size))


class SessionClient:
    """Sends each session's calls in turn: the first at its session's start, each next one `gap` after the
    previous one finished; applies the `Retention` between them (see the module docstring). The engine hands
    it its block pool through `attach`."""

    closed_loop = True

    def __init__(self, plan: SessionPlan, retention: Retention, kv_bytes_per_block: float) -> None:
        wl, n = plan.workload, len(plan.workload)
        self.sent_s = wl.arrival_s.copy()
        self.retention, self.bytes_per_block = retention, float(kv_bytes_per_block)
        self.reload_s = np.zeros(n)
        self.held_block_s = 0.0  # Σ blocks held (pinned, or reloaded and not yet read) × seconds
        self._key, self._gap = wl.prefix_key.tolist(), plan.gap_s.tolist()
        self._next = np.full(n, -1, np.int64)
        by_session = np.lexsort((plan.call, plan.session))  # requests in call order within each session
        same = plan.session[by_session][1:] == plan.session[by_session][:-1]
        self._next[by_session[:-1][same]] = by_session[1:][same]
        firsts = by_session[np.r_[True, ~same]]
        self._due: list[tuple[float, int, int]] = [(float(wl.arrival_s[r]), int(r), 0) for r in firsts]
        heapq.heapify(self._due)
        self._pins: dict[int, list[Any]] = {}  # key → [since, expiry, blocks, the call it waits for or −1]
        self._expiries: list[tuple[float, int]] = []
        self._host = HostTier(retention.host_capacity_bytes, kv_bytes_per_block, retention.host_bytes_per_s)
        self.pool: Any = None
        self._scheduled = np.zeros(0)

    def attach(self, engine: Any) -> None:
        self.pool, self._scheduled = engine.pool, engine.first_scheduled_s

    def next_release_s(self) -> float:
        due = self._due[0][0] if self._due else np.inf
        pins, expiries = self._pins, self._expiries
        while expiries and (expiries[0][1] not in pins or pins[expiries[0][1]][1] != expiries[0][0]):
            heapq.heappop(expiries)  # a hold that ended early, or a key held again since
        return min(due, expiries[0][0]) if expiries else due

    def _hold(self, key: int, t: float, expiry: float, blocks: int) -> None:
        """One more user of `key`'s cache entry (its blocks are kept from the batch) until `expiry` or until the
        call that reads it is admitted."""
        self._pins[key] = [t, expiry, blocks, -1]
        if expiry < np.inf:
            heapq.heappush(self._expiries, (expiry, key))

    def _unpin(self, key: int, t: float) -> None:
        since, expiry, blocks, _ = self._pins.pop(key)
        self.held_block_s += blocks * (min(t, expiry) - since)
        self.pool.release(key)

    def release(self, t: float, waiting: deque[int]) -> None:
        pins = self._pins
        if pins:  # a hold ends at its expiry, or when the call that reads it has been admitted
            scheduled = self._scheduled
            for key in [k for k, v in pins.items() if v[1] <= t or (v[3] >= 0 and scheduled[v[3]] == scheduled[v[3]])]:
                self._unpin(key, t)
        due = self._due
        while due and due[0][0] <= t:
            when, r, stage = heapq.heappop(due)
            key = self._key[r]
            if stage == 1:  # a reload finished (its hold ended above): the context is cached, the call goes in
                waiting.append(r)
                continue
            self.sent_s[r] = when
            if key in pins:  # the call has come: the pin holds until it is admitted
                pins[key][3] = r
            blocks = self._host.get(key) if self.retention.kind == "offload" else 0
            if blocks and self.pool.lookup(key) == 0 and blocks <= self.pool.available:
                self.reload_s[r] = self._host.reload_s(blocks)
                self.pool.restore(key, blocks)  # held by the reload while it lasts, then cached like any context
                self._hold(key, t, t + self.reload_s[r], blocks)  # the copy starts when the engine sees the call
                heapq.heappush(due, (t + self.reload_s[r], r, 1))
                continue
            waiting.append(r)

    def finished(self, r: int, t: float) -> None:
        nxt = int(self._next[r])
        if nxt < 0:
            return
        heapq.heappush(self._due, (t + self._gap[nxt], nxt, 0))
        key = self._key[r]
        if self._key[nxt] != key:  # a compaction comes next: this context will not be read again
            return
        blocks = self.pool.lookup(key)
        if not blocks:
            return
        kind = self.retention.kind
        if kind == "pin":
            self.pool.acquire(key)
            self._hold(key, t, t + self.retention.ttl_s, blocks)
        elif kind == "offload":
            self._host.store(key, blocks)


@dataclass(frozen=True)
class SessionRun:
    """A sessions run: the engine's per-request result (`sim`, in the plan's request order) and per-session
    metrics derived from it (see the module docstring)."""

    sim: SimResult
    dep: Deployment
    plan: SessionPlan
    retention: Retention
    reload_s: np.ndarray
    held_block_s: float

    @property
    def hits(self) -> np.ndarray:
        """Per call: its whole previous context came from the cache (False where there was none to reuse)."""
        p = self.plan
        return (p.reuse_blocks > 0) & (self.sim.cached_tokens >= p.reuse_blocks * p.block_size)

    @property
    def computed_tokens(self) -> np.ndarray:
        """Per call: tokens its steps computed (prompt − cached + output − 1 + recomputed)."""
        s = self.sim
        return s.prompt_tokens - s.cached_tokens + s.output_tokens - 1 + s.recomputed_tokens

    def _per_session(self, values: np.ndarray) -> np.ndarray:
        return np.bincount(self.plan.session, weights=np.asarray(values, np.float64), minlength=self.plan.sessions)

    @property
    def run_latency_s(self) -> np.ndarray:
        """Per session: last call's finish − first call's arrival."""
        s, n = self.sim, self.plan.sessions
        first, last = np.full(n, np.inf), np.zeros(n)
        np.minimum.at(first, self.plan.session, s.arrival_s)
        np.maximum.at(last, self.plan.session, s.finish_s)
        return last - first

    @property
    def usd_per_run(self) -> np.ndarray:
        """Per session: the busy seconds' USD shared by computed tokens (see the module docstring)."""
        s = self.sim
        busy = float(s.step_s.sum())
        tokens = self.computed_tokens
        share = self._per_session(tokens) / max(float(tokens.sum()), 1.0)
        return np.asarray(cost.usd_of_seconds(self.dep, busy * share), np.float64)

    def sessions_frame(self):
        """Per session: calls, run latency, queueing, TTFT, hits, cache hit rate, tokens, reloads, USD."""
        import pandas as pd

        s, n = self.sim, self.plan.sessions
        calls = np.bincount(self.plan.session, minlength=n)
        reusable = self._per_session(self.plan.reuse_blocks > 0)
        hits = self._per_session(self.hits)
        return pd.DataFrame({
            "session": np.arange(n), "calls": calls, "run_latency_s": self.run_latency_s,
            "mean_queue_s": self._per_session(s.queue_s) / calls, "total_queue_s": self._per_session(s.queue_s),
            "mean_ttft_s": self._per_session(s.ttft_s) / calls,
            "cache_hits": hits.astype(np.int64),
            "cache_hit_rate": np.where(reusable > 0, hits / np.maximum(reusable, 1), np.nan),
            "prompt_tokens": self._per_session(s.prompt_tokens).astype(np.int64),
            "cached_tokens": self._per_session(s.cached_tokens).astype(np.int64),
            "reload_s": self._per_session(self.reload_s), "usd": self.usd_per_run,
        })

    def summary(self) -> dict[str, Any]:
        """The sessions as plain numbers (stable keys, SI units)."""
        s = self.sim
        reusable = int(np.count_nonzero(self.plan.reuse_blocks > 0))
        hits = int(np.count_nonzero(self.hits))
        busy = float(s.step_s.sum())
        return {
            "sessions": self.plan.sessions, "calls": len(self.plan.workload), "retention": self.retention.spec,
            "run_latency_s": stats(self.run_latency_s),
            "queue_per_call_s": stats(s.queue_s), "ttft_per_call_s": stats(s.ttft_s),
            "cache": {"reusable_calls": reusable, "hit_calls": hits,
                      "hit_rate": hits / reusable if reusable else None,
                      "cached_tokens": int(s.cached_tokens.sum()), "prompt_tokens": int(s.prompt_tokens.sum()),
                      "cached_token_share": float(s.cached_tokens.sum() / s.prompt_tokens.sum()),
                      "recomputed_tokens": int(s.recomputed_tokens.sum()),
                      "reloads": int(np.count_nonzero(self.reload_s)), "reload_s": float(self.reload_s.sum()),
                      "held_block_s": self.held_block_s},
            "busy_s": busy, "duration_s": s.duration_s,
            "usd_per_run": stats(self.usd_per_run),
        }


def simulate_sessions(dep: Deployment, plan: SessionPlan, retention: Retention | None = None,
                      scheduler: SchedulerConfig | None = None, *, kv_blocks: int | None = None) -> SessionRun:
    """Serve the sessions of `plan` on `dep` under `retention` (the engine with a `SessionClient`)."""
    cfg = scheduler or SchedulerConfig()
    if cfg.block_size != plan.block_size:
        raise KokubanError(f"the plan was cut in blocks of {plan.block_size} tokens, the scheduler uses "
                           f"{cfg.block_size}", field="block_size", value=cfg.block_size)
    if not cfg.prefix_caching:
        raise KokubanError("sessions reuse their context through the prefix cache: turn it on",
                           field="prefix_caching", value=False)
    retention = retention or Retention()
    per_block = float(roofline.attention_kv_bytes_per_request(dep, plan.block_size))  # per-token blocks; no state
    client = SessionClient(plan, retention, per_block)
    sim = simulate(dep, plan.workload, cfg, kv_blocks=kv_blocks, client=client)
    return SessionRun(sim, dep, plan, retention, client.reload_s, client.held_block_s)


@dataclass(frozen=True)
class SessionCapacity:
    """Result of `max_sessions`: the most sessions whose p`percentile` run latency is within the target."""

    max_sessions: int
    run_latency_target_s: float
    percentile: float
    limit: int
    trials: tuple[dict[str, Any], ...]

    def as_dict(self) -> dict[str, Any]:
        return {"max_sessions": self.max_sessions, "run_latency_target_s": self.run_latency_target_s,
                "percentile": self.percentile, "limit": self.limit, "trials": list(self.trials)}


def max_sessions(run_with: Callable[[int], SessionRun], target_s: float, *, percentile: float = 90,
                 limit: int = 1024, progress: Progress | None = None) -> SessionCapacity:
    """The most concurrent sessions (≤ `limit`) whose run latency's p`percentile` is ≤ `target_s`:
    `run_with(n)` runs n sessions. Doubles n from 1 until the target is missed (or `limit`), then bisects
    the bracket [highest passing, lowest failing] down to one session (meeting the target assumed monotone).
    `progress(runs, at most)`: the doubling takes at most ⌈log₂ limit⌉ + 1 runs and the bisection ⌈log₂ limit⌉."""
    trials: dict[int, dict[str, Any]] = {}
    bound = 2 * max(1, math.ceil(math.log2(max(limit, 1)))) + 1

    def ok(n: int) -> bool:
        if n not in trials:
            lat = float(np.percentile(run_with(n).run_latency_s, percentile))
            trials[n] = {"sessions": n, f"run_latency_p{percentile:g}_s": lat, "meets_target": lat <= target_s}
            tick(progress, len(trials), max(bound, len(trials)))
        return bool(trials[n]["meets_target"])

    lo, hi = 0, None
    n = 1
    while hi is None:
        if ok(n):
            lo = n
            if n >= limit:
                break
            n = min(2 * n, limit)
        else:
            hi = n
    while hi is not None and hi - lo > 1:
        mid = (lo + hi) // 2
        if ok(mid):
            lo = mid
        else:
            hi = mid
    tick(progress, len(trials), len(trials))
    return SessionCapacity(lo, float(target_s), float(percentile), int(limit),
                           tuple(trials[k] for k in sorted(trials)))
