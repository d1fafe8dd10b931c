"""Rows of a TensorRT-LLM performance-overview throughput table (0.13 and 0.14 layout: | model | input/output | TP |
one cell per GPU column |), in the published schema, by a clean check's rule (`trtllm013/`, `trtllm014/`)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

HERE = Path(__file__).parent


def rows(table: Path, models: dict, columns: tuple, prefix: str, engine: str, source: str) -> list[dict]:
    """Every non-empty cell of `table` whose model and column the rule keeps.

    `models`: model as written → (catalog id, id suffix, longest input + output kept or None), or None (left out);
    `columns`: one (catalog GPU id, weights and KV dtype) per GPU column, left to right, or None (left out). A blank
    model or lengths cell continues the row above; thousands commas are removed from values."""
    out, model, lengths = [], "", ""
    for line in table.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not line.startswith("| ") or len(cells) != 3 + len(columns) or not cells[2].isdigit():
            continue
        model, lengths, tp = cells[0] or model, cells[1] or lengths, int(cells[2])
        inp, out_tokens = (int(x) for x in lengths.split("/"))
        mapped = models[model]
        if mapped is None or (mapped[2] and inp + out_tokens > mapped[2]):
            continue
        catalog, suffix, _ = mapped
        for column, value in zip(columns, cells[3:], strict=True):
            if column is None or not value:
                continue
            gpu, dtype = column
            out.append({"id": f"{prefix}-{catalog}{suffix}-{gpu}-{dtype}-tp{tp}-{inp}-{out_tokens}",
                        "model": catalog, "accelerator": gpu, "num_gpus": tp, "tensor_parallel": tp,
                        "expert_parallel": False, "weights_dtype": dtype, "kv_dtype": dtype, "engine": engine,
                        "metric": "output_tokens_per_s", "value": float(value.replace(",", "")), "per_gpu": False,
                        "batch": 0, "input_tokens": inp, "output_tokens": out_tokens, "scenario": "offline",
                        "source": source})
    return out


def toml(rows: list[dict]) -> str:
    """The 0.17 check's writer (`trtllm017/build_rows.toml`)."""
    spec = importlib.util.spec_from_file_location("build017", HERE / "trtllm017" / "build_rows.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.toml(rows)


def write(check_dir: Path, built: list[dict], source: str) -> None:
    """Write a check's rows.toml (its `build_rows.py` run as a script) and say how many rows."""
    head = f"# built by build_rows.py from table.md ({len(built)} rows); source {source}\n\n"
    (check_dir / "rows.toml").write_text(head + toml(built))
    print(len(built), "rows")
