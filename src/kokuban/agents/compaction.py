"""From a run to its calls, under a compaction policy.

Policies (spec strings):
    none              the context only grows
    every:M,K         before every M-th step (steps M, 2M, …) summarise the context down to K tokens
    threshold:T,K     before a step whose prompt would exceed T tokens, summarise down to K tokens

A compaction before step i is one more call, the summary call: its prompt is the context step i would have
had (C = prompt_{i−1} + o_{i−1} + r_{i−1}), its output the K-token summary. Step i then starts afresh from
S₀ + K. That is the cache invalidation compaction causes: only S₀ is still a prefix of what was cached, so
the summary's K tokens are written again, and the history behind them is never read again.

Each call records the prefix it shares with the previous call — `api_prefix_tokens` with the previous prompt
(what an API's prompt cache holds: the prompt it wrote) and `kv_prefix_tokens` with the previous prompt and
its output (what an engine's KV cache holds: decode wrote the output's KV too).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from kokuban.agents.scenario import RawRun
from kokuban.errors import KokubanError

POLICIES = ("none", "every:M,K", "threshold:T,K")


@dataclass(frozen=True)
class Policy:
    """A compaction policy: kind "none", "every" (every `m` steps) or "threshold" (at `threshold` tokens),
    summarising down to `keep_tokens`."""

    kind: str = "none"
    m: int = 0
    threshold: int = 0
    keep_tokens: int = 0

    @property
    def spec(self) -> str:
        if self.kind == "every":
            return f"every:{self.m},{self.keep_tokens}"
        if self.kind == "threshold":
            return f"threshold:{self.threshold},{self.keep_tokens}"
        return "none"


def parse_policy(spec: str, field: str = "compaction") -> Policy:
    """'none' | 'every:M,K' | 'threshold:T,K' (whole numbers, M ≥ 1, K ≥ 1, T > K)."""
    text = str(spec).strip().lower()
    if text == "none":
        return Policy()
    kind, _, args = text.partition(":")
    try:
        a, b = (int(x) for x in args.split(","))
    except ValueError:
        raise KokubanError(f"'{spec}' is not a policy; use {', '.join(POLICIES)}", field=field, value=spec) from None
    if kind == "every" and a >= 1 and b >= 1:
        return Policy("every", m=a, keep_tokens=b)
    if kind == "threshold" and b >= 1 and a > b:
        return Policy("threshold", threshold=a, keep_tokens=b)
    raise KokubanError(f"'{spec}' is not a policy; use {', '.join(POLICIES)} with M ≥ 1, K ≥ 1 and T > K", field=field,
                       value=spec)


@dataclass(frozen=True)
class Calls:
    """The calls of one or more runs, one entry per call (NumPy arrays).

    run: which run; child: 0 for the parent, j for its j-th sub-agent; step: the agent step (a summary call
    carries the step it precedes); is_summary; prompt_tokens; output_tokens; gap_before_s (the tool/think
    time between the previous call's end and this one; 0 for a run's first call); start_s (the call's start
    on the run's clock: the sum of the gaps before it, generation time not counted); api_prefix_tokens,
    kv_prefix_tokens (see the module docstring); trace_cached_tokens (a trace's measured cached input, else −1).
    """

    run: np.ndarray
    child: np.ndarray
    step: np.ndarray
    is_summary: np.ndarray
    prompt_tokens: np.ndarray
    output_tokens: np.ndarray
    gap_before_s: np.ndarray
    start_s: np.ndarray
    api_prefix_tokens: np.ndarray
    kv_prefix_tokens: np.ndarray
    trace_cached_tokens: np.ndarray

    def __len__(self) -> int:
        return int(self.prompt_tokens.size)

    @property
    def first(self) -> np.ndarray:
        """True at each run's (and each child's) first call."""
        key = self.run * 1000 + self.child
        return np.r_[True, key[1:] != key[:-1]]

    @property
    def context_tokens(self) -> np.ndarray:
        """The context at the end of each call: prompt + output."""
        return self.prompt_tokens + self.output_tokens

    def select(self, mask: Any) -> Calls:
        return Calls(**{k: getattr(self, k)[mask] for k in self.__dataclass_fields__})


def calls_of_run(raw: RawRun, policy: Policy = Policy(), *, run: int = 0, child: int = 0) -> dict[str, list[Any]]:
    """The calls of one run as columns (see `Calls`): the recurrence of `agents.scenario` with compaction."""
    cols: dict[str, list[Any]] = {k: [] for k in Calls.__dataclass_fields__}
    s0 = raw.system_tokens
    clock = 0.0

    def add(step: int, summary: bool, prompt: int, out: int, gap: float, api: int, kv: int, cached: int) -> None:
        nonlocal clock
        clock += gap
        for k, v in (("run", run), ("child", child), ("step", step), ("is_summary", summary), ("prompt_tokens", prompt),
                     ("output_tokens", out), ("gap_before_s", gap), ("start_s", clock), ("api_prefix_tokens", api),
                     ("kv_prefix_tokens", kv), ("trace_cached_tokens", cached)):
            cols[k].append(v)

    prev_prompt = prev_out = 0
    for i in range(raw.steps):
        o = int(raw.output_tokens[i])
        gap = float(raw.gap_after_s[i - 1]) if i else 0.0
        if raw.prompt_tokens is not None:  # a trace: the prompts as measured
            prompt = int(raw.prompt_tokens[i])
            grown = i > 0 and prompt >= prev_prompt
            api = prev_prompt if grown else (min(int(raw.trace_cached_tokens[i]), prompt) if i else 0)
            kv = min(prev_prompt + prev_out, prompt) if grown else api
            add(i, False, prompt, o, gap, api, kv, int(raw.trace_cached_tokens[i]))
            prev_prompt, prev_out = prompt, o
            continue
        if i == 0:
            add(0, False, s0, o, 0.0, 0, 0, -1)
            prev_prompt, prev_out = s0, o
            continue
        context = prev_prompt + prev_out + int(raw.tool_tokens[i - 1])
        api, kv = prev_prompt, prev_prompt + prev_out
        due = (policy.kind == "every" and i % policy.m == 0) or (
            policy.kind == "threshold" and context > policy.threshold
        )
        if due and s0 + policy.keep_tokens < context:
            add(i, True, context, policy.keep_tokens, gap, api, kv, -1)
            prev_prompt, prev_out = context, policy.keep_tokens
            context, gap, api, kv = s0 + policy.keep_tokens, 0.0, s0, s0
        add(i, False, context, o, gap, api, kv, -1)
        prev_prompt, prev_out = context, o
    return cols


def build_calls(families: list[list[RawRun]], policy: Policy = Policy()) -> Calls:
    """Every call of every run (and its sub-agents) under `policy`, as one `Calls`."""
    cols: dict[str, list[Any]] = {k: [] for k in Calls.__dataclass_fields__}
    for r, family in enumerate(families):
        for c, raw in enumerate(family):
            for k, v in calls_of_run(raw, policy, run=r, child=c).items():
                cols[k].extend(v)
    dtypes = {"is_summary": bool, "gap_before_s": np.float64, "start_s": np.float64}
    return Calls(**{k: np.asarray(v, dtype=dtypes.get(k, np.int64)) for k, v in cols.items()})


def require_window(calls: Calls, window: int | None, what: str, policy: Policy) -> None:
    """Every call's prompt + output must fit `window` tokens; else one line naming the step and what would fit."""
    if window is None:
        return
    ctx = calls.context_tokens
    over = ctx > window
    if not over.any():
        return
    i = int(np.argmax(over))
    runs = np.unique(calls.run[over]).size
    total = np.unique(calls.run).size
    share = f" ({runs} of {total} sampled runs)" if total > 1 else ""
    fix = (f"compact (e.g. compaction=threshold:{int(window * 0.8)},{min(8000, window // 10)})"
           if policy.kind == "none" else "compact sooner or to fewer tokens")
    raise KokubanError(f"the context reaches {int(ctx[i]):,} tokens at step {int(calls.step[i])}{share}, beyond the "
                       f"{window:,}-token window of {what}; {fix}, or run fewer steps", field="compaction",
                       value=policy.spec)
