"""The discrete-event engine: steps of the scheduler, each timed by the core's step model.

Time advances one step at a time; between steps nothing happens, and when nothing runs the clock jumps
to the next arrival. A request's life, in the vLLM V1 vocabulary the engine follows:
    known tokens  = prompt + generated so far;  computed tokens = those already in the KV cache
    each step schedules some of known − computed (a prefill chunk, or 1 for a decode)
    when computed reaches known, the step samples a token: generated + 1, known + 1
    the first token comes out of the step that finishes the prompt (TTFT); the request finishes when
    generated = its output length; preemption sets computed to 0 and frees its KV blocks
The running set lives in NumPy arrays (one slot per running request, in admission order; its fields named as
vLLM's `Request` names them: `num_computed_tokens`, `num_known_tokens` (vLLM's num_tokens), `num_output_tokens`,
`max_tokens`, …); per step the work is a handful of array operations over at most `max_num_seqs` entries, never per
token.

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
    block_size, max_num_seqs = cfg.block_size, int(cfg.max_num_seqs)
    total_blocks = capacity_blocks(dep, block_size, max_num_seqs) if kv_blocks is None else int(kv_blocks)
    if cfg.running_rule == "sglang":  # SGLang sizes its running-request cap from the pool (`profiles`)
        max_num_seqs = sglang_max_running_requests(total_blocks * block_size, dep.model.max_context)
        cfg = replace(cfg, max_num_seqs=max_num_seqs, running_rule=None)
    prompt, out = workload.prompt_tokens, workload.output_tokens
    need_blocks = -(-(prompt + out - 1) // block_size)
    worst = int(np.argmax(need_blocks))
    if need_blocks[worst] > total_blocks:
        raise KokubanError(
            f"request {worst} needs {int(prompt[worst] + out[worst] - 1):,} tokens of KV cache but the deployment "
            f"holds {total_blocks * block_size:,} ({total_blocks:,} blocks of {block_size}); "
            f"short by {int(need_blocks[worst] - total_blocks):,} "
            f"blocks: use more or larger GPUs, a smaller KV dtype, or shorter requests",
            field="workload", value=int(need_blocks[worst]),
        )
    model = step_model or StepModel(dep, int(cfg.max_num_batched_tokens), int((prompt + out).max()))
    if cfg.overheads is not None and cfg.overheads.steps_cost:  # an engine profile's CPU terms (`profiles`)
        model = OverheadStepModel(model, cfg.overheads, dep.model.num_layers)
    if cfg.overheads is not None and cfg.overheads.front_end_s > 0:  # finishes reach the client later
        client = FrontEndClient(client or client_for(workload.arrival_s, cfg.max_concurrency),
                                cfg.overheads.front_end_s)
    host = None
    if cfg.cpu_offload_bytes is not None:
        bw = cfg.offload_bytes_per_s or PCIE5_X16_BYTES_PER_S
        # a request's KV is split over kv_shards GPUs, each reloading its share over its own host link
        host = HostTier(cfg.cpu_offload_bytes, float(roofline.attention_kv_bytes_per_request(dep, block_size)),
                        bw * dep.kv_shards)
    return Engine(cfg, model, workload, BlockPool(total_blocks, block_size, host), client)


# The running set's rows (`Engine.running_state[row, slot]`: one row per field, one column per running request,
# oldest first), named as vLLM's `Request` names them where it has the field.
REQUEST_ID = 0  # the request's position in the workload
NUM_COMPUTED_TOKENS = 1  # tokens whose KV is in the cache (vLLM's num_computed_tokens)
NUM_KNOWN_TOKENS = 2  # prompt + tokens generated so far (vLLM's num_tokens)
NUM_OUTPUT_TOKENS = 3  # tokens generated so far (vLLM's num_output_tokens)
MAX_TOKENS = 4  # output tokens the request asks for (vLLM's max_tokens)
NUM_OWNED_BLOCKS = 5  # KV blocks the request holds as its own
NUM_CACHED_BLOCKS = 6  # KV blocks of its prefix found in the prefix cache (shared, not its own)
TOKEN_CAPACITY = 7  # tokens its blocks hold, cached and owned: (cached + owned) × block size
HOLDS_PREFIX = 8  # 1 when it holds a reference on its cached prefix
PREFIX_PUBLISHED = 9  # 1 once its prefix's blocks were offered to the prefix cache
NUM_SCHEDULED_TOKENS = 10  # tokens scheduled for it in the current step
RUNNING_ROWS = 11


class Engine:
    """One run's state: the running set as arrays, the waiting queue, the KV pool and the records.

    Built from a resolved `SchedulerConfig` (its policy, and its client unless one is given, are made here), a
    step-time model, the workload and a block pool; `run()` serves every request and returns the `RunRecord`.
    The methods under "scheduling primitives" (`fill`, `allocate`, `admit_waiting`) are what policies call.

    Two kinds of state: per request (indexed by the request's position r in the workload: `first_token_s[r]`, …)
    and per running slot (indexed by the slot i of the running set, oldest first: `num_computed_tokens[i]`, the
    views of `running_state`'s rows, and `last_token_s[i]`); `request_id[i]` maps a slot to its request.
    """

    def __init__(self, cfg: SchedulerConfig, step_model: StepTimeModel, workload: Workload, pool: BlockPool,
                 client: Client | None = None) -> None:
        self.cfg, self.step_model, self.workload, self.pool = cfg, step_model, workload, pool
        self.policy = make_policy(cfg)
        self.client = client or client_for(workload.arrival_s, cfg.max_concurrency)
        self.closed_loop = bool(self.client.closed_loop)  # a finish can release a request
        self.block_size, self.token_budget = int(cfg.block_size), int(cfg.max_num_batched_tokens)
        self.max_num_seqs = int(cfg.max_num_seqs)
        num_requests, max_num_seqs = len(workload), self.max_num_seqs
        self.num_requests = num_requests
        self.num_finished = 0  # requests finished so far
        # per request: the workload as lists (scalars without NumPy's per-access cost) …
        self.prompt_tokens, self.output_tokens = workload.prompt_tokens.tolist(), workload.output_tokens.tolist()
        self.prefix_keys, self.prefix_tokens = workload.prefix_key.tolist(), workload.prefix_tokens.tolist()
        # … and what the run records (`RunRecord`'s fields)
        self.generated_tokens = np.zeros(num_requests, np.int64)  # tokens generated, saved at preemption and finish
        self.first_scheduled_s = np.full(num_requests, np.nan)
        self.first_token_s = np.full(num_requests, np.nan)
        self.finish_s = np.full(num_requests, np.nan)
        self.preemptions = np.zeros(num_requests, np.int64)
        self.cached_tokens = np.zeros(num_requests, np.int64)  # prompt tokens found in the prefix cache
        self.request_last_token_s = np.zeros(num_requests)  # time of the latest token, kept across preemptions
        self.recomputed_tokens = np.zeros(num_requests, np.int64)  # KV tokens held when preempted (thrown away)
        # per running slot: the rows are views of one array, so compaction is one operation
        self.running_state = np.zeros((RUNNING_ROWS, max_num_seqs), np.int64)
        rows = self.running_state
        self.request_id, self.num_computed_tokens = rows[REQUEST_ID], rows[NUM_COMPUTED_TOKENS]
        self.num_known_tokens, self.num_output_tokens = rows[NUM_KNOWN_TOKENS], rows[NUM_OUTPUT_TOKENS]
        self.max_tokens, self.num_owned_blocks = rows[MAX_TOKENS], rows[NUM_OWNED_BLOCKS]
        self.num_cached_blocks, self.token_capacity = rows[NUM_CACHED_BLOCKS], rows[TOKEN_CAPACITY]
        self.holds_prefix, self.prefix_published = rows[HOLDS_PREFIX], rows[PREFIX_PUBLISHED]
        self.num_scheduled_tokens = rows[NUM_SCHEDULED_TOKENS]
        self.last_token_s = np.zeros(max_num_seqs)  # time of each running request's latest token
        self.num_running = 0
        self.waiting: deque[int] = deque()
        self.prefix_caching = bool(cfg.prefix_caching and self.policy.prefix_caching
                                   and (workload.prefix_key >= 0).any())
        self.step_tokens = 0  # tokens scheduled in the current step
        self.all_sampled_last_step = False  # every running request sampled a token in the last step (`_steady_step`)
        self.steady_fast_path = self.policy.steady_fast_path and not self.prefix_caching  # `_steady_step` applies
        self.host_tier = pool.host  # the host KV tier (None: none)
        self.host_saved_tokens: dict[int, int] = {}  # preempted request → computed tokens whose KV is in the host tier
        self.pending_reload_s = 0.0  # host → HBM copies the next step waits for
        # records
        self.itl_equal_gaps: list[tuple[float, int]] = []  # (gap, count) when every token of a step had the same gap
        self.itl_mixed_gaps: list[np.ndarray] = []  # a step's gaps when they differ
        # per step: start, seconds, tokens, batch, decodes, blocks in use
        self.timeline: list[tuple[float, float, int, int, int, int]] = []
        if hasattr(self.client, "attach"):  # a client that manages KV between requests (agent sessions)
            self.client.attach(self)

    # ---- running-set bookkeeping ----------------------------------------------------------------------
    def _preempt_last(self) -> None:
        """Preempt the newest running request: its blocks freed, its KV saved in the host tier if that holds it
        (else thrown away, to be recomputed), back to the head of the waiting queue."""
        slot = self.num_running - 1
        r = int(self.request_id[slot])
        self.pool.give(int(self.num_owned_blocks[slot]))
        if self.holds_prefix[slot]:
            self.pool.release(int(self.workload.prefix_key[r]))
        self.generated_tokens[r] = self.num_output_tokens[slot]
        self.request_last_token_s[r] = self.last_token_s[slot]
        computed = int(self.num_computed_tokens[slot])
        host = self.host_tier
        if host is not None and computed and host.store(-2 - r, -(-computed // self.block_size)):
            self.host_saved_tokens[r] = computed  # its KV waits in the host tier (key −2 − r: prefix keys are ≥ 0)
        else:
            self.recomputed_tokens[r] += computed
        self.preemptions[r] += 1
        self.waiting.appendleft(r)
        self.num_running = slot

    def _remove(self, done: np.ndarray) -> None:
        """Drop the running requests at positions `done` (ascending), keeping the others' order."""
        n = self.num_running
        if done.size == 1:  # the usual case: shift the tail left by one
            i = int(done[0])
            self.running_state[:, i:n - 1] = self.running_state[:, i + 1:n]
            self.last_token_s[i:n - 1] = self.last_token_s[i + 1:n]
            self.num_running = n - 1
            return
        keep = np.ones(n, bool)
        keep[done] = False
        kept = self.running_state[:, :n][:, keep]
        m = kept.shape[1]
        self.running_state[:, :m] = kept
        self.last_token_s[:m] = self.last_token_s[:n][keep]
        self.num_running = m

    def allocate(self, computed_after: np.ndarray) -> bool:
        """Give each running request the blocks its tokens up to `computed_after` (its computed tokens once this
        step ran) need, oldest first; when short, preempt the newest (vLLM V1). Returns whether anything was
        preempted."""
        n, block_size, pool = self.num_running, self.block_size, self.pool
        capacity = self.token_capacity[:n]
        short = computed_after > capacity
        n_short = np.count_nonzero(short)
        if not n_short:
            return False
        if n_short <= pool.available and not np.count_nonzero(computed_after > capacity + block_size):
            pool.take(n_short)  # the usual: one block each (decodes)
            self.num_owned_blocks[:n] += short
            capacity += short * block_size
            return False
        idx = short.nonzero()[0]
        new_blocks = (computed_after[idx] + (block_size - 1)) // block_size - self.token_capacity[idx] // block_size
        total = int(new_blocks.sum())
        if total <= pool.available:
            pool.take(total)
            self.num_owned_blocks[idx] += new_blocks
            self.token_capacity[idx] += new_blocks * block_size
            return False
        preempted = False
        for i, blocks in zip(idx.tolist(), new_blocks.tolist(), strict=True):
            if i >= self.num_running:
                break
            while blocks > pool.available:
                if self.num_running - 1 == i:  # the next victim is itself: first drop cached blocks it does not use
                    key = int(self.workload.prefix_key[self.request_id[i]])
                    if self.holds_prefix[i] and pool.trim(key, int(self.num_cached_blocks[i])):
                        continue
                    self._preempt_last()
                    preempted = True
                    break
                self._preempt_last()
                preempted = True
            else:
                pool.take(blocks)
                self.num_owned_blocks[i] += blocks
                self.token_capacity[i] += blocks * block_size
        return preempted

    def _admit(self, r: int, budget: int, t: float, reserve: str, whole: bool = False) -> int:
        """Start waiting request r with up to `budget` tokens (budget 0: start it, schedule nothing yet).
        Blocks taken now (`reserve`): "chunk" for the scheduled tokens (vLLM V1), "prompt" for the whole
        prompt (V0's can_allocate), "all" for prompt + output (static batching, TensorRT-LLM's
        GUARANTEED_NO_EVICT). `whole`: all the tokens it still needs or nothing. Returns tokens scheduled,
        or −1 when those blocks are not free (or, with `whole`, its tokens do not fit the budget)."""
        pool, block_size = self.pool, self.block_size
        prompt, generated = self.prompt_tokens[r], int(self.generated_tokens[r])
        known = prompt + generated
        cached_blocks, key = 0, self.prefix_keys[r]
        resume = self.host_saved_tokens.get(r, 0) if self.host_saved_tokens else 0
        if resume:  # a preempted request whose KV is in the host tier: reload it, compute from there
            key = -1
        elif self.prefix_caching and key >= 0:
            if self.host_tier is not None and not pool.lookup(key):
                self._restore_prefix(key)
            cached_blocks = min(pool.lookup(key), self.prefix_tokens[r] // block_size, (known - 1) // block_size)
            if cached_blocks:
                pool.acquire(key)
        computed = min(resume, known - 1) if resume else cached_blocks * block_size
        if whole and known - computed > budget:
            if cached_blocks:
                pool.release(key)
            return -1
        tokens = min(known - computed, budget)
        upto = (computed + tokens if reserve == "chunk" else known if reserve == "prompt"
                else prompt + self.output_tokens[r] - 1)
        need = -(-upto // block_size) - cached_blocks  # blocks_for(upto, block_size) − cached blocks
        if need > pool.available and cached_blocks:
            pool.trim(key, cached_blocks)  # cached blocks of this prefix beyond what it uses go, if nobody needs them
        if need > pool.available:
            if cached_blocks:
                pool.release(key)
            return -1
        pool.take(need)
        if resume:
            del self.host_saved_tokens[r]
            if self.host_tier is not None:
                self.pending_reload_s += self.host_tier.reload_s(self.host_tier.pop(-2 - r))
        i = self.num_running
        self.running_state[:, i] = (r, computed, known, generated, self.output_tokens[r], need, cached_blocks,
                                    (cached_blocks + need) * block_size, cached_blocks > 0, 0, tokens)
        self.last_token_s[i] = self.request_last_token_s[r]
        self.num_running = i + 1
        first_scheduled_s = self.first_scheduled_s
        if first_scheduled_s[r] != first_scheduled_s[r]:  # NaN: never scheduled before
            first_scheduled_s[r] = t
        if not resume:
            self.cached_tokens[r] += computed
        return tokens

    def preload(self, first_token_s: np.ndarray) -> None:
        """Every request arrives with its prompt's KV already computed (elsewhere: a disaggregated prefill pool,
        `sim.disaggregated`) and its first token sampled at `first_token_s`: admitted, it decodes from its prompt
        (as a preempted request resumes from its saved tokens, with nothing to reload)."""
        self.generated_tokens[:] = 1
        self.first_token_s[:] = first_token_s
        self.request_last_token_s[:] = first_token_s
        self.host_saved_tokens = dict(enumerate(self.prompt_tokens))

    def _restore_prefix(self, key: int) -> None:
        """Prefix `key`, not in HBM, copied back from the host tier if it is there and its blocks are free: cached
        again (nobody using it yet); the copy is charged to the next step."""
        host, pool = self.host_tier, self.pool
        blocks = host.get(key)  # type: ignore[union-attr]
        if blocks and blocks <= pool.available:
            pool.restore(key, blocks)
            pool.release(key)
            self.pending_reload_s += host.reload_s(blocks)  # type: ignore[union-attr]

    def _reload_wait(self) -> float:
        """Seconds of host → HBM copies the step about to run waits for (then none are pending)."""
        wait, self.pending_reload_s = self.pending_reload_s, 0.0
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
        used, max_num_seqs, waiting = 0, self.max_num_seqs, self.waiting
        batch = reserve == "all" and not whole_prompt
        while waiting and (batch or budget > used) and self.num_running < max_num_seqs:
            if gate is not None and not gate(waiting[0]):
                break
            whole = whole_prompt and bool(self.num_running or used)
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
        return self.pool.available * self.block_size

    def request_tokens(self, r: int) -> tuple[int, int, int]:
        """Request r's (prompt tokens, output tokens asked for, tokens generated so far)."""
        return self.prompt_tokens[r], self.output_tokens[r], int(self.generated_tokens[r])

    def _publish(self, i: int, blocks: int) -> None:
        """Offer the first `blocks` blocks of running slot i to the prefix cache under its prefix key; the blocks
        the cache takes move from the request's own to its cached ones."""
        key = int(self.workload.prefix_key[self.request_id[i]])
        moved = self.pool.publish(key, blocks, int(self.num_cached_blocks[i]), int(self.num_owned_blocks[i]),
                                  bool(self.holds_prefix[i]))
        if moved:
            self.num_cached_blocks[i] += moved
            self.num_owned_blocks[i] -= moved
            self.holds_prefix[i] = True

    # ---- scheduling primitives (what policies call) -------------------------------------------------------
    def fill(self, need: np.ndarray) -> np.ndarray:
        """num_scheduled_tokens[:n] = what each running request gets, oldest first, of `need` within the token
        budget: min(need_i, budget − Σ_{j<i} scheduled_j) = diff(min(cumsum(need), budget)). Returns each request's
        computed tokens once the step ran: num_computed_tokens + num_scheduled_tokens."""
        n = self.num_running
        total = int(need.sum())
        if total <= self.token_budget:  # everyone gets all it needs
            self.num_scheduled_tokens[:n] = need
            self.step_tokens = total
            return self.num_computed_tokens[:n] + need
        cumulative = need.cumsum()
        np.minimum(cumulative, self.token_budget, out=cumulative)
        total = self.token_budget
        scheduled = self.num_scheduled_tokens[:n]
        scheduled[0] = cumulative[0]
        np.subtract(cumulative[1:], cumulative[:-1], out=scheduled[1:])
        self.step_tokens = total
        return self.num_computed_tokens[:n] + scheduled

    # ---- one step ----------------------------------------------------------------------------------------
    def _step(self, t: float) -> float:
        """Time the scheduled step, advance every request, retire finished ones. Returns the end time."""
        n = self.num_running
        scheduled, computed = self.num_scheduled_tokens[:n], self.num_computed_tokens[:n]
        computed_after = computed + scheduled
        sampled = computed_after == self.num_known_tokens[:n]  # all their known tokens computed after this step
        n_sampled = np.count_nonzero(sampled)
        decodes = (scheduled == 1) & (self.num_output_tokens[:n] > 0)  # one token, sampled, not a prompt's first
        if n_sampled < n:
            decodes &= sampled
        n_decodes = np.count_nonzero(decodes)
        dt = self._step_time(n, n_decodes, decodes, scheduled, computed, computed_after, sampled)
        if self.pending_reload_s:
            dt += self._reload_wait()
        self.timeline.append((t, dt, self.step_tokens, n, n_decodes, self.pool.used))
        t += dt
        computed[:] = computed_after
        if self.prefix_caching:
            self._publish_prefixes(n)
        self.all_sampled_last_step = n_sampled == n
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
        n_decodes, pool = self.num_running, self.pool
        if n_decodes > self.token_budget:
            return None
        known, capacity = self.num_known_tokens[:n_decodes], self.token_capacity[:n_decodes]
        short = known > capacity  # decodes that start a new block
        n_short = np.count_nonzero(short)
        if n_short > pool.available:
            return None
        if n_short:
            pool.take(n_short)
            self.num_owned_blocks[:n_decodes] += short
            np.add(capacity, self.block_size, out=capacity, where=short)
        tokens = n_decodes + (self.admit_waiting(self.token_budget - n_decodes, t) if self.waiting else 0)
        n = self.num_running
        # the requests admitted now: one row of the running state each
        admitted = self.running_state[:, n_decodes:n].T.tolist() if n > n_decodes else []
        if any(row[NUM_OUTPUT_TOKENS] for row in admitted):  # a resumed request's gaps need the general path
            self.num_scheduled_tokens[:n_decodes] = 1
            self.step_tokens = tokens
            return self._step(t)
        model = self.step_model
        attn, kv, heads = 0.0, 0.0, n_decodes  # an LM head for every decode and every chunk completing its prompt
        if n_decodes:
            attn, kv = model.decode_terms(known)
        if len(admitted) == 1:  # one prefill chunk [start, start + scheduled): the table differences as floats
            row = admitted[0]
            chunk_start, chunk_end = row[NUM_COMPUTED_TOKENS], row[NUM_COMPUTED_TOKENS] + row[NUM_SCHEDULED_TOKENS]
            attn_chunk, kv_chunk = model.one_chunk_terms(chunk_start, chunk_end)
            attn += attn_chunk
            kv += kv_chunk
            heads += chunk_end == row[NUM_KNOWN_TOKENS]
        elif admitted:
            chunk_ends = self.num_computed_tokens[n_decodes:n] + self.num_scheduled_tokens[n_decodes:n]
            attn_chunk, kv_chunk = model.chunk_terms(self.num_computed_tokens[n_decodes:n], chunk_ends)
            attn += attn_chunk
            kv += kv_chunk
            heads += int(np.count_nonzero(chunk_ends == self.num_known_tokens[n_decodes:n]))
        dt = model.seconds(tokens, heads, attn, kv)
        if self.pending_reload_s:
            dt += self._reload_wait()
        self.timeline.append((t, dt, tokens, n, n_decodes, pool.used))
        t += dt
        done = []
        if n_decodes:
            self.itl_equal_gaps.append((t - float(self.last_token_s[0]), n_decodes))
            self.num_computed_tokens[:n_decodes] = known
            self.running_state[NUM_KNOWN_TOKENS:NUM_OUTPUT_TOKENS + 1, :n_decodes] += 1  # known and generated
            self.last_token_s[:n_decodes] = t
            finished = self.num_output_tokens[:n_decodes] >= self.max_tokens[:n_decodes]
            if np.count_nonzero(finished):
                done = finished.nonzero()[0].tolist()
        self.all_sampled_last_step = True
        for i, row in enumerate(admitted, n_decodes):
            chunk_end = row[NUM_COMPUTED_TOKENS] + row[NUM_SCHEDULED_TOKENS]
            self.num_computed_tokens[i] = chunk_end
            if chunk_end < row[NUM_KNOWN_TOKENS]:  # a chunk of a longer prompt: more to come
                self.all_sampled_last_step = False
                continue
            r = row[REQUEST_ID]
            if self.first_token_s[r] != self.first_token_s[r]:
                self.first_token_s[r] = t
            self.last_token_s[i] = t
            self.num_output_tokens[i] = 1
            self.num_known_tokens[i] += 1
            if row[MAX_TOKENS] <= 1:
                done.append(i)
        if done:
            self._retire(np.array(done), t)
        return t

    def _step_time(self, n: int, n_decodes: int, decodes: np.ndarray, scheduled: np.ndarray, computed: np.ndarray,
                   computed_after: np.ndarray, sampled: np.ndarray) -> float:
        """Seconds of the step: decodes at contexts computed_after[decodes], prefill chunks [computed,
        computed_after) of the others scheduled (`sampled`: the chunks that complete their prompt)."""
        model = self.step_model
        if n_decodes == n:
            return model.seconds(self.step_tokens, n, *model.decode_terms(computed_after))
        chunks = (scheduled > 0) & ~decodes
        heads = n_decodes + int(np.count_nonzero(sampled & chunks))  # decodes + chunks completing a prompt
        if (np.count_nonzero(decodes[:n_decodes]) == n_decodes
                and np.count_nonzero(scheduled[n_decodes:]) == n - n_decodes):
            # the usual layout: decodes first, then the prefill chunks of the newest requests
            attn, kv = model.decode_terms(computed_after[:n_decodes]) if n_decodes else (0.0, 0.0)
            attn_chunk, kv_chunk = model.chunk_terms(computed[n_decodes:], computed_after[n_decodes:])
            return model.seconds(self.step_tokens, heads, attn + attn_chunk, kv + kv_chunk)
        attn, kv = model.decode_terms(computed_after[decodes]) if n_decodes else (0.0, 0.0)
        if np.count_nonzero(chunks):
            attn_chunk, kv_chunk = model.chunk_terms(computed[chunks], computed_after[chunks])
            attn += attn_chunk
            kv += kv_chunk
        return model.seconds(self.step_tokens, heads, attn, kv)

    def _sample_all(self, n: int, t: float) -> None:
        """Every running request samples a token at time t (the usual step): slices, no gathers."""
        generated, last_token_s = self.num_output_tokens[:n], self.last_token_s[:n]
        first = generated == 0
        n_first = np.count_nonzero(first)
        if n_first:
            first_token_s, request_id = self.first_token_s, self.request_id
            for i in first.nonzero()[0].tolist():
                r = int(request_id[i])
                if first_token_s[r] != first_token_s[r]:  # NaN: the request's first token (not a recomputed one)
                    first_token_s[r] = t
            if n_first == n:
                pass
            elif np.count_nonzero(first[n - n_first:]) == n_first:  # the usual: new requests are the newest
                self._record_gaps(t - last_token_s[:n - n_first])
            else:
                self._record_gaps(t - last_token_s[~first])
        else:
            self._record_gaps(t - last_token_s)
        last_token_s[:] = t
        generated += 1
        self.num_known_tokens[:n] += 1
        done = generated >= self.max_tokens[:n]
        if np.count_nonzero(done):
            self._retire(done.nonzero()[0], t)

    def _sample(self, idx: np.ndarray, t: float) -> None:
        """The running requests at positions `idx` sample a token at time t."""
        num_output_tokens = self.num_output_tokens
        generated = num_output_tokens[idx]
        first = generated == 0
        n_first = np.count_nonzero(first)
        if n_first:
            r_first = self.request_id[idx[first]]
            fresh = np.isnan(self.first_token_s[r_first])
            self.first_token_s[r_first[fresh]] = t
            later = idx[~first]
        else:
            later = idx
        if later.size:
            self._record_gaps(t - self.last_token_s[later])
        self.last_token_s[idx] = t
        generated += 1
        num_output_tokens[idx] = generated
        self.num_known_tokens[idx] += 1
        done = generated >= self.max_tokens[idx]
        if np.count_nonzero(done):
            self._retire(idx[done], t)

    def _record_gaps(self, gaps: np.ndarray) -> None:
        """Inter-token gaps of one step: (gap, count) when all equal (the usual case), else the array."""
        if np.count_nonzero(gaps != gaps[0]):
            self.itl_mixed_gaps.append(gaps)
        else:
            self.itl_equal_gaps.append((float(gaps[0]), int(gaps.size)))

    def _publish_prefixes(self, n: int) -> None:
        """Offer to the prefix cache the prefix of every running request that has computed it and not offered it
        yet."""
        workload, block_size = self.workload, self.block_size
        r = self.request_id[:n]
        pending = ((self.prefix_published[:n] == 0) & (workload.prefix_key[r] >= 0)
                   & (self.num_computed_tokens[:n] >= workload.prefix_tokens[r]))
        for i in pending.nonzero()[0].tolist():
            self.prefix_published[i] = 1
            self._publish(i, int(workload.prefix_tokens[self.request_id[i]]) // block_size)

    def _retire(self, done: np.ndarray, t: float) -> None:
        """The running requests at positions `done` finished at time t: record, free their blocks, remove."""
        pool = self.pool
        if done.size == 1 and not self.prefix_caching:  # the usual: scalars, no array calls
            i = int(done[0])
            r = int(self.request_id[i])
            self.finish_s[r] = t
            self.generated_tokens[r] = self.num_output_tokens[i]
            pool.give(int(self.num_owned_blocks[i]))
            if self.closed_loop:
                self.client.finished(r, t)
            self._remove(done)
            self.num_finished += 1
            return
        finished = self.request_id[done]
        self.finish_s[finished] = t
        self.generated_tokens[finished] = self.num_output_tokens[done]
        if self.prefix_caching:  # prefix bookkeeping, one request at a time
            for i in done.tolist():
                r = int(self.request_id[i])
                if self.workload.session[r]:
                    self._publish(i, int(self.num_computed_tokens[i]) // self.block_size)
                pool.give(int(self.num_owned_blocks[i]))
                if self.holds_prefix[i]:
                    pool.release(self.prefix_keys[r])
        else:
            pool.give(int(self.num_owned_blocks[done].sum()))
        if self.closed_loop:
            for r in finished.tolist():
                self.client.finished(r, t)
        self._remove(done)
        self.num_finished += int(done.size)

    # ---- the loop ----------------------------------------------------------------------------------------
    def run(self, progress: Progress | None = None) -> RunRecord:
        """Serve every request; returns the run's record (`progress(finished, requests)` every 512 steps and at
        the end)."""
        num_requests = self.num_requests
        t, steps = 0.0, 0
        while self.num_finished < num_requests:
            t, taken = self.advance(t)
            steps += taken
            if progress is not None and taken and steps % 512 == 0:
                progress(self.num_finished, num_requests)
        tick(progress, self.num_finished, num_requests)
        return self.record(t)

    def advance(self, t: float) -> tuple[float, int]:
        """One turn of the loop at time t: release what the client sent by then, then one step (or one decode
        run), or a jump to the next release when nothing can run. Returns (the new time, steps taken). `run`
        turns it until every request finished; `dataparallel` turns several engines in time order."""
        policy, client, waiting = self.policy, self.client, self.waiting
        client.release(t, waiting)
        if self.num_running == 0:
            if not waiting:
                return max(t, client.next_release_s()), 0
            hold = policy.hold_until(self, t)
            if hold is not None:
                return hold, 0
        skipped = self._decode_run(t) if self.num_running and not self.prefix_caching else 0
        if skipped:
            return self.timeline[-1][0] + self.timeline[-1][1], skipped
        steady = self.all_sampled_last_step and self.num_running and self.steady_fast_path
        end = self._steady_step(t) if steady else None
        if end is None:
            if not policy.schedule(self, t) or self.num_running == 0:
                if client.next_release_s() == np.inf:
                    raise KokubanError("no waiting request can be admitted and none will arrive: "
                                       "the KV cache is too small")
                return max(t, client.next_release_s()), 0
            end = self._step(t)
        return end, 1

    def record(self, end_s: float) -> RunRecord:
        """The run so far as a `RunRecord` (what the metrics read)."""
        workload = self.workload
        return RunRecord.from_logs(
            itl_equal_gaps=self.itl_equal_gaps, itl_mixed_gaps=self.itl_mixed_gaps, timeline=self.timeline,
            arrival_s=self.client.sent_s, prompt_tokens=workload.prompt_tokens, output_tokens=workload.output_tokens,
            generated_tokens=self.generated_tokens, first_scheduled_s=self.first_scheduled_s,
            first_token_s=self.first_token_s, finish_s=self.finish_s, preemptions=self.preemptions,
            recomputed_tokens=self.recomputed_tokens, cached_tokens=self.cached_tokens, end_s=float(end_s),
            kv_capacity_blocks=self.pool.total, block_size=self.block_size, kv_blocks_free_at_end=self.pool.available,
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
        n, waiting = self.num_running, bool(self.waiting) and self.policy.admits_while_running
        if n > self.token_budget or (waiting and n < self.max_num_seqs):
            return 0
        t_stop = self.client.next_release_s()
        until_completion = waiting or self.closed_loop
        if not until_completion:  # enough steps to reach the next arrival if steps stay as long as the last one
            last_dt = self.timeline[-1][1] if self.timeline else 0.0
            max_steps = MAX_RUN_STEPS if t_stop == np.inf or last_dt <= 0 else int((t_stop - t) / last_dt) + 2
            if max_steps < MIN_RUN_STEPS:
                return 0
        generated = self.num_output_tokens[:n]
        if not self.all_sampled_last_step and (
                np.count_nonzero(self.num_known_tokens[:n] - self.num_computed_tokens[:n] != 1)
                or np.count_nonzero(generated == 0)):
            return 0
        left = self.max_tokens[:n] - generated
        if until_completion:
            max_steps = int(left.min())
            if max_steps < MIN_RUN_STEPS:
                return 0
        pool = self.pool
        run = plan_decode_run(self.step_model, self.block_size, self.num_known_tokens[:n], self.num_owned_blocks[:n],
                              left, pool.used, pool.total, t, t_stop, max_steps)
        if run is None:
            return 0
        self._apply_run(run, left)
        return run.steps

    def _apply_run(self, run: DecodeRun, left: np.ndarray) -> None:
        """Record a decode run's steps and advance the running set past it, as `_step` would have."""
        n, k, start = self.num_running, run.steps, run.start_s
        self.all_sampled_last_step = True  # every request left sampled in the run's last step
        batch = run.batch.tolist()
        self.timeline.extend(zip(start[:k].tolist(), run.step_s.tolist(), batch, batch, batch,
                                 run.used_blocks.tolist(), strict=True))
        self._record_gaps(start[1] - self.last_token_s[:n])
        self.itl_equal_gaps.extend(zip((start[2:] - start[1:-1]).tolist(), batch[1:], strict=True))
        taken = int(run.owned.sum() - self.num_owned_blocks[:n].sum())
        self.num_owned_blocks[:n] = run.owned
        np.multiply(run.owned, self.block_size, out=self.token_capacity[:n])
        advance = np.minimum(left, k)
        self.num_known_tokens[:n] += advance
        np.subtract(self.num_known_tokens[:n], 1, out=self.num_computed_tokens[:n])
        self.num_output_tokens[:n] += advance
        self.last_token_s[:n] = start[advance]
        done = (left <= k).nonzero()[0]
        if done.size:  # the pool's free count nets out (no prefix cache): give back first, then take
            finished = self.request_id[done]
            self.finish_s[finished] = start[left[done]]
            self.generated_tokens[finished] = self.max_tokens[done]
            self.pool.give(int(run.owned[done].sum()))
            if self.closed_loop:
                for r, finish_s in zip(finished.tolist(), start[left[done]].tolist(), strict=True):
                    self.client.finished(r, finish_s)
        self.pool.take(taken)
        if done.size:
            self._remove(done)
            self.num_finished += int(done.size)
