"""How long pricing agent runs takes: 100 sampled TraceLab-length sessions (84 steps each) on an API sheet and
self-hosted, with one and with three compaction policies.

Run: PYTHONPATH=src python benchmarks/bench_agents.py   (prints seconds per call, median of 5)
"""

from __future__ import annotations

import platform
import statistics
import timeit

from kokuban.usecases.agent import AgentRequest, run_agent

POLICIES = ("threshold:100000,8000", "every:20,8000", "every:10,8000")


def seconds(fn, repeat: int = 5) -> float:
    return statistics.median(timeit.repeat(fn, number=1, repeat=repeat))


def main() -> None:
    api = {"preset": "tracelab-session", "price": "anthropic/claude-sonnet-4.5", "runs": 100}
    hosted = {"preset": "tracelab-session", "model": "gpt-oss-120b", "gpu": "h100-sxm", "runs": 100}
    run_agent(AgentRequest(**api, compaction=POLICIES[:1]))  # warm the catalogs
    rows = [
        ("api, 100 runs, 1 policy", seconds(lambda: run_agent(AgentRequest(**api, compaction=POLICIES[:1])))),
        ("api, 100 runs, 3 policies", seconds(lambda: run_agent(AgentRequest(**api, compaction=POLICIES)))),
        (
            "self-hosted, 100 runs, 1 policy",
            seconds(lambda: run_agent(AgentRequest(**hosted, compaction=POLICIES[:1]))),
        ),
        (
            "self-hosted, 100 runs, 3 policies",
            seconds(lambda: run_agent(AgentRequest(**hosted, compaction=POLICIES)), 3),
        ),
    ]
    print(f"# {platform.processor() or platform.machine()}, Python {platform.python_version()}")
    for name, s in rows:
        print(f"{name:36s} {s:8.3f} s")


if __name__ == "__main__":
    main()
