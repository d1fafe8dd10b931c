"""The TTFT knee of a load sweep: where time to first token stops being the unloaded one (issue 12: "the TTFT knee
under rising concurrency in the right place"). `validation.serving.knee_comparisons` applies it to the measured and
the predicted TTFTs of the same sweep.

The definition was fixed before any sweep's knee was computed, measured or predicted:

    knee = the lowest load at which TTFT reaches `KNEE_FACTOR` (2) × the sweep's lowest-load TTFT, interpolated
           linearly in log(load)–log(TTFT) between the two loads that bracket the first crossing; "not reached"
           when no load of the sweep reaches it.

Why this one:
  - It reads only the TTFT curve, so the measured and the predicted knee are found the same way, at the same
    loads, each against its own lowest-load TTFT. A prediction off by a constant factor at every load (what the
    per-row TTFT error already reports) has the measured knee: the knee scores the shape of the curve, where
    queueing sets in, not its level.
  - K = 2: at twice the unloaded TTFT a request waits (queued, or sharing its steps with others) as long as its own
    prefill and front end take, so waiting has begun to dominate; an M/M/1 queue's response time S / (1 − ρ) is 2 S
    at utilisation ½. A K near 1 would fire on the mild growth of a batched prefill step and on measurement noise
    (the sweeps are single runs); a large K would often not be reached by sweeps that stop at a few hundred clients.
  - Log–log interpolation: the sweeps' loads are geometric (1, 4, 16, …; 1, 25, 100, 250), and a straight line
    between two points of a log–log plot is a power law TTFT ∝ load^a, the form a queue's growth takes in a closed
    loop past saturation (a = 1: TTFT grows with the clients in line); it also makes the knee scale with the loads
    (loads × c → knee × c) and ignore a constant TTFT factor.
Assumptions: the lowest load of the sweep is below its knee (a sweep that starts saturated measures from a
saturated baseline); between two measured loads TTFT follows the power law through them; a sweep whose TTFT dips
after the crossing (noise) keeps its first crossing.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

#: TTFT at the knee relative to the sweep's lowest-load TTFT (see the module docstring for why 2).
KNEE_FACTOR = 2.0


@dataclass(frozen=True)
class Knee:
    """A sweep's knee: `load` in the sweep's load unit (None: not reached at any load) and `bracket`, the index of
    the first load whose TTFT reaches the target (the knee lies in (loads[bracket − 1], loads[bracket]]; None: not
    reached)."""

    load: float | None
    bracket: int | None


def ttft_knee(loads: Sequence[float], ttft_s: Sequence[float], factor: float = KNEE_FACTOR) -> Knee:
    """The lowest load at which TTFT reaches `factor` × TTFT at the lowest load (the module docstring's definition).

    With target = factor · ttft_s[0] and j the first index with ttft_s[j] ≥ target:
        log knee = log loads[j−1] + (log target − log ttft_s[j−1]) / (log ttft_s[j] − log ttft_s[j−1])
                   · (log loads[j] − log loads[j−1])
    `loads` strictly increasing and > 0, `ttft_s` > 0 and finite, one per load, at least two; `factor` > 1 (so the
    lowest load itself never reaches it and j ≥ 1). ValueError otherwise."""
    if len(loads) != len(ttft_s) or len(loads) < 2:
        raise ValueError(f"a sweep needs at least two loads, one TTFT each (got {len(loads)} and {len(ttft_s)})")
    if not all(0 < a < b for a, b in zip(loads, loads[1:], strict=False)) or not math.isfinite(loads[-1]):
        raise ValueError(f"loads must be finite, > 0 and strictly increasing, got {list(loads)}")
    if not all(0 < t < math.inf for t in ttft_s):
        raise ValueError(f"TTFTs must be finite and > 0, got {list(ttft_s)}")
    if not factor > 1:
        raise ValueError(f"the knee factor must be > 1, got {factor}")
    target = factor * ttft_s[0]
    j = next((i for i, t in enumerate(ttft_s) if t >= target), None)
    if j is None:
        return Knee(None, None)
    lo, hi = math.log(ttft_s[j - 1]), math.log(ttft_s[j])
    share = (math.log(target) - lo) / (hi - lo)  # in (0, 1]: ttft_s[j − 1] < target ≤ ttft_s[j]
    return Knee(math.exp(math.log(loads[j - 1]) + share * (math.log(loads[j]) - math.log(loads[j - 1]))), j)
