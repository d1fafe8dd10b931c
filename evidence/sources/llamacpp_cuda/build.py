"""llama.cpp's CUDA scoreboard records (`table.md`, copied) as rows of the published schema, by part B of the rule of
`../lmdeploy01/inclusion_rule.md`; the fifteen GPUs of `../llamacpp_sm/` are mapped by the same `rows`:

    python -m evidence.sources.llamacpp_cuda.build      # rewrites rows.toml

Each record is one llama-bench test (pp512 or tg128) of Llama 2 7B Q4_0 on one GPU, with or without flash attention;
its `notes` name the chip, the test, the commit and the setting.
"""

from __future__ import annotations

import re
from pathlib import Path

from evidence import tables

HERE = Path(__file__).parent
TITLE = "llama.cpp's CUDA scoreboard (Llama 2 7B Q4_0) on the RTX 5090, RTX 3090 Ti and A100 80 GB"
SOURCE = ("https://github.com/ggml-org/llama.cpp/discussions/15013 (the scoreboard of its opening post, read through "
          "smoothyy3/willitrun data/normalized/llama_cpp_cuda.jsonl at 04cac64616108bedd06a710b91bdc1b4f4758ce9, "
          "collected 2026-04-05)")
GPUS = {"RTX 5090": "rtx-5090", "RTX 3090 Ti": "rtx-3090-ti", "A100 80 GB": "a100-80gb"}
PROMPT_TOKENS = 512  # pp512: one 512-token prompt
GENERATED_TOKENS = 128  # tg128: 128 tokens decoded from an empty cache


def rows(table: Path = HERE / "table.md", gpus: dict[str, str] = GPUS, source: str = SOURCE) -> list[dict]:
    """Every record of `table` (its chip mapped by `gpus`): tg128 → a user's decode speed at batch 1 (the CUDA-graph
    decode loop), pp512 → the time to the first token of one 512-token prompt (512 ÷ its tokens/s, prompt
    processing)."""
    out = []
    for r in tables.json_records(table):
        notes = dict(re.findall(r"(chip|commit)=([^;]+)", r["notes"]))
        fa = "fa0" if "without Flash Attention" in r["notes"] else "fa1"
        gpu, test = gpus[notes["chip"]], r["benchmark_id"].split("__")[4]
        decode = test == "tg128"
        kind = "CUDA-graph decode loop" if decode else "prompt processing"
        engine = f"llama.cpp (CUDA build {notes['commit']}, {kind})"
        out.append(tables.row(f"llamacpp-cuda-llama-2-7b-q4_0-{gpu}-{test}-{fa}", "llama-2-7b", gpu, 1, "q4_0", "fp16",
                              engine, "tokens_per_s_per_user" if decode else "time_to_first_token_s",
                              r["value"] if decode else PROMPT_TOKENS / r["value"], 1, 1 if decode else PROMPT_TOKENS,
                              GENERATED_TOKENS if decode else 1, "single_stream", source))
    return out


def files() -> dict[Path, str]:
    return {HERE / "rows.toml": tables.rows_file(f"{__package__}.build", rows(), SOURCE)}


if __name__ == "__main__":
    tables.write(files())
