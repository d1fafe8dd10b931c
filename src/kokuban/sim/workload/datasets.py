"""Named length distributions of public datasets, shipped as histograms with their source
(data/length_datasets.toml).

    --prompt-tokens dataset:azure-code --output-tokens dataset:azure-code

`dataset:NAME` draws the prompt (or output: the spec's field says which) lengths of dataset NAME from its shipped
histogram: a bin is drawn with probability count ÷ total, then an integer uniformly in [lo, hi) of that bin. Bins
are quarter octaves (edges ⌊2^(k/4)⌉ for k = 0, 1, …, distinct, up to the longest length + 1), so within its bin a
length is off by less than 2^(1/4) − 1 = 19 %, and the histogram's mean is Σ count·(lo + hi − 1)/2 ÷ total
(within 1 % of the trace's mean for the shipped sets: both are in the data file). Prompt and output are drawn
independently: the datasets' correlation between the two is not kept.

A dataset is added by running the builder on a trace kokuban reads (`python -m kokuban.sim.workload.datasets
TRACE NAME`, which prints the TOML table) and pasting the table with its source: nothing is downloaded at run time.
"""

from __future__ import annotations

import sys
import tomllib
from dataclasses import dataclass
from functools import cache
from importlib import resources

import numpy as np

from kokuban.errors import KokubanError

BUNDLED = "length_datasets.toml"
FIELDS = ("prompt", "output")


BINS_PER_OCTAVE = 4


def octave_histogram(lengths: np.ndarray) -> tuple[list[int], list[int]]:
    """(edges, counts) of `lengths` (≥ 1) in bins [e_i, e_(i+1)): e = the distinct ⌊2^(k/4)⌉ below the longest
    length + 1, then that + 1 (so the last bin holds the longest)."""
    x = np.asarray(lengths, dtype=np.int64)
    if x.size == 0 or x.min() < 1:
        raise KokubanError("lengths must be ≥ 1 token and not empty", field="lengths")
    top = int(x.max()) + 1
    k = np.arange(int(np.ceil(np.log2(top) * BINS_PER_OCTAVE)) + 1)
    grid = np.unique(np.rint(2.0 ** (k / BINS_PER_OCTAVE)).astype(np.int64))
    edges = [int(e) for e in grid if e < top] + [top]
    counts, _ = np.histogram(x, bins=edges)
    return edges, counts.astype(int).tolist()


@dataclass(frozen=True)
class Binned:
    """A length histogram: bins [edges[i], edges[i+1]) with `counts`; draws a bin, then an integer inside it."""

    edges: tuple[int, ...]
    counts: tuple[int, ...]

    def draw(self, n: int, rng: np.random.Generator) -> np.ndarray:
        counts = np.array(self.counts, dtype=np.float64)
        lo, hi = np.array(self.edges[:-1], np.int64), np.array(self.edges[1:], np.int64)
        b = rng.choice(len(counts), n, p=counts / counts.sum())
        return rng.integers(lo[b], hi[b])

    @property
    def mean(self) -> float:
        """Σ count·(lo + hi − 1)/2 ÷ Σ count (each bin's integers equally likely)."""
        lo, hi, c = np.array(self.edges[:-1]), np.array(self.edges[1:]), np.array(self.counts, np.float64)
        return float((c * (lo + hi - 1) / 2).sum() / c.sum())


@cache
def datasets() -> dict[str, dict]:
    """Every bundled dataset's table (source, date, requests, per-field edges and counts)."""
    with (resources.files("kokuban") / "data" / BUNDLED).open("rb") as fh:
        return tomllib.load(fh)["dataset"]


class Dataset:
    """`dataset:NAME` in a length spec (see the module docstring)."""

    @classmethod
    def parse(cls, args: str, spec: str, field: str) -> Binned:
        known = datasets()
        if args not in known:
            raise KokubanError(f"'{args}' is not a known dataset; allowed: {', '.join(known)}", field=field,
                               value=spec)
        if field not in FIELDS:
            raise KokubanError(f"a dataset gives prompt and output lengths, not {field}", field=field, value=spec)
        table = known[args][field]
        return Binned(tuple(table["edges"]), tuple(table["counts"]))


def _toml(path: str, name: str) -> str:
    from kokuban.sim.workload.traces import read_trace

    wl = read_trace(path)
    lines = [f"[dataset.{name}]", f"requests = {len(wl)}"]
    for field, x in (("prompt", wl.prompt_tokens), ("output", wl.output_tokens)):
        edges, counts = octave_histogram(x)
        lines += [f"{field}.edges = {edges}", f"{field}.counts = {counts}", f"{field}.mean = {float(x.mean()):.2f}",
                  f"{field}.histogram_mean = {Binned(tuple(edges), tuple(counts)).mean:.2f}"]
    return "\n".join(lines)


if __name__ == "__main__":  # the builder: python -m kokuban.sim.workload.datasets TRACE NAME
    print(_toml(sys.argv[1], sys.argv[2]))
