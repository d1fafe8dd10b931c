"""Start-up cost of the command line: CPU time (user + sys) and wall time of short commands, in fresh processes.

    python benchmarks/bench_startup.py                      # this checkout's src/
    python benchmarks/bench_startup.py --src /other/src     # another tree, e.g. the code before a change
    python benchmarks/bench_startup.py --imports            # also the slowest imports (python -X importtime)

Each command runs `--runs` times (default 7) as `python -c "from kokuban.cli import main; main([...])"` with
PYTHONPATH pointing at the tree; the CPU time is the child's rusage (user + sys, all its threads), the figure
to keep well under 0.3 s. Medians and minima are printed.

Bytecode: an installed package has its .pyc files (pip compiles them), so the children write and reuse theirs
in a temporary PYTHONPYCACHEPREFIX (the tree stays clean) even where PYTHONDONTWRITEBYTECODE is set;
`--no-bytecode-cache` measures compiling kokuban from source on every start instead.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_record import load_average, record

COMMANDS = {
    "python -c pass (interpreter alone)": None,
    "import kokuban": "import kokuban",
    "kokuban --help": ["--help"],
    "kokuban estimate llama-3.1-8b --gpu h100-sxm": ["estimate", "llama-3.1-8b", "--gpu", "h100-sxm"],
    "kokuban estimate … --json": ["estimate", "llama-3.1-8b", "--gpu", "h100-sxm", "--json"],
    "kokuban models": ["models"],
}


def _code(spec: list[str] | str | None) -> str:
    if spec is None:
        return "pass"
    if isinstance(spec, str):
        return spec
    return f"import sys; from kokuban.cli import main; sys.exit(main({spec!r}))"


ENV: dict[str, str] = {}


def child_env(src: Path) -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(src)) | ENV


def run_once(code: str, src: Path) -> tuple[float, float]:
    """(CPU seconds user+sys, wall seconds) of one fresh interpreter running `code`."""
    env = child_env(src)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], env=env, stdout=subprocess.DEVNULL, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall


def slowest_imports(code: str, src: Path, top: int = 12) -> list[tuple[int, str]]:
    """The `top` largest cumulative import times (µs) of `code`, from `python -X importtime`."""
    env = child_env(src)
    err = subprocess.run([sys.executable, "-X", "importtime", "-c", code], env=env, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True, check=True).stderr
    rows = []
    for line in err.splitlines():
        parts = line.split("|")
        if len(parts) == 3 and parts[1].strip().isdigit():
            rows.append((int(parts[1]), parts[2].rstrip()))
    return sorted(rows, reverse=True)[:top]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--src", type=Path, default=Path(__file__).resolve().parents[1] / "src")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--imports", action="store_true", help="also print the slowest imports of each command")
    parser.add_argument("--no-bytecode-cache", action="store_true", help="compile kokuban from source every start")
    parser.add_argument("--record", action="store_true", help="write benchmarks/results/bench_startup.json")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="kokuban-pycache-") as cache:
        if args.no_bytecode_cache:
            ENV["PYTHONDONTWRITEBYTECODE"] = "1"
        else:
            ENV.update(PYTHONDONTWRITEBYTECODE="", PYTHONPYCACHEPREFIX=cache)
        measure(args)


def measure(args: argparse.Namespace) -> None:
    cached = "compiled from source each start" if args.no_bytecode_cache else "bytecode cached, as installed"
    print(f"start-up of {args.src} ({args.runs} runs each, Python {sys.version.split()[0]}, {os.cpu_count()} CPUs, "
          f"{cached})")
    print(f"{'command':50s} {'CPU median':>11s} {'CPU min':>9s} {'wall median':>12s}")
    load, rows = load_average(), []
    for label, spec in COMMANDS.items():
        code = _code(spec)
        run_once(code, args.src)  # warm the file cache and the bytecode
        runs = [run_once(code, args.src) for _ in range(args.runs)]
        cpu = [c for c, _ in runs]
        wall = [w for _, w in runs]
        print(f"{label:50s} {statistics.median(cpu):9.3f} s {min(cpu):7.3f} s {statistics.median(wall):10.3f} s")
        rows.append({"case": f"{label}, CPU median", "value": statistics.median(cpu), "unit": "s"})
        if args.imports and spec is not None:
            for us, name in slowest_imports(code, args.src):
                print(f"      {us / 1e3:8.1f} ms cumulative  {name}")
    if args.record:
        record("bench_startup", rows, load)


if __name__ == "__main__":
    main()
