"""Turn `table.md` (TensorRT-LLM 0.15's throughput table, copied) into `rows.toml` in the published schema, by the
rule of `inclusion-rule.md`:

    python validation/clean-checks/trtllm015/build_rows.py

and predict them once with `report.py`. The table's layout differs from 0.13's and 0.14's (`../perf_table.rows`):
| model | TP | "input, output" | one cell per GPU column |, and a row may stop before its last columns (empty).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

HERE = Path(__file__).parent
SOURCE = ("NVIDIA/TensorRT-LLM docs/source/performance/perf-overview.md, version 0.15.0 (tool library index file id "
          "5939417815; commit not named by the index)")
#: model as written → (catalog id, id suffix, longest input + output kept: the checkpoint's window)
MODELS = {"LLaMA v3.1 8B": ("llama-3.1-8b", "", None), "LLaMA v3.1 70B": ("llama-3.1-70b", "", None),
          "LLaMA v3 70B": ("llama-3.1-70b", "-v3", 8192), "Mistral 7B": ("mistral-7b-v0.3", "", 4096),
          "Mixtral 8x7B": ("mixtral-8x7b", "", None), "Mixtral 8x22B": ("mixtral-8x22b", "", None)}
#: the six GPU columns, left to right: (catalog id, weights and KV dtype); "Mixed" is the unquantized 16-bit engine
COLUMNS = (("h100-sxm", "fp8"), ("h100-sxm", "fp16"), ("a100-80gb", "fp16"), ("a100-pcie-80gb", "fp16"),
           ("l40s", "fp8"), ("gh200", "fp8"))

_spec = importlib.util.spec_from_file_location("perf_table", HERE.parent / "perf_table.py")
TABLE = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(TABLE)


def cells() -> list[tuple[str, int, int, int, list[str]]]:
    """(model, TP, input, output, the six value cells, "" where empty) of every data line of the table."""
    out, model, tp = [], "", 0
    for line in (HERE / "table.md").read_text().splitlines():
        parts = [c.strip() for c in line.strip().strip("|").split("|")]
        if not line.startswith("| ") or len(parts) < 3 or "," not in parts[2]:
            continue
        model, tp = parts[0] or model, int(parts[1]) if parts[1] else tp
        inp, out_tokens = (int(x) for x in parts[2].split(","))
        values = (parts[3:] + [""] * len(COLUMNS))[:len(COLUMNS)]
        out.append((model, tp, inp, out_tokens, values))
    return out


def rows() -> list[dict]:
    """Every cell the rule keeps, with the GH200's tool named in its engine."""
    out = []
    for model, tp, inp, out_tokens, values in cells():
        catalog, suffix, window = MODELS[model]
        if window and inp + out_tokens > window:
            continue
        for (gpu, dtype), value in zip(COLUMNS, values, strict=True):
            if not value:
                continue
            tool = "gptManagerBenchmark IFB" if gpu == "gh200" else "trtllm-bench"
            out.append({"id": f"trtllm015-{catalog}{suffix}-{gpu}-{dtype}-tp{tp}-{inp}-{out_tokens}",
                        "model": catalog, "accelerator": gpu, "num_gpus": tp, "tensor_parallel": tp,
                        "expert_parallel": False, "weights_dtype": dtype, "kv_dtype": dtype,
                        "engine": f"TensorRT-LLM 0.15 ({tool})", "metric": "output_tokens_per_s",
                        "value": float(value.replace(",", "")), "per_gpu": False, "batch": 0, "input_tokens": inp,
                        "output_tokens": out_tokens, "scenario": "offline", "source": SOURCE})
    return out


if __name__ == "__main__":
    TABLE.write(HERE, rows(), SOURCE)
