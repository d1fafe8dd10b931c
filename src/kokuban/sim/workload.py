"""Workloads: when requests arrive and how long their prompts and outputs are. Seeded, reproducible.

A `Workload` is a set of NumPy arrays (one entry per request, sorted by arrival):
    arrival_s       seconds since the start
    prompt_tokens   tokens in the prompt (≥ 1)
    output_tokens   tokens to generate (≥ 1; the first comes out of the prefill)
    prefix_key      −1, or an integer naming a shared prefix (a system prompt, or an agent session)
    prefix_tokens   tokens of the prompt that belong to that shared prefix
    session         True where the prefix is a conversation so far (it grows by each finished turn)

Arrivals (`arrivals`):
    poisson   exponential gaps with mean 1/rate                     (vLLM bench --burstiness 1)
    gamma     gamma gaps, shape k = burstiness, scale 1/(k·rate)    (vLLM bench --burstiness k; k < 1 is burstier)
    fixed     gaps of exactly 1/rate
Lengths (`lengths`, a spec string): "1000" (fixed), "uniform:LO,HI" (integers, inclusive),
"lognormal:MEDIAN,SIGMA" (exp of a normal with mean ln MEDIAN), "hist:V1=W1,V2=W2,…" (values drawn
with probabilities ∝ weights).

Traces (`read_trace`): CSV with a header, or JSON lines, with `arrival_s`, `prompt_tokens`,
`output_tokens` and optionally `prefix_id` + `prefix_tokens` (a shared prefix such as a system
prompt) and `session_id` (turns of one conversation: each turn's prompt starts with the previous
turn's prompt and output, so that much of it is a shared prefix).
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from kokuban.errors import KokubanError, require_positive

ARRIVALS = ("poisson", "gamma", "fixed")


@dataclass(frozen=True)
class Workload:
    """Requests as arrays (see module docstring). Build with `synthetic` or `read_trace`."""

    arrival_s: np.ndarray
    prompt_tokens: np.ndarray
    output_tokens: np.ndarray
    prefix_key: np.ndarray
    prefix_tokens: np.ndarray
    session: np.ndarray
    name: str = ""

    def __len__(self) -> int:
        return int(self.arrival_s.size)

    @classmethod
    def make(cls, arrival_s: Any, prompt_tokens: Any, output_tokens: Any, prefix_key: Any = None,
             prefix_tokens: Any = None, session: Any = None, name: str = "") -> Workload:
        """Validate and sort by arrival (stable, so equal arrivals keep their order)."""
        arr = np.asarray(arrival_s, dtype=np.float64).ravel()
        n = arr.size
        if n == 0:
            raise KokubanError("the workload is empty: it needs at least one request")
        p = np.asarray(prompt_tokens, dtype=np.int64).ravel()
        o = np.asarray(output_tokens, dtype=np.int64).ravel()
        k = np.full(n, -1, np.int64) if prefix_key is None else np.asarray(prefix_key, dtype=np.int64).ravel()
        pt = np.zeros(n, np.int64) if prefix_tokens is None else np.asarray(prefix_tokens, dtype=np.int64).ravel()
        s = np.zeros(n, bool) if session is None else np.asarray(session, dtype=bool).ravel()
        if not (p.size == o.size == k.size == pt.size == s.size == n):
            raise KokubanError("workload arrays must all have one entry per request")
        if not np.all(np.isfinite(arr)) or arr.min() < 0:
            raise KokubanError("arrival times must be finite and ≥ 0 seconds")
        if p.min() < 1 or o.min() < 1:
            raise KokubanError("prompt and output lengths must be ≥ 1 token")
        pt = np.where(k >= 0, np.clip(pt, 0, p), 0)
        order = np.argsort(arr, kind="stable")
        return cls(arr[order], p[order], o[order], k[order], pt[order], s[order] & (k[order] >= 0), name)


# ---- synthetic workloads -----------------------------------------------------------------------------
def arrival_times(n: int, rate_per_s: float, process: str = "poisson", *, burstiness: float = 1.0,
                  rng: np.random.Generator | None = None) -> np.ndarray:
    """n arrival times (s) of a `process` with mean rate `rate_per_s`; the first request at its first gap."""
    require_positive("requests", n, integer=True)
    require_positive("request rate (requests/s)", rate_per_s)
    rng = rng or np.random.default_rng(0)
    if process == "poisson":
        gaps = rng.exponential(1.0 / rate_per_s, n)
    elif process == "gamma":
        require_positive("burstiness", burstiness)
        gaps = rng.gamma(burstiness, 1.0 / (burstiness * rate_per_s), n)
    elif process == "fixed":
        gaps = np.full(n, 1.0 / rate_per_s)
    else:
        raise KokubanError(f"arrival process '{process}' is not known; allowed: {', '.join(ARRIVALS)}")
    return np.cumsum(gaps)


def _numbers(text: str, spec: str, count: int | None = None) -> list[float]:
    try:
        values = [float(x) for x in text.split(",")]
    except ValueError:
        raise KokubanError(f"length spec '{spec}': '{text}' is not a comma-separated list of numbers") from None
    if count is not None and len(values) != count:
        raise KokubanError(f"length spec '{spec}' needs {count} numbers, got {len(values)}")
    return values


def lengths(spec: str | int, n: int, rng: np.random.Generator | None = None) -> np.ndarray:
    """n token counts (≥ 1) drawn from `spec` (see module docstring)."""
    rng = rng or np.random.default_rng(0)
    spec = str(spec).strip()
    kind, _, args = spec.partition(":")
    if not args:
        try:
            value = int(kind)
        except ValueError:
            raise KokubanError(
                f"length spec '{spec}' is not known; use N, uniform:LO,HI, lognormal:MEDIAN,SIGMA or hist:V=W,…"
            ) from None
        require_positive("token length", value, integer=True)
        return np.full(n, value, np.int64)
    if kind == "uniform":
        lo, hi = _numbers(args, spec, 2)
        if not 1 <= lo <= hi:
            raise KokubanError(f"length spec '{spec}' needs 1 ≤ LO ≤ HI")
        return rng.integers(int(lo), int(hi) + 1, n)
    if kind == "lognormal":
        median, sigma = _numbers(args, spec, 2)
        if median < 1 or sigma < 0:
            raise KokubanError(f"length spec '{spec}' needs MEDIAN ≥ 1 and SIGMA ≥ 0")
        return np.maximum(1, np.rint(rng.lognormal(np.log(median), sigma, n))).astype(np.int64)
    if kind == "hist":
        try:
            pairs = [item.split("=") for item in args.split(",")]
            values = np.array([int(v) for v, _ in pairs], np.int64)
            weights = np.array([float(w) for _, w in pairs])
        except ValueError:
            raise KokubanError(f"length spec '{spec}' must look like hist:100=0.3,1000=0.7") from None
        if values.min() < 1 or weights.min() < 0 or weights.sum() <= 0:
            raise KokubanError(f"length spec '{spec}' needs values ≥ 1 and weights ≥ 0 with a positive sum")
        return rng.choice(values, n, p=weights / weights.sum())
    raise KokubanError(f"length distribution '{kind}' is not known; allowed: uniform, lognormal, hist (or a number)")


def synthetic(n: int, rate_per_s: float, prompt: str | int = 1000, output: str | int = 200, *,
              arrival: str = "poisson", burstiness: float = 1.0, seed: int = 0,
              shared_prefix_tokens: int = 0, num_prefixes: int = 1) -> Workload:
    """A seeded synthetic workload. `rate_per_s = inf` sends every request at t = 0 (vLLM bench's default).

    With `shared_prefix_tokens` > 0, each request's prompt starts with one of `num_prefixes` shared
    prefixes of that length (drawn uniformly), as a common system prompt does.
    """
    rng = np.random.default_rng(seed)
    if rate_per_s == float("inf"):
        require_positive("requests", n, integer=True)
        arr = np.zeros(n)
    else:
        arr = arrival_times(n, rate_per_s, arrival, burstiness=burstiness, rng=rng)
    p = lengths(prompt, n, rng)
    o = lengths(output, n, rng)
    key = pre = None
    if shared_prefix_tokens:
        require_positive("shared prefix tokens", shared_prefix_tokens, integer=True)
        require_positive("number of prefixes", num_prefixes, integer=True)
        p = p + shared_prefix_tokens
        key = rng.integers(0, num_prefixes, n)
        pre = np.full(n, shared_prefix_tokens)
    label = f"{arrival} {rate_per_s:g}/s, prompt {prompt}, output {output}"
    return Workload.make(arr, p, o, key, pre, name=label)


# ---- traces -------------------------------------------------------------------------------------------
TRACE_REQUIRED = ("arrival_s", "prompt_tokens", "output_tokens")


def _field(row: dict[str, Any], key: str, where: str, *, integer: bool, optional: bool = False) -> Any:
    value = row.get(key)
    if value is None or value == "":
        if optional:
            return None
        raise KokubanError(f"{where}: missing '{key}' (a trace needs {', '.join(TRACE_REQUIRED)})")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise KokubanError(f"{where}: {key} {value!r} is not a number") from None
    if not np.isfinite(number) or number < 0 or (integer and not number.is_integer()):
        kind = "a non-negative integer" if integer else "a finite number ≥ 0"
        raise KokubanError(f"{where}: {key} {value!r} must be {kind}")
    return int(number) if integer else number


def _rows(path: Path) -> list[tuple[int, dict[str, Any]]]:
    text = path.read_text()
    if path.suffix.lower() in (".jsonl", ".json", ".ndjson"):
        rows = []
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise KokubanError(f"{path.name} line {number}: not valid JSON ({exc.msg})") from None
            if not isinstance(obj, dict):
                raise KokubanError(f"{path.name} line {number}: expected a JSON object")
            rows.append((number, obj))
        return rows
    reader = csv.DictReader(text.splitlines())
    if reader.fieldnames is None:
        return []
    return [(i + 2, row) for i, row in enumerate(reader) if any((v or "").strip() for v in row.values() if v)]


def read_trace(path: str | Path) -> Workload:
    """Read a CSV or JSONL trace (see module docstring). Errors name the file and line."""
    path = Path(path)
    try:
        rows = _rows(path)
    except OSError as exc:
        raise KokubanError(f"cannot read trace '{path}': {exc.strerror}") from None
    if not rows:
        raise KokubanError(f"trace '{path}' has no requests")
    n = len(rows)
    arr, p, o = np.empty(n), np.empty(n, np.int64), np.empty(n, np.int64)
    key, pre, is_session = np.full(n, -1, np.int64), np.zeros(n, np.int64), np.zeros(n, bool)
    sessions: dict[Any, tuple[int, int]] = {}  # session id → (key, context of its last turn)
    prefixes: dict[Any, int] = {}
    for i, (number, row) in enumerate(rows):
        where = f"{path.name} line {number}"
        arr[i] = _field(row, "arrival_s", where, integer=False)
        p[i] = _field(row, "prompt_tokens", where, integer=True)
        o[i] = _field(row, "output_tokens", where, integer=True)
        if p[i] < 1 or o[i] < 1:
            raise KokubanError(f"{where}: prompt_tokens and output_tokens must be ≥ 1")
        session = row.get("session_id")
        prefix = row.get("prefix_id")
        if session not in (None, ""):
            k, previous = sessions.get(session, (len(prefixes) + len(sessions), 0))
            key[i], pre[i], is_session[i] = k, min(previous, int(p[i])), True
            sessions[session] = (k, int(p[i] + o[i]))
        elif prefix not in (None, ""):
            tokens = _field(row, "prefix_tokens", where, integer=True)
            if tokens > p[i]:
                raise KokubanError(f"{where}: prefix_tokens {tokens} exceeds prompt_tokens {p[i]}")
            key[i] = prefixes.setdefault(prefix, len(prefixes) + len(sessions) + 10**9)
            pre[i] = tokens
    return Workload.make(arr, p, o, key, pre, is_session, name=path.name)


def write_trace(workload: Workload, path: str | Path) -> None:
    """Write a workload as a CSV trace (prefix keys as prefix_id)."""
    with Path(path).open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["arrival_s", "prompt_tokens", "output_tokens", "prefix_id", "prefix_tokens"])
        for a, p, o, k, t in zip(workload.arrival_s, workload.prompt_tokens, workload.output_tokens,
                                 workload.prefix_key, workload.prefix_tokens, strict=True):
            w.writerow([repr(float(a)), int(p), int(o), int(k) if k >= 0 else "", int(t) if k >= 0 else ""])
