"""llama.cpp's own tools: found on disk (`find_tools`), their command lines (`bench_command`,
`batched_command`) and runs (`quantize`, `run_tool`)."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path

from kokuban.errors import KokubanError

TOOLS = ("llama-bench", "llama-batched-bench", "llama-quantize")


def find_tools(bin_dir: str | Path | None = None) -> dict[str, Path] | None:
    """Paths of llama-bench, llama-batched-bench and llama-quantize in `bin_dir` or on PATH; None if any is missing."""
    import shutil

    found = {}
    for tool in TOOLS:
        path = Path(bin_dir) / tool if bin_dir else None
        if path is None or not path.is_file():
            which = shutil.which(tool)
            path = Path(which) if which else None
        if path is None:
            return None
        found[tool] = path
    return found


def quantize(tools: dict[str, Path], src: Path, dst: Path, gguf_type: str, threads: int = 2) -> list[str]:
    """`llama-quantize SRC DST TYPE THREADS`; returns the command line it ran."""
    cmd = [str(tools["llama-quantize"]), str(src), str(dst), gguf_type, str(threads)]
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    return cmd


def bench_command(tools: dict[str, Path], model: Path, *, prompts: Sequence[int], gens: Sequence[int],
                  depths: Sequence[int], repeats: int, threads: int = 2) -> list[str]:
    """The llama-bench command line: every -p and -n test at every -d depth, JSON output with the samples."""
    def csv(values: Sequence[int]) -> str:
        return ",".join(str(int(v)) for v in values)
    return [str(tools["llama-bench"]), "-m", str(model), "-t", str(threads), "-r", str(repeats), "-p", csv(prompts),
            "-n", csv(gens), "-d", csv(depths), "-o", "json"]


def batched_command(tools: dict[str, Path], model: Path, *, prompt: int, gen: int, batches: Sequence[int],
                    threads: int = 2) -> list[str]:
    """The llama-batched-bench command line (separate prompts per sequence; its markdown table, whose times have
    1 ms resolution: ≤ 2 % of the shortest batched row measured here. The committed run used its JSONL output.)"""
    ctx = max(batches) * (prompt + gen)
    return [str(tools["llama-batched-bench"]), "-m", str(model), "-t", str(threads), "-tb", str(threads),
            "-c", str(ctx), "-b", "2048", "-ub", "512", "-npp", str(prompt), "-ntg", str(gen),
            "-npl", ",".join(str(int(b)) for b in batches)]


def run_tool(cmd: Sequence[str], timeout_s: float = 3600) -> str:
    """Run a benchmark and return its stdout (stderr is the tool's log); a one-line error if it fails."""
    try:
        done = subprocess.run(list(cmd), check=True, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.CalledProcessError as exc:
        tail = (exc.stderr or "").strip().splitlines()[-3:]
        raise KokubanError(f"{Path(cmd[0]).name} failed (exit {exc.returncode}): {' | '.join(tail)}") from None
    return done.stdout + ("\n" + done.stderr if "batched" in Path(cmd[0]).name else "")
