"""Turn `table.md` (TensorRT-LLM 0.17's throughput table, copied) into `rows.toml` in the published schema, by the
rule of `inclusion-rule.md`:

    python validation/clean-checks/trtllm017/build_rows.py

and predict them once with the shipped step model:

    kokuban accuracy --measurements-file validation/clean-checks/trtllm017/rows.toml --json > report.json
"""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).parent
SOURCE = ("https://github.com/NVIDIA/TensorRT-LLM/blob/258c7540c03517def55d9a5aadfa9288af474e1b/docs/source/"
          "performance/perf-overview.md")
MODELS = {"LLaMA v3.1 8B": "llama-3.1-8b", "LLaMA v3.1 70B": "llama-3.1-70b", "LLaMA v3.1 405B": "llama-3.1-405b",
          "Mistral 7B": "mistral-7b-v0.3", "Mixtral 8x7B": "mixtral-8x7b", "Mixtral 8x22B": "mixtral-8x22b"}
GPUS = ("h200", "h100-sxm", "gh200", "l40s", "a100-80gb")
WINDOWED = {"Mistral 7B": 4096}  # the checkpoint is not named: rows beyond v0.1's sliding window are left out


def rows() -> list[dict]:
    out, model, tp = [], "", 0
    for line in (HERE / "table.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not line.startswith("| ") or len(cells) != 8 or "," not in cells[2] or cells[1] == "TP":
            continue
        model, tp = cells[0] or model, int(cells[1]) if cells[1] else tp
        inp, out_tokens = (int(x) for x in cells[2].split(","))
        if model in WINDOWED and inp + out_tokens > WINDOWED[model]:
            continue
        for gpu, value in zip(GPUS, cells[3:], strict=True):
            if not value:
                continue
            dtype = "fp16" if gpu == "a100-80gb" else "fp8"
            tool = "gptManagerBenchmark IFB" if gpu == "gh200" else "trtllm-bench"
            out.append({"id": f"trtllm017-{MODELS[model]}-{gpu}-{dtype}-tp{tp}-{inp}-{out_tokens}",
                        "model": MODELS[model], "accelerator": gpu, "num_gpus": tp, "tensor_parallel": tp,
                        "expert_parallel": False, "weights_dtype": dtype, "kv_dtype": dtype,
                        "engine": f"TensorRT-LLM 0.17 ({tool})", "metric": "output_tokens_per_s", "value": float(value),
                        "per_gpu": False, "batch": 0, "input_tokens": inp, "output_tokens": out_tokens,
                        "scenario": "offline", "source": SOURCE})
    return out


def toml(rows: list[dict]) -> str:
    def value(v):
        return json.dumps(v) if isinstance(v, str) else ("true" if v is True else "false" if v is False else repr(v))

    return "".join("[[result]]\n" + "".join(f"{k} = {value(v)}\n" for k, v in r.items()) + "\n" for r in rows)


if __name__ == "__main__":
    built = rows()
    (HERE / "rows.toml").write_text(f"# built by build_rows.py from table.md ({len(built)} rows); source {SOURCE}\n\n"
                                    + toml(built))
    print(len(built), "rows")
