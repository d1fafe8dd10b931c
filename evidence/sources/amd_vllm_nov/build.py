"""The second MI300X candidate's judges, by the rule of `inclusion_rule.md`, as `rows.toml` (judge A: the newest
dev-docker README's tables, vLLM 0.11.1, `source-v0.11.1rc.md`; judge B: Oracle's rows, `../oracle_mi300x/`) and
`beside.toml` (the August 2025 README's, vLLM 0.10.0, `source-v0.10.0.md`: reported, not deciding):

    python -m evidence.sources.amd_vllm_nov.build      # rewrites rows.toml and beside.toml

A README copy has "## latency" and "## throughput" sections; a blank model cell continues the model above.
"""

from __future__ import annotations

from pathlib import Path

from evidence import tables
from evidence.sources.amd_vllm import build as amd_vllm
from evidence.sources.oracle_mi300x import build as oracle

HERE = Path(__file__).parent
TITLE = "AMD's vLLM 0.11.1 README tables and Oracle's latency table on eight MI300X"
#: source file → (vLLM version, ROCm version, where it was read)
README_SOURCES = {
    "source-v0.11.1rc.md": ("0.11.1", "7.0.0", "ROCm vLLM dev-docker README, vLLM 0.11.1 RC (tool library index copies "
                                               "59175608062 and 59140951019, equal tables; no repository or commit)"),
    "source-v0.10.0.md": ("0.10.0", "6.4.1", "https://github.com/ROCm/vllm/blob/7802e2b729300adb67a665783292cd25684d1292/"
                                             "docs/dev-docker/README.md"),
}


def readme_rows(name: str) -> list[dict]:
    """A README copy's rows: latency → output tokens/s = batch × output ÷ latency (KV fp16: no `--kv-cache-dtype` in
    its command), throughput → the table's tokens/s at batch = Max Num Seqs (KV fp8, as its command sets)."""
    version, rocm, source = README_SOURCES[name]
    out = []
    for kind, cells in tables.amd_lines((HERE / name).read_text()):
        if kind not in ("latency", "throughput"):
            continue
        model = amd_vllm.MODELS.get(cells[0])
        assert model, cells[0]  # these releases name each model's own checkpoint
        batch, inp, output, value = tables.amd_measured(kind, cells)
        kv, tool = ("fp16", "benchmark_latency") if kind == "latency" else ("fp8", "benchmark_throughput")
        out.append(tables.mi300x_row(f"amdvllm-{kind}-{version}-{model}-mi300x-fp8-tp8-b{batch}-{inp}-{output}",
                                     model, kv, f"vLLM {version} (ROCm {rocm}, {tool})", value, batch, inp, output,
                                     f"{source} ({kind.capitalize()} Measurements)"))
    return out


def rows() -> list[dict]:
    """The judging rows: judge A's, then judge B's."""
    return readme_rows("source-v0.11.1rc.md") + oracle.rows()


def files() -> dict[Path, str]:
    beside = readme_rows("source-v0.10.0.md")
    head = (f"# built by `python -m {__package__}.build` ({len(beside)} rows): vLLM 0.10.0's README tables, reported "
            "beside the judges\n\n")
    return {HERE / "rows.toml": tables.rows_file(f"{__package__}.build", rows(), "the README of vLLM 0.11.1 and "
                                                 "Oracle's blog (each row's source)", "source-v0.11.1rc.md and "
                                                 "../oracle_mi300x/table.md"),
            HERE / "beside.toml": head + tables.toml(beside)}


if __name__ == "__main__":
    tables.write(files())
