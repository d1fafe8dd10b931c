"""Turn `table.md` (TensorRT-LLM v0.20's throughput tables, copied) into `rows.toml` in the published schema, by the
rule of `inclusion-rule.md`:

    python validation/clean-checks/trtllm020/build_rows.py

and predict them once with `report.py`. One table per model and precision ("#### Llama 3.3 70B FP8"): a GPU row (a
blank cell continues the GPU to its left), a TP row, then | "input, output" | | one cell per column |.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

HERE = Path(__file__).parent
SOURCE = ("https://github.com/dominicshanshan/TensorRT-LLM/blob/ab4143e1d3c82df550f0d5673090a8feee84c7bd/docs/source/"
          "performance/perf-overview.md (v0.20 benchmarks, PyTorch backend)")
MODELS = {"Llama 3.3 70B": "llama-3.3-70b", "Llama 3.1 405B": "llama-3.1-405b", "Llama 3.1 8B": "llama-3.1-8b",
          "Llama 4 Maverick": "llama-4-maverick", "Llama 3.1 70B": "llama-3.1-70b"}
GPUS = {"B200": "b200", "GB200": "gb200", "H200 141GB HBM3": "h200", "H200": "h200", "H100 80GB HBM3": "h100-sxm",
        "H100": "h100-sxm", "GH200": "gh200"}
DTYPES = {"FP4": "nvfp4", "FP8": "fp8"}  # weights; the KV cache fp8 in both (the rule)

_spec = importlib.util.spec_from_file_location("perf_table", HERE.parent / "perf_table.py")
TABLE = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(TABLE)


def cells(table: Path = HERE / "table.md") -> list[tuple[str, str, str, int, int, int, str]]:
    """(model as written, precision, GPU as written, TP, input, output, value or "") of every data cell of `table`
    (this check's, or another of the same layout: `../trtllm019/`, `../trtllm021/`). A header cell may end in ":"."""
    out, title, gpus, tps = [], "", [], []
    for line in table.read_text().splitlines():
        if line.startswith("#### "):
            title, gpus, tps = line[5:].strip(), [], []
            continue
        parts = [c.strip() for c in line.strip().strip("|").split("|")]
        if not title or not line.startswith("|") or len(parts) < 3:
            continue
        if parts[1].rstrip(":") == "GPU":
            for name in parts[2:]:
                gpus.append(name or gpus[-1])
        elif parts[1].rstrip(":") == "TP Size":
            tps = [int(x) for x in parts[2:]]
        elif "," in parts[0] and parts[0].replace(",", "").replace(" ", "").isdigit():
            inp, out_tokens = (int(x) for x in parts[0].split(","))
            model, precision = title.rsplit(" ", 1)
            for gpu, tp, value in zip(gpus, tps, parts[2:], strict=True):
                out.append((model, precision, gpu, tp, inp, out_tokens, value))
    return out


def rows(table: Path = HERE / "table.md", prefix: str = "trtllm020",
         engine: str = "TensorRT-LLM 0.20 (PyTorch backend, trtllm-bench)", source: str = SOURCE) -> list[dict]:
    """Every non-empty cell of `table` (the rule keeps them all), as `prefix`'s rows of `engine` from `source`."""
    out = []
    for model, precision, gpu, tp, inp, out_tokens, value in cells(table):
        if not value:
            continue
        dtype, catalog, accelerator = DTYPES[precision], MODELS[model], GPUS[gpu]
        out.append({"id": f"{prefix}-{catalog}-{accelerator}-{dtype}-tp{tp}-{inp}-{out_tokens}", "model": catalog,
                    "accelerator": accelerator, "num_gpus": tp, "tensor_parallel": tp, "expert_parallel": False,
                    "weights_dtype": dtype, "kv_dtype": "fp8", "engine": engine, "metric": "output_tokens_per_s",
                    "value": float(value.replace(",", "")), "per_gpu": False, "batch": 0, "input_tokens": inp,
                    "output_tokens": out_tokens, "scenario": "offline", "source": source})
    return out


if __name__ == "__main__":
    TABLE.write(HERE, rows(), SOURCE)
