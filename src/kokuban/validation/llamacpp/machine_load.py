"""How busy the rest of a shared machine is while a benchmark runs: CPU seconds from /proc/stat and
getrusage, the cores other processes kept busy (`others_cores`), waiting for a quiet machine and a watched
run (`run_watched`)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from kokuban.validation.llamacpp.tools import run_tool


def load_average() -> float | None:
    """The machine's 1-minute load average (`os.getloadavg`); None where the platform has none."""
    import os

    return os.getloadavg()[0] if hasattr(os, "getloadavg") else None


def cpu_busy_s() -> float:
    """Seconds of CPU time the whole machine has spent busy since boot (/proc/stat: user + nice + system + irq +
    softirq + steal, in USER_HZ = 100 ticks per second); 0 where /proc/stat does not exist."""
    try:
        fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    except OSError:
        return 0.0
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(x) for x in fields[:8])
    return (user + nice + system + irq + softirq + steal) / 100.0


def children_cpu_s() -> float:
    """CPU seconds used by this process's finished children (getrusage RUSAGE_CHILDREN, user + system)."""
    import resource

    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def others_cores(busy_s: float, ours_s: float, wall_s: float) -> float:
    """Average cores that other processes kept busy over a run: (machine busy − ours) ÷ wall seconds."""
    return max(busy_s - ours_s, 0.0) / wall_s if wall_s > 0 else float("inf")


def wait_for_quiet(max_cores: float, timeout_s: float, probe_s: float = 0.5) -> float:
    """Wait until other processes keep fewer than `max_cores` cores busy over `probe_s` (or `timeout_s` passes);
    returns the last reading."""
    import time

    deadline = time.monotonic() + timeout_s
    while True:
        b0 = cpu_busy_s()
        time.sleep(probe_s)
        cores = (cpu_busy_s() - b0) / probe_s
        if cores < max_cores or time.monotonic() > deadline:
            return cores
        time.sleep(1.0)


def run_watched(cmd: Sequence[str]) -> tuple[str, float, float]:
    """Run a benchmark; (its output, wall seconds, average cores other processes used meanwhile)."""
    import time

    b0, c0, t0 = cpu_busy_s(), children_cpu_s(), time.monotonic()
    out = run_tool(cmd)
    wall = time.monotonic() - t0
    return out, wall, others_cores(cpu_busy_s() - b0, children_cpu_s() - c0, wall)
