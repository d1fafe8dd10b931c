"""The roofline picture: arithmetic intensity against attainable FLOP/s (Williams, Waterman & Patterson, 2009).

    intensity  I = FLOPs ÷ bytes moved through HBM                         (FLOP/B)
    attainable A(I) = min(F, I × BW)                                       (FLOP/s)
    ridge      I* = F ÷ BW: below it a kernel waits on memory, above it on the multipliers

F and BW are what the deployment reaches (peak × efficiency, summed over its GPUs). The step model
(`core.roofline`) times each kind of kernel with the same two roofs; this module only places a whole step
on the picture, so a step's achieved FLOP/s (FLOPs ÷ step time) sits on or under the roof: below it by
the kernels that run one after the other, the communication and the fixed overhead.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def arithmetic_intensity(flops: Any, bytes_moved: Any) -> Any:
    """FLOPs per byte moved through HBM: flops ÷ bytes (inf for a step that moves no bytes)."""
    flops, bytes_moved = np.asarray(flops, dtype=np.float64), np.asarray(bytes_moved, dtype=np.float64)
    return np.divide(flops, bytes_moved, out=np.full_like(flops * bytes_moved, np.inf), where=bytes_moved > 0)


def ridge_intensity(flops_per_s: float, bytes_per_s: float) -> float:
    """The intensity where the two roofs meet: F ÷ BW (FLOP/B)."""
    return flops_per_s / bytes_per_s


def attainable_flops_per_s(intensity: Any, flops_per_s: float, bytes_per_s: float) -> Any:
    """The roof at an intensity: min(F, I × BW) (FLOP/s)."""
    return np.minimum(flops_per_s, np.asarray(intensity, dtype=np.float64) * bytes_per_s)
