"""Scheduler settings and the policies the engine reproduces, with where each behaviour comes from.

Policies (`SchedulerConfig.policy`):

continuous — vLLM V1 (`vllm/v1/core/sched/scheduler.py`, `Scheduler.schedule`). Each step has a budget
    of `max_num_batched_tokens` tokens. Running requests go first, in the order they were admitted:
    each gets min(tokens it still needs, budget left) (a decode needs 1, a prefill the rest of its
    prompt, so long prompts are split into chunks). If a request cannot get the KV blocks for its
    tokens, the newest running request is preempted (`self.running.pop()`): its blocks are freed, it
    goes back to the head of the waiting queue and later recomputes prompt + generated tokens
    (preemption mode RECOMPUTE). Then, only if nothing was preempted this step (`if not
    preempted_reqs:`), waiting requests are admitted first come first served while the budget lasts,
    fewer than `max_num_seqs` run and their (first chunk's) blocks are free; the first that does not fit
    stops admission (no overtaking).
prefill_first — vLLM V0's default scheduler without chunked prefill (`vllm/core/scheduler.py`,
    `_schedule_default`: "First, it batches as many prefill requests as possible. And it schedules
    decodes."), and SGLang's default of separate prefill and decode batches. A step is either a
    prefill batch (unfinished prompts, then waiting requests, within the token budget; prompts longer
    than the budget are chunked) or, when no prefill can run, a decode step of every running request.
static — the train timetable: a batch of up to `max_num_seqs` requests departs when it is full or
    when its first request has waited `batch_timeout_s`; it prefills, then decodes until its last
    request finishes; nobody joins a batch on the way. Each request reserves the KV blocks of its whole
    prompt + output at departure, as static-batching servers preallocate, so it is never preempted.

Defaults (vLLM `EngineArgs.get_batch_defaults`, `vllm/engine/arg_utils.py`, for `vllm serve`, i.e. the
OPENAI_API_SERVER usage context): on a GPU with ≥ 70 GiB that is not an A100 (H100, H200, B200,
MI300X…) max_num_seqs = 1024 and max_num_batched_tokens = 8192; otherwise 256 and 2048. block_size 16
(`CacheConfig`), gpu_memory_utilization 0.9 (the deployment's `memory_utilization`), chunked prefill
and prefix caching on (V1 defaults for generative models).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any

from kokuban.errors import KokubanError, require_positive
from kokuban.sim.kvcache import BLOCK_SIZE
from kokuban.specs.hardware import Accelerator

POLICIES = ("continuous", "prefill_first", "static")
GIB = 2**30


def vllm_defaults(accelerator: Accelerator) -> tuple[int, int]:
    """(max_num_seqs, max_num_batched_tokens) `vllm serve` picks for one GPU of this kind (see module doc)."""
    large = accelerator.memory_bytes >= 70 * GIB and "a100" not in accelerator.id.lower()
    return (1024, 8192) if large else (256, 2048)


@dataclass(frozen=True)
class SchedulerConfig:
    """Scheduler limits. None means "vLLM's default for the accelerator" (`resolve`)."""

    policy: str = "continuous"
    max_num_seqs: int | None = None
    max_num_batched_tokens: int | None = None
    block_size: int = BLOCK_SIZE
    prefix_caching: bool = True
    batch_timeout_s: float = 0.0  # static batching only
    max_concurrency: int | None = None  # the client's cap on requests in flight (vLLM bench --max-concurrency)

    def resolve(self, accelerator: Accelerator) -> SchedulerConfig:
        """Fill defaults from the accelerator and validate."""
        if self.policy not in POLICIES:
            raise KokubanError(f"scheduler '{self.policy}' is not known; allowed: {', '.join(POLICIES)}")
        seqs, tokens = vllm_defaults(accelerator)
        cfg = replace(
            self, max_num_seqs=self.max_num_seqs or seqs, max_num_batched_tokens=self.max_num_batched_tokens or tokens
        )
        require_positive("max_num_seqs", cfg.max_num_seqs, integer=True)
        require_positive("max_num_batched_tokens", cfg.max_num_batched_tokens, integer=True)
        require_positive("block_size", cfg.block_size, integer=True)
        if cfg.max_concurrency is not None:
            require_positive("max concurrency", cfg.max_concurrency, integer=True)
        if cfg.batch_timeout_s < 0:
            raise KokubanError(f"batch timeout must be ≥ 0 s, got {cfg.batch_timeout_s!r}")
        return cfg

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)
