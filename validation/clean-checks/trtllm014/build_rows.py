"""Turn `table.md` (TensorRT-LLM 0.14's throughput table, copied) into `rows.toml` in the published schema, by the
rule of `inclusion-rule.md`:

    python validation/clean-checks/trtllm014/build_rows.py

and predict them once with `report.py`.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

HERE = Path(__file__).parent
SOURCE = ("https://github.com/arthurrasmusson/TensorRT-LLM/blob/e00d4e6564921307dd264b61fe1d46f116095e0e/docs/source/"
          "performance/perf-overview.md")
MODELS = {"LLaMA v3.1 8B": "llama-3.1-8b", "LLaMA v3.1 70B": "llama-3.1-70b", "LLaMA v3 70B": "llama-3.1-70b",
          "LLaMA v3.1 405B": "llama-3.1-405b", "Mistral 7B": "mistral-7b-v0.3", "Mixtral 8x7B": "mixtral-8x7b",
          "Mixtral 8x22B": "mixtral-8x22b"}
#: the six GPU columns, left to right: (catalog id, weights and KV dtype)
COLUMNS = (("h200", "fp8"), ("h100-sxm", "fp8"), ("h100-sxm", "fp16"), ("a100-80gb", "fp16"),
           ("a100-pcie-80gb", "fp16"), ("l40s", "fp8"))
WINDOWED = {"Mistral 7B": 4096}  # the checkpoint is not named: rows beyond v0.1's sliding window are left out


def _toml():
    spec = importlib.util.spec_from_file_location("build017", HERE.parent / "trtllm017" / "build_rows.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.toml


def rows() -> list[dict]:
    out, model, lengths = [], "", ""
    for line in (HERE / "table.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not line.startswith("| ") or len(cells) != 9 or not cells[2].isdigit():
            continue
        model, lengths, tp = cells[0] or model, cells[1] or lengths, int(cells[2])
        inp, out_tokens = (int(x) for x in lengths.split("/"))
        if model in WINDOWED and inp + out_tokens > WINDOWED[model]:
            continue
        name = MODELS[model] + ("-v3" if model == "LLaMA v3 70B" else "")
        for (gpu, dtype), value in zip(COLUMNS, cells[3:], strict=True):
            if not value:
                continue
            out.append({"id": f"trtllm014-{name}-{gpu}-{dtype}-tp{tp}-{inp}-{out_tokens}",
                        "model": MODELS[model], "accelerator": gpu, "num_gpus": tp, "tensor_parallel": tp,
                        "expert_parallel": False, "weights_dtype": dtype, "kv_dtype": dtype,
                        "engine": "TensorRT-LLM 0.14 (trtllm-bench)", "metric": "output_tokens_per_s",
                        "value": float(value), "per_gpu": False, "batch": 0, "input_tokens": inp,
                        "output_tokens": out_tokens, "scenario": "offline", "source": SOURCE})
    return out


def toml(rows: list[dict]) -> str:
    """The 0.17 check's writer (`../trtllm017/build_rows.toml`)."""
    return _toml()(rows)


if __name__ == "__main__":
    built = rows()
    (HERE / "rows.toml").write_text(f"# built by build_rows.py from table.md ({len(built)} rows); source {SOURCE}\n\n"
                                    + toml(built))
    print(len(built), "rows")
