"""Shared by the simulator's router and offload tests: a deployment and a hand-written workload."""

from __future__ import annotations

import numpy as np

from kokuban.sim.workload import Workload
from kokuban.specs.catalog import load_accelerator, load_model
from kokuban.specs.deployment import Deployment


def h100_8b() -> Deployment:
    """Llama-3.1-8B on one H100 SXM, the catalog's defaults."""
    return Deployment.make(load_model("llama-3.1-8b"), load_accelerator("h100-sxm"))


def workload(arrival, prompt, output, key=None, prefix=None) -> Workload:
    """A workload of these arrivals and lengths (no session key / shared prefix unless given)."""
    n = len(arrival)
    return Workload(np.asarray(arrival, np.float64), np.asarray(prompt, np.int64), np.asarray(output, np.int64),
                    np.asarray(key if key is not None else [-1] * n, np.int64),
                    np.asarray(prefix if prefix is not None else [0] * n, np.int64), np.zeros(n, bool), "test")
