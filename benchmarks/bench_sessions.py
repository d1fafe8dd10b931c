"""Benchmark: closed-loop agent sessions (`kokuban.sim.sessions`) of the `swe-bench` preset on Llama-3.1-8B on one
H100 SXM, under each KV retention policy.

    .venv/bin/python benchmarks/bench_sessions.py [--sessions N ...]

Prints, per session count and retention, the wall time of `run_agent_simulate` (sampling, planning, the engine
and the metrics), the calls and steps simulated, and the wall time per step. Sessions always take the engine's
general path (prefix caching is per step), so this is the slow path's speed.
"""

from __future__ import annotations

import argparse
import time

from kokuban.usecases.agent_sim import AgentSimRequest, run_agent_simulate


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sessions", type=int, nargs="*", default=[12, 64])
    ap.add_argument("--retention", nargs="*", default=["evict", "pin:30", "offload:5.12e10,5e11"])
    args = ap.parse_args()
    for n in args.sessions:
        for retention in args.retention:
            t0 = time.perf_counter()
            res = run_agent_simulate(AgentSimRequest(model="llama-3.1-8b", gpu="h100-sxm", preset="swe-bench",
                                                     sessions=n, retention=retention))
            wall = time.perf_counter() - t0
            steps = int(res.run.sim.step_s.size)
            print(f"{n:5d} sessions  {retention:22s} {len(res.run.plan.workload):6d} calls {steps:8d} steps  "
                  f"{wall:7.2f} s  {wall / max(steps, 1) * 1e6:7.1f} µs/step")


if __name__ == "__main__":
    main()
