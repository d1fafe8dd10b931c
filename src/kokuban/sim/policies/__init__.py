"""Scheduling policies: what each step runs. One file per policy; `POLICIES` names them (the one dispatch).

A policy decides, each step, which running requests get how many tokens and which waiting requests are admitted,
using the engine's scheduling primitives (`Engine.fill`, `Engine.allocate`, `Engine.admit_waiting`; the running
set's `known`, `comp`, `gen`, `sched` rows and `n`; `waiting`, `budget`, `max_seqs`, `client`). The engine
times the step, samples tokens and retires finished requests; the policy never touches time or tokens.

    continuous      vLLM V1: chunked prefill mixed with decodes in every step   (continuous.py)
    prefill_first   vLLM V0 / SGLang: a step is all prefill or all decode     (prefill_first.py)
    static          the train timetable: a whole batch departs and returns    (static.py)

A new policy is a class with the `Policy` attributes and methods in a new file, plus one line in `POLICIES`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from kokuban.sim.policies.continuous import Continuous
from kokuban.sim.policies.prefill_first import PrefillFirst
from kokuban.sim.policies.static import Static

if TYPE_CHECKING:
    from kokuban.sim.engine import Engine
    from kokuban.sim.scheduler import SchedulerConfig


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

    def schedule(self, engine: Engine, t: float) -> bool:
        """Fill `engine.sched[:engine.n]` and `engine.tokens` for the step starting at t, admitting from the
        queue as the policy allows. Returns False when nothing can run now."""
        ...

    def hold_until(self, engine: Engine, t: float) -> float | None:
        """With nothing running and requests waiting: None to schedule now, else the time to wait until."""
        ...


#: The policies by name (the value of `SchedulerConfig.policy`): each builds from the resolved configuration.
POLICIES: dict[str, type] = {"continuous": Continuous, "prefill_first": PrefillFirst, "static": Static}


def make_policy(cfg: SchedulerConfig) -> Policy:
    """The policy `cfg.policy` names, for the resolved configuration `cfg`."""
    return POLICIES[cfg.policy](cfg)


__all__ = ["POLICIES", "Continuous", "Policy", "PrefillFirst", "Static", "make_policy"]
