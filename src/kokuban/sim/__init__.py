"""Serving simulator: a stream of requests on a deployment, every step timed by the core's step model.

    from kokuban.sim import simulate, synthetic, SchedulerConfig, SLO
    result = simulate(dep, synthetic(1000, rate_per_s=5.0), SchedulerConfig("continuous"))
    result.summary(SLO(ttft_s=1.0, tpot_s=0.05))

Modules: workload (arrivals, lengths, traces), kvcache (paged blocks, prefix cache), scheduler
(policies and vLLM's defaults), steptime (mixed prefill/decode steps from the core), engine (the
loop), metrics (latencies, throughput, cost), capacity (max rate under an SLO, cheapest deployment),
plots.
"""

from kokuban.sim.engine import simulate
from kokuban.sim.metrics import SLO, SimResult
from kokuban.sim.scheduler import POLICIES, SchedulerConfig, vllm_defaults
from kokuban.sim.workload import Workload, read_trace, synthetic, write_trace

__all__ = [
           "POLICIES",
           "SLO",
           "SchedulerConfig",
           "SimResult",
           "Workload",
           "read_trace",
           "simulate",
           "synthetic",
           "vllm_defaults",
           "write_trace",
]
