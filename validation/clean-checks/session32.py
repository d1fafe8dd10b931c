"""Every TensorRT-LLM performance-overview clean check side by side, as checked, with session 32's first model and with
session 32's final ("today" in its reports: profile kernel-2026-12-05a, shipped until session 35); writes
session32.json and session32.md beside this file:

    python validation/clean-checks/session32.py

"As checked" is each report's own record of the model that predicted it once (0.17: session 30's; 0.14: session 31's
first change; 0.13, 0.15 and v0.20: session 31's; 0.12, 0.19 and v0.21: session 32's final). "Session 32's first" is
the dated profile "kernel-2026-12-04e": session 31's model with TensorRT-LLM's 3.0e9 outside its KV pool, fitted on the
0.17 rows and adopted by a rule written before 0.15's, v0.20's, 0.12's, 0.19's and v0.21's rows were read: on those five
tables its figures are clean. "Today" adds the PCIe all-reduce fractions of the L40S and A100 PCIe servers, fitted on
the 0.13, 0.14, 0.15 and 0.17 rows: clean on 0.12, 0.19 and v0.21 (`trtllm012/`, `trtllm021/inclusion-rule.md`).
"""

from __future__ import annotations

import importlib.util
import json
import tempfile
import tomllib
from pathlib import Path

from kokuban.specs.hardware import PROFILES
from kokuban.usecases.validation import read_measurements
from kokuban.validation.accuracy import predict_row

HERE = Path(__file__).parent
_spec = importlib.util.spec_from_file_location("perf_report", HERE / "perf_report.py")
REPORT = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(REPORT)
_spec = importlib.util.spec_from_file_location("perf_table", HERE / "perf_table.py")
TABLE = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(TABLE)
#: check → (its report.json key of the prediction made once, clean for session 32's first model, clean for today's)
CHECKS = {"trtllm013": ("shipped", False, False), "trtllm014": ("as_checked", False, False),
          "trtllm017": ("as_checked", False, False), "trtllm015": ("shipped", True, False),
          "trtllm020": ("shipped", True, False), "trtllm012": ("shipped", True, True),
          "trtllm019": ("shipped", True, True), "trtllm021": ("shipped", True, True)}
#: "today": session 32's final model (profile kernel-2026-12-05a), the shipped one until session 35's barrier wait
MODELS = {"first": lambda: PROFILES["kernel-2026-12-04e"](), "today": lambda: PROFILES["kernel-2026-12-05a"]()}


def groups_of(r) -> tuple[str, ...]:
    """The regimes of issue 13 these throughput tables can show, and the GPU."""
    dtype = "fp4" if r.weights_dtype == "nvfp4" else r.weights_dtype
    moe = r.model.startswith(("mixtral", "llama-4"))
    return (f"dtype {dtype}", "workload moe" if moe else "workload dense",
            "workload multi-gpu" if r.num_gpus > 1 else "workload one gpu", f"gpu {r.accelerator}")


def _rows(check: str) -> list[dict]:
    return tomllib.loads((HERE / check / "rows.toml").read_text())["result"]


def _measurement(row: dict) -> tuple:
    return tuple(row[k] for k in ("model", "accelerator", "weights_dtype", "kv_dtype", "num_gpus", "input_tokens",
                                  "output_tokens", "value"))


def distinct_rows(checks: list[str], seen_checks: list[str] = ()) -> list[dict]:
    """The rows of `checks`, each measurement once, less those `seen_checks` hold: a row whose model, GPU, dtypes, TP,
    lengths and value another check holds is the same measurement printed twice (v0.21's Llama 4 Maverick cells are
    v0.20's), and one a model saw before it was fixed is not clean for it."""
    seen, out = {_measurement(r) for c in seen_checks for r in _rows(c)}, []
    for check in checks:
        for row in _rows(check):
            if _measurement(row) not in seen:
                seen.add(_measurement(row))
                out.append(row)
    return out


def pooled(checks: list[str], efficiency, seen_checks: list[str] = ()) -> dict:
    """Groups of `efficiency` on `distinct_rows(checks, seen_checks)`, read as one file (in a temporary folder), and
    issue 13's prefill regime: the rows whose predicted prefill outlasts their decode (`accuracy.row_workloads`)."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "rows.toml"
        path.write_text(TABLE.toml(distinct_rows(checks, seen_checks)))
        groups = REPORT.predict(path, efficiency, groups_of)["groups"]
        preds = [predict_row(r, efficiency) for r in read_measurements(str(path))]
    groups["workload prefill-dominated"] = REPORT.figures([p for p in preds if "prefill" in p.workloads])
    return groups


def summary(checks: tuple[str, ...] = tuple(CHECKS)) -> dict:
    """{model: {check: groups}} for `checks` (every one by default), and each model's clean tables pooled
    ("clean": the checks clean for it)."""
    out = {}
    for name, make in MODELS.items():
        eff = make()
        out[name] = {c: REPORT.predict(HERE / c / "rows.toml", eff, groups_of)["groups"] for c in checks}
        is_clean = {c: first if name == "first" else today for c, (_, first, today) in CHECKS.items()}
        out[name]["clean"] = pooled([c for c in CHECKS if is_clean[c]], eff, [c for c in CHECKS if not is_clean[c]])
    return out


def markdown(now: dict) -> str:
    pct = REPORT.pct

    def cell(g):
        lo, hi = g["median_abs_error_ci"]
        return f"{pct(g['median_abs_error'])} ({pct(lo)} – {pct(hi)}), p90 {pct(g['p90_abs_error'])}"

    lines = ["# The TensorRT-LLM clean checks, as checked and since (session 32)", "",
             "| table | rows | as checked | session 32's first model | today | clean for |", "|---" * 6 + "|"]
    for check, (key, first, today) in CHECKS.items():
        saved = json.loads((HERE / check / "report.json").read_text())[key]
        checked = saved.get("groups", saved)["all"]
        clean = " and ".join(n for n, c in (("first", first), ("today", today)) if c) or "neither"
        lines.append(f"| {check} | {checked['count']} | {pct(checked['median_abs_error'])}, p90 "
                     f"{pct(checked['p90_abs_error'])} | {cell(now['first'][check]['all'])} | "
                     f"{cell(now['today'][check]['all'])} | {clean} |")
    for name, label in (("first", "Session 32's first model on the five tables it never saw (0.12, 0.15, 0.19, v0.20, "
                                  "v0.21), each measurement once, pooled"),
                        ("today", "Today's model on the three tables it never saw (0.12, 0.19, v0.21), each "
                                  "measurement once and none it saw (v0.21's Maverick cells are v0.20's), pooled")):
        lines += ["", f"{label}, by regime:", ""] + REPORT.table(now[name]["clean"], [])
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    now = summary()
    (HERE / "session32.json").write_text(json.dumps(now, indent=1) + "\n")
    (HERE / "session32.md").write_text(markdown(now))
    print(markdown(now))
