"""Readers of the copied source tables (`evidence/sources/<source>/table.md`) and the writer of their rows.

Each source's `build.py` maps its copied table to rows of the published schema (the `[[result]]` tables of
`kokuban/data/published_results.toml`) by the source's inclusion rule, with the readers here; `rows_file` writes them
as the source's `rows.toml`. The layouts:

- TensorRT-LLM's performance overview, 0.10–0.14: | model | input/output | TP | one cell per GPU column |
  (`by_lengths`);
- 0.15 and 0.17: | model | TP | "input, output" | one cell per GPU column | (`by_tp`);
- v0.19–v0.21: one table per model and precision under "#### <model> <precision>", a GPU row, a TP row, then
  | "input, output" | | one cell per column | (`sectioned`);
- AMD's vLLM dev-docker README: tables under "## <heading>" lines, | model | dtype | TP | … | (`amd_lines`);
- llama.cpp's CUDA scoreboard as copied: one JSON record a line (`json_records`).

In every layout a blank model (or lengths, or TP) cell continues the line above, and thousands commas are removed
from values.
"""

from __future__ import annotations

import json
from pathlib import Path


def cells(line: str) -> list[str]:
    """The stripped cells of a Markdown table line."""
    return [c.strip() for c in line.strip().strip("|").split("|")]


def row(rid: str, model: str, accelerator: str, gpus: int, weights: str, kv: str, engine: str, metric: str,
        value: float, batch: int, inp: int, out: int, scenario: str, source: str) -> dict:
    """One row of the published schema: `gpus` GPUs in one tensor-parallel group, no expert parallelism, the value of
    the whole group (not per GPU)."""
    return {"id": rid, "model": model, "accelerator": accelerator, "num_gpus": gpus, "tensor_parallel": gpus,
            "expert_parallel": False, "weights_dtype": weights, "kv_dtype": kv, "engine": engine, "metric": metric,
            "value": value, "per_gpu": False, "batch": batch, "input_tokens": inp, "output_tokens": out,
            "scenario": scenario, "source": source}


def throughput_row(rid: str, model: str, gpu: str, tp: int, weights: str, kv: str, engine: str, value: float,
                   inp: int, out: int, source: str) -> dict:
    """An offline throughput cell: output tokens/s of the TP group, at the engine's own batch (0)."""
    return row(rid, model, gpu, tp, weights, kv, engine, "output_tokens_per_s", value, 0, inp, out, "offline", source)


def number(cell: str) -> float:
    """A table's value, thousands commas removed."""
    return float(cell.replace(",", ""))


def by_lengths(table: Path, models: dict, columns: tuple, prefix: str, engine: str, source: str) -> list[dict]:
    """Every non-empty cell of a | model | input/output | TP | GPU columns | table whose model and column the rule
    keeps.

    `models`: model as written → (catalog id, id suffix, longest input + output kept or None), or None (left out);
    `columns`: one (catalog GPU id, weights and KV dtype) per GPU column, left to right, or None (left out)."""
    out, model, lengths = [], "", ""
    for line in table.read_text().splitlines():
        c = cells(line)
        if not line.startswith("| ") or len(c) != 3 + len(columns) or not c[2].isdigit():
            continue
        model, lengths, tp = c[0] or model, c[1] or lengths, int(c[2])
        inp, out_tokens = (int(x) for x in lengths.split("/"))
        mapped = models[model]
        if mapped is None or (mapped[2] and inp + out_tokens > mapped[2]):
            continue
        catalog, suffix, _ = mapped
        for column, value in zip(columns, c[3:], strict=True):
            if column is None or not value:
                continue
            gpu, dtype = column
            out.append(throughput_row(f"{prefix}-{catalog}{suffix}-{gpu}-{dtype}-tp{tp}-{inp}-{out_tokens}", catalog,
                                      gpu, tp, dtype, dtype, engine, number(value), inp, out_tokens, source))
    return out


def by_tp(table: Path, models: dict, columns: tuple, prefix: str, version: str, source: str) -> list[dict]:
    """Every non-empty cell of a | model | TP | "input, output" | GPU columns | table (a line may stop before its last
    columns) whose lengths the rule keeps.

    `models`: model as written → (catalog id, id suffix, longest input + output kept or None); `columns`: one
    (catalog GPU id, weights and KV dtype) per GPU column. The engine is "TensorRT-LLM `version` (trtllm-bench)", and
    "(gptManagerBenchmark IFB)" for the GH200, which NVIDIA ran with that tool."""
    out, model, tp = [], "", 0
    for line in table.read_text().splitlines():
        c = cells(line)
        if not line.startswith("| ") or len(c) < 3 or "," not in c[2] or c[1] == "TP":
            continue
        model, tp = c[0] or model, int(c[1]) if c[1] else tp
        inp, out_tokens = (int(x) for x in c[2].split(","))
        catalog, suffix, window = models[model]
        if window and inp + out_tokens > window:
            continue
        values = (c[3:] + [""] * len(columns))[:len(columns)]
        for (gpu, dtype), value in zip(columns, values, strict=True):
            if not value:
                continue
            tool = "gptManagerBenchmark IFB" if gpu == "gh200" else "trtllm-bench"
            out.append(throughput_row(f"{prefix}-{catalog}{suffix}-{gpu}-{dtype}-tp{tp}-{inp}-{out_tokens}", catalog,
                                      gpu, tp, dtype, dtype, f"TensorRT-LLM {version} ({tool})", number(value), inp,
                                      out_tokens, source))
    return out


def sectioned(table: Path) -> list[tuple[str, str, str, int, int, int, str]]:
    """(model as written, precision, GPU as written, TP, input, output, value or "") of every data cell of a table in
    sections ("#### Llama 3.3 70B FP8"): a GPU row (a blank cell continues the GPU to its left), a TP row, then
    | "input, output" | | one cell per column |. A header cell may end in ":"."""
    out, title, gpus, tps = [], "", [], []
    for line in table.read_text().splitlines():
        if line.startswith("#### "):
            title, gpus, tps = line[5:].strip(), [], []
            continue
        c = cells(line)
        if not title or not line.startswith("|") or len(c) < 3:
            continue
        if c[1].rstrip(":") == "GPU":
            for name in c[2:]:
                gpus.append(name or gpus[-1])
        elif c[1].rstrip(":") == "TP Size":
            tps = [int(x) for x in c[2:]]
        elif "," in c[0] and c[0].replace(",", "").replace(" ", "").isdigit():
            inp, out_tokens = (int(x) for x in c[0].split(","))
            model, precision = title.rsplit(" ", 1)
            for gpu, tp, value in zip(gpus, tps, c[2:], strict=True):
                out.append((model, precision, gpu, tp, inp, out_tokens, value))
    return out


def amd_lines(text: str) -> list[tuple[str, list[str]]]:
    """(the "## " heading above it, its cells) of every data line of AMD's vLLM README tables in `text`, in order: a
    blank model cell continues the model above; every line is FP8 at TP 8 (checked)."""
    out, heading, model = [], "", ""
    for line in text.splitlines():
        if line.startswith("## "):
            heading = line[3:].strip()
            continue
        c = cells(line)
        if heading and line.startswith("|") and len(c) >= 7 and c[3].isdigit():
            model = c[0] or model
            assert (c[1] or "FP8") == "FP8" and (c[2] or "8") == "8", line
            out.append((heading, [model, *c[1:]]))
    return out


def amd_measured(kind: str, c: list[str]) -> tuple[int, int, int, float]:
    """(batch, input, output, output tokens/s) of an AMD latency line (batch × output ÷ its seconds) or throughput
    line (its tokens/s at batch = Max Num Seqs)."""
    if kind == "latency":
        batch, inp, out = int(c[3]), int(c[4]), int(c[5])
        return batch, inp, out, batch * out / float(c[6])
    return int(c[6]), int(c[3]), int(c[4]), float(c[7])


def mi300x_row(rid: str, model: str, kv: str, engine: str, value: float, batch: int, inp: int, out: int,
               source: str) -> dict:
    """A row of eight MI300X at TP 8, fp8 weights, output tokens/s."""
    return row(rid, model, "mi300x", 8, "fp8", kv, engine, "output_tokens_per_s", value, batch, inp, out, "offline",
               source)


def json_records(table: Path) -> list[dict]:
    """The JSON records of a copied table, one a line (the lines that start with "{")."""
    return [json.loads(line) for line in table.read_text().splitlines() if line.startswith("{")]


def toml(rows: list[dict]) -> str:
    """`rows` as `[[result]]` tables, keys in their order: strings JSON-quoted, booleans lower case, numbers by repr."""
    def value(v):
        return json.dumps(v) if isinstance(v, str) else ("true" if v is True else "false" if v is False else repr(v))

    return "".join("[[result]]\n" + "".join(f"{k} = {value(v)}\n" for k, v in r.items()) + "\n" for r in rows)


def rows_file(module: str, rows: list[dict], source: str, made_from: str = "table.md") -> str:
    """The text of a source's rows.toml: a comment naming the builder (`module`, run with `python -m`), what it read,
    the count and the source, then the rows."""
    return f"# built by `python -m {module}` from {made_from} ({len(rows)} rows); source {source}\n\n" + toml(rows)


def write(files: dict[Path, str]) -> None:
    """Write each file whose text differs and say which (a source's `build.py` run as a module)."""
    for path, text in files.items():
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
            print("wrote", path)
        else:
            print("unchanged", path)
