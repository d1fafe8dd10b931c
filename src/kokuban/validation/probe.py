"""Measure the machine kokuban runs on and describe it as an accelerator entry (catalog schema).

    bandwidth = bytes of a buffer far larger than the last-level cache ÷ best time to read it once
                (a STREAM-like reduction: `x.sum()` touches every byte exactly once)
    FLOP/s    = 2·n³ ÷ best time of one n×n·n×n matrix multiply, per dtype, n grown until one
                product takes ≥ 0.1 s (or n reaches a cap), so the figure is the large-GEMM rate;
                on a CPU in fp32 the better of PyTorch's dense matmul (MKL) and oneDNN's inner product

"Best of N" (not the median) is kept because the catalog lists peaks and `Efficiency` holds the
fractions real kernels reach of them: a probed entry is the best this machine was seen to do. The
medians are kept in the entry's notes. fp32 on a GPU is true IEEE fp32 (TF32 left off, PyTorch's
default for matmul). PyTorch is optional: without it the CPU is probed with NumPy (fp32 only; NumPy
reductions are single-threaded, which the entry's method says).
"""

from __future__ import annotations

import datetime as _dt
import operator
import os
import platform
import time
from collections.abc import Callable, Iterable
from functools import partial
from typing import Any

import numpy as np

from kokuban.errors import KokubanError, require_positive
from kokuban.progress import Progress, tick

CPU_BUFFER_BYTES = 512 * 2**20  # ≫ any CPU last-level cache (this CI machine: 32 MiB L3)
GPU_BUFFER_BYTES = 4 * 2**30  # ≫ H100/H200 L2 (50–60 MB)
MIN_GEMM_S = 0.1
MAX_N = {"cpu": 2048, "cuda": 8192}
DTYPES = ("fp32", "bf16", "fp16")


def import_torch() -> Any:
    """PyTorch, or a one-line KokubanError saying how to install it."""
    try:
        import torch
    except ImportError:
        raise KokubanError("this needs PyTorch: pip install 'kokuban[validate]' (or pip install torch)") from None
    return torch


def _torch_or_none() -> Any:
    try:
        import torch
    except ImportError:
        return None
    return torch


def resolve_device(device: str) -> str:
    """'auto' → 'cuda' when PyTorch sees a GPU, else 'cpu'; 'cuda' without one is an error."""
    if device not in ("auto", "cpu", "cuda"):
        raise KokubanError(f"'{device}' is not known; allowed: auto, cpu, cuda", field="device", value=device)
    torch = _torch_or_none()
    has_cuda = bool(torch is not None and torch.cuda.is_available())
    if device == "auto":
        return "cuda" if has_cuda else "cpu"
    if device == "cuda" and not has_cuda:
        raise KokubanError("'cuda' asked for but PyTorch sees no CUDA GPU (use 'cpu')", field="device", value=device)
    return device


def synchronizer(device: str) -> Callable[[], None]:
    """A function that waits for queued device work (torch.cuda.synchronize on a GPU; no-op on CPU)."""
    if device == "cuda":
        import torch

        return torch.cuda.synchronize
    return lambda: None


def time_calls(fn: Callable[[], Any], *, warmup: int, repeats: int, sync: Callable[[], None],
               budget_s: float | None = None) -> np.ndarray:
    """Seconds of `repeats` calls of `fn` after `warmup` untimed calls, each timed between two syncs.

    With `budget_s`, stops early once the timed calls have used that long (at least one is timed).
    """
    for _ in range(warmup):
        fn()
    sync()
    times: list[float] = []
    spent = 0.0
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - start)
        spent += times[-1]
        if budget_s is not None and spent >= budget_s:
            break
    return np.asarray(times)


def measure_bandwidth(device: str, *, buffer_bytes: int | None = None, budget_s: float = 1.0) -> dict[str, float]:
    """Read bandwidth in bytes/s: best and median of reading a `buffer_bytes` fp32 buffer once."""
    buffer_bytes = buffer_bytes or (GPU_BUFFER_BYTES if device == "cuda" else CPU_BUFFER_BYTES)
    n = buffer_bytes // 4
    torch = _torch_or_none()
    if torch is None:
        x = np.ones(n, dtype=np.float32)
        times = time_calls(x.sum, warmup=1, repeats=50, sync=lambda: None, budget_s=budget_s)
    else:
        x = torch.ones(n, dtype=torch.float32, device=device)
        times = time_calls(x.sum, warmup=2, repeats=200, sync=synchronizer(device), budget_s=budget_s)
    nbytes = n * 4
    return {"best_bytes_per_s": nbytes / times.min(), "median_bytes_per_s": nbytes / float(np.median(times)),
            "buffer_bytes": float(nbytes), "runs": float(times.size)}


def measure_matmul(device: str, dtype: str, *, budget_s: float = 0.5) -> dict[str, float]:
    """Dense matmul FLOP/s in `dtype`: 2n³ ÷ time, n doubled from 128 until one product takes ≥ 0.1 s."""
    torch = _torch_or_none()
    if torch is None:
        if dtype != "fp32":
            raise KokubanError(f"measuring {dtype} matmuls needs PyTorch (NumPy has fp32 only here)", field="dtype",
                               value=dtype)
        def make(n: int) -> tuple[Any, Any]:
            return np.ones((n, n), np.float32), np.ones((n, n), np.float32)

        def sync() -> None:
            return None
    else:
        tdt = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[dtype]
        def make(n: int) -> tuple[Any, Any]:
            return torch.randn(n, n, device=device).to(tdt), torch.randn(n, n, device=device).to(tdt)

        sync = synchronizer(device)
    n = 128
    while True:
        a, b = make(n)
        product = partial(operator.matmul, a, b)
        one = time_calls(product, warmup=1, repeats=1, sync=sync)[0]
        if one >= MIN_GEMM_S or n >= MAX_N[device] or one * 8 >= budget_s:
            break
        n *= 2
    times = time_calls(product, warmup=1, repeats=100, sync=sync, budget_s=budget_s)
    if torch is not None and device == "cpu" and dtype == "fp32" and torch.backends.mkldnn.is_available():
        # CPUs: PyTorch's dense fp32 matmul is MKL's; oneDNN's inner product (the `validate --linear
        # onednn` path) can be faster (AMD): the best of the two is what this machine achieves.
        from types import SimpleNamespace

        from torch.utils.mkldnn import MkldnnLinear

        inner = MkldnnLinear(SimpleNamespace(weight=b, bias=None), torch.float)
        with torch.inference_mode():
            other = time_calls(partial(inner, a), warmup=1, repeats=100, sync=sync, budget_s=budget_s)
        times = other if other.min() < times.min() else times
    flop = 2.0 * n**3
    return {"best_flops": flop / times.min(), "median_flops": flop / float(np.median(times)), "n": float(n),
            "runs": float(times.size)}


def device_name(device: str) -> str:
    """The GPU's name from CUDA, or the CPU's model name from /proc/cpuinfo (else platform)."""
    if device == "cuda":
        import torch

        return str(torch.cuda.get_device_name(0))
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def device_memory_bytes(device: str) -> float:
    """Total GPU memory (CUDA), or physical RAM (sysconf pages × page size)."""
    if device == "cuda":
        import torch

        return float(torch.cuda.get_device_properties(0).total_memory)
    return float(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))


def probe(device: str = "auto", *, seconds: float = 3.0, dtypes: Iterable[str] = DTYPES, entry_id: str | None = None,
          progress: Progress | None = None) -> dict[str, Any]:
    """Measure `device` for about `seconds` and return an accelerator entry (accelerators.toml keys);
    `progress(tests done, tests)` after each (`kokuban.progress`).

    Extra keys `measured_on`, `device`, `method`, `medians` record how; `Accelerator.from_dict` ignores them.
    """
    require_positive("seconds", seconds)
    device = resolve_device(device)
    torch = _torch_or_none()
    dtypes = [d for d in dtypes if torch is not None or d == "fp32"]
    share = seconds / (1 + len(dtypes))
    tests = 1 + len(dtypes)
    tick(progress, 0, tests)
    bw = measure_bandwidth(device, budget_s=share)
    tick(progress, 1, tests)
    flops: dict[str, dict[str, float]] = {}
    for i, dt in enumerate(dtypes):
        flops[dt] = measure_matmul(device, dt, budget_s=share)
        tick(progress, 2 + i, tests)
    if "bf16" not in flops and "fp16" not in flops:  # NumPy only: the schema needs a 16-bit figure
        flops["bf16"] = flops["fp32"]
    name = device_name(device)
    threads = torch.get_num_threads() if torch is not None and device == "cpu" else None
    backend = (
        f"PyTorch {torch.__version__}" if torch is not None else f"NumPy {np.__version__} (single-threaded reductions)"
    )
    method = (
        f"kokuban probe, {backend}: read bandwidth = best of {int(bw['runs'])} reads of a "
        f"{bw['buffer_bytes'] / 2**20:.0f} MiB fp32 buffer (x.sum()); FLOP/s = best 2n³/t of n×n matmuls "
        + ", ".join(f"{d} n={int(v['n'])}" for d, v in flops.items())
        + (f"; {threads} CPU threads" if threads else "")
    )
    measured_on = _dt.date.today().isoformat()
    entry: dict[str, Any] = {
        "id": entry_id or f"probed-{device}",
        "name": name,
        "vendor": "measured",
        "memory_bytes": device_memory_bytes(device),
        "memory_note": "CUDA total_memory" if device == "cuda" else "physical RAM (sysconf)",
        "memory_bandwidth_bytes_per_s": bw["best_bytes_per_s"],
        "interconnect_bytes_per_s": 0.0,
        **{f"flops_{d}": v["best_flops"] for d, v in flops.items()},
        "flops_note": "measured best achieved, not a datasheet peak (see method)",
        "price_per_hour_usd": 0.0,
        "sources": [f"measured by kokuban probe on {measured_on} ({name})"],
        "retrieved": measured_on,
        "measured_on": measured_on,
        "device": f"{device}: {name}",
        "method": method,
        "medians": {"memory_bandwidth_bytes_per_s": bw["median_bytes_per_s"],
                    **{f"flops_{d}": v["median_flops"] for d, v in flops.items()}},
    }
    return entry


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(float(value)) if isinstance(value, float) else str(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    text = str(value).replace("\\", "\\\\").replace('"', '\\"')
    return f'"{text}"'


def entry_to_toml(entry: dict[str, Any]) -> str:
    """One `[[accelerator]]` table (nested dicts become `key.sub = value` dotted keys)."""
    lines = ["# written by `kokuban probe`: measured figures, not datasheet peaks", "[[accelerator]]"]
    for key, value in entry.items():
        if isinstance(value, dict):
            lines += [f"{key}.{k} = {_toml_value(v)}" for k, v in value.items()]
        else:
            lines.append(f"{key} = {_toml_value(value)}")
    return "\n".join(lines) + "\n"
