"""Length distributions of prompts and outputs, from a spec string. One class each; `LENGTHS` names them.

    "1000"                   fixed
    "uniform:LO,HI"          integers, inclusive
    "lognormal:MEDIAN,SIGMA" exp of a normal with mean ln MEDIAN, rounded, at least 1
    "hist:V1=W1,V2=W2,…"     values drawn with probabilities ∝ weights
    "dataset:NAME"           a public dataset's prompt or output lengths (`datasets`, data/length_datasets.toml)

A new distribution is a class with `parse(args, spec, field)` and `draw(n, rng)` and one entry in `LENGTHS`.
Errors name `field`: the parameter the spec was given as (`prompt`, `output`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

from kokuban.errors import KokubanError
from kokuban.sim.workload.datasets import Dataset

#: The longest length a spec may give or draw: 2³¹ tokens, the bound of every token count of a request
#: (usecases/request.py `Tokens`); a lognormal's draws are clipped to it. Spreads above e^10 (a sigma of 10: the
#: 99th percentile 10¹⁰ times the median) describe no real length data and overflow the draws.
LENGTH_MAX = 2**31
SIGMA_MAX = 10.0


class LengthDistribution(Protocol):
    def draw(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """n token counts (int64, ≥ 1)."""
        ...


def _numbers(text: str, spec: str, field: str, count: int) -> list[float]:
    try:
        values = [float(x) for x in text.split(",")]
    except ValueError:
        raise KokubanError(f"'{spec}': '{text}' is not a comma-separated list of numbers", field=field,
                           value=spec) from None
    if len(values) != count:
        raise KokubanError(f"'{spec}' needs {count} numbers, got {len(values)}", field=field, value=spec)
    return values


@dataclass(frozen=True)
class Fixed:
    tokens: int

    def draw(self, n: int, rng: np.random.Generator) -> np.ndarray:
        return np.full(n, self.tokens, np.int64)


@dataclass(frozen=True)
class Uniform:
    lo: int
    hi: int

    @classmethod
    def parse(cls, args: str, spec: str, field: str) -> Uniform:
        lo, hi = _numbers(args, spec, field, 2)
        if not 1 <= lo <= hi <= LENGTH_MAX:
            raise KokubanError(f"'{spec}' needs 1 ≤ LO ≤ HI ≤ {LENGTH_MAX}", field=field, value=spec)
        return cls(int(lo), int(hi))

    def draw(self, n: int, rng: np.random.Generator) -> np.ndarray:
        return rng.integers(self.lo, self.hi + 1, n)


@dataclass(frozen=True)
class Lognormal:
    median: float
    sigma: float

    @classmethod
    def parse(cls, args: str, spec: str, field: str) -> Lognormal:
        median, sigma = _numbers(args, spec, field, 2)
        if not (1 <= median <= LENGTH_MAX and 0 <= sigma <= SIGMA_MAX):
            raise KokubanError(f"'{spec}' needs 1 ≤ MEDIAN ≤ {LENGTH_MAX} and 0 ≤ SIGMA ≤ {SIGMA_MAX:g}", field=field,
                               value=spec)
        return cls(median, sigma)

    def draw(self, n: int, rng: np.random.Generator) -> np.ndarray:
        return np.clip(np.rint(rng.lognormal(np.log(self.median), self.sigma, n)), 1, LENGTH_MAX).astype(np.int64)


@dataclass(frozen=True)
class Histogram:
    values: tuple[int, ...]
    weights: tuple[float, ...]

    @classmethod
    def parse(cls, args: str, spec: str, field: str) -> Histogram:
        try:
            pairs = [item.split("=") for item in args.split(",")]
            values = [int(v) for v, _ in pairs]
            weights = [float(w) for _, w in pairs]
        except ValueError:
            raise KokubanError(f"'{spec}' must look like hist:100=0.3,1000=0.7", field=field, value=spec) from None
        if min(values) < 1 or max(values) > LENGTH_MAX or min(weights) < 0 or not 0 < sum(weights) < float("inf"):
            raise KokubanError(f"'{spec}' needs values in [1, {LENGTH_MAX}] and weights ≥ 0 with a positive sum",
                               field=field, value=spec)
        return cls(tuple(values), tuple(weights))

    def draw(self, n: int, rng: np.random.Generator) -> np.ndarray:
        weights = np.array(self.weights)
        return rng.choice(np.array(self.values, np.int64), n, p=weights / weights.sum())


#: Distributions by the name before the colon of a spec ("uniform:10,20"); a bare integer is `Fixed`.
LENGTHS = {"uniform": Uniform, "lognormal": Lognormal, "hist": Histogram}
LENGTHS["dataset"] = Dataset  # a public dataset's shipped histogram (`datasets`): "dataset:azure-code"


def length_distribution(spec: str | int, field: str = "spec") -> LengthDistribution:
    """The distribution a spec names (see the module docstring); errors name `field`."""
    spec = str(spec).strip()
    kind, _, args = spec.partition(":")
    if not args:
        try:
            tokens = int(kind)
        except ValueError:
            raise KokubanError(
                f"'{spec}' is not a length spec; use N, uniform:LO,HI, lognormal:MEDIAN,SIGMA or hist:V=W,…",
                field=field, value=spec) from None
        if not 1 <= tokens <= LENGTH_MAX:
            raise KokubanError(f"a length must be an integer in [1, {LENGTH_MAX}], got {tokens}", field=field,
                               value=spec)
        return Fixed(tokens)
    cls = LENGTHS.get(kind)
    if cls is None:
        raise KokubanError(f"'{kind}' is not a known length distribution; allowed: {', '.join(LENGTHS)} (or a number)",
                           field=field, value=spec)
    return cls.parse(args, spec, field)


def lengths(spec: str | int, n: int, rng: np.random.Generator | None = None, *, field: str = "spec") -> np.ndarray:
    """n token counts (≥ 1) drawn from `spec` (see the module docstring)."""
    return length_distribution(spec, field).draw(n, rng or np.random.default_rng(0))
