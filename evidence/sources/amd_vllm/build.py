"""AMD's vLLM latency tables on eight MI300X (`table.md`, copied at each commit the rule names) as `rows.toml` (the
first table, vLLM 0.9.0.1) and `versions.toml` (the older releases' tables of the same cells), by the rule of
`inclusion_rule.md`; the MI300X judges (`../amd_vllm_judge/`, `../amd_vllm_nov/`) map their copies with its
`MODELS` and `ROCM`:

    python -m evidence.sources.amd_vllm.build      # rewrites rows.toml and versions.toml

Each table is under a "## <commit> <date> vLLM <version>" line (`tables.amd_lines`).
"""

from __future__ import annotations

from pathlib import Path

from evidence import tables

HERE = Path(__file__).parent
TITLE = "AMD's vLLM 0.9.0.1 latency table on eight MI300X"
README = "https://github.com/ROCm/vllm/blob/{commit}/docs/dev-docker/README.md (Latency Measurements)"
ROCM = {"0.9.0.1": "6.4.1", "0.8.5": "6.3.1", "0.7.3": "6.3.1"}  # each README's "The pre-built image includes"
MODELS = {"Llama 3.1 70B (amd/Llama-3.1-70B-Instruct-FP8-KV)": "llama-3.1-70b",
          "Llama 3.1 405B (amd/Llama-3.1-405B-Instruct-FP8-KV)": "llama-3.1-405b",
          "Llama 3.1 405B (amd/Llama-3.1-70B-Instruct-FP8-KV)": None}  # 0.7.3's tables: left out (the rule's addendum)


def tables_of(table: Path = HERE / "table.md") -> list[tuple[str, ...]]:
    """(commit, date, vLLM version, [cells of each data line]) of each table of `table`, in order; the judges' copies
    head theirs "## <kind> <commit> <date> vLLM <version>" and get (kind, commit, date, version, lines)."""
    out: dict[str, list[list[str]]] = {}
    for heading, cells in tables.amd_lines(table.read_text()):
        out.setdefault(heading, []).append(cells)
    return [(*heading.replace(" vLLM ", " ").split(), lines) for heading, lines in out.items()]


def rows(commit: str, date: str, version: str, lines: list[list[str]]) -> list[dict]:
    """A table's lines as rows: output tokens/s = batch × output ÷ latency, eight MI300X at TP 8, fp8 weights and KV."""
    engine = f"vLLM {version} (ROCm {ROCM[version]}, benchmark_latency)"
    out = []
    for cells in lines:
        if (model := MODELS[cells[0]]) is None:
            continue
        batch, inp, output, value = tables.amd_measured("latency", cells)
        out.append(tables.mi300x_row(f"amdvllm-{version}-{date}-{model}-mi300x-fp8-tp8-b{batch}-{inp}-{output}", model,
                                     "fp8", engine, value, batch, inp, output, README.format(commit=commit)))
    return out


def files() -> dict[Path, str]:
    (check, *older) = tables_of()
    built = [r for t in older for r in rows(*t)]
    head = (f"# built by `python -m {__package__}.build` from table.md ({len(built)} rows): the older releases' "
            "tables, not pooled\n\n")
    return {HERE / "rows.toml": tables.rows_file(f"{__package__}.build", rows(*check), README.format(commit=check[0])),
            HERE / "versions.toml": head + tables.toml(built)}


if __name__ == "__main__":
    tables.write(files())
