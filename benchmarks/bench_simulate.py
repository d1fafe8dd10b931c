"""Benchmark: simulate 100,000 requests (1,000-token prompts, 200-token outputs) of Llama-3.1-8B on one
H100 SXM with vLLM-style continuous batching, on one core.

    .venv/bin/python benchmarks/bench_simulate.py [--requests N] [--rate R ...] [--efficiency default|kernel|scalar]

Prints, for each arrival rate (requests/s; default both 'inf' = all at t = 0, the saturated/offline case,
and 25, Poisson arrivals near capacity), the wall and CPU time of `kokuban.sim.simulate` (best of --repeat
runs; workload generation and the one-off step tables included), the simulated steps and the wall time
per step, with the shipped step model (or `--efficiency`). Target: ≤ 10 s per case on one core (`taskset -c 0`).
"""

from __future__ import annotations

import argparse
import time

from bench_record import load_average, record

from kokuban.sim import SchedulerConfig, simulate, synthetic
from kokuban.specs.catalog import load_accelerator, load_model
from kokuban.specs.deployment import Deployment
from kokuban.specs.hardware import PROFILES


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=100_000)
    ap.add_argument("--rate", nargs="*", default=["inf", "25"])
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--efficiency", choices=sorted(PROFILES), default="default")
    ap.add_argument("--record", action="store_true", help="write benchmarks/results/bench_simulate.json")
    args = ap.parse_args()
    load, rows = load_average(), []
    dep = Deployment.make(load_model("llama-3.1-8b"), load_accelerator("h100-sxm"),
                          efficiency=PROFILES[args.efficiency]())
    for rate in args.rate:
        best = cpu = float("inf")
        for _ in range(args.repeat):
            t0, c0 = time.perf_counter(), time.process_time()
            result = simulate(dep, synthetic(args.requests, float(rate), 1000, 200, seed=0), SchedulerConfig())
            best, cpu = min(best, time.perf_counter() - t0), min(cpu, time.process_time() - c0)
        s = result.summary()
        print(f"rate {rate:>4} req/s: {args.requests:,} requests, {s['steps']:,} steps, "
              f"simulated {s['duration_s']:.0f} s at {s['throughput']['requests_per_s']:.2f} req/s, "
              f"mean batch {s['batch']['mean']:.0f}, preemptions {s['preemptions']:,} -> "
              f"wall {best:.2f} s, CPU {cpu:.2f} s ({best / s['steps'] * 1e6:.0f} µs/step), "
              f"{args.efficiency} efficiency")
        rows.append({"case": f"{args.requests:,} requests at {rate} req/s ({s['steps']:,} steps), CPU",
                     "value": cpu, "unit": "s"})
    if args.record:
        record("bench_simulate", rows, load)


if __name__ == "__main__":
    main()
