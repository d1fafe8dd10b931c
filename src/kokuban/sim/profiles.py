"""Engine profiles: the scheduler defaults and overhead terms of the engines people run (data/engines.toml).

A profile is data, never a branch: its scheduler defaults fill the `SchedulerConfig` fields a user left unset
(the use case does that), its fixed per-step term is the core's `Efficiency.step_overhead_s`, and its other
overheads (`Overheads`) reach a run through two seams:

    step time    `OverheadStepModel` wraps any `StepTimeModel`: a step of T scheduled tokens, h of them sampled,
                 through a model of L layers, lasts
                        base(T, h, …) + per_seq_s·h + per_token_s·T + per_layer_s·L
                 (CPU work the GPU waits for; per_layer_s: a fixed time per layer per step — kernel launches and
                 latency-bound small kernels the roofline leaves out — so one engine's fixed cost can differ
                 between a 32-layer and an 80-layer model), then `launch_bound_s`: an engine that replays
                 CUDA graphs for decode batches up to graph_max_batch runs every other step eagerly, launching
                 its kernels from Python, so that step lasts at least eager_per_layer_s·L
    client       `FrontEndClient` wraps the run's client: a finish reaches the client front_end_s later, so a
                 concurrency-capped client (`vllm bench serve --max-concurrency`) sends its next request then
    metrics      `client_view(record, overheads)`: what a client sees of a run
                 TTFT and E2E  + front_end_s   (first token and finish seen front_end_s later; the run's end too)
                 ITL           tokens streamed in chunks of k = stream_tokens: a client sees one gap per chunk,
                               k steps long; taken as k × each recorded gap with 1/k of its weight (exact for
                               the mean when a chunk's steps are equally long; percentiles approximate)

Memory (`EngineProfile.memory_rule`, `memory_fraction`): how the engine sizes its KV pool, a
`specs.deployment.MemoryRule` (formulas: `core.memory.memory_budget`) and its default fraction; SGLang's default
mem_fraction_static depends on the GPU (`sglang_mem_fraction_static`, tiers in data/engines.toml).

Running requests (`EngineProfile.max_num_seqs`): a number, or "sglang": SGLang sizes max_running_requests from its
KV pool once the pool is known (`sglang_max_running_requests`; applied by the engine when it builds its pool).

Scheduling is unchanged by the front-end term except through the client (the delay is on the client's side: the
engine sees each request when it is sent; at high load a real front end also delays when the engine sees it).
"""

from __future__ import annotations

import tomllib
from collections import deque
from dataclasses import dataclass, fields, replace
from functools import cache
from importlib import resources
from typing import Any

import numpy as np

from kokuban.errors import KokubanError
from kokuban.sim.clients import Client
from kokuban.sim.record import RunRecord
from kokuban.sim.steptime import StepTimeModel
from kokuban.specs.deployment import MEMORY_UTILIZATION, MemoryRule
from kokuban.specs.hardware import Efficiency

BUNDLED = "engines.toml"
DEFAULT_ENGINE = "kokuban"
#: `max_num_batched_tokens = "max_model_len"`: vLLM V0's budget without chunked prefill, max(max_model_len, 2048)
V0_MIN_BATCHED_TOKENS = 2048


@dataclass(frozen=True)
class Overheads:
    """Per-step CPU terms and per-request client-side terms of an engine (seconds; see the module docstring)."""

    per_seq_s: float = 0.0
    per_token_s: float = 0.0
    front_end_s: float = 0.0
    stream_tokens: int = 1
    per_layer_s: float = 0.0
    # CUDA graphs (`launch_bound_s`): decode batches of at most graph_max_batch requests replay a CUDA graph (0:
    # none); every other step runs eagerly and lasts at least eager_per_layer_s per layer
    graph_max_batch: int = 0
    eager_per_layer_s: float = 0.0

    def __post_init__(self) -> None:
        for name in ("per_seq_s", "per_token_s", "front_end_s", "per_layer_s", "eager_per_layer_s"):
            value = getattr(self, name)
            if not (np.isfinite(value) and value >= 0):
                raise KokubanError(f"must be a finite number ≥ 0 s, got {value!r}", field=name, value=value)
        if not (isinstance(self.stream_tokens, int) and not isinstance(self.stream_tokens, bool)
                and self.stream_tokens >= 1):
            raise KokubanError(f"must be an integer ≥ 1, got {self.stream_tokens!r}", field="stream_tokens",
                               value=self.stream_tokens)
        if not (isinstance(self.graph_max_batch, int) and not isinstance(self.graph_max_batch, bool)
                and self.graph_max_batch >= 0):
            raise KokubanError(f"must be an integer ≥ 0, got {self.graph_max_batch!r}", field="graph_max_batch",
                               value=self.graph_max_batch)

    @property
    def steps_cost(self) -> bool:
        """Whether the step-time seam has anything to add."""
        return self.per_seq_s > 0 or self.per_token_s > 0 or self.per_layer_s > 0 or self.eager_per_layer_s > 0

    def as_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True)
class EngineProfile:
    """One engine's defaults (None: kokuban's own) and overheads, with the sources from the data file."""

    name: str
    description: str
    policy: str | None = None
    max_num_seqs: int | str | None = None  # a number, or "sglang" (`sglang_max_running_requests`)
    max_num_batched_tokens: int | str | None = None
    block_size: int | None = None
    prefix_caching: bool | None = None
    preemption: str | None = None
    step_overhead_s: float | None = None
    overheads: Overheads | None = None
    memory_rule: MemoryRule | None = None
    memory_fraction: float | str | None = None  # a number, or "sglang" (`sglang_mem_fraction_static`)
    efficiency: str | None = None  # the step model's fractions: a profile of `specs.hardware.PROFILES`
    sources: tuple[tuple[str, str], ...] = ()

    def base_efficiency(self) -> Efficiency:
        """The step model this engine is simulated with when no efficiency is asked for: its `efficiency`
        profile (a name of `specs.hardware.PROFILES`; None: the shipped step model, `Efficiency.shipped()`) with its
        `step_overhead_s` (None: the profile's own). The fitted overheads of the data file were fitted with exactly
        this (`kokuban serving-accuracy --refit`)."""
        from kokuban.specs.hardware import PROFILES

        if self.efficiency not in (None, *PROFILES):
            raise KokubanError(f"engine profile '{self.name}': efficiency '{self.efficiency}' is not one of "
                               f"{', '.join(PROFILES)}", field="efficiency", value=self.efficiency)
        eff = PROFILES[self.efficiency or "default"]()
        return eff if self.step_overhead_s is None else eff.updated(step_overhead_s=self.step_overhead_s)

    def fraction(self, memory_bytes: float, chunk_tokens: int | None, parallel_size: int) -> float | None:
        """The engine's default memory fraction on a GPU of `memory_bytes` (None: kokuban's default)."""
        if self.memory_fraction == "sglang":
            return sglang_mem_fraction_static(memory_bytes, chunk_tokens, parallel_size)
        return self.memory_fraction  # type: ignore[return-value]

    def utilization(self, memory_bytes: float, chunk_tokens: int | None, parallel_size: int) -> float:
        """The fraction the engine sizes its memory at by default: `fraction`, else kokuban's
        (`specs.deployment.MEMORY_UTILIZATION`)."""
        value = self.fraction(memory_bytes, chunk_tokens, parallel_size)
        return MEMORY_UTILIZATION if value is None else value

    def batched_tokens(self, max_model_len: int) -> int | None:
        """The profile's token budget; "max_model_len" is vLLM V0's max(max_model_len, 2048)."""
        if self.max_num_batched_tokens == "max_model_len":
            return max(int(max_model_len), V0_MIN_BATCHED_TOKENS)
        return self.max_num_batched_tokens  # type: ignore[return-value]


_SCHEDULER_KEYS = ("policy", "max_num_seqs", "max_num_batched_tokens", "block_size", "prefix_caching", "preemption",
                   "step_overhead_s")
_OVERHEAD_KEYS = ("per_seq_s", "per_token_s", "front_end_s", "stream_tokens", "per_layer_s", "graph_max_batch",
                  "eager_per_layer_s")
MIB = 2**20


@cache
def _sglang_tiers() -> tuple[tuple[float, int, int, int], ...]:
    with (resources.files("kokuban") / "data" / BUNDLED).open("rb") as fh:
        return tuple(tuple(row) for row in tomllib.load(fh)["sglang_memory"]["tiers"])  # type: ignore[misc]


def sglang_mem_fraction_static(memory_bytes: float, chunk_tokens: int | None = None, parallel_size: int = 1) -> float:
    """SGLang's default mem_fraction_static (`ServerArgs._handle_gpu_memory_settings`, data/engines.toml
    [sglang_memory]): with G the GPU's memory in MiB, the tier of G giving chunked_prefill_size c (unless
    `chunk_tokens` is given) and cuda_graph_max_bs b (by tensor-parallel size < 4 or ≥ 4),

        reserved = 512 + 1.5·max(c, 2048) + 2·b + 1024·tp·pp/8   MiB;  at least 10 GiB when G > 60 GiB
        fraction = round((G − reserved) ÷ G, 3)

    `parallel_size` = tp·pp. Not modelled: the DP-attention, piecewise-CUDA-graph and speculative terms."""
    gib = memory_bytes / MIB / 1024
    mib = memory_bytes / MIB
    _, c, b_small, b_large = next(row for row in _sglang_tiers() if gib < row[0])
    c = chunk_tokens or c
    b = b_small if parallel_size < 4 else b_large
    reserved = 512 + 1.5 * max(c, 2048) + 2 * b + 1024 * parallel_size / 8
    if gib > 60:
        reserved = max(reserved, 10 * 1024)
    return round((mib - reserved) / mib, 3)


def sglang_max_running_requests(pool_tokens: int, context_len: int) -> int:
    """SGLang's default max_running_requests for a KV pool of `pool_tokens` tokens (max_total_num_tokens, one
    scheduler's) and a model context of `context_len` tokens (python/sglang/srt/model_executor/model_runner.py
    `init_memory_pool` and managers/tp_worker.py, sgl-project/sglang at commit 0045f98e):

        request slots   = min(max(⌊pool_tokens ÷ context_len × 512⌋, 2048), 4096) + 1     (ReqToTokenPool size)
        running at most = min(⌊pool_tokens ÷ 2⌋, request slots)

    The KV pool itself still bounds what runs: a request is admitted only while its tokens fit."""
    slots = min(max(int(pool_tokens / context_len * 512), 2048), 4096) + 1
    return max(1, min(int(pool_tokens) // 2, slots))


@cache
def profiles() -> dict[str, EngineProfile]:
    """Every bundled profile by name (data/engines.toml)."""
    with (resources.files("kokuban") / "data" / BUNDLED).open("rb") as fh:
        data = tomllib.load(fh)
    out = {}
    for name, row in data["profile"].items():
        over = {k: row[k] for k in _OVERHEAD_KEYS if k in row}
        rule = MemoryRule(row["memory_rule"], float(row.get("non_torch_bytes", 0.0))) if "memory_rule" in row else None
        out[name] = EngineProfile(
            name=name, description=row["description"], **{k: row[k] for k in _SCHEDULER_KEYS if k in row},
            overheads=Overheads(**over) if over else None, memory_rule=rule, memory_fraction=row.get("memory_fraction"),
            efficiency=row.get("efficiency"),
            sources=tuple((k.removesuffix("_source"), v) for k, v in row.items() if k.endswith("_source")))
    return out


def load_profile(name: str) -> EngineProfile:
    """The bundled profile `name`; KokubanError(field="engine") naming the known ones otherwise."""
    known = profiles()
    if name not in known:
        raise KokubanError(f"'{name}' is not a known engine profile; allowed: {', '.join(known)}", field="engine",
                           value=name)
    return known[name]


def launch_bound_s(step_s: float | np.ndarray, layers: int, batch: int, decode: bool,
                   o: Overheads) -> float | np.ndarray:
    """Seconds of a step of `step_s` (the step model and the CPU terms) through a model of `layers` layers, run
    as SGLang runs it (`model_runner.forward_decode`: a CUDA graph only for a decode batch the graph runner
    `can_run`, `batch_size <= self.max_bs`; an extend batch never):

        decode batch ≤ graph_max_batch      step_s                               (the CUDA graph replayed)
        any other step (eager)              max(step_s, eager_per_layer_s · L)

    Eager, the CPU launches every kernel from Python while the GPU runs those launched before, so the step takes
    the longer of the two. Assumes the launch time grows with the layers only, not with the batch or the
    tokens. No graph (graph_max_batch 0) and no eager term: `step_s`."""
    if (decode and batch <= o.graph_max_batch) or not o.eager_per_layer_s:
        return step_s
    return np.maximum(step_s, o.eager_per_layer_s * int(layers))


class OverheadStepModel:
    """A `StepTimeModel` with the engine's CPU terms added to every step of `base`: seconds = base.seconds(T, h, …)
    + per_seq_s·h + per_token_s·T + per_layer_s·L (h sampled sequences, T scheduled tokens, L = `layers`), then
    `launch_bound_s` (a step whose every token is sampled, T = h, taken for a decode batch of h)."""

    def __init__(self, base: StepTimeModel, overheads: Overheads, layers: int = 0) -> None:
        self.base, self.per_seq_s, self.per_token_s = base, float(overheads.per_seq_s), float(overheads.per_token_s)
        self.fixed_s = float(overheads.per_layer_s) * int(layers)
        self.overheads, self.layers = overheads, int(layers)

    def extra_s(self, tokens: int, heads: int) -> float:
        """per_seq_s·heads + per_token_s·tokens + per_layer_s·layers."""
        return self.per_seq_s * heads + self.per_token_s * tokens + self.fixed_s

    def decode_terms(self, ctx: np.ndarray) -> tuple[float, float]:
        return self.base.decode_terms(ctx)

    def chunk_terms(self, chunk_start: np.ndarray, chunk_end: np.ndarray) -> tuple[float, float]:
        return self.base.chunk_terms(chunk_start, chunk_end)

    def one_chunk_terms(self, chunk_start: int, chunk_end: int) -> tuple[float, float]:
        return self.base.one_chunk_terms(chunk_start, chunk_end)

    def seconds(self, tokens: int, heads: int, attn_s: float, kv_s: float) -> float:
        step_s = self.base.seconds(tokens, heads, attn_s, kv_s) + self.extra_s(tokens, heads)
        return float(launch_bound_s(step_s, self.layers, heads, tokens == heads, self.overheads))

    def decode_run_s(self, ctx: np.ndarray) -> np.ndarray:
        n = int(ctx.shape[1])  # every request of a decode step is one token and one sampled sequence
        step_s = self.base.decode_run_s(ctx) + self.extra_s(n, n)
        return launch_bound_s(step_s, self.layers, n, True, self.overheads)


class FrontEndClient:
    """A `clients.Client` whose finishes reach the client `front_end_s` after the engine's: `finished(r, t)` is
    passed on as `finished(r, t + front_end_s)`; everything else is the wrapped client's."""

    def __init__(self, inner: Client, front_end_s: float) -> None:
        self.inner, self.front_end_s = inner, float(front_end_s)
        self.closed_loop = inner.closed_loop

    @property
    def sent_s(self) -> np.ndarray:
        return self.inner.sent_s

    def next_release_s(self) -> float:
        return self.inner.next_release_s()

    def release(self, t: float, waiting: deque[int]) -> None:
        self.inner.release(t, waiting)

    def finished(self, r: int, t: float) -> None:
        self.inner.finished(r, t + self.front_end_s)


def client_view(record: RunRecord, overheads: Overheads | None) -> RunRecord:
    """The run as a client sees it: first token, finish and end `front_end_s` later; inter-token gaps in
    chunks of `stream_tokens` steps (see the module docstring). No overheads: the record itself."""
    if overheads is None or (overheads.front_end_s == 0 and overheads.stream_tokens == 1):
        return record
    f, k = overheads.front_end_s, overheads.stream_tokens
    return replace(record, first_token_s=record.first_token_s + f, finish_s=record.finish_s + f,
                   end_s=record.end_s + f, itl_values_s=record.itl_values_s * k, itl_weights=record.itl_weights / k)
