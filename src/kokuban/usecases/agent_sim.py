"""`kokuban agent simulate`: many concurrent agent sessions on one deployment, closed loop, in the simulator.

The scenario comes from a preset (`preset`), a scenario file (`scenario_file`) or the shape fields (`steps`,
`system_tokens`, `output_tokens`, `tool_tokens`, `gap_s`; given beside a preset they replace its values).
`sessions` runs are sampled (seed `seed`) and each becomes a session (`sim.sessions`): its next call is sent only
when the previous one finished plus its gap. Session j starts at j × `stagger_s`. `retention` keeps the KV
between calls: evict (default), pin:TTL or offload:BW,CAP. `kv_blocks` overrides the KV capacity (HBM
pressure without another GPU). With `run_latency_target` (seconds), the most sessions (≤ `max_sessions`) whose
p90 run latency is within it is searched for.

Policies of this use case (here and nowhere else): 16 sessions, seed 0, no compaction, stagger 0 (every
session starts at once: the hardest case for a target), the p90 of run latency for the target, at most 256
sessions searched; continuous batching with vLLM's limits for the accelerator, 16-token blocks. Sub-agents
(fan-out) are not simulated: a scenario with them is refused.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any

import numpy as np
from pydantic import Field

from kokuban.errors import KokubanError
from kokuban.progress import Progress, tick
from kokuban.usecases.agent import Spec, scenario_of
from kokuban.usecases.request import DeploymentRequest, NonNegative, Positive, Tokens

if TYPE_CHECKING:
    from kokuban.agents.scenario import Scenario
    from kokuban.sim.sessions import SessionCapacity, SessionRun

DEFAULT_SESSIONS = 16
TARGET_PERCENTILE = 90
SIM_SHAPE_FIELDS = ("steps", "system_tokens", "output_tokens", "tool_tokens", "gap_s")


class AgentSimRequest(DeploymentRequest):
    """`kokuban agent simulate`: see the module docstring for the defaults."""

    preset: str | None = None
    scenario_file: str | None = None
    steps: Spec | None = None
    system_tokens: Tokens | None = None
    output_tokens: Spec | None = None
    tool_tokens: Spec | None = None
    gap_s: Spec | None = None
    seed: Annotated[int, Field(ge=0)] = 0
    compaction: Spec = "none"
    sessions: Annotated[int, Field(gt=0, le=4096)] = DEFAULT_SESSIONS
    retention: Spec = "evict"
    stagger_s: NonNegative = 0.0
    run_latency_target: Positive | None = None
    max_sessions: Annotated[int, Field(gt=0, le=4096)] = 256
    kv_blocks: Annotated[int, Field(gt=0, le=2**31)] | None = None
    max_num_seqs: Annotated[int, Field(gt=0, le=2**20)] | None = None
    max_num_batched_tokens: Annotated[int, Field(gt=0, le=2**20)] | None = None

    def check(self) -> None:
        from kokuban.agents.compaction import parse_policy
        from kokuban.sim.sessions import parse_retention

        if self.preset is not None and self.scenario_file is not None:
            raise KokubanError("give one scenario source, not preset and scenario_file", field="scenario_file")
        if self.preset is None and self.scenario_file is None:
            missing = [k for k in SIM_SHAPE_FIELDS if getattr(self, k) is None]
            if missing:
                raise KokubanError("is missing: give a preset, a scenario file, or all of steps, system_tokens, "
                                   "output_tokens, tool_tokens and gap_s", field=missing[0])
        parse_policy(self.compaction)
        parse_retention(self.retention)

    def scenario(self) -> Scenario:
        sc = scenario_of(self, SIM_SHAPE_FIELDS)
        if sc.subagents:
            raise KokubanError(f"the scenario fans out {sc.subagents} sub-agent run(s); closed-loop sessions "
                               "simulate single runs: use a scenario with subagents = 0", field="subagents",
                               value=sc.subagents)
        return sc


@dataclass(frozen=True)
class AgentSimulation:
    """What `run_agent_simulate` returns: the sessions run, and the capacity search when a target was given.
    `as_dict()` is the JSON; `run.sessions_frame()` the per-session DataFrame."""

    request: AgentSimRequest
    scenario: Scenario
    run: SessionRun
    capacity: SessionCapacity | None

    def session_rows(self) -> list[dict[str, Any]]:
        rows = []
        for rec in self.run.sessions_frame().to_dict(orient="records"):
            rows.append({k: (v.item() if hasattr(v, "item") else v) for k, v in rec.items()})
        for row in rows:  # a session with no context to reuse has no hit rate: null, never NaN
            if row["cache_hit_rate"] != row["cache_hit_rate"]:
                row["cache_hit_rate"] = None
        return rows

    def as_dict(self) -> dict[str, Any]:
        r = self.request
        return {
            "deployment": self.run.sim.description, "scenario": self.scenario.as_dict(), "compaction": r.compaction,
            "seed": r.seed, "stagger_s": r.stagger_s, "kv_blocks": self.run.sim.kv_capacity_blocks,
            "sessions": self.run.summary(), "requests": self.run.sim.summary(), "per_session": self.session_rows(),
            "capacity": self.capacity.as_dict() if self.capacity else None,
        }


def run_agent_simulate(request: AgentSimRequest, *, progress: Progress | None = None) -> AgentSimulation:
    """Simulate the request's sessions (see the module docstring). One-line KokubanError naming the field for a
    bad scenario, a context beyond the model's window, or sessions that cannot fit the KV cache.
    `progress(runs, at most)` follows the run and, with a latency target, the search (`sim.sessions.max_sessions`)."""
    from kokuban.agents.compaction import build_calls, parse_policy, require_window
    from kokuban.agents.scenario import sample_runs
    from kokuban.sim.scheduler import SchedulerConfig
    from kokuban.sim.sessions import max_sessions, parse_retention, plan_sessions, simulate_sessions

    r = request
    scenario = r.scenario()
    policy, retention = parse_policy(r.compaction), parse_retention(r.retention)
    model = r.model_spec()
    cfg = SchedulerConfig(max_num_seqs=r.max_num_seqs, max_num_batched_tokens=r.max_num_batched_tokens)
    state: dict[str, Any] = {}

    def run_with(n: int) -> SessionRun:
        calls = build_calls(sample_runs(scenario, n, r.seed), policy)
        require_window(calls, model.max_context, model.name, policy)
        if "dep" not in state:
            state["dep"] = r.deployment(int(calls.context_tokens.max()))
        dep = state["dep"]
        plan = plan_sessions(calls.run, calls.prompt_tokens, calls.output_tokens, calls.gap_before_s,
                             calls.kv_prefix_tokens, np.arange(n) * r.stagger_s, cfg.block_size)
        try:
            return simulate_sessions(dep, plan, retention, cfg, kv_blocks=r.kv_blocks)
        except KokubanError as exc:
            if exc.field != "workload":
                raise
            field = "kv_blocks" if r.kv_blocks is not None else "gpus"
            raise KokubanError(exc.reason, field=field, value=getattr(r, field)) from None

    run = run_with(r.sessions)
    capacity = None
    if r.run_latency_target is None:
        tick(progress, 1, 1)
    else:
        tick(progress, 1, 2)
        after_first = None if progress is None else lambda done, total: progress(1 + done, 1 + total)
        capacity = max_sessions(run_with, r.run_latency_target, percentile=TARGET_PERCENTILE, limit=r.max_sessions,
                                progress=after_first)
    return AgentSimulation(r, scenario, run, capacity)
