"""sglang — SGLang's scheduler: a step is a prefill (extend) batch or a decode batch, prefill first, with SGLang's
admission check (SGLang 0.4.0.post1, the PyPI release, `sglang/srt/managers/scheduler.py` and
`schedule_policy.py`; where the code lives is quoted in data/engines.toml, profile sglang).

- `Scheduler.get_next_batch_to_run`: "# Run prefill first if possible", else "# Run decode" of the running batch.
- `get_new_batch_prefill` builds the prefill batch with a `PrefillAdder`: the request being chunked first (its
  next chunk), then waiting requests first come first served (FCFS: "LPM and DFS-weight is meaningless when the
  tree cache is disabled"), a request's whole prompt while the chunk budget (`chunked_prefill_size`, the step's
  token budget here) lasts, the one that does not fit cut to what is left and continued in the next prefill
  batch; at most `max_running_requests` running.
- Admission (`add_one_req_ignore_eos`: the path a request takes when it ignores EOS, as every
  `sglang.bench_serving` request does by default, and the prefix cache is off, as with --disable-radix-cache):
  the running and admitted requests and the candidate, each with `tokens_left` = max_new_tokens − generated
  and `tokens_occupied` = prompt + generated, sorted by tokens_left, must pass `sglang_admits` (below) against
  the free KV tokens less the candidate's prompt; the first that fails stops admission.
- After each admission the adder's budget (`budget_state`): free KV tokens − new_token_ratio × Σ min(tokens
  left, 4096) over the running batch − Σ (prompt + min(max_new_tokens, 4096)) over those admitted (a cut
  prompt counts its chunk only) must stay above 0 (`sglang_budget_left`), else no more this step.
- `new_token_ratio` starts at `SGLANG_INIT_NEW_TOKEN_RATIO` (0.7 × schedule_conservativeness 1.0), falls by
  (0.7 − 0.7 × 0.14) / 600 with every decode batch down to 0.7 × 0.14, and is reset to 0.7 when the scheduler
  is idle (taken here: when a step is scheduled with nothing running).

Blocks for a request's whole prompt are taken when it is admitted (as `prefill_first`; SGLang allocates a
chunk's tokens when its batch runs: the same total once the prompt is in). Not modelled: SGLang's retraction
(`retract_decode`: the running request with the fewest outputs goes back to the queue, and new_token_ratio is
raised); when a decode step finds no free block, the newest running request is preempted and recomputed, as in
the other policies. The admission check makes that rare. A request that would run alone is admitted whatever the
check says (SGLang would hold it for ever; the engine has checked that the pool holds every request).
"""

from __future__ import annotations

import numpy as np

from kokuban.sim.policies.base import EngineView, SchedulerLimits
from kokuban.sim.policies.prefill_first import PrefillFirst, prefilling_rows

#: SGLang 0.4.0.post1 (`global_config.py`, `schedule_policy.py`): SGLANG_INIT_NEW_TOKEN_RATIO 0.7,
#: SGLANG_MIN_NEW_TOKEN_RATIO_FACTOR 0.14, SGLANG_NEW_TOKEN_RATIO_DECAY_STEPS 600,
#: SGLANG_CLIP_MAX_NEW_TOKENS_ESTIMATION 4096 (their defaults; schedule_conservativeness 1.0)
INIT_NEW_TOKEN_RATIO = 0.7
MIN_NEW_TOKEN_RATIO = INIT_NEW_TOKEN_RATIO * 0.14
NEW_TOKEN_RATIO_DECAY = (INIT_NEW_TOKEN_RATIO - MIN_NEW_TOKEN_RATIO) / 600
CLIP_MAX_NEW_TOKENS = 4096


def sglang_admits(free_tokens: int, prompt_tokens: int, left: np.ndarray, occupied: np.ndarray) -> bool:
    """SGLang's admission check of one request that ignores EOS (`PrefillAdder.add_one_req_ignore_eos`):
    with the k requests that will run (running, admitted this step, the candidate) sorted by tokens left
    L_1 ≤ … ≤ L_k (occupying O_1 … O_k tokens now), and r = free KV tokens − the candidate's prompt,

        admitted  ⇔  for every i:  r + Σ_{j<i} O_j − D_i · (k − i + 1) > 0,   D_i = L_{i+1} (D_k = L_k)

    (the code's `decode_steps = self.req_states[i + 1][0] if i + 1 < len(self.req_states) else tokens_left`:
    each request still decoding needs D_i more tokens once the i − 1 shortest have finished and freed what
    they hold). Requests with nothing left (L ≤ 0) are left out, as SGLang leaves them out. `left[0]` and
    `occupied[0]` are the candidate's: the stable sort keeps it first among equals (SGLang inserts it before the
    first equal). Left out: SGLang's `insert_sort` puts a later candidate of the same step that is the longest
    before the last entry rather than after it (a quirk of its loop), which this sort does not reproduce."""
    keep = left > 0
    left, occupied = left[keep], occupied[keep]
    k = left.size
    if k == 0:
        return free_tokens - prompt_tokens > 0
    order = np.argsort(left, kind="stable")
    lo, oc = left[order], occupied[order]
    steps = np.empty(k, np.int64)
    steps[:-1] = lo[1:]
    steps[-1] = lo[-1]
    freed = np.cumsum(oc) - oc
    return bool(np.all(free_tokens - prompt_tokens + freed - steps * (k - np.arange(k)) > 0))


def sglang_budget_left(free_tokens: int, ratio: float, running_left: np.ndarray, admitted_output: int) -> float:
    """SGLang's `PrefillAdder.rem_total_tokens` after this step's admissions (`budget_state` stops the step at
    ≤ 0): free KV tokens (the admitted prompts' blocks already taken) − ratio × Σ min(L, 4096) over the running
    batch's tokens left L − Σ min(max_new_tokens, 4096) over the requests admitted (0 for a prompt cut short)."""
    return free_tokens - ratio * float(np.minimum(running_left, CLIP_MAX_NEW_TOKENS).sum()) - admitted_output


class SGLang(PrefillFirst):
    name = "sglang"

    def __init__(self, cfg: SchedulerLimits) -> None:
        super().__init__(cfg)
        self.ratio = INIT_NEW_TOKEN_RATIO
        self.steps_seen = 0  # the engine's step count after the step this policy scheduled last
        self.full_at: int | None = None  # SGLang's batch_is_full: set with the running count when admission stopped

    def schedule(self, engine: EngineView, t: float) -> bool:
        e = engine
        skipped = e.steps() - self.steps_seen  # decode steps the engine took on its own since (event skipping)
        self.ratio = max(self.ratio - skipped * NEW_TOKEN_RATIO_DECAY, MIN_NEW_TOKEN_RATIO)
        if e.num_running == 0:
            self.ratio = INIT_NEW_TOKEN_RATIO  # idle: SGLang resets the ratio
        n = e.num_running
        if e.num_running == 0 or np.count_nonzero(prefilling_rows(e, n)):
            self.full_at = None  # an empty batch, or a prompt being chunked: SGLang clears batch_is_full
        ran = (self.full_at is None and self._prefill(e, t)) or self._decode(e)
        self.steps_seen = e.steps() + ran
        return ran

    def _prefill(self, e: EngineView, t: float) -> bool:
        """A prefill batch: the unfinished prompts' next chunks, then waiting requests that pass the admission
        check, within the budget. False (nothing scheduled) when there is none. Admission stopped by the check
        or by the running cap sets batch_is_full (`full_at`): no prefill is tried again until a request finished."""
        n = e.num_running
        need = e.num_known_tokens[:n] - e.num_computed_tokens[:n]
        prefilling = prefilling_rows(e, n)
        e.num_scheduled_tokens[:n] = 0
        e.step_tokens = 0
        if np.count_nonzero(prefilling):
            if e.allocate(e.fill(np.where(prefilling, need, 0))):
                e.step_tokens = int(e.num_scheduled_tokens[: e.num_running].sum())
        if e.waiting and e.step_tokens < e.token_budget:
            n0, refused = e.num_running, []
            decoding = ~prefilling_rows(e, n0)
            running_left = (e.max_tokens[:n0] - e.num_output_tokens[:n0])[decoding]

            def spent(n_now: int) -> bool:
                """SGLang's budget_state after this step's admissions: NO_TOKEN (the budget is used up)."""
                done = np.concatenate([~decoding, np.ones(n_now - n0, bool)])
                done &= e.num_computed_tokens[:n_now] + e.num_scheduled_tokens[:n_now] >= e.num_known_tokens[:n_now]
                out = int(np.minimum(e.max_tokens[:n_now], CLIP_MAX_NEW_TOKENS)[done].sum())
                free = e.free_tokens()
                return free <= 0 or sglang_budget_left(free, self.ratio, running_left, out) <= 0

            def gate(r: int) -> bool:
                n_now = e.num_running
                if n_now == 0:  # alone in the engine: admitted (the pool was checked to hold every request)
                    return True
                if n_now > n0 and spent(n_now):  # after the previous admission (the first is not checked)
                    refused.append(r)
                    return False
                prompt, output, generated = e.request_tokens(r)
                # the candidate first
                left = np.concatenate([[output - generated], e.max_tokens[:n_now] - e.num_output_tokens[:n_now]])
                occupied = np.concatenate([[prompt + generated], e.num_known_tokens[:n_now]])
                if not sglang_admits(e.free_tokens(), prompt, left, occupied):
                    refused.append(r)
                    return False
                return True

            e.step_tokens += e.admit_waiting(e.token_budget - e.step_tokens, t, "prompt", gate=gate)
            # batch_is_full: admission refused, the running cap reached, or the last admission spent the budget
            # (SGLang's budget_state says NO_TOKEN right after it, whether or not anyone is still waiting)
            if refused or e.num_running >= self.cfg.max_num_seqs or (e.num_running > n0 and spent(e.num_running)):
                self.full_at = e.num_running
        return e.step_tokens > 0

    def _decode(self, e: EngineView) -> bool:
        """A decode batch of every running request (the newest preempted when blocks run short); SGLang's
        `update_running_batch` clears batch_is_full when the batch shrank (requests finished) and lowers the
        ratio."""
        n = e.num_running
        if n == 0:
            return False
        if self.full_at is not None and n < self.full_at:
            self.full_at = None
        e.allocate(e.fill(e.num_known_tokens[:n] - e.num_computed_tokens[:n]))
        if e.num_running < n:
            e.step_tokens = int(e.num_scheduled_tokens[: e.num_running].sum())
        self.ratio = max(self.ratio - NEW_TOKEN_RATIO_DECAY, MIN_NEW_TOKEN_RATIO)
        return e.num_running > 0
