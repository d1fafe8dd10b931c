"""The tools' output read back: llama-bench's JSON/JSONL (`parse_llama_bench_json`) and markdown table
(`parse_llama_bench_markdown`), llama-batched-bench's JSONL or markdown table (`parse_batched_bench`)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from kokuban.errors import KokubanError


@dataclass(frozen=True)
class BenchTest:
    """One llama-bench test: `n_prompt` tokens of prompt processing or `n_gen` generated tokens after a KV
    cache of `n_depth` tokens; `samples_s` the seconds of each repetition of the whole test."""

    n_prompt: int
    n_gen: int
    n_depth: int
    samples_s: tuple[float, ...]
    model_type: str = ""
    model_size_bytes: float = 0.0
    model_params: float = 0.0
    threads: int = 0
    build_commit: str = ""

    @property
    def kind(self) -> str:
        return "pp" if self.n_gen == 0 else ("tg" if self.n_prompt == 0 else "pg")

    @property
    def tokens(self) -> int:
        return self.n_prompt + self.n_gen

    @property
    def name(self) -> str:
        """The test as llama-bench's markdown names it: pp512, tg128, pp512+tg128, with ' @ dN' for a depth."""
        base = {"pp": f"pp{self.n_prompt}", "tg": f"tg{self.n_gen}"}.get(self.kind, f"pp{self.n_prompt}+tg{self.n_gen}")
        return base + (f" @ d{self.n_depth}" if self.n_depth else "")


def parse_llama_bench_json(text: str) -> list[BenchTest]:
    """Tests from `llama-bench -o json` (an array) or `-o jsonl` (one object a line): samples_ns → seconds."""
    text = text.strip()
    try:
        lines = [line for line in text.splitlines() if line.strip()]
        rows = json.loads(text) if text.startswith("[") else [json.loads(line) for line in lines]
    except json.JSONDecodeError as exc:
        raise KokubanError(f"llama-bench output is not JSON (line {exc.lineno}: {exc.msg})") from None
    tests = []
    for r in rows:
        try:
            samples = tuple(float(s) * 1e-9 for s in r.get("samples_ns") or [r["avg_ns"]])
            tests.append(BenchTest(
                n_prompt=int(r["n_prompt"]), n_gen=int(r["n_gen"]), n_depth=int(r.get("n_depth", 0)), samples_s=samples,
                model_type=str(r.get("model_type", "")), model_size_bytes=float(r.get("model_size", 0)),
                model_params=float(r.get("model_n_params", 0)), threads=int(r.get("n_threads", 0)),
                build_commit=str(r.get("build_commit", "")),
            ))
        except (KeyError, TypeError, ValueError) as exc:
            raise KokubanError(f"llama-bench JSON row lacks a usable field: {exc}") from None
    return tests


_TEST = re.compile(r"^(?:pp(?P<p>\d+))?\+?(?:tg(?P<n>\d+))?(?: @ d(?P<d>\d+))?$")
_MEAN_STD = re.compile(r"^(?P<mean>[\d.]+)\s*±\s*(?P<std>[\d.]+)$")


def parse_llama_bench_markdown(text: str) -> list[dict[str, Any]]:
    """Rows of llama-bench's default markdown table: the test (n_prompt, n_gen, n_depth) and the mean and standard
    deviation of tokens per second (the markdown has no per-repetition samples: use `-o json` for those)."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip().startswith("|")]
    if len(lines) < 2:
        raise KokubanError("no markdown table in the llama-bench output")
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    if "test" not in header or "t/s" not in header:
        raise KokubanError(f"llama-bench table has no 'test' and 't/s' columns: {header}")
    rows = []
    for line in lines[2:]:
        cells = dict(zip(header, (c.strip() for c in line.strip("|").split("|")), strict=False))
        test, rate = _TEST.match(cells.get("test", "")), _MEAN_STD.match(cells.get("t/s", ""))
        if not test or not rate:
            raise KokubanError(f"cannot read the llama-bench row '{line}'")
        rows.append({**cells, "n_prompt": int(test["p"] or 0), "n_gen": int(test["n"] or 0),
                     "n_depth": int(test["d"] or 0),
                     "tokens_per_s": float(rate["mean"]), "tokens_per_s_std": float(rate["std"])})
    return rows


@dataclass(frozen=True)
class BatchedTest:
    """One llama-batched-bench row: `batch` sequences of `prompt` tokens processed (t_pp_s), then `gen` steps of
    `batch` tokens each (t_tg_s)."""

    prompt: int
    gen: int
    batch: int
    t_pp_s: float
    t_tg_s: float
    n_kv: int = 0


_BATCHED_COLUMNS = ("PP", "TG", "B", "N_KV", "T_PP s", "S_PP t/s", "T_TG s", "S_TG t/s", "T s", "S t/s")


def parse_batched_bench(text: str) -> list[BatchedTest]:
    """Rows of llama-batched-bench's output, JSONL (`--output-format jsonl`) or its markdown table."""
    tests = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{") and '"pl"' in line:
            r = json.loads(line)
            tests.append(BatchedTest(int(r["pp"]), int(r["tg"]), int(r["pl"]), float(r["t_pp"]), float(r["t_tg"]),
                                     int(r.get("n_kv", 0))))
        elif line.startswith("|") and not line.startswith("|--") and not line.lstrip("| ").startswith("PP"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            if len(cells) != len(_BATCHED_COLUMNS) or not cells[0].isdigit():
                continue
            c = dict(zip(_BATCHED_COLUMNS, cells, strict=True))
            tests.append(BatchedTest(int(c["PP"]), int(c["TG"]), int(c["B"]), float(c["T_PP s"]), float(c["T_TG s"]),
                                     int(c["N_KV"])))
    if not tests:
        raise KokubanError("no llama-batched-bench rows in the output (neither JSONL nor its markdown table)")
    return tests
