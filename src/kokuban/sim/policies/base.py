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
    """The engine's scheduling state and primitives (`sim.engine.Engine`): the running set's rows (`known`,
    `comp`, `gen`, `out`, `sched`) and count `n`, the step's `tokens` and `budget`, the `waiting` queue, the
    `client` that releases requests, `fill`, `allocate`, `admit_waiting`, and what a policy's own admission check
    reads: `steps` (steps taken so far), `free_tokens` (tokens the free KV blocks hold) and `request_tokens(r)`
    (r's prompt, output and generated tokens). A policy fills `sched` and `tokens`."""

    n: int
    tokens: int
    budget: int
    known: np.ndarray
    comp: np.ndarray
    gen: np.ndarray
    out: np.ndarray
    sched: np.ndarray
    waiting: Any
    client: Any

    def fill(self, need: np.ndarray) -> np.ndarray: ...

    def allocate(self, c1: np.ndarray) -> bool: ...

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
        """Fill `engine.sched[:engine.n]` and `engine.tokens` for the step starting at t, admitting from the
        queue as the policy allows. Returns False when nothing can run now."""
        ...

    def hold_until(self, engine: EngineView, t: float) -> float | None:
        """With nothing running and requests waiting: None to schedule now, else the time to wait until."""
        ...
