"""What a benchmark run leaves behind with `--record`: benchmarks/results/<name>.json, the figures the README's speed
lines are generated from (`python -m evidence`), with the machine and its load, so a reader can judge the noise.

Each row is one case: {"case": what was timed, "value": the figure, "unit": its unit}. The file also keeps the
command line, the CPU count and model, how many of them the run was pinned to (`taskset`), the 1-minute load
average before and after the run, the Python, NumPy and
kokuban versions and the git commit of the tree measured.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"


def _commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=RESULTS.parent, capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def load_average() -> float:
    """The 1-minute load average (the number of runnable processes, averaged): 0 where the OS does not say."""
    try:
        return os.getloadavg()[0]
    except OSError:
        return 0.0


def record(name: str, rows: list[dict], load_before: float) -> Path:
    """Write benchmarks/results/`name`.json (replacing the last record of that benchmark) and return its path."""
    import numpy

    import kokuban

    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"{name}.json"
    data = {"benchmark": name, "command": " ".join(["python", f"benchmarks/{name}.py", *sys.argv[1:]]),
            "cpus": os.cpu_count(), "cpus_allowed": len(os.sched_getaffinity(0)),
            "processor": platform.processor() or platform.machine(),
            "load_before": round(load_before, 2), "load_after": round(load_average(), 2),
            "python": platform.python_version(), "numpy": numpy.__version__, "kokuban": kokuban.__version__,
            "commit": _commit(), "rows": rows}
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return path
