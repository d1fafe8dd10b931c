"""How long one evaluation takes: a decode step, a prefill, and the whole `estimate()` blackboard.

Run: python benchmarks/bench_estimate.py [--record]   (one core; prints microseconds per call, median of repeats)
"""

from __future__ import annotations

import platform
import statistics
import sys
import timeit

from bench_record import load_average, record

from kokuban import load_accelerator, load_model
from kokuban.core import roofline
from kokuban.specs.deployment import Deployment
from kokuban.usecases.estimate import estimate


def per_call_us(fn, number: int) -> float:
    runs = timeit.repeat(fn, number=number, repeat=7)
    return statistics.median(runs) / number * 1e6


def main() -> None:
    load = load_average()
    dep = Deployment.make(load_model("llama-3.1-70b"), load_accelerator("h200"), 2, weights_dtype="fp8")
    moe = Deployment.make(load_model("deepseek-v3"), load_accelerator("h200"), 8)
    estimate("llama-3.1-70b", "h200", gpus=2)  # warm the catalog cache (parsing config.json files is one-off)
    rows = [
        ("decode_step (dense, TP=2)", per_call_us(lambda: roofline.decode_step(dep, 32, 8192).step_time_s, 2000)),
        ("decode_step (MoE+MLA, TP=8)", per_call_us(lambda: roofline.decode_step(moe, 32, 8192).step_time_s, 2000)),
        ("prefill (dense)", per_call_us(lambda: roofline.prefill(dep, 4, 4096).step_time_s, 2000)),
        (
            "estimate() blackboard, no generation",
            per_call_us(lambda: estimate("llama-3.1-70b", "h200", gpus=2, batch=32), 300),
        ),
        (
            "estimate() as_dict()",
            per_call_us(lambda: estimate("llama-3.1-70b", "h200", gpus=2, batch=32).as_dict(), 300),
        ),
    ]
    print(f"python {platform.python_version()} on {platform.machine()} ({platform.processor() or 'cpu'})")
    for name, us in rows:
        print(f"{name:40s} {us:9.1f} µs per call")
    if "--record" in sys.argv[1:]:
        record("bench_estimate", [{"case": name, "value": us * 1e-6, "unit": "s"} for name, us in rows], load)


if __name__ == "__main__":
    main()
