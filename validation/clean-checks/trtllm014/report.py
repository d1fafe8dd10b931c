"""The TensorRT-LLM 0.14 rows: the clean check as predicted once, and today's model on them; writes report.json and
report.md:

    python validation/clean-checks/trtllm014/report.py

The clean check ("as checked") is what the shipped step model of commit c020fe4 predicted once: session 30's model
with the A100's own kernel tables (session 31's first change). That model is not rebuilt here (the A100's constants
were refitted with the GEMM shape factor afterwards): its rows and groups are kept in report.json as predicted and
the markdown quotes them. Beside them, recomputed: the step model of session 30 (the dated profile
"kernel-2026-12-04c" at its curves), and today's shipped model, which was changed AFTER these rows were seen (the GEMM
shape factor and the refit of session 31): a development figure; its clean check is `../trtllm013/`.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

from kokuban.specs.hardware import PROFILES, Efficiency
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


def report(today: bool = True) -> dict:
    """Rows and groups as today's shipped model predicts them, or (`today` False) the step model of session 30."""
    rows = read_measurements(str(ROWS))
    efficiency = Efficiency.shipped() if today else PROFILES["kernel-2026-12-04c"]()
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


def markdown(checked: dict, before: dict, today: dict) -> str:
    lines = ["# TensorRT-LLM 0.14's throughput table: a third clean check (session 31)", "",
             "Predicted once (commit c020fe4) with the shipped step model of that commit, session 30's with the A100's "
             "own kernel tables (rule: `inclusion-rule.md`; rows: `rows.toml`; table: `table.md`): the first five "
             "columns are the check.",
             "Then, recomputed: the step model of session 30 (the profile \"kernel-2026-12-04c\"), for comparison, and "
             "today's shipped model, changed after these rows were seen (the GEMM shape factor, the refit): a "
             "development figure, not a clean one.", "",
             "| rows | count | median \\|error\\| (95 % bootstrap) | p90 | median signed "
             "| session 30: median \\|error\\| | session 30: median signed | today: median \\|error\\| | today: p90 "
             "| today: median signed |", "|---|---|---|---|---|---|---|---|---|---|"]
    for key, g in checked["groups"].items():
        b, t = before["groups"][key], today["groups"][key]
        lo, hi = g["median_abs_error_ci"]
        lines.append(f"| {key} | {g['count']} | {pct(g['median_abs_error'])} ({pct(lo)} – {pct(hi)}) | "
                     f"{pct(g['p90_abs_error'])} | {pct(g['median_signed_error'])} | {pct(b['median_abs_error'])} | "
                     f"{pct(b['median_signed_error'])} | {pct(t['median_abs_error'])} | {pct(t['p90_abs_error'])} | "
                     f"{pct(t['median_signed_error'])} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    saved = json.loads((HERE / "report.json").read_text())
    checked = saved.get("as_checked") or saved["shipped"]  # the prediction of c020fe4, kept as it was made
    before, today = report(today=False), report()
    (HERE / "report.json").write_text(json.dumps({"as_checked": checked, "session30": before["groups"],
                                                  "today": today["groups"]}, indent=1) + "\n")
    (HERE / "report.md").write_text(markdown(checked, before, today))
    print(markdown(checked, before, today))
