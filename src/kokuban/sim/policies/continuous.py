"""continuous — vLLM V1 (`vllm/v1/core/sched/scheduler.py`, `Scheduler.schedule`).

Each step has a budget of `max_num_batched_tokens` tokens. Running requests go first, in the order they were
admitted: each gets min(tokens it still needs, budget left) (a decode needs 1, a prefill the rest of its
prompt, so long prompts are split into chunks). If a request cannot get the KV blocks for its tokens, the
newest running request is preempted (`self.running.pop()`): its blocks are freed, it goes back to the head of
the waiting queue and later recomputes prompt + generated tokens (preemption mode RECOMPUTE). Then, only if
nothing was preempted this step (`if not preempted_reqs:`), waiting requests are admitted first come first
served while the budget lasts, fewer than `max_num_seqs` run and their (first chunk's) blocks are free; the
first that does not fit stops admission (no overtaking).
"""

from __future__ import annotations

from kokuban.sim.policies.base import EngineView, SchedulerLimits


class Continuous:
    name = "continuous"
    prefix_caching = True
    steady_fast_path = True
    admits_while_running = True
    #: how waiting requests are admitted (`EngineView.admit_waiting`): blocks for the first chunk, prompts split
    reserve = "chunk"
    whole_prompt = False

    def __init__(self, cfg: SchedulerLimits) -> None:
        self.cfg = cfg

    def schedule(self, engine: EngineView, t: float) -> bool:
        e = engine
        n = e.num_running
        if n:
            preempted = e.allocate(e.fill(e.num_known_tokens[:n] - e.num_computed_tokens[:n]))
            if preempted:
                e.step_tokens = int(e.num_scheduled_tokens[: e.num_running].sum())
        else:
            e.step_tokens, preempted = 0, False
        if not preempted and e.waiting:
            e.step_tokens += e.admit_waiting(e.token_budget - e.step_tokens, t, self.reserve,
                                             whole_prompt=self.whole_prompt)
        return e.num_running > 0

    def hold_until(self, engine: EngineView, t: float) -> float | None:
        return None
