"""Turn `table.md` (AMD's vLLM latency tables on eight MI300X, copied at each commit the rule names) into `rows.toml`
(the check: the first table, vLLM 0.9.0.1) and `versions.toml` (the older releases' tables, reported beside it) in the
published schema, by the rule of `inclusion-rule.md`:

    python validation/clean-checks/amd-vllm/build_rows.py

Each table is under a "## <commit> <date> vLLM <version>" line; a blank model cell continues the model above.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

HERE = Path(__file__).parent
README = "https://github.com/ROCm/vllm/blob/{commit}/docs/dev-docker/README.md (Latency Measurements)"
ROCM = {"0.9.0.1": "6.4.1", "0.8.5": "6.3.1", "0.7.3": "6.3.1"}  # each README's "The pre-built image includes"
MODELS = {"Llama 3.1 70B (amd/Llama-3.1-70B-Instruct-FP8-KV)": "llama-3.1-70b",
          "Llama 3.1 405B (amd/Llama-3.1-405B-Instruct-FP8-KV)": "llama-3.1-405b",
          "Llama 3.1 405B (amd/Llama-3.1-70B-Instruct-FP8-KV)": None}  # 0.7.3's tables: left out (the rule's addendum)

_spec = importlib.util.spec_from_file_location("perf_table", HERE.parent / "perf_table.py")
TABLE = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(TABLE)


def table_lines(text: str) -> list[tuple[str, list[str]]]:
    """(the "## " heading above it, its cells) of every data line of AMD's README tables in `text`, in order: a blank
    model cell continues the model above; every line is FP8 at TP 8 (the rules' precision and TP). The judges' builds
    (`../amd-vllm-judge/`, `../amd-vllm-nov/`) read their copies with it too."""
    out, heading, model = [], "", ""
    for line in text.splitlines():
        if line.startswith("## "):
            heading = line[3:].strip()
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if heading and line.startswith("|") and len(cells) >= 7 and cells[3].isdigit():
            model = cells[0] or model
            assert (cells[1] or "FP8") == "FP8" and (cells[2] or "8") == "8", line
            out.append((heading, [model, *cells[1:]]))
    return out


def measured(kind: str, cells: list[str]) -> tuple[int, int, int, float]:
    """(batch, input, output, output tokens/s) of a latency line (batch × output ÷ its seconds) or a throughput line
    (its tokens/s at batch = Max Num Seqs)."""
    if kind == "latency":
        batch, inp, out = int(cells[3]), int(cells[4]), int(cells[5])
        return batch, inp, out, batch * out / float(cells[6])
    return int(cells[6]), int(cells[3]), int(cells[4]), float(cells[7])


def mi300x_row(rid: str, model: str, kv: str, engine: str, value: float, batch: int, inp: int, out: int,
               source: str) -> dict:
    """A row of eight MI300X at TP 8, fp8 weights, output tokens/s, in the published schema."""
    return {"id": rid, "model": model, "accelerator": "mi300x", "num_gpus": 8, "tensor_parallel": 8,
            "expert_parallel": False, "weights_dtype": "fp8", "kv_dtype": kv, "engine": engine,
            "metric": "output_tokens_per_s", "value": value, "per_gpu": False, "batch": batch, "input_tokens": inp,
            "output_tokens": out, "scenario": "offline", "source": source}


def tables(table: Path = HERE / "table.md") -> list[tuple[str, str, str, list[list[str]]]]:
    """(commit, date, vLLM version, [cells of each data line]) of each table, in order."""
    out: dict[str, list[list[str]]] = {}
    for heading, cells in table_lines(table.read_text()):
        out.setdefault(heading, []).append(cells)
    return [(*heading.replace(" vLLM ", " ").split(), lines) for heading, lines in out.items()]


def rows(commit: str, date: str, version: str, lines: list[list[str]]) -> list[dict]:
    """A table's lines as rows: output tokens/s = batch × output ÷ latency, eight MI300X at TP 8, fp8 weights and KV."""
    engine = f"vLLM {version} (ROCm {ROCM[version]}, benchmark_latency)"
    out = []
    for cells in lines:
        if (model := MODELS[cells[0]]) is None:
            continue
        batch, inp, output, value = measured("latency", cells)
        out.append(mi300x_row(f"amdvllm-{version}-{date}-{model}-mi300x-fp8-tp8-b{batch}-{inp}-{output}", model,
                              "fp8", engine, value, batch, inp, output, README.format(commit=commit)))
    return out


def write() -> None:
    (check, *older) = tables()
    TABLE.write(HERE, rows(*check), README.format(commit=check[0]))
    built = [r for t in older for r in rows(*t)]
    head = f"# built by build_rows.py from table.md ({len(built)} rows): the older releases' tables, not pooled\n\n"
    (HERE / "versions.toml").write_text(head + TABLE.toml(built))


if __name__ == "__main__":
    write()
