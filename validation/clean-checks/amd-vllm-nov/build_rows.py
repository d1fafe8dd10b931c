"""The second MI300X candidate's judges, by the rule of `inclusion-rule.md`, into `rows.toml` (judge A: the newest
dev-docker README's tables, vLLM 0.11.1; judge B: Oracle's unpublished rows, `../oracle-mi300x/source.md`) and
`beside.toml` (the August 2025 README's, vLLM 0.10.0: reported, not deciding):

    python validation/clean-checks/amd-vllm-nov/build_rows.py

A README source has "## latency" and "## throughput" sections; a blank model cell continues the model above. Oracle's
latency table is `| Batch Size | Output throughput in token per second (TPS) | Average latency in seconds |` at 128
tokens in and 128 out.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

HERE = Path(__file__).parent
#: source file → (vLLM version, ROCm version, where it was read)
README_SOURCES = {
    "source-v0.11.1rc.md": ("0.11.1", "7.0.0", "ROCm vLLM dev-docker README, vLLM 0.11.1 RC (tool library index copies "
                                               "59175608062 and 59140951019, equal tables; no repository or commit)"),
    "source-v0.10.0.md": ("0.10.0", "6.4.1", "https://github.com/ROCm/vllm/blob/7802e2b729300adb67a665783292cd25684d1292/"
                                             "docs/dev-docker/README.md"),
}
ORACLE = ("https://blogs.oracle.com/cloud-infrastructure/post/serving-llama-31-405b-model-with-amd-mi300x-gpus "
          "(Latency measurements)")
ORACLE_ENGINE = "vLLM (ROCm), benchmark_latency.py"  # as the published set's three Oracle rows name it


_spec = importlib.util.spec_from_file_location("amd_latency", HERE.parent / "amd-vllm" / "build_rows.py")
LATENCY = importlib.util.module_from_spec(_spec)  # 0.9.0.1's rule: its table reader and latency mapping
_spec.loader.exec_module(LATENCY)


def readme_rows(name: str) -> list[dict]:
    """A README source's rows: latency → output tokens/s = batch × output ÷ latency (KV fp16: no `--kv-cache-dtype` in
    its command), throughput → the table's tokens/s at batch = Max Num Seqs (KV fp8, as its command sets)."""
    version, rocm, source = README_SOURCES[name]
    out = []
    for kind, cells in LATENCY.table_lines((HERE / name).read_text()):
        if kind not in ("latency", "throughput"):
            continue
        model = LATENCY.MODELS.get(cells[0])
        assert model, cells[0]  # these releases name each model's own checkpoint
        batch, inp, output, value = LATENCY.measured(kind, cells)
        kv, tool = ("fp16", "benchmark_latency") if kind == "latency" else ("fp8", "benchmark_throughput")
        out.append(LATENCY.mi300x_row(f"amdvllm-{kind}-{version}-{model}-mi300x-fp8-tp8-b{batch}-{inp}-{output}",
                                      model, kv, f"vLLM {version} (ROCm {rocm}, {tool})", value, batch, inp, output,
                                      f"{source} ({kind.capitalize()} Measurements)"))
    return out


def oracle_rows() -> list[dict]:
    """Oracle's latency table at the batches the published set does not hold (it holds 1 and 256), mapped as its rows
    are: Llama 3.1 405B FP8 on eight MI300X at TP 8, KV bf16 (not stated), output tokens/s as the table gives it."""
    from kokuban.validation.accuracy import load_published

    held = {r.batch for r in load_published()
            if r.id.startswith("oracle-") and r.input_tokens == r.output_tokens == 128}
    out = []
    for line in (HERE.parent / "oracle-mi300x" / "source.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and len(cells) == 3 and cells[0].isdigit() and int(cells[0]) not in held:
            batch = int(cells[0])
            out.append(LATENCY.mi300x_row(f"oracle-llama31-405b-mi300x-fp8-bs{batch}-128-128", "llama-3.1-405b",
                                          "bf16", ORACLE_ENGINE, float(cells[1]), batch, 128, 128, ORACLE))
    return out


def write() -> None:
    judges = readme_rows("source-v0.11.1rc.md") + oracle_rows()
    LATENCY.TABLE.write(HERE, judges, "the README of vLLM 0.11.1 and Oracle's blog (each row's source)")
    beside = readme_rows("source-v0.10.0.md")
    head = f"# built by build_rows.py ({len(beside)} rows): vLLM 0.10.0's README tables, reported beside the judges\n\n"
    (HERE / "beside.toml").write_text(head + LATENCY.TABLE.toml(beside))


if __name__ == "__main__":
    write()
