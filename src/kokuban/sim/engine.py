"""The discrete-event engine: steps of the scheduler, each timed by the core's step model.

Time advances one step at a time; between steps nothing happens, and when nothing runs the clock jumps
to the next arrival. A request's life, in the vLLM V1 vocabulary the engine follows:
    known tokens  = prompt + generated so far;  computed tokens = those already in the KV cache
    each step schedules some of known − computed (a prefill chunk, or 1 for a decode)
    when computed reaches known, the step samples a token: generated + 1, known + 1
    the first token comes out of the step that finishes the prompt (TTFT); the request finishes when
    generated = its output length; preemption sets computed to 0 and frees its KV blocks
The running set lives in NumPy arrays (one slot per running request, in admission order); per step the
work is a handful of array operations over at most `max_num_seqs` entries, never per token.

Arrivals are released at step boundaries (a request arriving mid-step waits for the step to end, as it
does in a real engine loop). With `max_concurrency`, a request is released only when fewer than that
many are in flight, as `vllm bench serve --max-concurrency` does; its arrival time is then the moment it
was sent.
"""

from __future__ import annotations

import heapq
from collections import deque
from typing import Any

import numpy as np

from ..deployment import Deployment
from ..errors import KokubanError
from .kvcache import BlockPool, blocks_for, capacity_blocks
from .metrics import SimResult
from .scheduler import SchedulerConfig
from .steptime import StepModel
from .workload import Workload


def simulate(dep: Deployment, workload: Workload, scheduler: SchedulerConfig | None = None, *,
             progress: bool = False, kv_blocks: int | None = None) -> SimResult:
    """Serve `workload` on `dep` with `scheduler` (default: vLLM's continuous batching and limits).

    `kv_blocks` overrides the KV capacity (default: `kvcache.capacity_blocks`). Raises KokubanError for
    impossible setups (a request whose prompt + output does not fit the whole KV cache).
    """
    cfg = (scheduler or SchedulerConfig()).resolve(dep.accelerator)
    bs, S, B = cfg.block_size, int(cfg.max_num_seqs), int(cfg.max_num_batched_tokens)
    total_blocks = capacity_blocks(dep, bs, S) if kv_blocks is None else int(kv_blocks)
    prompt, out = workload.prompt_tokens, workload.output_tokens
    need_blocks = -(-(prompt + out - 1) // bs)
    worst = int(np.argmax(need_blocks))
    if need_blocks[worst] > total_blocks:
        raise KokubanError(
            f"request {worst} needs {int(prompt[worst] + out[worst] - 1):,} tokens of KV cache but the deployment holds "
            f"{total_blocks * bs:,} ({total_blocks:,} blocks of {bs}); short by {int(need_blocks[worst] - total_blocks):,} "
            f"blocks: use more or larger GPUs, a smaller --kv dtype, or shorter requests"
        )
    model = StepModel(dep, B, int((prompt + out).max()))
    return _Engine(cfg, model, workload, BlockPool(total_blocks, bs)).run(progress)


# rows of the running-set state (one row per field, one column per running request, oldest first)
RID, COMP, KNOWN, GEN, OUT, OWN, HIT, CAP, USER, PUB, SCHED = range(11)


class _Engine:
    def __init__(self, cfg: SchedulerConfig, model: StepModel, wl: Workload, pool: BlockPool) -> None:
        self.cfg, self.model, self.wl, self.pool = cfg, model, wl, pool
        self.bs, self.budget, self.max_seqs = int(cfg.block_size), int(cfg.max_num_batched_tokens), int(cfg.max_num_seqs)
        n, S = len(wl), self.max_seqs
        # per request
        self.arrival = wl.arrival_s.copy()  # becomes the send time under max_concurrency
        self.generated = np.zeros(n, np.int64)
        self.first_sched = np.full(n, np.nan)
        self.first_token = np.full(n, np.nan)
        self.finish = np.full(n, np.nan)
        self.preemptions = np.zeros(n, np.int64)
        self.cached_tokens = np.zeros(n, np.int64)
        self.last_token = np.zeros(n)  # time of the latest token, kept across preemptions
        self.recomputed = np.zeros(n, np.int64)  # KV tokens held when preempted (thrown away)
        # running set: rows are views of one array, so compaction is one operation
        self.state = np.zeros((11, S), np.int64)
        st = self.state
        self.rid, self.comp, self.known, self.gen, self.out = st[RID], st[COMP], st[KNOWN], st[GEN], st[OUT]
        self.own, self.hit, self.cap = st[OWN], st[HIT], st[CAP]  # cap = tokens the held blocks can hold
        self.user, self.published, self.sched = st[USER], st[PUB], st[SCHED]
        self.last = np.zeros(S)
        self.n = 0
        self.waiting: deque[int] = deque()
        self.keyed = bool(cfg.prefix_caching and cfg.policy != "static" and (wl.prefix_key >= 0).any())
        self.tokens = 0  # tokens scheduled in the current step
        # records
        self.itl_same: list[tuple[float, int]] = []  # (gap, count) when every token of a step had the same gap
        self.itl_mixed: list[np.ndarray] = []
        self.timeline: list[tuple[float, float, int, int, int, int]] = []  # start, dt, tokens, batch, decodes, blocks

    # ---- running-set bookkeeping ----------------------------------------------------------------------
    def _preempt_last(self) -> None:
        v = self.n - 1
        r = int(self.rid[v])
        self.pool.give(int(self.own[v]))
        if self.user[v]:
            self.pool.release(int(self.wl.prefix_key[r]))
        self.generated[r] = self.gen[v]
        self.last_token[r] = self.last[v]
        self.recomputed[r] += self.comp[v]
        self.preemptions[r] += 1
        self.waiting.appendleft(r)
        self.n = v

    def _compact(self, keep: np.ndarray) -> None:
        n = self.n
        kept = self.state[:, :n][:, keep]
        m = kept.shape[1]
        self.state[:, :m] = kept
        self.last[:m] = self.last[:n][keep]
        self.n = m

    def _allocate(self, c1: np.ndarray) -> bool:
        """Give each running request the blocks its tokens up to c1 need, oldest first; when short,
        preempt the newest (vLLM V1). Returns whether anything was preempted."""
        n, bs, pool = self.n, self.bs, self.pool
        short = c1 > self.cap[:n]
        if not np.count_nonzero(short):
            return False
        idx = short.nonzero()[0]
        new = (c1[idx] + (bs - 1)) // bs - self.cap[idx] // bs
        total = int(new.sum())
        if total <= pool.available:
            pool.take(total)
            self.own[idx] += new
            self.cap[idx] += new * bs
            return False
        preempted = False
        for i, nb in zip(idx.tolist(), new.tolist(), strict=True):
            if i >= self.n:
                break
            while nb > pool.available:
                if self.n - 1 == i:  # next victim would be the request itself: first drop cached blocks it does not use
                    if self.user[i] and pool.trim(int(self.wl.prefix_key[self.rid[i]]), int(self.hit[i])):
                        continue
                    self._preempt_last()
                    preempted = True
                    break
                self._preempt_last()
                preempted = True
            else:
                pool.take(nb)
                self.own[i] += nb
                self.cap[i] += nb * bs
        return preempted

    def _admit(self, r: int, budget: int, t: float, reserve: str) -> int:
        """Start waiting request r with up to `budget` tokens (budget 0: start it, schedule nothing yet).
        Blocks taken now (`reserve`): "chunk" for the scheduled tokens (vLLM V1), "prompt" for the whole
        prompt (V0's can_allocate), "all" for prompt + output (static batching). Returns tokens scheduled,
        or −1 when those blocks are not free."""
        wl, pool, bs = self.wl, self.pool, self.bs
        prompt = int(wl.prompt_tokens[r])
        known = prompt + int(self.generated[r])
        h, key = 0, int(wl.prefix_key[r])
        if self.keyed and key >= 0:
            h = min(pool.lookup(key), int(wl.prefix_tokens[r]) // bs, (known - 1) // bs)
            if h:
                pool.acquire(key)
        c0 = h * bs
        tokens = min(known - c0, budget)
        upto = {"chunk": c0 + tokens, "prompt": known, "all": prompt + int(wl.output_tokens[r]) - 1}[reserve]
        need = blocks_for(upto, bs) - h
        if need > pool.available and h:
            pool.trim(key, h)  # cached blocks of this prefix beyond what it uses go, if nobody else needs them
        if need > pool.available:
            if h:
                pool.release(key)
            return -1
        pool.take(need)
        i = self.n
        self.state[:, i] = (r, c0, known, self.generated[r], wl.output_tokens[r], need, h, (h + need) * bs, h > 0, 0,
                            tokens)
        self.last[i] = self.last_token[r]
        self.n = i + 1
        if np.isnan(self.first_sched[r]):
            self.first_sched[r] = t
        self.cached_tokens[r] += c0
        return tokens

    def _admit_waiting(self, budget: int, t: float, reserve: str = "chunk") -> int:
        """Admit from the head of the queue while budget, sequence slots and blocks last. Returns tokens.
        Static batching ("all") admits a whole batch regardless of the budget and schedules it later."""
        used, S, waiting, whole = 0, self.max_seqs, self.waiting, reserve == "all"
        while waiting and (whole or budget > used) and self.n < S:
            got = self._admit(waiting[0], 0 if whole else budget - used, t, reserve)
            if got < 0:
                break
            waiting.popleft()
            used += got
        return used

    def _publish(self, i: int, blocks: int) -> None:
        key = int(self.wl.prefix_key[self.rid[i]])
        moved = self.pool.publish(key, blocks, int(self.hit[i]), int(self.own[i]), bool(self.user[i]))
        if moved:
            self.hit[i] += moved
            self.own[i] -= moved
            self.user[i] = True

    # ---- scheduling -------------------------------------------------------------------------------------
    def _fill(self, need: np.ndarray) -> np.ndarray:
        """sched[:n] = what each running request gets, oldest first, of `need` within the token budget:
        min(need_i, budget − Σ_{j<i} sched_j) = diff(min(cumsum(need), budget)). Returns c1 = comp + sched."""
        n = self.n
        cs = need.cumsum()
        total = int(cs[-1])
        if total > self.budget:
            np.minimum(cs, self.budget, out=cs)
            total = self.budget
        s = self.sched[:n]
        s[0] = cs[0]
        np.subtract(cs[1:], cs[:-1], out=s[1:])
        self.tokens = total
        return self.comp[:n] + s

    def _schedule(self, t: float) -> bool:
        """Fill sched[:n] for this step (and admit). Returns False when nothing can run now."""
        policy = self.cfg.policy
        if policy == "continuous":
            if self.n:
                preempted = self._allocate(self._fill(self.known[: self.n] - self.comp[: self.n]))
                if preempted:
                    self.tokens = int(self.sched[: self.n].sum())
            else:
                self.tokens, preempted = 0, False
            if not preempted:
                self.tokens += self._admit_waiting(self.budget - self.tokens, t)
            return self.n > 0
        if policy == "static" and self.n == 0:
            self._admit_waiting(self.budget, t, reserve="all")
        # prefill_first and static: a prefill step if any prefill can run, else a decode step
        n = self.n
        need = self.known[:n] - self.comp[:n]
        prefilling = (self.gen[:n] == 0) | (need > 1)
        if np.count_nonzero(prefilling):
            if self._allocate(self._fill(np.where(prefilling, need, 0))):
                self.tokens = int(self.sched[: self.n].sum())
            if self.tokens:
                return True
            n = self.n  # the prefills were preempted: decode instead
            need = self.known[:n] - self.comp[:n]
        if policy == "prefill_first" and self.waiting:
            self.sched[:n] = 0
            self.tokens = self._admit_waiting(self.budget, t, reserve="prompt")
            if self.tokens:
                return True
        if n == 0:
            return False
        self._allocate(self._fill(need))  # every running request decodes one token
        if self.n < n:
            self.tokens = int(self.sched[: self.n].sum())
        return self.n > 0

    # ---- one step ----------------------------------------------------------------------------------------
    def _step(self, t: float) -> float:
        """Time the scheduled step, advance every request, retire finished ones. Returns the end time."""
        n = self.n
        s, c0, known, gen = self.sched[:n], self.comp[:n], self.known[:n], self.gen[:n]
        c1 = c0 + s
        dec = (s == 1) & (c1 == known) & (gen > 0)
        n_dec = np.count_nonzero(dec)
        model = self.model
        if n_dec == n:
            dt = model.step_time_s(self.tokens, c1, _EMPTY, _EMPTY)
        else:
            chunk = (s > 0) & ~dec
            dt = model.step_time_s(self.tokens, c1[dec], c0[chunk], c1[chunk])
        self.timeline.append((t, dt, self.tokens, n, n_dec, self.pool.used))
        t += dt
        c0[:] = c1
        if self.keyed:
            self._publish_prefixes(n)
        idx = (c1 == known).nonzero()[0]
        if not idx.size:
            return t
        g = gen[idx]
        first = g == 0
        n_first = np.count_nonzero(first)
        if n_first:
            r_first = self.rid[idx[first]]
            fresh = np.isnan(self.first_token[r_first])
            self.first_token[r_first[fresh]] = t
            later = idx[~first]
        else:
            later = idx
        if later.size:
            gaps = t - self.last[later]
            if np.count_nonzero(gaps != gaps[0]):
                self.itl_mixed.append(gaps)
            else:
                self.itl_same.append((float(gaps[0]), int(later.size)))
        self.last[idx] = t
        g += 1
        gen[idx] = g
        known[idx] += 1
        done = g >= self.out[idx]
        if np.count_nonzero(done):
            self._retire(idx[done], t)
        return t

    def _publish_prefixes(self, n: int) -> None:
        wl, bs = self.wl, self.bs
        r = self.rid[:n]
        pending = (self.published[:n] == 0) & (wl.prefix_key[r] >= 0) & (self.comp[:n] >= wl.prefix_tokens[r])
        for i in pending.nonzero()[0].tolist():
            self.published[i] = 1
            self._publish(i, int(wl.prefix_tokens[self.rid[i]]) // bs)

    def _retire(self, done: np.ndarray, t: float) -> None:
        wl, pool = self.wl, self.pool
        for i in done.tolist():
            r = int(self.rid[i])
            self.finish[r] = t
            self.generated[r] = self.gen[i]
            if self.keyed and wl.session[r]:
                self._publish(i, int(self.comp[i]) // self.bs)
            pool.give(int(self.own[i]))
            if self.user[i]:
                pool.release(int(wl.prefix_key[r]))
            if self.slot_heap is not None:
                heapq.heappush(self.slot_heap, t)
        keep = np.ones(self.n, bool)
        keep[done] = False
        self._compact(keep)
        self.finished += int(done.size)

    # ---- the loop ----------------------------------------------------------------------------------------
    def _release(self, t: float) -> None:
        """Move requests that have arrived (and may be sent) by time t into the waiting queue."""
        arr, N, heap = self.arrival, len(self.wl), self.slot_heap
        while self.next < N:
            a = arr[self.next]
            if heap is not None:
                a = max(a, heap[0]) if heap else np.inf
            if a > t:
                return
            if heap is not None:
                heapq.heappop(heap)
                arr[self.next] = a
            self.waiting.append(self.next)
            self.next += 1

    def _next_release(self) -> float:
        if self.next >= len(self.wl):
            return np.inf
        a = self.arrival[self.next]
        if self.slot_heap is not None:
            a = max(a, self.slot_heap[0]) if self.slot_heap else np.inf
        return float(a)

    def run(self, progress: bool) -> SimResult:
        cfg, N = self.cfg, len(self.wl)
        self.next, self.finished = 0, 0
        self.slot_heap = [0.0] * cfg.max_concurrency if cfg.max_concurrency else None
        bar = _progress(N, progress)
        t, steps = 0.0, 0
        while self.finished < N:
            self._release(t)
            if self.n == 0 and not self.waiting:
                t = max(t, self._next_release())
                continue
            if cfg.policy == "static" and self.n == 0 and not self._batch_ready(t):
                t = min(self._next_release(), self.arrival[self.waiting[0]] + cfg.batch_timeout_s)
                continue
            if not self._schedule(t) or self.n == 0:
                if self._next_release() == np.inf:
                    raise KokubanError("no waiting request can be admitted and none will arrive: the KV cache is too small")
                t = max(t, self._next_release())
                continue
            t = self._step(t)
            steps += 1
            if bar is not None and steps % 512 == 0:
                bar.update(self.finished - bar.n)
        if bar is not None:
            bar.update(self.finished - bar.n)
            bar.close()
        return SimResult.build(self, t)

    def _batch_ready(self, t: float) -> bool:
        cfg = self.cfg
        return (len(self.waiting) >= cfg.max_num_seqs or t >= self.arrival[self.waiting[0]] + cfg.batch_timeout_s
                or self._next_release() == np.inf)


_EMPTY = np.zeros(0, np.int64)


def _progress(total: int, enabled: bool) -> Any:
    if not enabled:
        return None
    from tqdm import tqdm

    return tqdm(total=total, unit="req", desc="simulating", leave=False)
