"""Public trace formats, read as kokuban traces: each an adapter from its rows to kokuban's row fields.

`traces.read_trace` reads the file as CSV or JSON lines, then the first adapter whose `detect` accepts the first
row rewrites every row to `arrival_s`, `prompt_tokens`, `output_tokens` (+ `prefix_id`, `prefix_tokens`); rows of
kokuban's own schema pass through. A new format is a (detect, convert) pair and one entry in `ADAPTERS`.

azure     Azure LLM inference traces (github.com/Azure/AzurePublicDataset: AzureLLMInferenceTrace_code.csv and
          _conv.csv, 2023, Splitwise; the 2024 week-long traces, DynamoLLM): CSV `TIMESTAMP,ContextTokens,
          GeneratedTokens`, TIMESTAMP an absolute wall-clock time ("2023-11-16 18:15:46.6805900").
          arrival_s = TIMESTAMP − the earliest TIMESTAMP; prompt = ContextTokens; output = GeneratedTokens.
mooncake  Mooncake's FAST'25 traces (github.com/kvcache-ai/Mooncake, FAST25-release/traces): JSON lines
          {"timestamp": ms since the first request, "input_length", "output_length", "hash_ids": [...]}, each hash
          id one block of `MOONCAKE_BLOCK_TOKENS` prompt tokens; equal ids at the start of two prompts are a
          shared prefix. arrival_s = timestamp / 1000. Prefix: kokuban keeps one prefix per request, so the
          prefix tree is flattened to its first block: prefix_id = the first hash id, prefix_tokens = 512 × the
          leading hash ids that occur in another request too (at most the prompt). Exact when the requests that
          share a first block share nested prefixes; approximate when siblings diverge at different depths.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from kokuban.errors import KokubanError

Rows = list[tuple[int, dict[str, Any]]]
#: Tokens per Mooncake hash id (the trace's block size: Mooncake's trace README, and the AIPerf and AISBench
#: Mooncake loaders' default of 512)
MOONCAKE_BLOCK_TOKENS = 512
AZURE_COLUMNS = ("TIMESTAMP", "ContextTokens", "GeneratedTokens")


def _is_azure(row: dict[str, Any]) -> bool:
    return all(key in row for key in AZURE_COLUMNS)


def _azure(path: Path, rows: Rows) -> Rows:
    try:
        stamps = np.array([str(row["TIMESTAMP"]).strip() for _, row in rows], dtype="datetime64[ns]")
    except ValueError:
        for number, row in rows:  # find the line to name
            try:
                np.datetime64(str(row["TIMESTAMP"]).strip(), "ns")
            except ValueError:
                raise KokubanError(f"{path.name} line {number}: TIMESTAMP {row['TIMESTAMP']!r} is not a date and "
                                   f"time (e.g. 2023-11-16 18:15:46.6805900)") from None
        raise
    seconds = ((stamps - stamps.min()) / np.timedelta64(1, "ns") / 1e9).tolist()
    return [(number, {"arrival_s": s, "prompt_tokens": row["ContextTokens"], "output_tokens": row["GeneratedTokens"]})
            for (number, row), s in zip(rows, seconds, strict=True)]


def _is_mooncake(row: dict[str, Any]) -> bool:
    return "input_length" in row and "timestamp" in row


def _mooncake(path: Path, rows: Rows) -> Rows:
    ids = [row.get("hash_ids") or [] for _, row in rows]
    for (number, _), h in zip(rows, ids, strict=True):
        if not isinstance(h, list):
            raise KokubanError(f"{path.name} line {number}: hash_ids must be a list of block ids")
    seen = Counter(x for h in ids for x in set(map(str, h)))
    out = []
    for (number, row), h in zip(rows, ids, strict=True):
        try:
            arrival = float(row["timestamp"]) / 1000.0
        except (TypeError, ValueError):
            raise KokubanError(f"{path.name} line {number}: timestamp {row['timestamp']!r} is not a number") from None
        new = {"arrival_s": arrival, "prompt_tokens": row.get("input_length"),
               "output_tokens": row.get("output_length")}
        shared = 0
        for x in map(str, h):
            if seen[x] < 2:
                break
            shared += 1
        if shared:
            try:
                prompt = int(row["input_length"])
            except (TypeError, ValueError):
                prompt = 0  # the common parser names the bad input_length
            new |= {"prefix_id": f"mooncake:{h[0]}", "prefix_tokens": min(shared * MOONCAKE_BLOCK_TOKENS, prompt)}
        out.append((number, new))
    return out


#: Adapters by format name: (does this first row look like the format, rewrite the rows).
ADAPTERS: dict[str, tuple[Callable[[dict[str, Any]], bool], Callable[[Path, Rows], Rows]]] = {
    "azure": (_is_azure, _azure),
    "mooncake": (_is_mooncake, _mooncake),
}


def adapt(path: Path, rows: Rows) -> Rows:
    """`rows` in kokuban's fields: rewritten by the first adapter that recognises the first row, else as given."""
    first = rows[0][1]
    for detect, convert in ADAPTERS.values():
        if detect(first):
            return convert(path, rows)
    return rows
