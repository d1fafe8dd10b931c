"""Turn `table.md` (the July 2025 latency tables and every distinct throughput table of ROCm/vllm's dev-docker README,
copied) into `rows.toml` in the published schema, by the rule of `inclusion-rule.md`:

    python validation/clean-checks/amd-vllm-judge/build_rows.py

Each table is under a "## <latency|throughput> <commit> <date> <vLLM version>" line; a blank model cell continues the
model above. The latency rows are mapped as `../amd-vllm/build_rows.py` maps 0.9.0.1's, with the KV cache in fp16 (the
July command sets no `--kv-cache-dtype`); the throughput rows as the published set's two AMD rows are.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

HERE = Path(__file__).parent


_spec = importlib.util.spec_from_file_location("amd_latency", HERE.parent / "amd-vllm" / "build_rows.py")
LATENCY = importlib.util.module_from_spec(_spec)  # 0.9.0.1's rule: its table reader and latency mapping
_spec.loader.exec_module(LATENCY)
ROCM = LATENCY.ROCM | {"0.9.1": "6.4.1"}  # each README's "The pre-built image includes"


def tables(table: Path = HERE / "table.md") -> list[tuple[str, str, str, str, list[list[str]]]]:
    """(kind, commit, date, vLLM version, [cells of each data line]) of each table, in order."""
    out: dict[str, list[list[str]]] = {}
    for heading, cells in LATENCY.table_lines(table.read_text()):
        out.setdefault(heading, []).append(cells)
    return [(*heading.replace(" vLLM ", " ").split(), lines) for heading, lines in out.items()]


def _published_cells() -> set[tuple[str, int, int, float]]:
    from kokuban.validation.accuracy import load_published

    return {(r.model, r.input_tokens, r.output_tokens, r.value) for r in load_published() if r.accelerator == "mi300x"}


def rows(table: Path = HERE / "table.md") -> tuple[list[dict], list[str]]:
    """The judge's rows and the ids of the cells left out (a published row's cell; a model cell naming another
    model's checkpoint)."""
    seen, out, left = _published_cells(), [], []
    for kind, commit, date, version, lines in tables(table):
        source = LATENCY.README.format(commit=commit).replace("Latency", kind.capitalize())
        engine = (f"vLLM {version} (ROCm {ROCM[version]}, benchmark_latency)" if kind == "latency"
                  else f"vLLM {version} (ROCm {ROCM[version]}, benchmark_throughput)")
        for cells in lines:
            model = LATENCY.MODELS.get(cells[0])
            batch, inp, output, value = LATENCY.measured(kind, cells)
            rid = f"amdvllm-{kind}-{version}-{date}-{model}-mi300x-fp8-tp8-b{batch}-{inp}-{output}"
            if model is None or (model, inp, output, value) in seen:
                left.append(rid)
                continue
            kv = "fp16" if kind == "latency" else "fp8"  # July's latency command sets no KV dtype
            out.append(LATENCY.mi300x_row(rid, model, kv, engine, value, batch, inp, output, source))
    return out, left


if __name__ == "__main__":
    built, left_out = rows()
    LATENCY.TABLE.write(HERE, built, LATENCY.README.format(commit="<each row's commit>"))
    print("left out:", "; ".join(left_out) or "none")
