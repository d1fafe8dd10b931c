"""prefill_first — vLLM V0's default scheduler without chunked prefill (SGLang's, with its admission check: `sglang`).

vLLM V0 (`vllm/core/scheduler.py`, `_schedule_default`: "First, it batches as many prefill requests as possible.
And it schedules decodes."). A step is either a prefill batch
(unfinished prompts, then waiting requests, within the token budget; prompts longer than the budget are
chunked; admission needs blocks for the whole prompt, as V0's `can_allocate`) or, when no prefill can run, a
decode step of every running request.
"""

from __future__ import annotations

import numpy as np

from kokuban.sim.policies.base import EngineView, SchedulerLimits


class PrefillFirst:
    name = "prefill_first"
    prefix_caching = True
    steady_fast_path = False
    admits_while_running = True

    def __init__(self, cfg: SchedulerLimits) -> None:
        self.cfg = cfg

    def schedule(self, engine: EngineView, t: float) -> bool:
        return prefill_or_decode(engine, t, admit=True)

    def hold_until(self, engine: EngineView, t: float) -> float | None:
        return None


def prefilling_rows(e: EngineView, n: int) -> np.ndarray:
    """Which of the first n running requests are still in their prompt: no token sampled yet, or more than one
    token to compute (a decode computes exactly one)."""
    return (e.num_output_tokens[:n] == 0) | (e.num_known_tokens[:n] - e.num_computed_tokens[:n] > 1)


def prefill_or_decode(e: EngineView, t: float, *, admit: bool) -> bool:
    """A prefill step if any running prefill can run (else, with `admit`, one of waiting requests' prompts,
    reserving blocks for the whole prompt), else a decode step of every running request."""
    n = e.num_running
    need = e.num_known_tokens[:n] - e.num_computed_tokens[:n]
    prefilling = prefilling_rows(e, n)
    if np.count_nonzero(prefilling):
        if e.allocate(e.fill(np.where(prefilling, need, 0))):
            e.step_tokens = int(e.num_scheduled_tokens[: e.num_running].sum())
        if e.step_tokens:
            return True
        n = e.num_running  # the prefills were preempted: decode instead
        need = e.num_known_tokens[:n] - e.num_computed_tokens[:n]
    if admit and e.waiting:
        e.num_scheduled_tokens[:n] = 0
        e.step_tokens = e.admit_waiting(e.token_budget, t, "prompt")
        if e.step_tokens:
            return True
    if n == 0:
        return False
    e.allocate(e.fill(need))  # every running request decodes one token
    if e.num_running < n:
        e.step_tokens = int(e.num_scheduled_tokens[: e.num_running].sum())
    return e.num_running > 0
