"""The measurements as rows in kokuban's terms (`Row`: one test, its repetitions' seconds), from llama-bench
and llama-batched-bench, and as plain JSON."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from kokuban.validation.llamacpp.parsing import BatchedTest, BenchTest


@dataclass(frozen=True)
class Row:
    """One measured test in kokuban's terms; `samples_s` are whole-test seconds of each repetition."""

    id: str
    model: str  # the case name (architecture and size)
    gguf_type: str
    regime: str  # pp, tg (llama-bench, batch 1), batched-pp, batched-tg
    tokens: int
    depth: int
    batch: int
    samples_s: tuple[float, ...]

    @property
    def kind(self) -> str:
        return self.regime.split("-")[-1]

    @property
    def best_s(self) -> float:
        return float(min(self.samples_s))

    @property
    def median_s(self) -> float:
        return float(np.median(self.samples_s))


def rows_from_bench(model: str, gguf_type: str, tests: Sequence[BenchTest]) -> list[Row]:
    """llama-bench tests (pp and tg; pp+tg mixes are skipped) as rows."""
    out = []
    for t in tests:
        if t.kind == "pg":
            continue
        n = t.n_prompt or t.n_gen
        out.append(Row(f"{model}/{gguf_type}/{t.name}", model, gguf_type, t.kind, n, t.n_depth, 1, t.samples_s))
    return out


def rows_from_batched(model: str, gguf_type: str, runs: Sequence[Sequence[BatchedTest]]) -> list[Row]:
    """llama-batched-bench runs (each a list of rows; repeated runs give the samples) as batched-pp/tg rows."""
    by_key: dict[tuple[int, int, int], list[BatchedTest]] = {}
    for run in runs:
        for t in run:
            by_key.setdefault((t.prompt, t.gen, t.batch), []).append(t)
    out = []
    for (pp, tg, b), ts in sorted(by_key.items()):
        out.append(Row(f"{model}/{gguf_type}/batched-pp{pp}-b{b}", model, gguf_type, "batched-pp", pp, 0, b,
                       tuple(t.t_pp_s for t in ts)))
        out.append(Row(f"{model}/{gguf_type}/batched-tg{tg}-b{b}@d{pp}", model, gguf_type, "batched-tg", tg, pp, b,
                       tuple(t.t_tg_s for t in ts)))
    return out


def row_dict(row: Row) -> dict[str, Any]:
    """A row as plain JSON (its samples, best and median)."""
    return {**asdict(row), "samples_s": list(row.samples_s), "best_s": row.best_s, "median_s": row.median_s}


def row_from_dict(d: dict[str, Any]) -> Row:
    return Row(id=d["id"], model=d["model"], gguf_type=d["gguf_type"], regime=d["regime"], tokens=int(d["tokens"]),
               depth=int(d["depth"]), batch=int(d["batch"]), samples_s=tuple(float(s) for s in d["samples_s"]))


def phase(regime: str) -> str:
    """'decode' for generation rows (tg, batched-tg), 'prefill' for prompt rows (pp, batched-pp)."""
    return "decode" if regime.endswith("tg") else "prefill"
