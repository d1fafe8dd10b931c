"""What a scheduling policy sees: the engine's scheduling primitives and the scheduler limits, as protocols.

The policies depend on these shapes only, never on `sim.engine` or `sim.scheduler`, so the arrows run one way:
the scheduler names the policies, the engine runs them, and a policy imports neither.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import numpy as np


class SchedulerLimits(Protocol):
    """The resolved configuration fields a policy reads (`sim.scheduler.SchedulerConfig` has them)."""

    policy: str
    max_num_seqs: int
    batch_timeout_s: float | None


class EngineView(Protocol):
    """The engine's scheduling state and primitives (`sim.engine.Engine`): the running set's rows, one entry per
    running request, oldest first (`num_known_tokens`: prompt + generated so far, `num_computed_tokens`: those in the
    KV cache, `num_output_tokens`: generated so far, `max_tokens`: output tokens asked for, `num_scheduled_tokens`:
    this step's) and their count `num_running`, the step's `step_tokens` and `token_budget`, the `waiting` queue,
    the `client` that releases requests, `fill`, `allocate`, `admit_waiting`, and what a policy's own admission
    check reads: `steps` (steps taken so far), `free_tokens` (tokens the free KV blocks hold) and
    `request_tokens(r)` (r's prompt, output and generated tokens). A policy fills `num_scheduled_tokens` and
    `step_tokens`."""

    num_running: int
    step_tokens: int
    token_budget: int
    num_known_tokens: np.ndarray
    num_computed_tokens: np.ndarray
    num_output_tokens: np.ndarray
    max_tokens: np.ndarray
    num_scheduled_tokens: np.ndarray
    waiting: Any
    client: Any

    def fill(self, need: np.ndarray) -> np.ndarray: ...

    def allocate(self, computed_after: np.ndarray) -> bool: ...

    def admit_waiting(self, budget: int, t: float, reserve: str = "chunk", *, whole_prompt: bool = False,
                      gate: Callable[[int], bool] | None = None) -> int: ...

    def steps(self) -> int: ...

    def free_tokens(self) -> int: ...

    def request_tokens(self, r: int) -> tuple[int, int, int]: ...


class Policy(Protocol):
    """What the engine asks of a scheduling policy.

    `prefix_caching`: whether the prefix cache applies under this policy (when the configuration enables it).
    `steady_fast_path`: whether, when every running request sampled a token in the last step and there is no
    prefix cache, `schedule` gives each running request one token and then admits waiting requests FCFS with
    the budget left, reserving blocks for the scheduled chunk only — the continuous-batching step that
    `Engine._steady_step` computes with slices (bit for bit the same).
    `admits_while_running`: whether a waiting request can be admitted while others run. Event skipping assumes,
    for every policy, that a running set of pure decodes that fits the budget is scheduled one token each.
    """

    name: str
    prefix_caching: bool
    steady_fast_path: bool
    admits_while_running: bool

    def schedule(self, engine: EngineView, t: float) -> bool:
        """Fill `engine.num_scheduled_tokens[:engine.num_running]` and `engine.step_tokens` for the step starting at
        t, admitting from the queue as the policy allows. Returns False when nothing can run now."""
        ...

    def hold_until(self, engine: EngineView, t: float) -> float | None:
        """With nothing running and requests waiting: None to schedule now, else the time to wait until."""
        ...
