"""Workloads: when requests arrive and how long their prompts and outputs are. Seeded, reproducible.

A `Workload` is a set of NumPy arrays (one entry per request, sorted by arrival):
    arrival_s       seconds since the start
    prompt_tokens   tokens in the prompt (≥ 1)
    output_tokens   tokens to generate (≥ 1; the first comes out of the prefill)
    prefix_key      −1, or an integer naming a shared prefix (a system prompt, or an agent session)
    prefix_tokens   tokens of the prompt that belong to that shared prefix
    session         True where the prefix is a conversation so far (it grows by each finished turn)

The pieces, each a registry a new kind joins with one file or one entry:
    arrivals.py   arrival processes (`ARRIVALS`: poisson, gamma, fixed) → `arrival_times`
    lengths.py    length distributions from spec strings (`LENGTHS`: N, uniform, lognormal, hist) → `lengths`
    traces.py     trace files (`TRACE_FORMATS`: CSV, JSON lines) → `read_trace`, `write_trace`
`synthetic` composes the first two. Requests whose arrival depends on the run (closed-loop agent sessions, a
concurrency cap) are sent by a client (`kokuban.sim.clients`), not fixed here.
"""

from __future__ import annotations

import numpy as np

from kokuban.errors import require_positive
from kokuban.sim.workload.arrivals import ARRIVALS, arrival_times
from kokuban.sim.workload.lengths import LENGTHS, length_distribution, lengths
from kokuban.sim.workload.traces import TRACE_FORMATS, read_trace, write_trace
from kokuban.sim.workload.workload import Workload


def synthetic(n: int, rate_per_s: float, prompt: str | int = 1000, output: str | int = 200, *,
              arrival: str = "poisson", burstiness: float = 1.0, seed: int = 0,
              shared_prefix_tokens: int = 0, num_prefixes: int = 1) -> Workload:
    """A seeded synthetic workload. `rate_per_s = inf` sends every request at t = 0 (vLLM bench's default).

    With `shared_prefix_tokens` > 0, each request's prompt starts with one of `num_prefixes` shared
    prefixes of that length (drawn uniformly), as a common system prompt does. Draws, in order: the arrival
    gaps, the prompt lengths, the output lengths, the prefix of each request.
    """
    rng = np.random.default_rng(seed)
    if rate_per_s == float("inf"):
        require_positive("n", n, integer=True)
        arr = np.zeros(n)
    else:
        arr = arrival_times(n, rate_per_s, arrival, burstiness=burstiness, rng=rng)
    p = lengths(prompt, n, rng, field="prompt")
    o = lengths(output, n, rng, field="output")
    key = pre = None
    if shared_prefix_tokens:
        require_positive("shared_prefix_tokens", shared_prefix_tokens, integer=True)
        require_positive("num_prefixes", num_prefixes, integer=True)
        p = p + shared_prefix_tokens
        key = rng.integers(0, num_prefixes, n)
        pre = np.full(n, shared_prefix_tokens)
    label = f"{arrival} {rate_per_s:g}/s, prompt {prompt}, output {output}"
    return Workload.make(arr, p, o, key, pre, name=label)


__all__ = ["ARRIVALS", "LENGTHS", "TRACE_FORMATS", "Workload", "arrival_times", "length_distribution", "lengths",
           "read_trace", "synthetic", "write_trace"]
