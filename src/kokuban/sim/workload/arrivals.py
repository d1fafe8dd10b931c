"""Arrival processes: the gaps between requests, for a mean rate. One function each; `ARRIVALS` names them.

    poisson   exponential gaps with mean 1/rate                     (vLLM bench --burstiness 1)
    gamma     gamma gaps, shape k = burstiness, scale 1/(k·rate)    (vLLM bench --burstiness k; k < 1 is burstier)
    fixed     gaps of exactly 1/rate

A new process is a function `(n, rate_per_s, burstiness, rng) -> n gaps in seconds` and one entry in `ARRIVALS`.
(Closed-loop arrivals, which depend on when earlier requests finish, are clients: `kokuban.sim.clients`.)
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from kokuban.errors import KokubanError, require_positive


def poisson(n: int, rate_per_s: float, burstiness: float, rng: np.random.Generator) -> np.ndarray:
    return rng.exponential(1.0 / rate_per_s, n)


def gamma(n: int, rate_per_s: float, burstiness: float, rng: np.random.Generator) -> np.ndarray:
    require_positive("burstiness", burstiness)
    return rng.gamma(burstiness, 1.0 / (burstiness * rate_per_s), n)


def fixed(n: int, rate_per_s: float, burstiness: float, rng: np.random.Generator) -> np.ndarray:
    return np.full(n, 1.0 / rate_per_s)


ARRIVALS: dict[str, Callable[[int, float, float, np.random.Generator], np.ndarray]] = {
    "poisson": poisson, "gamma": gamma, "fixed": fixed,
}


def arrival_times(n: int, rate_per_s: float, process: str = "poisson", *, burstiness: float = 1.0,
                  rng: np.random.Generator | None = None) -> np.ndarray:
    """n arrival times (s) of a `process` with mean rate `rate_per_s`; the first request at its first gap."""
    require_positive("n", n, integer=True)
    require_positive("rate_per_s", rate_per_s)
    gaps = ARRIVALS.get(process)
    if gaps is None:
        raise KokubanError(f"'{process}' is not a known arrival process; allowed: {', '.join(ARRIVALS)}",
                           field="process", value=process)
    return np.cumsum(gaps(n, rate_per_s, burstiness, rng or np.random.default_rng(0)))
