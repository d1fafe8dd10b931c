"""The July 2025 latency tables and every distinct throughput table of ROCm/vllm's dev-docker README (`table.md`,
copied) as rows of the published schema, by the rule of `inclusion_rule.md`:

    python -m evidence.sources.amd_vllm_judge.build      # rewrites rows.toml, names the cells left out

Each table is under a "## <latency|throughput> <commit> <date> <vLLM version>" line; a blank model cell continues the
model above. The latency rows are mapped as `../amd_vllm/build.py` maps 0.9.0.1's, with the KV cache in fp16 (the
July command sets no `--kv-cache-dtype`); the throughput rows as the published set's two AMD rows are.
"""

from __future__ import annotations

from pathlib import Path

from evidence import tables
from evidence.sources.amd_vllm import build as amd_vllm
from kokuban.validation.accuracy import load_published

HERE = Path(__file__).parent
TITLE = "AMD's vLLM 0.9.1 README tables on eight MI300X (July 2025 latency, and throughput)"
ROCM = amd_vllm.ROCM | {"0.9.1": "6.4.1"}  # each README's "The pre-built image includes"


def _published_cells() -> set[tuple[str, int, int, float]]:
    return {(r.model, r.input_tokens, r.output_tokens, r.value) for r in load_published() if r.accelerator == "mi300x"}


def rows(table: Path = HERE / "table.md") -> tuple[list[dict], list[str]]:
    """The judge's rows and the ids of the cells left out (a published row's cell; a model cell naming another
    model's checkpoint)."""
    seen, out, left = _published_cells(), [], []
    for kind, commit, date, version, lines in amd_vllm.tables_of(table):
        source = amd_vllm.README.format(commit=commit).replace("Latency", kind.capitalize())
        engine = (f"vLLM {version} (ROCm {ROCM[version]}, benchmark_latency)" if kind == "latency"
                  else f"vLLM {version} (ROCm {ROCM[version]}, benchmark_throughput)")
        for cells in lines:
            model = amd_vllm.MODELS.get(cells[0])
            batch, inp, output, value = tables.amd_measured(kind, cells)
            rid = f"amdvllm-{kind}-{version}-{date}-{model}-mi300x-fp8-tp8-b{batch}-{inp}-{output}"
            if model is None or (model, inp, output, value) in seen:
                left.append(rid)
                continue
            kv = "fp16" if kind == "latency" else "fp8"  # July's latency command sets no KV dtype
            out.append(tables.mi300x_row(rid, model, kv, engine, value, batch, inp, output, source))
    return out, left


def files() -> dict[Path, str]:
    source = amd_vllm.README.format(commit="<each row's commit>")
    return {HERE / "rows.toml": tables.rows_file(f"{__package__}.build", rows()[0], source)}


if __name__ == "__main__":
    tables.write(files())
    print("left out:", "; ".join(rows()[1]) or "none")
