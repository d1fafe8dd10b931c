"""What an agent run is, and the runs drawn from it.

A run is N steps. Step i's prompt is the system + tool-definition prefix S₀ followed by everything so far:

    prompt_0 = S₀,    prompt_i = prompt_{i−1} + o_{i−1} + r_{i−1}

where o_j is step j's output (its tool call or answer) and r_j the tool result that comes back after a gap g_j
of tool or think time. With fixed sizes the prompts add up to N·S₀ + (o + r)·N(N−1)/2 input tokens.

Sizes and gaps are distributions (spec strings): "300" (fixed), "uniform:LO,HI", "lognormal:MEDIAN,SIGMA",
"exp:MEAN" (exponential). Token counts are rounded to integers; gaps are seconds ≥ 0. A run may fan out
`subagents` child runs in parallel (each a run of the same shapes with `subagent_steps` steps); their cost adds
to the parent's, their results reach the parent as its tool results.

A trace (JSON lines, one object per step: `session`, `step`, `input_tokens`, optional `cached_input_tokens`,
`output_tokens`, optional `gap_s` = the tool/think time before the step) is priced as measured: one run per
session, the prompts as given.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from kokuban.errors import KokubanError

DISTRIBUTIONS = ("N", "uniform:LO,HI", "lognormal:MEDIAN,SIGMA", "exp:MEAN")


@dataclass(frozen=True)
class Dist:
    """A distribution of a non-negative number, parsed from a spec string by `parse_dist`."""

    kind: str  # "fixed", "uniform", "lognormal", "exp"
    params: tuple[float, ...]
    spec: str
    integer: bool = False
    minimum: float = 0.0

    @property
    def is_fixed(self) -> bool:
        return self.kind == "fixed"

    @property
    def mean(self) -> float:
        """fixed: v; uniform: (lo + hi)/2; lognormal: median·e^{σ²/2}; exp: mean (before integer rounding)."""
        p = self.params
        return {"fixed": lambda: p[0], "uniform": lambda: (p[0] + p[1]) / 2,
                "lognormal": lambda: p[0] * math.exp(p[1] ** 2 / 2), "exp": lambda: p[0]}[self.kind]()

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """n draws, never below the `minimum` the spec was checked against (integers when `integer`)."""
        p = self.params
        if self.kind == "fixed":
            x = np.full(n, p[0])
        elif self.kind == "uniform":
            x = rng.integers(int(p[0]), int(p[1]) + 1, n) if self.integer else rng.uniform(p[0], p[1], n)
        elif self.kind == "lognormal":
            x = rng.lognormal(math.log(p[0]), p[1], n)
        else:
            x = rng.exponential(p[0], n)
        if self.integer:
            return np.clip(np.rint(x), math.ceil(self.minimum), DIST_MAX).astype(np.int64)
        return np.clip(x, self.minimum, DIST_MAX).astype(np.float64)


#: The largest value a distribution may name (2³¹: tokens, steps or seconds) and the widest lognormal (a sigma of
#: 10: its 99th percentile 10¹⁰ times the median); draws are clipped to the largest value. Beyond them no real run
#: lies, and the sums of a run overflow.
DIST_MAX = float(2**31)
SIGMA_MAX = 10.0


def parse_dist(spec: str | float, field: str, *, integer: bool = False, minimum: float = 0) -> Dist:
    """Parse `spec` into a `Dist`; a bad spec or a value below `minimum` (or above `DIST_MAX`) is a one-line
    error naming `field`."""
    text = str(spec).strip()
    kind, _, args = text.partition(":")
    allowed = f"use {', '.join(DISTRIBUTIONS)} with values ≥ {minimum:g} and at most {DIST_MAX:.0f}"

    def numbers(count: int) -> tuple[float, ...]:
        try:
            values = tuple(float(x) for x in args.split(","))
        except ValueError:
            raise KokubanError(f"'{text}' is not a distribution; {allowed}", field=field, value=text) from None
        if len(values) != count or not all(math.isfinite(v) and abs(v) <= DIST_MAX for v in values):
            raise KokubanError(f"'{text}' needs {count} finite number(s); {allowed}", field=field, value=text)
        return values

    if not args:
        try:
            value = float(kind)
        except ValueError:
            raise KokubanError(
                f"'{text}' is not a number or a distribution; {allowed}", field=field, value=text
            ) from None
        if not minimum <= value <= DIST_MAX:
            raise KokubanError(f"must be ≥ {minimum:g} and at most {DIST_MAX:.0f}, got {text}", field=field, value=text)
        return Dist("fixed", (float(round(value)) if integer else value,), text, integer, float(minimum))
    if kind == "uniform":
        lo, hi = numbers(2)
        if not minimum <= lo <= hi:
            raise KokubanError(f"'{text}' needs {minimum:g} ≤ LO ≤ HI", field=field, value=text)
        return Dist("uniform", (lo, hi), text, integer, float(minimum))
    if kind == "lognormal":
        median, sigma = numbers(2)
        if median <= 0 or median < minimum or not 0 <= sigma <= SIGMA_MAX:
            raise KokubanError(f"'{text}' needs MEDIAN > 0 (and ≥ {minimum:g}) and 0 ≤ SIGMA ≤ {SIGMA_MAX:g}",
                               field=field, value=text)
        return Dist("lognormal", (median, sigma), text, integer, float(minimum))
    if kind == "exp":
        (mean,) = numbers(1)
        if mean <= 0:
            raise KokubanError(f"'{text}' needs MEAN > 0", field=field, value=text)
        return Dist("exp", (mean,), text, integer, float(minimum))
    raise KokubanError(f"distribution '{kind}' is not known; {allowed}", field=field, value=text)


@dataclass(frozen=True)
class Scenario:
    """The shapes of a run (see the module docstring). Build with `Scenario.make` (checks every field)."""

    steps: Dist
    system_tokens: int
    output_tokens: Dist
    tool_tokens: Dist
    gap_s: Dist
    subagents: int = 0
    subagent_steps: Dist | None = None
    name: str = ""
    source: str = ""
    assumptions: str = ""
    retrieved: str = ""

    @classmethod
    def make(cls, *, steps: Any, system_tokens: Any, output_tokens: Any, tool_tokens: Any, gap_s: Any,
             subagents: int = 0, subagent_steps: Any = None, name: str = "", source: str = "",
             assumptions: str = "", retrieved: str = "") -> Scenario:
        if isinstance(system_tokens, bool) or not isinstance(system_tokens, (int, float)) \
                or not 1 <= system_tokens <= DIST_MAX or not float(system_tokens).is_integer():
            raise KokubanError(f"must be a whole number of tokens ≥ 1, got {system_tokens!r}", field="system_tokens",
                               value=system_tokens)
        if isinstance(subagents, bool) or not isinstance(subagents, int) or not 0 <= subagents <= 64:
            raise KokubanError(f"must be a whole number of child runs in 0…64, got {subagents!r}", field="subagents",
                               value=subagents)
        return cls(
            steps=parse_dist(steps, "steps", integer=True, minimum=1),
            system_tokens=int(system_tokens),
            output_tokens=parse_dist(output_tokens, "output_tokens", integer=True, minimum=1),
            tool_tokens=parse_dist(tool_tokens, "tool_tokens", integer=True, minimum=0),
            gap_s=parse_dist(gap_s, "gap_s", minimum=0),
            subagents=subagents,
            subagent_steps=None
            if subagent_steps is None
            else parse_dist(subagent_steps, "subagent_steps", integer=True, minimum=1),
            name=name,
            source=source,
            assumptions=assumptions,
            retrieved=str(retrieved),
        )

    @property
    def is_fixed(self) -> bool:
        """Every size and gap fixed: one run says everything (no sampling needed)."""
        dists = (self.steps, self.output_tokens, self.tool_tokens, self.gap_s) + (
            (self.subagent_steps,) if self.subagent_steps else ()
        )
        return all(d.is_fixed for d in dists)

    def as_dict(self) -> dict[str, Any]:
        return {"steps": self.steps.spec, "system_tokens": self.system_tokens, "output_tokens": self.output_tokens.spec,
                "tool_tokens": self.tool_tokens.spec, "gap_s": self.gap_s.spec, "subagents": self.subagents,
                "subagent_steps": self.subagent_steps.spec if self.subagent_steps else None, "name": self.name,
                "source": self.source, "assumptions": self.assumptions, "retrieved": self.retrieved}


@dataclass(frozen=True)
class RawRun:
    """One run's draws before compaction: per step i, output o_i, tool result r_i and the gap g_i after it
    (r and g of the last step are unused). `prompt_tokens`/`prefix_tokens`, when set, are measured prompts and
    their cached prefixes from a trace, priced as given."""

    system_tokens: int
    output_tokens: np.ndarray
    tool_tokens: np.ndarray
    gap_after_s: np.ndarray
    prompt_tokens: np.ndarray | None = None
    trace_cached_tokens: np.ndarray | None = None
    session: str = ""
    parent: int = -1  # index of the parent run for a sub-agent's run, else −1

    @property
    def steps(self) -> int:
        return int(self.output_tokens.size)


#: The most steps all sampled runs may hold together: the work is bounded (each step holds a few numbers in
#: every later array; 10⁷ steps are ~1 GB at most), so a step count such as uniform:1,2147483648 is refused in one
#: line rather than exhausting memory.
TOTAL_STEPS_MAX = 10**7


def sample_runs(scenario: Scenario, runs: int, seed: int = 0) -> list[list[RawRun]]:
    """`runs` independent runs, each as [parent, child 1, … child k]. Seeded: the same seed, the same runs.
    More than `TOTAL_STEPS_MAX` steps in all is a KokubanError (field "steps") before they are allocated."""
    rng = np.random.default_rng(seed)
    sc = scenario
    total = 0

    def one(steps_dist: Dist, parent: int) -> RawRun:
        nonlocal total
        n = int(steps_dist.sample(rng, 1)[0])
        total += n
        if total > TOTAL_STEPS_MAX:
            raise KokubanError(f"{runs:,} runs of steps {steps_dist.spec} would hold more than {TOTAL_STEPS_MAX:,} "
                               "steps in all; use fewer runs or fewer steps", field="steps", value=steps_dist.spec)
        return RawRun(sc.system_tokens, np.maximum(sc.output_tokens.sample(rng, n), 1),
                      np.maximum(sc.tool_tokens.sample(rng, n), 0), sc.gap_s.sample(rng, n), parent=parent)

    out = []
    for i in range(runs):
        family = [one(sc.steps, -1)]
        family += [one(sc.subagent_steps or sc.steps, i) for _ in range(sc.subagents)]
        out.append(family)
    return out


#: Bounds of a trace line: token counts up to 2³¹ (every token count of a request has this bound) and step
#: numbers likewise; a gap up to a year of seconds. Beyond them no real agent run lies, and sums overflow.
TRACE_COUNT_MAX = 2**31
TRACE_GAP_MAX_S = 365 * 86400.0


def _int_field(row: dict[str, Any], key: str, where: str, *, optional: bool = False, minimum: int = 0) -> int:
    value = row.get(key)
    if value is None and optional:
        return 0
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not float(value).is_integer()
        or not minimum <= value <= TRACE_COUNT_MAX
    ):
        raise KokubanError(f"{where}: {key} must be a whole number ≥ {minimum} and at most {TRACE_COUNT_MAX}, "
                           f"got {value!r}", field="trace")
    return int(value)


def read_trace(path: str | Path) -> list[list[RawRun]]:
    """The runs of a JSONL trace, one per session in order of first appearance (see module docstring)."""
    from kokuban.specs.files import read_text

    try:
        lines = read_text(path, "trace").splitlines()
    except KokubanError as exc:
        raise KokubanError(exc.reason, field="trace", value=str(path)) from None
    sessions: dict[str, list[tuple[int, int, int, int, float]]] = {}
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{path} line {n}"
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise KokubanError(f"{where} is not JSON: {exc.msg}", field="trace") from None
        if not isinstance(row, dict):
            raise KokubanError(f"{where} must be a JSON object", field="trace")
        gap = row.get("gap_s", 0.0)
        if isinstance(gap, bool) or not isinstance(gap, (int, float)) or not 0 <= gap <= TRACE_GAP_MAX_S:
            raise KokubanError(f"{where}: gap_s must be seconds ≥ 0 and at most a year ({TRACE_GAP_MAX_S:g}), "
                               f"got {gap!r}", field="trace")
        inp = _int_field(row, "input_tokens", where, minimum=1)
        cached = _int_field(row, "cached_input_tokens", where, optional=True)
        if cached > inp:
            raise KokubanError(f"{where}: cached_input_tokens {cached} exceeds input_tokens {inp}", field="trace")
        sessions.setdefault(str(row.get("session", "")), []).append(
            (
                _int_field(row, "step", where),
                inp,
                cached,
                _int_field(row, "output_tokens", where, minimum=1),
                float(gap),
            )
        )
    if not sessions:
        raise KokubanError(f"trace '{path}' holds no steps", field="trace", value=str(path))
    out = []
    for name, steps in sessions.items():
        steps.sort()
        _, inp, cached, outp, gap = (np.array(col) for col in zip(*steps, strict=True))
        first = int(inp[0])
        out.append([RawRun(first, outp.astype(np.int64), np.zeros(len(steps), np.int64),
                           np.append(gap[1:], 0.0).astype(np.float64), prompt_tokens=inp.astype(np.int64),
                           trace_cached_tokens=cached.astype(np.int64), session=name)])
    return out
