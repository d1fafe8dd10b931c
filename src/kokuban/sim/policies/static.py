"""static — the train timetable.

A batch of up to `max_num_seqs` requests departs when it is full or when its first request has waited
`batch_timeout_s` (or when no more requests will come); it prefills, then decodes until its last request
finishes; nobody joins a batch on the way. Each request reserves the KV blocks of its whole prompt + output at
departure, as static-batching servers preallocate, so it is never preempted, and the prefix cache does not
apply.
"""

from __future__ import annotations

import numpy as np

from kokuban.sim.policies.base import EngineView, SchedulerLimits
from kokuban.sim.policies.prefill_first import prefill_or_decode


class Static:
    name = "static"
    prefix_caching = False
    steady_fast_path = False
    admits_while_running = False

    def __init__(self, cfg: SchedulerLimits) -> None:
        self.max_num_seqs, self.batch_timeout_s = int(cfg.max_num_seqs), float(cfg.batch_timeout_s)

    def schedule(self, engine: EngineView, t: float) -> bool:
        if engine.num_running == 0:
            engine.admit_waiting(engine.token_budget, t, "all")  # the whole batch departs; it is scheduled below
        return prefill_or_decode(engine, t, admit=False)

    def hold_until(self, engine: EngineView, t: float) -> float | None:
        waiting, next_s = engine.waiting, engine.client.next_release_s()
        departs_s = engine.client.sent_s[waiting[0]] + self.batch_timeout_s
        if len(waiting) >= self.max_num_seqs or t >= departs_s or next_s == np.inf:
            return None
        return min(next_s, departs_s)
