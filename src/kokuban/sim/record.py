"""What the engine hands over at the end of a run: a typed record of NumPy arrays, and nothing else.

Metrics (`metrics.SimResult`) read only this record (plus the deployment's description and price), never the
engine's internals, so an engine variant (another scheduler, an agent-session client, an engine profile)
needs no change to the metrics as long as it fills the same record.

Per request (index = position in the workload, which is sorted by arrival):
    arrival_s           when it was sent (its workload arrival, or later when a client held it back)
    prompt_tokens, output_tokens   the workload's lengths (output = tokens asked for)
    generated_tokens    tokens it generated (= output_tokens when the run completed)
    first_scheduled_s, first_token_s, finish_s   seconds; NaN if it never got there
    preemptions         times it was preempted;  recomputed_tokens: KV tokens it held when preempted (thrown away)
    cached_tokens       prompt tokens read from the prefix cache instead of computed
Per inter-token gap, as (value, weight) pairs: `itl_values_s`, `itl_weights` (a gap shared by w tokens of one
step is stored once with weight w). Per step: start, seconds, tokens, batch (running requests), decodes, KV
blocks in use.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class RunRecord:
    """One run's per-request, per-gap and per-step arrays (see the module docstring)."""

    # per request
    arrival_s: np.ndarray
    prompt_tokens: np.ndarray
    output_tokens: np.ndarray
    generated_tokens: np.ndarray
    first_scheduled_s: np.ndarray
    first_token_s: np.ndarray
    finish_s: np.ndarray
    preemptions: np.ndarray
    recomputed_tokens: np.ndarray
    cached_tokens: np.ndarray
    # per inter-token gap (value, weight)
    itl_values_s: np.ndarray
    itl_weights: np.ndarray
    # per step
    step_start_s: np.ndarray
    step_s: np.ndarray
    step_tokens: np.ndarray
    step_batch: np.ndarray
    step_decodes: np.ndarray
    step_kv_blocks: np.ndarray
    # the run
    end_s: float
    kv_capacity_blocks: int
    block_size: int
    kv_blocks_free_at_end: int
    ranks: int = 1  # data-parallel ranks whose steps the per-step arrays hold (`dataparallel.merge`)

    @classmethod
    def from_logs(cls, *, itl_equal_gaps: list[tuple[float, int]], itl_mixed_gaps: list[np.ndarray],
                  timeline: list[tuple[float, float, int, int, int, int]], **fields: object) -> RunRecord:
        """Build from the engine's append-only logs: `itl_equal_gaps` (gap, count) pairs, `itl_mixed_gaps` arrays
        of single gaps, and `timeline` rows (start, seconds, tokens, batch, decodes, blocks); the other fields as
        given."""
        same = np.array(itl_equal_gaps, dtype=np.float64).reshape(-1, 2)
        mixed = np.concatenate(itl_mixed_gaps) if itl_mixed_gaps else np.zeros(0)
        tl = np.array(timeline, dtype=np.float64).reshape(-1, 6)
        return cls(
            itl_values_s=np.concatenate([same[:, 0], mixed]),
            itl_weights=np.concatenate([same[:, 1], np.ones(mixed.size)]),
            step_start_s=tl[:, 0], step_s=tl[:, 1], step_tokens=tl[:, 2].astype(np.int64),
            step_batch=tl[:, 3].astype(np.int64), step_decodes=tl[:, 4].astype(np.int64),
            step_kv_blocks=tl[:, 5].astype(np.int64), **fields,  # type: ignore[arg-type]
        )
