"""Serving simulator: a stream of requests on a deployment, every step timed by the core's step model.

    from kokuban.sim import simulate, synthetic, SchedulerConfig, SLO
    result = simulate(dep, synthetic(1000, rate_per_s=5.0), SchedulerConfig("continuous"))
    result.summary(SLO(ttft_s=1.0, tpot_s=0.05))

Modules: workload/ (arrival processes, length distributions, traces: one registry each), clients (who sends
requests when: open loop, a concurrency cap; closed-loop sessions plug in here), kvcache (paged blocks, prefix
cache), scheduler (limits and vLLM's defaults), policies/ (one file per scheduling policy), steptime (the
`StepTimeModel` protocol; `StepModel`, mixed prefill/decode steps from the core), engine (the loop), decoderun
(event skipping), record (the typed `RunRecord` the engine hands over), metrics (latencies, throughput, cost, from
the record), capacity (max rate under an SLO, cheapest deployment), profiles (engine profiles: scheduler
defaults and overheads from data/engines.toml), dataparallel (data-parallel ranks as schedulers behind a router).
`sessions` (closed-loop agent sessions: each call sent when the previous one finished plus its gap; KV retention
evict, pin or offload; per-session metrics; how many sessions meet a run-latency target) builds on the client seam.
"""

from kokuban.sim.engine import simulate
from kokuban.sim.metrics import SLO, SimResult
from kokuban.sim.record import RunRecord
from kokuban.sim.scheduler import POLICIES, SchedulerConfig, vllm_defaults
from kokuban.sim.steptime import StepModel, StepTimeModel
from kokuban.sim.workload import Workload, read_trace, synthetic, write_trace

__all__ = [
           "POLICIES",
           "SLO",
           "RunRecord",
           "SchedulerConfig",
           "SimResult",
           "StepModel",
           "StepTimeModel",
           "Workload",
           "read_trace",
           "simulate",
           "synthetic",
           "vllm_defaults",
           "write_trace",
]
