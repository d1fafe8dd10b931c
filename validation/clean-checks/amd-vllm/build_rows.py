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


def tables(table: Path = HERE / "table.md") -> list[tuple[str, str, str, list[tuple[str, int, int, int, float]]]]:
    """(commit, date, vLLM version, [(model as written, batch, input, output, latency s)]) of each table, in order."""
    out, model = [], ""
    for line in table.read_text().splitlines():
        if line.startswith("## "):
            commit, date, _, version = line[3:].split()
            out.append((commit, date, version, []))
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if out and line.startswith("|") and len(cells) == 7 and cells[3].isdigit():
            model = cells[0] or model
            assert (cells[1] or "FP8") == "FP8" and (cells[2] or "8") == "8", line  # the rule's precision and TP
            out[-1][3].append((model, int(cells[3]), int(cells[4]), int(cells[5]), float(cells[6])))
    return out


def rows(commit: str, date: str, version: str, cells: list[tuple[str, int, int, int, float]]) -> list[dict]:
    """A table's cells as rows: output tokens/s = batch × output ÷ latency, eight MI300X at TP 8, fp8 weights and KV."""
    engine = f"vLLM {version} (ROCm {ROCM[version]}, benchmark_latency)"
    return [{"id": f"amdvllm-{version}-{date}-{MODELS[m]}-mi300x-fp8-tp8-b{batch}-{inp}-{out}", "model": MODELS[m],
             "accelerator": "mi300x", "num_gpus": 8, "tensor_parallel": 8, "expert_parallel": False,
             "weights_dtype": "fp8", "kv_dtype": "fp8", "engine": engine, "metric": "output_tokens_per_s",
             "value": batch * out / latency, "per_gpu": False, "batch": batch, "input_tokens": inp,
             "output_tokens": out, "scenario": "offline", "source": README.format(commit=commit)}
            for m, batch, inp, out, latency in cells if MODELS[m]]


def write() -> None:
    (check, *older) = tables()
    TABLE.write(HERE, rows(*check), README.format(commit=check[0]))
    built = [r for t in older for r in rows(*t)]
    head = f"# built by build_rows.py from table.md ({len(built)} rows): the older releases' tables, not pooled\n\n"
    (HERE / "versions.toml").write_text(head + TABLE.toml(built))


if __name__ == "__main__":
    write()
