"""Scheduling policies: what each step runs. One file per policy; `POLICIES` names them (the one dispatch).

A policy decides, each step, which running requests get how many tokens and which waiting requests are admitted,
using the engine's scheduling primitives (`Engine.fill`, `Engine.allocate`, `Engine.admit_waiting`; the running
set's `num_known_tokens`, `num_computed_tokens`, `num_output_tokens`, `max_tokens`, `num_scheduled_tokens` rows and
`num_running`; `waiting`, `token_budget`, `client`: `base.EngineView`). The engine times the step, samples tokens
and retires finished requests; the policy never touches time or tokens.

    continuous      vLLM V1: chunked prefill mixed with decodes in every step   (continuous.py)
    prefill_first   vLLM V0: a step is all prefill or all decode              (prefill_first.py)
    static          the train timetable: a whole batch departs and returns    (static.py)
    inflight        TensorRT-LLM: decodes, then whole prompts while they fit   (inflight.py)
    sglang          SGLang: prefill_first with SGLang's admission check        (sglang.py)

A new policy is a class with the `Policy` attributes and methods in a new file, plus one line in `POLICIES`.
"""

from __future__ import annotations

from kokuban.sim.policies.base import EngineView, Policy, SchedulerLimits
from kokuban.sim.policies.continuous import Continuous
from kokuban.sim.policies.inflight import Inflight
from kokuban.sim.policies.prefill_first import PrefillFirst
from kokuban.sim.policies.sglang import SGLang
from kokuban.sim.policies.static import Static

#: The policies by name (the value of `SchedulerConfig.policy`): each builds from the resolved configuration.
POLICIES: dict[str, type] = {"continuous": Continuous, "prefill_first": PrefillFirst, "static": Static,
                             "inflight": Inflight, "sglang": SGLang}


def make_policy(cfg: SchedulerLimits) -> Policy:
    """The policy `cfg.policy` names, for the resolved configuration `cfg`."""
    return POLICIES[cfg.policy](cfg)


__all__ = ["POLICIES", "Continuous", "EngineView", "Inflight", "Policy", "PrefillFirst", "SGLang", "SchedulerLimits",
           "Static", "make_policy"]
