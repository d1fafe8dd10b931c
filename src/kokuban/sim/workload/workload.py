"""The `Workload`: requests as NumPy arrays, checked and sorted by arrival."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from kokuban.errors import KokubanError


@dataclass(frozen=True)
class Workload:
    """Requests as arrays (see the `kokuban.sim.workload` docstring). Build with `synthetic` or `read_trace`."""

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
            raise KokubanError("the workload is empty: it needs at least one request", field="arrival_s")
        p = np.asarray(prompt_tokens, dtype=np.int64).ravel()
        o = np.asarray(output_tokens, dtype=np.int64).ravel()
        k = np.full(n, -1, np.int64) if prefix_key is None else np.asarray(prefix_key, dtype=np.int64).ravel()
        pt = np.zeros(n, np.int64) if prefix_tokens is None else np.asarray(prefix_tokens, dtype=np.int64).ravel()
        s = np.zeros(n, bool) if session is None else np.asarray(session, dtype=bool).ravel()
        if not (p.size == o.size == k.size == pt.size == s.size == n):
            raise KokubanError("workload arrays must all have one entry per request")
        if not np.all(np.isfinite(arr)) or arr.min() < 0:
            raise KokubanError("arrival times must be finite and ≥ 0 seconds", field="arrival_s")
        if p.min() < 1:
            raise KokubanError("prompt lengths must be ≥ 1 token", field="prompt_tokens", value=int(p.min()))
        if o.min() < 1:
            raise KokubanError("output lengths must be ≥ 1 token", field="output_tokens", value=int(o.min()))
        pt = np.where(k >= 0, np.clip(pt, 0, p), 0)
        order = np.argsort(arr, kind="stable")
        return cls(arr[order], p[order], o[order], k[order], pt[order], s[order] & (k[order] >= 0), name)
