"""Event skipping: many pure-decode steps computed at once, while only completions change the batch.

When every running request is decoding (one token a step) and nothing can join the batch, the engine
would repeat the same step until the next event. For requests i = 1…n (in running order) at context
c_i (their known tokens), owning b_i KV blocks of `block` tokens, with ℓ_i tokens still to generate:

    request i runs in steps j = 0 … ℓ_i − 1 at context c_i + j, and finishes at the end of step ℓ_i − 1
    step j: batch = tokens = #{i : ℓ_i > j};  seconds = the core's step time of those decodes
    blocks i owns after step j's allocation     h_ij = max(b_i, ⌈(c_i + j) / block⌉)
    blocks in use during step j                 used_j = used − Σ_i b_i + Σ_{i : ℓ_i > j} h_ij
(finished requests have given their blocks back). Step j's allocation fits exactly when used_j ≤ the
pool's total, so the run stops before the first step where it does not (the engine then steps normally
and preempts as vLLM would); before the first step after the first that starts at or after `t_stop`
(the next arrival, released at that step boundary); and after `max_steps`. Each step's sums are taken
over the same requests in the same order as a single step takes them, so the times are those of
stepping one at a time, bit for bit. Assumes no prefix cache (every held block is the request's own).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kokuban.sim.steptime import StepTimeModel

MAX_RUN_STEPS = 256  # longest run planned at once (bounds its steps × requests arrays)
MIN_RUN_STEPS = 8  # shortest run worth planning: a run costs about as much as three single decode steps
_STEP = np.arange(MAX_RUN_STEPS)[:, None]  # step numbers j as a column


@dataclass(frozen=True)
class DecodeRun:
    """The steps a run takes: per step j < steps, start_s[j], step_s[j], batch[j] (= tokens = decodes) and
    used_blocks[j] (as the engine's timeline records them); start_s[steps] is the end of the last step.
    Per request: owned[i], the blocks it owns after its last step in the run."""

    steps: int
    start_s: np.ndarray
    step_s: np.ndarray
    batch: np.ndarray
    used_blocks: np.ndarray
    owned: np.ndarray


def plan_decode_run(model: StepTimeModel, block_size: int, context: np.ndarray, owned: np.ndarray, left: np.ndarray,
                    used: int, total: int, t: float, t_stop: float, max_steps: int) -> DecodeRun | None:
    """The run of at most `max_steps` pure-decode steps starting at time t (see the module docstring);
    `used`, `total`: the pool's blocks in use and in all. None if not even the first step's blocks fit."""
    k = min(int(max_steps), int(left.max()), MAX_RUN_STEPS)
    j = _STEP[:k]
    active = j < left  # (steps, requests)
    h = np.maximum(owned, (context + j + (block_size - 1)) // block_size)
    used_step = (used - int(owned.sum())) + (h * active).sum(axis=1)
    over = (used_step > total).nonzero()[0]
    if over.size:
        k = int(over[0])
        if k == 0:
            return None
    start, step_s, batch = _timed_steps(model, context, left, t, t_stop, k)
    steps = step_s.size
    last = np.minimum(left, steps) - 1  # each request's last step in the run
    return DecodeRun(steps, start, step_s, batch, used_step[:steps],
                     np.maximum(owned, (context + last + (block_size - 1)) // block_size))


def _timed_steps(model: StepTimeModel, context: np.ndarray, left: np.ndarray, t: float, t_stop: float, k: int
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(start times, seconds, batch) of up to k steps, computed a segment of constant batch at a time;
    the start times end with the end of the last step and accumulate one step at a time, as the engine's
    clock does. Stops before a step j ≥ 1 that would start at or after t_stop."""
    starts, seconds, batch = [t], [], []
    a = 0
    leave = sorted(set(left[left < k].tolist()))  # steps from which finished requests are out of the batch
    for b in [*leave, k]:
        if b <= a:
            continue
        sub = context[left > a] if a else context
        dt = model.decode_run_s(sub + _STEP[a:b])
        s = np.add.accumulate(np.concatenate([starts[-1:], dt]))  # s[x] = start of step a + x
        late = (s[1:] >= t_stop).nonzero()[0]
        if late.size:  # step a + 1 + late[0] is not taken: the run ends with the step before it
            x = int(late[0]) + 1
            starts.extend(s[1:x + 1].tolist())
            seconds.extend(dt[:x].tolist())
            batch.extend([sub.size] * x)
            break
        starts.extend(s[1:].tolist())
        seconds.extend(dt.tolist())
        batch.extend([sub.size] * (b - a))
        a = b
    return np.array(starts), np.array(seconds), np.array(batch)
