"""Traces: recorded workloads read from files, one reader per format; `TRACE_FORMATS` maps suffixes to readers.

CSV with a header (any suffix not listed), or JSON lines (`.jsonl`, `.json`, `.ndjson`), with `arrival_s`,
`prompt_tokens`, `output_tokens` and optionally `prefix_id` + `prefix_tokens` (a shared prefix such as a system
prompt) and `session_id` (turns of one conversation: each turn's prompt starts with the previous turn's prompt
and output, so that much of it is a shared prefix). Errors name the file and line.

A new format is a function `(path, text) -> [(line number, row dict), …]` and one entry in `TRACE_FORMATS`.
Public formats with their own fields (the Azure LLM inference traces' CSV, Mooncake's JSONL) are recognised from
their first row and rewritten to these fields (`public_traces`).
"""

from __future__ import annotations

import csv
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from kokuban.errors import KokubanError
from kokuban.sim.workload.public_traces import adapt
from kokuban.sim.workload.workload import Workload

TRACE_REQUIRED = ("arrival_s", "prompt_tokens", "output_tokens")
#: The most tokens one request may carry (every token count of a request has this bound: usecases/request.py
#: `Tokens`), and the latest arrival (a year of seconds), so that a trace's work and times stay bounded.
TRACE_TOKENS_MAX = 2**31
TRACE_ARRIVAL_MAX_S = 365 * 86400.0

Rows = list[tuple[int, dict[str, Any]]]


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
    top = TRACE_TOKENS_MAX if integer else TRACE_ARRIVAL_MAX_S
    if isinstance(value, bool) or not np.isfinite(number) or not 0 <= number <= top or (
            integer and not number.is_integer()):
        kind = (f"a non-negative integer (at most {TRACE_TOKENS_MAX})" if integer
                else f"a finite number ≥ 0 (at most a year, {TRACE_ARRIVAL_MAX_S:g} s)")
        raise KokubanError(f"{where}: {key} {value!r} must be {kind}")
    return int(number) if integer else number


def json_lines(path: Path, text: str) -> Rows:
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


def csv_rows(path: Path, text: str) -> Rows:
    reader = csv.DictReader(text.splitlines())
    if reader.fieldnames is None:
        return []
    return [(i + 2, row) for i, row in enumerate(reader) if any((v or "").strip() for v in row.values() if v)]


#: Readers by lower-case file suffix; anything else is read as CSV.
TRACE_FORMATS: dict[str, Callable[[Path, str], Rows]] = {
    ".jsonl": json_lines, ".json": json_lines, ".ndjson": json_lines,
}


def read_trace(path: str | Path) -> Workload:
    """Read a CSV or JSONL trace (see module docstring). Errors name the file and line."""
    from kokuban.specs.files import read_text

    path = Path(path)
    rows = TRACE_FORMATS.get(path.suffix.lower(), csv_rows)(path, read_text(path, "trace"))
    if not rows:
        raise KokubanError(f"trace '{path}' has no requests")
    rows = adapt(path, rows)  # a public format (Azure CSV, Mooncake JSONL) in kokuban's fields (`public_traces`)
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
