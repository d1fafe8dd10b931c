"""Turn `table.md` (llama.cpp's CUDA scoreboard records, copied) into `rows.toml` in the published schema, by part B
of the rule of `../lmdeploy01/inclusion-rule.md`:

    python validation/clean-checks/llamacpp-cuda/build_rows.py

and predict them once with `report.py`. Each record is one llama-bench test (pp512 or tg128) of Llama 2 7B Q4_0 on
one GPU, with or without flash attention; its `notes` name the chip, the test, the commit and the setting.
"""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

HERE = Path(__file__).parent
SOURCE = ("https://github.com/ggml-org/llama.cpp/discussions/15013 (the scoreboard of its opening post, read through "
          "smoothyy3/willitrun data/normalized/llama_cpp_cuda.jsonl at 04cac64616108bedd06a710b91bdc1b4f4758ce9, "
          "collected 2026-04-05)")
GPUS = {"RTX 5090": "rtx-5090", "RTX 3090 Ti": "rtx-3090-ti", "A100 80 GB": "a100-80gb"}
PROMPT_TOKENS = 512  # pp512: one 512-token prompt
GENERATED_TOKENS = 128  # tg128: 128 tokens decoded from an empty cache

_spec = importlib.util.spec_from_file_location("perf_table", HERE.parent / "perf_table.py")
TABLE = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(TABLE)


def records(table: Path = HERE / "table.md") -> list[dict]:
    """The JSON records of `table` (one a line)."""
    return [json.loads(line) for line in table.read_text().splitlines() if line.startswith("{")]


def rows(table: Path = HERE / "table.md", gpus: dict[str, str] = GPUS, source: str = SOURCE) -> list[dict]:
    """Every record of `table` (its chip mapped by `gpus`): tg128 → a user's decode speed at batch 1 (the CUDA-graph
    decode loop), pp512 → the time to the first token of one 512-token prompt (512 ÷ its tokens/s, prompt
    processing)."""
    out = []
    for r in records(table):
        notes = dict(re.findall(r"(chip|commit)=([^;]+)", r["notes"]))
        fa = "fa0" if "without Flash Attention" in r["notes"] else "fa1"
        gpu, test = gpus[notes["chip"]], r["benchmark_id"].split("__")[4]
        decode = test == "tg128"
        kind = "CUDA-graph decode loop" if decode else "prompt processing"
        engine = f"llama.cpp (CUDA build {notes['commit']}, {kind})"
        out.append({"id": f"llamacpp-cuda-llama-2-7b-q4_0-{gpu}-{test}-{fa}", "model": "llama-2-7b", "accelerator": gpu,
                    "num_gpus": 1, "tensor_parallel": 1, "expert_parallel": False, "weights_dtype": "q4_0",
                    "kv_dtype": "fp16", "engine": engine,
                    "metric": "tokens_per_s_per_user" if decode else "time_to_first_token_s",
                    "value": r["value"] if decode else PROMPT_TOKENS / r["value"], "per_gpu": False, "batch": 1,
                    "input_tokens": 1 if decode else PROMPT_TOKENS, "output_tokens": GENERATED_TOKENS if decode else 1,
                    "scenario": "single_stream", "source": source})
    return out


if __name__ == "__main__":
    TABLE.write(HERE, rows(), SOURCE)
