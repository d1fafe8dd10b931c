"""Oracle's latency table of Llama 3.1 405B on eight MI300X (`table.md`, copied) as rows, by the rule of
`../amd_vllm_nov/inclusion_rule.md` (its judge B); they are written with that judge's rows, in
`../amd_vllm_nov/rows.toml`.

The table is `| Batch Size | Output throughput in token per second (TPS) | Average latency in seconds |` at 128 tokens
in and 128 out.
"""

from __future__ import annotations

from pathlib import Path

from evidence import tables
from kokuban.validation.accuracy import load_published

HERE = Path(__file__).parent
TITLE = "Oracle's latency table of Llama 3.1 405B on eight MI300X"
SOURCE = ("https://blogs.oracle.com/cloud-infrastructure/post/serving-llama-31-405b-model-with-amd-mi300x-gpus "
          "(Latency measurements)")
ENGINE = "vLLM (ROCm), benchmark_latency.py"  # as the published set's three Oracle rows name it


def rows() -> list[dict]:
    """The table's rows at the batches the published set does not hold (it holds 1 and 256), mapped as its rows are:
    Llama 3.1 405B FP8 on eight MI300X at TP 8, KV bf16 (not stated), output tokens/s as the table gives it."""
    held = {r.batch for r in load_published()
            if r.id.startswith("oracle-") and r.input_tokens == r.output_tokens == 128}
    out = []
    for line in (HERE / "table.md").read_text().splitlines():
        cells = tables.cells(line)
        if line.startswith("|") and len(cells) == 3 and cells[0].isdigit() and int(cells[0]) not in held:
            batch = int(cells[0])
            out.append(tables.mi300x_row(f"oracle-llama31-405b-mi300x-fp8-bs{batch}-128-128", "llama-3.1-405b",
                                         "bf16", ENGINE, float(cells[1]), batch, 128, 128, SOURCE))
    return out
