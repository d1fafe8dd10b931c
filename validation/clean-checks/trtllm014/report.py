"""Predict the TensorRT-LLM 0.14 rows once with the shipped step model and write report.json and report.md:

    python validation/clean-checks/trtllm014/report.py

The clean check is today's shipped model (`kokuban accuracy --measurements-file
validation/clean-checks/trtllm014/rows.toml`), with the A100's own kernel tables of session 31. Beside it, for
comparison only, the step model before session 31 (`KernelCurves.per_accelerator` off): what the change moved.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

from kokuban.specs.hardware import Efficiency
from kokuban.usecases.validation import read_measurements
from kokuban.validation.accuracy import predict_row

HERE = Path(__file__).parent
ROWS = HERE / "rows.toml"


def _report017():
    spec = importlib.util.spec_from_file_location("report017", HERE.parent / "trtllm017" / "report.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


figures, pct = _report017().figures, _report017().pct


def report(own_tables: bool = True) -> dict:
    """Rows and groups as the shipped step model predicts them, with (`own_tables`, today's) or without the
    per-accelerator kernel constants of session 31."""
    rows = read_measurements(str(ROWS))
    efficiency = Efficiency.shipped().with_kernels(per_accelerator=own_tables)
    preds = [predict_row(r, efficiency) for r in rows]
    groups: dict[str, list] = {}
    for r, p in zip(rows, preds, strict=True):
        for key in (f"model {r.model}", f"gpu {r.accelerator} {r.weights_dtype}",
                    f"gpu {r.accelerator} {r.weights_dtype} tp{r.num_gpus}", f"dtype {r.weights_dtype}",
                    "workload moe" if "mixtral" in r.model else "workload dense",
                    "workload multi-gpu" if r.num_gpus > 1 else "workload one gpu"):
            groups.setdefault(key, []).append(p)
    groups = {"all": preds} | dict(sorted(groups.items()))
    return {"rows": [{"id": p.id, "measured": p.measured, "predicted": p.predicted, "signed_error": p.signed_error,
                      "batch_per_replica": p.batch_per_replica} for p in preds],
            "groups": {k: figures(v) for k, v in groups.items()}}


def markdown(now: dict, before: dict) -> str:
    lines = ["# TensorRT-LLM 0.14's throughput table: a third clean check (session 31)", "",
             "Predicted once by `report.py` with the shipped step model (rule: `inclusion-rule.md`; rows: `rows.toml`;"
             " table: `table.md`): the first five columns are the check.",
             "The last two: the step model before session 31 (the A100's own kernel tables off), for comparison "
             "only.", "",
             "| rows | count | median \\|error\\| (95 % bootstrap) | p90 | median signed "
             "| before: median \\|error\\| | before: median signed |", "|---|---|---|---|---|---|---|"]
    for key, g in now["groups"].items():
        b = before["groups"][key]
        lo, hi = g["median_abs_error_ci"]
        lines.append(f"| {key} | {g['count']} | {pct(g['median_abs_error'])} ({pct(lo)} – {pct(hi)}) | "
                     f"{pct(g['p90_abs_error'])} | {pct(g['median_signed_error'])} | {pct(b['median_abs_error'])} | "
                     f"{pct(b['median_signed_error'])} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    now, before = report(), report(own_tables=False)
    (HERE / "report.json").write_text(json.dumps({"shipped": now, "before_session31": before["groups"]}, indent=1)
                                      + "\n")
    (HERE / "report.md").write_text(markdown(now, before))
    print(markdown(now, before))
