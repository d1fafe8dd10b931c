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

Two fast paths give the same results, bit for bit, as the general one (`policy.schedule` + `_step`; tests
compare them): `_steady_step`, a continuous-batching step when every running request decoded in the
last step (the usual step: whole-slice operations for the decodes, scalars for the requests admitted
now), and `_decode_run`, event skipping (`decoderun`): many pure-decode steps at once while nothing
can join the batch.

With a host tier (`SchedulerConfig.cpu_offload_bytes`, `kvcache.HostTier`), a preempted request's computed KV is
copied to host memory instead of being thrown away (when the tier holds it) and an evicted prefix is kept there;
a resumed request starts from its saved tokens and a prefix found only on the host is restored, each reload
adding b ÷ BW (`kvcache.reload_seconds`) to the step that needs it (the copy out is assumed to overlap the GPU's
work, as vLLM's asynchronous offloading does).

Arrivals are released at step boundaries (a request arriving mid-step waits for the step to end, as it
does in a real engine loop). With `max_concurrency`, a request is released only when fewer than that
many are in flight, as `vllm bench serve --max-concurrency` does; its arrival time is then the moment it
was sent.

The pieces the engine is assembled from, each behind a small interface, so a variant adds a piece, not a branch:
    policy      `policies.Policy`: what each step schedules and admits (`policies.POLICIES`)
    step time   `steptime.StepTimeModel`: seconds of a step from its terms (`StepModel`: the core's roofline;
                an engine profile is another implementation, passed as `simulate(..., step_model=...)`)
    client      `clients.Client`: when each request is sent (open loop; a concurrency cap; `simulate(...,
                client=...)` takes any other). Closed-loop agent sessions plug in here: a client whose
                `finished(r, t)` makes r's next turn due at t + a think gap (`closed_loop = True`, so event
                skipping stops at completions); `release` then hands the turn to the waiting queue like any
                arrival, and the prefix cache already reuses a session's context (`Workload.session`)
    workload    `workload`: arrival processes, length distributions and traces build the `Workload` arrays
    record      `record.RunRecord`: the typed arrays the engine hands to the metrics at the end (`Engine.record`)
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import replace

import numpy as np

from kokuban.core import roofline
from kokuban.errors import KokubanError
from kokuban.progress import Progress, tick
from kokuban.sim.clients import Client, client_for
from kokuban.sim.decoderun import MAX_RUN_STEPS, MIN_RUN_STEPS, DecodeRun, plan_decode_run
from kokuban.sim.kvcache import BlockPool, HostTier, capacity_blocks
from kokuban.sim.metrics import SimResult
from kokuban.sim.policies import make_policy
from kokuban.sim.profiles import FrontEndClient, OverheadStepModel, client_view, sglang_max_running_requests
from kokuban.sim.record import RunRecord
from kokuban.sim.scheduler import SchedulerConfig
from kokuban.sim.steptime import StepModel, StepTimeModel
from kokuban.sim.workload import Workload
from kokuban.specs.deployment import Deployment
from kokuban.specs.hardware import PCIE5_X16_BYTES_PER_S


def simulate(dep: Deployment, workload: Workload, scheduler: SchedulerConfig | None = None, *,
             progress: Progress | None = None, kv_blocks: int | None = None, step_model: StepTimeModel | None = None,
             client: Client | None = None) -> SimResult:
    """Serve `workload` on `dep` with `scheduler` (default: vLLM's continuous batching and limits).

    `kv_blocks` overrides the KV capacity (default: `kvcache.capacity_blocks`); `step_model` the step times
    (default: `StepModel`, the core's roofline for `dep`); `client` who sends the requests when (default: open
    loop, or the scheduler's `max_concurrency` cap; see `clients`). Raises KokubanError for impossible setups
    (a request whose prompt + output does not fit the whole KV cache).
    `kv_blocks` None takes the scheduler's `kv_blocks`; its `overheads` (an engine profile's) wrap the step model
    (`profiles.OverheadStepModel`) and give the record a client's view (`profiles.client_view`).
    `progress(finished, requests)` is called as requests finish (`kokuban.progress`).
    """
    cfg = (scheduler or SchedulerConfig()).resolve(dep.accelerator)
    engine = build_engine(dep, workload, cfg, kv_blocks=kv_blocks, step_model=step_model, client=client)
    record = engine.run(progress)
    return SimResult.build(client_view(record, cfg.overheads), dep, engine.cfg)  # its limits as the engine ran


def build_engine(dep: Deployment, workload: Workload, cfg: SchedulerConfig, *, kv_blocks: int | None = None,
                 step_model: StepTimeModel | None = None, client: Client | None = None) -> Engine:
    """The `Engine` `simulate` runs (`cfg` resolved; the other arguments as `simulate`'s), its pool checked to
    hold the longest request; `client_view(engine.run(), cfg.overheads)` is the run as a client sees it."""
    kv_blocks = cfg.kv_blocks if kv_blocks is None else kv_blocks
    bs, S, B = cfg.block_size, int(cfg.max_num_seqs), int(cfg.max_num_batched_tokens)
    total_blocks = capacity_blocks(dep, bs, S) if kv_blocks is None else int(kv_blocks)
    if cfg.running_rule == "sglang":  # SGLang sizes its running-request cap from the pool (`profiles`)
        S = sglang_max_running_requests(total_blocks * bs, dep.model.max_context)
        cfg = replace(cfg, max_num_seqs=S, running_rule=None)
    prompt, out = workload.prompt_tokens, workload.output_tokens
    need_blocks = -(-(prompt + out - 1) // bs)
    worst = int(np.argmax(need_blocks))
    if need_blocks[worst] > total_blocks:
        raise KokubanError(
            f"request {worst} needs {int(prompt[worst] + out[worst] - 1):,} tokens of KV cache but the deployment "
            f"holds {total_blocks * bs:,} ({total_blocks:,} blocks of {bs}); "
            f"short by {int(need_blocks[worst] - total_blocks):,} "
            f"blocks: use more or larger GPUs, a smaller KV dtype, or shorter requests",
            field="workload", value=int(need_blocks[worst]),
        )
    model = step_model or StepModel(dep, B, int((prompt + out).max()))
    if cfg.overheads is not None and cfg.overheads.steps_cost:  # an engine profile's CPU terms (`profiles`)
        model = OverheadStepModel(model, cfg.overheads, dep.model.num_layers)
    if cfg.overheads is not None and cfg.overheads.front_end_s > 0:  # finishes reach the client later
        client = FrontEndClient(client or client_for(workload.arrival_s, cfg.max_concurrency),
                                cfg.overheads.front_end_s)
    host = None
    if cfg.cpu_offload_bytes is not None:
        bw = cfg.offload_bytes_per_s or PCIE5_X16_BYTES_PER_S
        # a request's KV is split over kv_shards GPUs, each reloading its share over its own host link
        host = HostTier(cfg.cpu_offload_bytes, float(roofline.attention_kv_bytes_per_request(dep, bs)),
                        bw * dep.kv_shards)
    return Engine(cfg, model, workload, BlockPool(total_blocks, bs, host), client)


# rows of the running-set state (one row per field, one column per running request, oldest first)
RID, COMP, KNOWN, GEN, OUT, OWN, HIT, CAP, USER, PUB, SCHED = range(11)


class Engine:
    """One run's state: the running set as arrays, the waiting queue, the KV pool and the records.

    Built from a resolved `SchedulerConfig` (its policy, and its client unless one is given, are made here), a
    step-time model, the workload and a block pool; `run()` serves every request and returns the `RunRecord`.
    The methods under "scheduling primitives" (`fill`, `allocate`, `admit_waiting`) are what policies call.
    """

    def __init__(self, cfg: SchedulerConfig, model: StepTimeModel, wl: Workload, pool: BlockPool,
                 client: Client | None = None) -> None:
        self.cfg, self.model, self.wl, self.pool = cfg, model, wl, pool
        self.policy = make_policy(cfg)
        self.client = client or client_for(wl.arrival_s, cfg.max_concurrency)
        self.closed_loop = bool(self.client.closed_loop)  # a finish can release a request
        self.bs, self.budget = int(cfg.block_size), int(cfg.max_num_batched_tokens)
        self.max_seqs = int(cfg.max_num_seqs)
        n, S = len(wl), self.max_seqs
        self.N = n
        self.finished = 0  # requests finished so far
        # the workload as lists: per-request scalars without NumPy's per-access cost
        self.prompt_l, self.out_l = wl.prompt_tokens.tolist(), wl.output_tokens.tolist()
        self.key_l, self.prefix_l = wl.prefix_key.tolist(), wl.prefix_tokens.tolist()
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
        self.keyed = bool(cfg.prefix_caching and self.policy.prefix_caching and (wl.prefix_key >= 0).any())
        self.tokens = 0  # tokens scheduled in the current step
        self.steady = False  # every running request sampled a token in the last step (see `_steady_step`)
        self.fast = self.policy.steady_fast_path and not self.keyed  # `_steady_step` applies
        self.host = pool.host  # the host KV tier (None: none)
        self.saved: dict[int, int] = {}  # preempted request → computed tokens whose KV waits in the host tier
        self.reload_s = 0.0  # host → HBM copies the next step waits for
        # records
        self.itl_same: list[tuple[float, int]] = []  # (gap, count) when every token of a step had the same gap
        self.itl_mixed: list[np.ndarray] = []
        self.timeline: list[tuple[float, float, int, int, int, int]] = []  # start, dt, tokens, batch, decodes, blocks
        if hasattr(self.client, "attach"):  # a client that manages KV between requests (agent sessions)
            self.client.attach(self)

    # ---- running-set bookkeeping ----------------------------------------------------------------------
    def _preempt_last(self) -> None:
        v = self.n - 1
        r = int(self.rid[v])
        self.pool.give(int(self.own[v]))
        if self.user[v]:
            self.pool.release(int(self.wl.prefix_key[r]))
        self.generated[r] = self.gen[v]
        self.last_token[r] = self.last[v]
        comp = int(self.comp[v])
        if self.host is not None and comp and self.host.store(-2 - r, -(-comp // self.bs)):
            self.saved[r] = comp  # its KV waits in the host tier (key −2 − r: prefix keys are ≥ 0)
        else:
            self.recomputed[r] += comp
        self.preemptions[r] += 1
        self.waiting.appendleft(r)
        self.n = v

    def _remove(self, done: np.ndarray) -> None:
        """Drop the running requests at positions `done` (ascending), keeping the others' order."""
        n = self.n
        if done.size == 1:  # the usual case: shift the tail left by one
            i = int(done[0])
            self.state[:, i:n - 1] = self.state[:, i + 1:n]
            self.last[i:n - 1] = self.last[i + 1:n]
            self.n = n - 1
            return
        keep = np.ones(n, bool)
        keep[done] = False
        kept = self.state[:, :n][:, keep]
        m = kept.shape[1]
        self.state[:, :m] = kept
        self.last[:m] = self.last[:n][keep]
        self.n = m

    def allocate(self, c1: np.ndarray) -> bool:
        """Give each running request the blocks its tokens up to c1 need, oldest first; when short,
        preempt the newest (vLLM V1). Returns whether anything was preempted."""
        n, bs, pool = self.n, self.bs, self.pool
        cap = self.cap[:n]
        short = c1 > cap
        n_short = np.count_nonzero(short)
        if not n_short:
            return False
        if n_short <= pool.available and not np.count_nonzero(c1 > cap + bs):  # usual: one block each (decodes)
            pool.take(n_short)
            self.own[:n] += short
            cap += short * bs
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

    def _admit(self, r: int, budget: int, t: float, reserve: str, whole: bool = False) -> int:
        """Start waiting request r with up to `budget` tokens (budget 0: start it, schedule nothing yet).
        Blocks taken now (`reserve`): "chunk" for the scheduled tokens (vLLM V1), "prompt" for the whole
        prompt (V0's can_allocate), "all" for prompt + output (static batching, TensorRT-LLM's
        GUARANTEED_NO_EVICT). `whole`: all the tokens it still needs or nothing. Returns tokens scheduled,
        or −1 when those blocks are not free (or, with `whole`, its tokens do not fit the budget)."""
        pool, bs = self.pool, self.bs
        prompt, generated = self.prompt_l[r], int(self.generated[r])
        known = prompt + generated
        h, key = 0, self.key_l[r]
        resume = self.saved.get(r, 0) if self.saved else 0
        if resume:  # a preempted request whose KV is in the host tier: reload it, compute from there
            key = -1
        elif self.keyed and key >= 0:
            if self.host is not None and not pool.lookup(key):
                self._restore_prefix(key)
            h = min(pool.lookup(key), self.prefix_l[r] // bs, (known - 1) // bs)
            if h:
                pool.acquire(key)
        c0 = min(resume, known - 1) if resume else h * bs
        if whole and known - c0 > budget:
            if h:
                pool.release(key)
            return -1
        tokens = min(known - c0, budget)
        upto = c0 + tokens if reserve == "chunk" else known if reserve == "prompt" else prompt + self.out_l[r] - 1
        need = -(-upto // bs) - h  # blocks_for(upto, bs) − h
        if need > pool.available and h:
            pool.trim(key, h)  # cached blocks of this prefix beyond what it uses go, if nobody else needs them
        if need > pool.available:
            if h:
                pool.release(key)
            return -1
        pool.take(need)
        if resume:
            del self.saved[r]
            if self.host is not None:
                self.reload_s += self.host.reload_s(self.host.pop(-2 - r))
        i = self.n
        self.state[:, i] = (r, c0, known, generated, self.out_l[r], need, h, (h + need) * bs, h > 0, 0, tokens)
        self.last[i] = self.last_token[r]
        self.n = i + 1
        first_sched = self.first_sched
        if first_sched[r] != first_sched[r]:  # NaN: never scheduled before
            first_sched[r] = t
        if not resume:
            self.cached_tokens[r] += c0
        return tokens

    def preload(self, first_token_s: np.ndarray) -> None:
        """Every request arrives with its prompt's KV already computed (elsewhere: a disaggregated prefill pool,
        `sim.disaggregated`) and its first token sampled at `first_token_s`: admitted, it decodes from its prompt
        (as a preempted request resumes from its saved tokens, with nothing to reload)."""
        self.generated[:] = 1
        self.first_token[:] = first_token_s
        self.last_token[:] = first_token_s
        self.saved = dict(enumerate(self.prompt_l))

    def _restore_prefix(self, key: int) -> None:
        """Prefix `key`, not in HBM, copied back from the host tier if it is there and its blocks are free: cached
        again (nobody using it yet); the copy is charged to the next step."""
        host, pool = self.host, self.pool
        blocks = host.get(key)  # type: ignore[union-attr]
        if blocks and blocks <= pool.available:
            pool.restore(key, blocks)
            pool.release(key)
            self.reload_s += host.reload_s(blocks)  # type: ignore[union-attr]

    def _reload_wait(self) -> float:
        """Seconds of host → HBM copies the step about to run waits for (then none are pending)."""
        wait, self.reload_s = self.reload_s, 0.0
        return wait

    def admit_waiting(self, budget: int, t: float, reserve: str = "chunk", *, whole_prompt: bool = False,
                      gate: Callable[[int], bool] | None = None) -> int:
        """Admit from the head of the queue while budget, sequence slots and blocks last. Returns tokens.
        Static batching ("all" without `whole_prompt`) admits a whole batch regardless of the budget and
        schedules it later. `whole_prompt` (no chunking): a request is admitted only with the whole rest of its
        prompt inside the budget left, and the first that does not fit stops admission; only into an empty step
        (nothing running, nothing admitted yet) is the head admitted as a chunk, so that a prompt longer than
        the whole budget still runs: alone, in budget-sized chunks. `gate(r)`: the policy's own admission check
        of the head request r (the engine's state as it stands, those admitted before it included); False stops
        admission as a failed block allocation does."""
        used, S, waiting = 0, self.max_seqs, self.waiting
        batch = reserve == "all" and not whole_prompt
        while waiting and (batch or budget > used) and self.n < S:
            if gate is not None and not gate(waiting[0]):
                break
            whole = whole_prompt and bool(self.n or used)
            got = self._admit(waiting[0], 0 if batch else budget - used, t, reserve, whole)
            if got < 0:
                break
            waiting.popleft()
            used += got
        return used

    def steps(self) -> int:
        """Steps taken so far."""
        return len(self.timeline)

    def free_tokens(self) -> int:
        """Tokens the free KV blocks hold."""
        return self.pool.available * self.bs

    def request_tokens(self, r: int) -> tuple[int, int, int]:
        """Request r's (prompt tokens, output tokens asked for, tokens generated so far)."""
        return self.prompt_l[r], self.out_l[r], int(self.generated[r])

    def _publish(self, i: int, blocks: int) -> None:
        key = int(self.wl.prefix_key[self.rid[i]])
        moved = self.pool.publish(key, blocks, int(self.hit[i]), int(self.own[i]), bool(self.user[i]))
        if moved:
            self.hit[i] += moved
            self.own[i] -= moved
            self.user[i] = True

    # ---- scheduling primitives (what policies call) -------------------------------------------------------
    def fill(self, need: np.ndarray) -> np.ndarray:
        """sched[:n] = what each running request gets, oldest first, of `need` within the token budget:
        min(need_i, budget − Σ_{j<i} sched_j) = diff(min(cumsum(need), budget)). Returns c1 = comp + sched."""
        n = self.n
        total = int(need.sum())
        if total <= self.budget:  # everyone gets all it needs
            self.sched[:n] = need
            self.tokens = total
            return self.comp[:n] + need
        cs = need.cumsum()
        np.minimum(cs, self.budget, out=cs)
        total = self.budget
        s = self.sched[:n]
        s[0] = cs[0]
        np.subtract(cs[1:], cs[:-1], out=s[1:])
        self.tokens = total
        return self.comp[:n] + s

    # ---- one step ----------------------------------------------------------------------------------------
    def _step(self, t: float) -> float:
        """Time the scheduled step, advance every request, retire finished ones. Returns the end time."""
        n = self.n
        s, c0, known, gen = self.sched[:n], self.comp[:n], self.known[:n], self.gen[:n]
        c1 = c0 + s
        sampled = c1 == known  # requests whose known tokens are all computed after this step
        n_sampled = np.count_nonzero(sampled)
        dec = (s == 1) & (gen > 0)  # decodes: one token, sampled, not a prompt's first token
        if n_sampled < n:
            dec &= sampled
        n_dec = np.count_nonzero(dec)
        dt = self._step_time(n, n_dec, dec, s, c0, c1, sampled)
        if self.reload_s:
            dt += self._reload_wait()
        self.timeline.append((t, dt, self.tokens, n, n_dec, self.pool.used))
        t += dt
        c0[:] = c1
        if self.keyed:
            self._publish_prefixes(n)
        self.steady = n_sampled == n
        if n_sampled == n:
            self._sample_all(n, t)
        elif n_sampled:
            self._sample(sampled.nonzero()[0], t)
        return t

    def _steady_step(self, t: float) -> float | None:
        """`Continuous.schedule` + `_step` (no prefix cache) when every running request sampled
        a token in the last step, so each now needs exactly one token (at context = its known tokens, in
        a block it holds or in one new block), and all their latest tokens came out at the same time.
        The decodes are then handled in whole-slice operations and the requests admitted now one by one.
        Returns the end time, or None, having changed nothing, when the general path is needed (the
        decodes exceed the token budget, or their new blocks do not fit: preemption)."""
        n0, pool = self.n, self.pool
        if n0 > self.budget:
            return None
        known, cap = self.known[:n0], self.cap[:n0]
        short = known > cap  # decodes that start a new block
        n_short = np.count_nonzero(short)
        if n_short > pool.available:
            return None
        if n_short:
            pool.take(n_short)
            self.own[:n0] += short
            np.add(cap, self.bs, out=cap, where=short)
        tokens = n0 + (self.admit_waiting(self.budget - n0, t) if self.waiting else 0)
        n = self.n
        tail = self.state[:, n0:n].T.tolist() if n > n0 else []  # the requests admitted now: one row each
        if any(row[GEN] for row in tail):  # a preempted request resumes: its gaps need the general path
            self.sched[:n0] = 1
            self.tokens = tokens
            return self._step(t)
        model = self.model
        attn, kv, heads = 0.0, 0.0, n0  # an LM head for every decode and every chunk completing its prompt
        if n0:
            attn, kv = model.decode_terms(known)
        if len(tail) == 1:  # one prefill chunk [c0, c0 + s): the table differences as floats
            c0, c1 = tail[0][COMP], tail[0][COMP] + tail[0][SCHED]
            attn_c, kv_c = model.one_chunk_terms(c0, c1)
            attn += attn_c
            kv += kv_c
            heads += c1 == tail[0][KNOWN]
        elif tail:
            ends = self.comp[n0:n] + self.sched[n0:n]
            attn_c, kv_c = model.chunk_terms(self.comp[n0:n], ends)
            attn += attn_c
            kv += kv_c
            heads += int(np.count_nonzero(ends == self.known[n0:n]))
        dt = model.seconds(tokens, heads, attn, kv)
        if self.reload_s:
            dt += self._reload_wait()
        self.timeline.append((t, dt, tokens, n, n0, pool.used))
        t += dt
        done = []
        if n0:
            self.itl_same.append((t - float(self.last[0]), n0))
            self.comp[:n0] = known
            self.state[KNOWN:GEN + 1, :n0] += 1  # known and generated
            self.last[:n0] = t
            finished = self.gen[:n0] >= self.out[:n0]
            if np.count_nonzero(finished):
                done = finished.nonzero()[0].tolist()
        self.steady = True
        for i, row in enumerate(tail, n0):
            c1 = row[COMP] + row[SCHED]
            self.comp[i] = c1
            if c1 < row[KNOWN]:  # a chunk of a longer prompt: more to come
                self.steady = False
                continue
            r = row[RID]
            if self.first_token[r] != self.first_token[r]:
                self.first_token[r] = t
            self.last[i] = t
            self.gen[i] = 1
            self.known[i] += 1
            if row[OUT] <= 1:
                done.append(i)
        if done:
            self._retire(np.array(done), t)
        return t

    def _step_time(self, n: int, n_dec: int, dec: np.ndarray, s: np.ndarray, c0: np.ndarray, c1: np.ndarray,
                   sampled: np.ndarray) -> float:
        """Seconds of the step: decodes at contexts c1[dec], prefill chunks [c0, c1) of the others scheduled
        (`sampled`: the chunks that complete their prompt)."""
        model = self.model
        if n_dec == n:
            return model.seconds(self.tokens, n, *model.decode_terms(c1))
        heads = n_dec + int(np.count_nonzero(sampled & (s > 0) & ~dec))  # decodes + chunks completing a prompt
        if np.count_nonzero(dec[:n_dec]) == n_dec and np.count_nonzero(s[n_dec:]) == n - n_dec:
            # the usual layout: decodes first, then the prefill chunks of the newest requests
            attn, kv = model.decode_terms(c1[:n_dec]) if n_dec else (0.0, 0.0)
            attn_c, kv_c = model.chunk_terms(c0[n_dec:], c1[n_dec:])
            return model.seconds(self.tokens, heads, attn + attn_c, kv + kv_c)
        attn, kv = model.decode_terms(c1[dec]) if n_dec else (0.0, 0.0)
        chunk = (s > 0) & ~dec
        if np.count_nonzero(chunk):
            attn_c, kv_c = model.chunk_terms(c0[chunk], c1[chunk])
            attn += attn_c
            kv += kv_c
        return model.seconds(self.tokens, heads, attn, kv)

    def _sample_all(self, n: int, t: float) -> None:
        """Every running request samples a token at time t (the usual step): slices, no gathers."""
        gen, last = self.gen[:n], self.last[:n]
        first = gen == 0
        n_first = np.count_nonzero(first)
        if n_first:
            first_token, rid = self.first_token, self.rid
            for i in first.nonzero()[0].tolist():
                r = int(rid[i])
                if first_token[r] != first_token[r]:  # NaN: the request's first token (not a recomputed one)
                    first_token[r] = t
            if n_first == n:
                pass
            elif np.count_nonzero(first[n - n_first:]) == n_first:  # the usual: new requests are the newest
                self._record_gaps(t - last[:n - n_first])
            else:
                self._record_gaps(t - last[~first])
        else:
            self._record_gaps(t - last)
        last[:] = t
        gen += 1
        self.known[:n] += 1
        done = gen >= self.out[:n]
        if np.count_nonzero(done):
            self._retire(done.nonzero()[0], t)

    def _sample(self, idx: np.ndarray, t: float) -> None:
        """The running requests at positions `idx` sample a token at time t."""
        gen = self.gen
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
            self._record_gaps(t - self.last[later])
        self.last[idx] = t
        g += 1
        gen[idx] = g
        self.known[idx] += 1
        done = g >= self.out[idx]
        if np.count_nonzero(done):
            self._retire(idx[done], t)

    def _record_gaps(self, gaps: np.ndarray) -> None:
        """Inter-token gaps of one step: (gap, count) when all equal (the usual case), else the array."""
        if np.count_nonzero(gaps != gaps[0]):
            self.itl_mixed.append(gaps)
        else:
            self.itl_same.append((float(gaps[0]), int(gaps.size)))

    def _publish_prefixes(self, n: int) -> None:
        wl, bs = self.wl, self.bs
        r = self.rid[:n]
        pending = (self.published[:n] == 0) & (wl.prefix_key[r] >= 0) & (self.comp[:n] >= wl.prefix_tokens[r])
        for i in pending.nonzero()[0].tolist():
            self.published[i] = 1
            self._publish(i, int(wl.prefix_tokens[self.rid[i]]) // bs)

    def _retire(self, done: np.ndarray, t: float) -> None:
        """The running requests at positions `done` finished at time t: record, free their blocks, remove."""
        wl, pool = self.wl, self.pool
        if done.size == 1 and not self.keyed:  # the usual: scalars, no array calls
            i = int(done[0])
            r = int(self.rid[i])
            self.finish[r] = t
            self.generated[r] = self.gen[i]
            pool.give(int(self.own[i]))
            if self.closed_loop:
                self.client.finished(r, t)
            self._remove(done)
            self.finished += 1
            return
        r = self.rid[done]
        self.finish[r] = t
        self.generated[r] = self.gen[done]
        if self.keyed:  # prefix bookkeeping, one request at a time
            for i in done.tolist():
                key = self.key_l[int(self.rid[i])]
                if wl.session[int(self.rid[i])]:
                    self._publish(i, int(self.comp[i]) // self.bs)
                pool.give(int(self.own[i]))
                if self.user[i]:
                    pool.release(key)
        else:
            pool.give(int(self.own[done].sum()))
        if self.closed_loop:
            for rr in r.tolist():
                self.client.finished(rr, t)
        self._remove(done)
        self.finished += int(done.size)

    # ---- the loop ----------------------------------------------------------------------------------------
    def run(self, progress: Progress | None = None) -> RunRecord:
        """Serve every request; returns the run's record (`progress(finished, N)` every 512 steps and at the end)."""
        N = self.N
        t, steps = 0.0, 0
        while self.finished < N:
            t, taken = self.advance(t)
            steps += taken
            if progress is not None and taken and steps % 512 == 0:
                progress(self.finished, N)
        tick(progress, self.finished, N)
        return self.record(t)

    def advance(self, t: float) -> tuple[float, int]:
        """One turn of the loop at time t: release what the client sent by then, then one step (or one decode
        run), or a jump to the next release when nothing can run. Returns (the new time, steps taken). `run`
        turns it until every request finished; `dataparallel` turns several engines in time order."""
        policy, client, waiting = self.policy, self.client, self.waiting
        client.release(t, waiting)
        if self.n == 0:
            if not waiting:
                return max(t, client.next_release_s()), 0
            hold = policy.hold_until(self, t)
            if hold is not None:
                return hold, 0
        skipped = self._decode_run(t) if self.n and not self.keyed else 0
        if skipped:
            return self.timeline[-1][0] + self.timeline[-1][1], skipped
        end = self._steady_step(t) if self.steady and self.n and self.fast else None
        if end is None:
            if not policy.schedule(self, t) or self.n == 0:
                if client.next_release_s() == np.inf:
                    raise KokubanError("no waiting request can be admitted and none will arrive: "
                                       "the KV cache is too small")
                return max(t, client.next_release_s()), 0
            end = self._step(t)
        return end, 1

    def record(self, end_s: float) -> RunRecord:
        """The run so far as a `RunRecord` (what the metrics read)."""
        wl = self.wl
        return RunRecord.from_logs(
            itl_same=self.itl_same, itl_mixed=self.itl_mixed, timeline=self.timeline,
            arrival_s=self.client.sent_s, prompt_tokens=wl.prompt_tokens, output_tokens=wl.output_tokens,
            generated_tokens=self.generated, first_scheduled_s=self.first_sched, first_token_s=self.first_token,
            finish_s=self.finish, preemptions=self.preemptions, recomputed_tokens=self.recomputed,
            cached_tokens=self.cached_tokens, end_s=float(end_s), kv_capacity_blocks=self.pool.total,
            block_size=self.bs, kv_blocks_free_at_end=self.pool.available,
        )

    # ---- event skipping ----------------------------------------------------------------------------------
    def _decode_run(self, t: float) -> int:
        """If the next steps can only be pure decodes of the running set, take as many of them at once as
        `decoderun.plan_decode_run` allows (up to the next arrival; up to the first completion when that
        could let a waiting request in, or free a client slot). Returns the steps taken (0: step normally).

        Conditions, from the schedulers' rules: every running request decodes (one known token left to
        compute, at least one generated) and they fit the token budget; no request can be admitted
        (static batching admits only into an empty engine; the others need an empty queue, or a full
        `max_num_seqs` until a request finishes); no prefix caching (its bookkeeping is per step).
        """
        n, waiting = self.n, bool(self.waiting) and self.policy.admits_while_running
        if n > self.budget or (waiting and n < self.max_seqs):
            return 0
        t_stop = self.client.next_release_s()
        until_completion = waiting or self.closed_loop
        if not until_completion:  # enough steps to reach the next arrival if steps stay as long as the last one
            last_dt = self.timeline[-1][1] if self.timeline else 0.0
            max_steps = MAX_RUN_STEPS if t_stop == np.inf or last_dt <= 0 else int((t_stop - t) / last_dt) + 2
            if max_steps < MIN_RUN_STEPS:
                return 0
        gen = self.gen[:n]
        if not self.steady and (np.count_nonzero(self.known[:n] - self.comp[:n] != 1) or np.count_nonzero(gen == 0)):
            return 0
        left = self.out[:n] - gen
        if until_completion:
            max_steps = int(left.min())
            if max_steps < MIN_RUN_STEPS:
                return 0
        pool = self.pool
        run = plan_decode_run(self.model, self.bs, self.known[:n], self.own[:n], left, pool.used, pool.total, t, t_stop,
                              max_steps)
        if run is None:
            return 0
        self._apply_run(run, left)
        return run.steps

    def _apply_run(self, run: DecodeRun, left: np.ndarray) -> None:
        """Record a decode run's steps and advance the running set past it, as `_step` would have."""
        n, k, start = self.n, run.steps, run.start_s
        self.steady = True  # every request left sampled in the run's last step
        batch = run.batch.tolist()
        self.timeline.extend(zip(start[:k].tolist(), run.step_s.tolist(), batch, batch, batch, run.used_blocks.tolist(),
                                 strict=True))
        self._record_gaps(start[1] - self.last[:n])
        self.itl_same.extend(zip((start[2:] - start[1:-1]).tolist(), batch[1:], strict=True))
        taken = int(run.owned.sum() - self.own[:n].sum())
        self.own[:n] = run.owned
        np.multiply(run.owned, self.bs, out=self.cap[:n])
        advance = np.minimum(left, k)
        self.known[:n] += advance
        np.subtract(self.known[:n], 1, out=self.comp[:n])
        self.gen[:n] += advance
        self.last[:n] = start[advance]
        done = (left <= k).nonzero()[0]
        if done.size:  # the pool's free count nets out (no prefix cache): give back first, then take
            r = self.rid[done]
            self.finish[r] = start[left[done]]
            self.generated[r] = self.out[done]
            self.pool.give(int(run.owned[done].sum()))
            if self.closed_loop:
                for rr, finish_s in zip(r.tolist(), start[left[done]].tolist(), strict=True):
                    self.client.finished(rr, finish_s)
        self.pool.take(taken)
        if done.size:
            self._remove(done)
            self.finished += int(done.size)


