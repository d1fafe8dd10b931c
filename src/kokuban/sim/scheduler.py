"""Scheduler settings: the policy and the limits, with vLLM's defaults.

Policies (`SchedulerConfig.policy`), one file each in `sim/policies/` with where its behaviour comes from:
continuous (vLLM V1, chunked prefill), prefill_first (vLLM V0), static (the train timetable), inflight
(TensorRT-LLM), sglang (SGLang).

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
from kokuban.sim.policies import POLICIES
from kokuban.sim.profiles import DEFAULT_ENGINE, EngineProfile, Overheads
from kokuban.specs.hardware import Accelerator

__all__ = ["POLICIES", "SchedulerConfig", "vllm_defaults"]  # POLICIES: the names `policy` takes (sim.policies)
GIB = 2**30
RUNNING_RULES = ("sglang",)  # `SchedulerConfig.running_rule`: max_num_seqs sized from the KV pool (`sim.profiles`)


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
    # set by an engine profile or a knob; absent from `as_dict` when None (a default run's JSON is unchanged)
    engine: str | None = None  # the engine profile's name (`sim.profiles`)
    overheads: Overheads | None = None  # the profile's CPU and client-side terms (`sim.profiles.Overheads`)
    kv_blocks: int | None = None  # KV blocks of one scheduler, e.g. read from an engine's log (default: computed)
    # how max_num_seqs follows from the KV pool when it is not given: "sglang" (`profiles.sglang_max_running_requests`,
    # applied by `sim.engine.build_engine` once the pool is sized); None: max_num_seqs as resolved
    running_rule: str | None = None
    # a host (CPU) KV tier of this many bytes per scheduler (`kvcache.HostTier`), reached over each GPU's host link
    # at offload_bytes_per_s (default: PCIe 5.0 x16, `specs.hardware.PCIE5_X16_BYTES_PER_S`)
    cpu_offload_bytes: float | None = None
    offload_bytes_per_s: float | None = None

    @classmethod
    def for_engine(cls, profile: EngineProfile, max_model_len: int, **given: Any) -> SchedulerConfig:
        """The scheduler `profile`'s engine runs for a model of `max_model_len` tokens: each field of `given`
        that is not None wins, else the profile's default, else kokuban's own (continuous batching, 16-token
        blocks, prefix caching on; the limits left to `resolve`, vLLM's rule; a profile whose max_num_seqs is a
        rule, "sglang", sets `running_rule` instead, unless max_num_seqs is given). One policy for `simulate` and
        the serving replay."""
        rule = profile.max_num_seqs if isinstance(profile.max_num_seqs, str) else None
        defaults = {"policy": profile.policy or "continuous", "max_num_seqs": None if rule else profile.max_num_seqs,
                    "max_num_batched_tokens": profile.batched_tokens(max_model_len),
                    "block_size": profile.block_size or BLOCK_SIZE,
                    "prefix_caching": True if profile.prefix_caching is None else profile.prefix_caching,
                    "engine": None if profile.name == DEFAULT_ENGINE else profile.name, "overheads": profile.overheads,
                    "running_rule": None if given.get("max_num_seqs") is not None else rule}
        return cls(**(defaults | {k: v for k, v in given.items() if v is not None}))

    def resolve(self, accelerator: Accelerator) -> SchedulerConfig:
        """Fill defaults from the accelerator and validate."""
        if self.policy not in POLICIES:
            raise KokubanError(f"'{self.policy}' is not a known policy; allowed: {', '.join(POLICIES)}", field="policy",
                               value=self.policy)
        seqs, tokens = vllm_defaults(accelerator)
        cfg = replace(
            self, max_num_seqs=self.max_num_seqs or seqs, max_num_batched_tokens=self.max_num_batched_tokens or tokens
        )
        require_positive("max_num_seqs", cfg.max_num_seqs, integer=True)
        require_positive("max_num_batched_tokens", cfg.max_num_batched_tokens, integer=True)
        require_positive("block_size", cfg.block_size, integer=True)
        if cfg.max_concurrency is not None:
            require_positive("max_concurrency", cfg.max_concurrency, integer=True)
        if cfg.kv_blocks is not None:
            require_positive("kv_blocks", cfg.kv_blocks, integer=True)
        if cfg.running_rule not in (None, *RUNNING_RULES):
            raise KokubanError(f"'{cfg.running_rule}' is not a known rule for max_num_seqs; allowed: "
                               f"{', '.join(RUNNING_RULES)}", field="max_num_seqs", value=cfg.running_rule)
        for name in ("cpu_offload_bytes", "offload_bytes_per_s"):
            if getattr(cfg, name) is not None:
                require_positive(name, getattr(cfg, name))
        if not cfg.batch_timeout_s >= 0:
            raise KokubanError(f"must be ≥ 0 s, got {cfg.batch_timeout_s!r}", field="batch_timeout_s",
                               value=cfg.batch_timeout_s)
        return cfg

    def as_dict(self) -> dict[str, Any]:
        """The fields as plain values; `engine`, `overheads`, `kv_blocks` and the offload tier only when set."""
        return {k: v for k, v in asdict(self).items() if v is not None or k not in _OPTIONAL}


_OPTIONAL = ("engine", "overheads", "kv_blocks", "running_rule", "cpu_offload_bytes", "offload_bytes_per_s")
