"""Benchmark: decode configurations priced per second by the vectorised sweep, on one core.

    python benchmarks/bench_sweep.py [--n 2000000] [--repeat 5] [--efficiency default|kernel]

Each configuration is one (batch, context) point of a deployment: the core's decode step (compute,
weight read with MoE touching, KV read, communication, bound) priced into tokens/s and USD per million
output tokens with its five-part split — the whole `kokuban.economics.decode_columns` row. Pin to one
core with `taskset -c 0` (Linux); BLAS threads are irrelevant (element-wise NumPy only).
"""

from __future__ import annotations

import argparse
import os
import platform
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np
from bench_record import load_average, record

from kokuban.economics.batch import decode_columns
from kokuban.specs.catalog import load_accelerator, load_model
from kokuban.specs.deployment import Deployment
from kokuban.specs.hardware import PROFILES

CASES = (("llama-3.1-70b", "h100-sxm", 4, "tp"), ("deepseek-v3", "h200", 8, "ep"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2_000_000, help="configurations per call")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--efficiency", choices=sorted(PROFILES), default="default",
                        help="efficiency profile: default (the shipped kernel curves), kernel (the same), scalar")
    parser.add_argument("--record", action="store_true", help="write benchmarks/results/bench_sweep.json")
    args = parser.parse_args()
    load, rows = load_average(), []
    eff = PROFILES[args.efficiency]()
    rng = np.random.default_rng(0)
    print(f"{platform.processor() or platform.machine()}, Python {platform.python_version()}, NumPy {np.__version__}")
    for model, gpu, n, layout in CASES:
        dep = Deployment.make(load_model(model), load_accelerator(gpu), n, layout=layout, efficiency=eff)
        batch = rng.integers(1, 1024, args.n).astype(np.float64)
        context = rng.integers(1, dep.model.max_context, args.n).astype(np.float64)
        decode_columns(dep, batch[:1000], context[:1000])  # warm up
        best = float("inf")
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            cols = decode_columns(dep, batch, context)
            best = min(best, time.perf_counter() - t0)
        assert np.all(np.isfinite(cols["usd_per_m_output"]))
        print(f"{dep.describe()}, {args.efficiency} efficiency: {args.n:,} decode configurations in "
              f"{best * 1e3:.0f} ms "
              f"= {args.n / best / 1e6:.2f} M configurations/s")
        rows.append({"case": f"{model} on {n}× {gpu} ({layout})", "value": args.n / best, "unit": "configurations/s"})
    if args.record:
        record("bench_sweep", rows, load)


if __name__ == "__main__":
    main()
