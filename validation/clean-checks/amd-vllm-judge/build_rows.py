"""Turn `table.md` (the July 2025 latency tables and every distinct throughput table of ROCm/vllm's dev-docker README,
copied) into `rows.toml` in the published schema, by the rule of `inclusion-rule.md`:

    python validation/clean-checks/amd-vllm-judge/build_rows.py

Each table is under a "## <latency|throughput> <commit> <date> <vLLM version>" line; a blank model cell continues the
model above. The latency rows are mapped as `../amd-vllm/build_rows.py` maps 0.9.0.1's, with the KV cache in fp16 (the
July command sets no `--kv-cache-dtype`); the throughput rows as the published set's two AMD rows are.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

HERE = Path(__file__).parent


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


LATENCY = _load("amd_latency", HERE.parent / "amd-vllm" / "build_rows.py")
ROCM = LATENCY.ROCM | {"0.9.1": "6.4.1"}  # each README's "The pre-built image includes"


def tables(table: Path = HERE / "table.md") -> list[tuple[str, str, str, str, list[list[str]]]]:
    """(kind, commit, date, vLLM version, [cells of each data line]) of each table, in order; a blank model cell is
    filled with the model above."""
    out, model = [], ""
    for line in table.read_text().splitlines():
        if line.startswith("## "):
            kind, commit, date, _, version = line[3:].split()
            out.append((kind, commit, date, version, []))
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if out and line.startswith("|") and len(cells) >= 7 and cells[3].isdigit():
            model = cells[0] or model
            assert (cells[1] or "FP8") == "FP8" and (cells[2] or "8") == "8", line  # the rule's precision and TP
            out[-1][4].append([model, *cells[1:]])
    return out


def _published_cells() -> set[tuple[str, int, int, float]]:
    from kokuban.validation.accuracy import load_published

    return {(r.model, r.input_tokens, r.output_tokens, r.value) for r in load_published() if r.accelerator == "mi300x"}


def rows(table: Path = HERE / "table.md") -> tuple[list[dict], list[str]]:
    """The judge's rows and the ids of the cells left out (a published row's cell; a model cell naming another
    model's checkpoint)."""
    seen, out, left = _published_cells(), [], []
    for kind, commit, date, version, lines in tables(table):
        source = LATENCY.README.format(commit=commit).replace("Latency", kind.capitalize())
        engine = (f"vLLM {version} (ROCm {ROCM[version]}, benchmark_latency)" if kind == "latency"
                  else f"vLLM {version} (ROCm {ROCM[version]}, benchmark_throughput)")
        for cells in lines:
            model = LATENCY.MODELS.get(cells[0])
            if kind == "latency":
                batch, inp, output, latency = int(cells[3]), int(cells[4]), int(cells[5]), float(cells[6])
                value, kv, scenario = batch * output / latency, "fp16", "offline"
            else:
                inp, output, batch, value = int(cells[3]), int(cells[4]), int(cells[6]), float(cells[7])
                kv, scenario = "fp8", "offline"
            rid = f"amdvllm-{kind}-{version}-{date}-{model}-mi300x-fp8-tp8-b{batch}-{inp}-{output}"
            if model is None or (model, inp, output, value) in seen:
                left.append(rid)
                continue
            out.append({"id": rid, "model": model, "accelerator": "mi300x", "num_gpus": 8, "tensor_parallel": 8,
                        "expert_parallel": False, "weights_dtype": "fp8", "kv_dtype": kv, "engine": engine,
                        "metric": "output_tokens_per_s", "value": value, "per_gpu": False, "batch": batch,
                        "input_tokens": inp, "output_tokens": output, "scenario": scenario, "source": source})
    return out, left


if __name__ == "__main__":
    built, left_out = rows()
    LATENCY.TABLE.write(HERE, built, LATENCY.README.format(commit="<each row's commit>"))
    print("left out:", "; ".join(left_out) or "none")
