"""Every TensorRT-LLM performance-overview clean check side by side, as checked and with today's shipped model;
writes session32.json and session32.md beside this file:

    python validation/clean-checks/session32.py

"As checked" is each report's own record of the model that predicted it once (0.17: session 30's; 0.14: session 31's
first change; 0.13, 0.15 and v0.20: session 31's). "Today" is the shipped model, whose one change of session 32 (the
memory TensorRT-LLM holds outside its KV pool, 3.0e9 instead of the assumed 0.6e9) was fitted on the 0.17 rows and
adopted by a rule written before 0.15's and v0.20's rows were read (`trtllm015/inclusion-rule.md`): on those two
tables today's figures are clean, on 0.13, 0.14 and 0.17 they are development figures (the rows were seen first).
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

from kokuban.specs.hardware import Efficiency
from kokuban.usecases.validation import read_measurements

HERE = Path(__file__).parent
_spec = importlib.util.spec_from_file_location("perf_report", HERE / "perf_report.py")
REPORT = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(REPORT)
#: check → (its report.json key of the prediction made once, whether today's figures on it are clean)
CHECKS = {"trtllm013": ("shipped", False), "trtllm014": ("as_checked", False), "trtllm015": ("shipped", True),
          "trtllm017": ("as_checked", False), "trtllm020": ("shipped", True)}


def groups_of(r) -> tuple[str, ...]:
    """The regimes of issue 13 these throughput tables can show, and the engine's version."""
    dtype = "fp4" if r.weights_dtype == "nvfp4" else r.weights_dtype
    moe = r.model.startswith(("mixtral", "llama-4"))
    return (f"dtype {dtype}", "workload moe" if moe else "workload dense",
            "workload multi-gpu" if r.num_gpus > 1 else "workload one gpu", f"gpu {r.accelerator}")


def today(checks: tuple[str, ...] = tuple(CHECKS)) -> dict:
    """Today's shipped model on the rows of `checks` (every check by default) and on the clean ones pooled:
    {check: groups, "clean": groups}."""
    out = {check: REPORT.predict(HERE / check / "rows.toml", Efficiency.shipped(), groups_of)["groups"]
           for check in checks}
    clean = [HERE / c / "rows.toml" for c, (_, is_clean) in CHECKS.items() if is_clean]
    pooled = HERE / "clean-rows.toml"  # the clean checks' rows in one file, written and read back
    pooled.write_text("".join(p.read_text() for p in clean))
    try:
        assert len(read_measurements(str(pooled))) == sum(len(read_measurements(str(p))) for p in clean)
        out["clean"] = REPORT.predict(pooled, Efficiency.shipped(), groups_of)["groups"]
    finally:
        pooled.unlink()
    return out


def markdown(now: dict) -> str:
    pct = REPORT.pct
    lines = ["# The TensorRT-LLM clean checks, as checked and today (session 32)", "",
             "| table | rows | as checked: median \\|error\\| | as checked: p90 | today: median \\|error\\| (95 % "
             "bootstrap) | today: p90 | today: median signed | today's figure |", "|---" * 8 + "|"]
    for check, (key, is_clean) in CHECKS.items():
        checked = json.loads((HERE / check / "report.json").read_text())[key]
        checked = checked.get("groups", checked)["all"]
        g = now[check]["all"]
        lo, hi = g["median_abs_error_ci"]
        lines.append(f"| {check} | {g['count']} | {pct(checked['median_abs_error'])} | {pct(checked['p90_abs_error'])}"
                     f" | {pct(g['median_abs_error'])} ({pct(lo)} – {pct(hi)}) | {pct(g['p90_abs_error'])} | "
                     f"{pct(g['median_signed_error'])} | {'clean' if is_clean else 'development'} |")
    lines += ["", "Today's model on the two clean tables pooled (0.15 and v0.20), by regime:", ""]
    lines += REPORT.table(now["clean"], [])
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    now = today()
    (HERE / "session32.json").write_text(json.dumps(now, indent=1) + "\n")
    (HERE / "session32.md").write_text(markdown(now))
    print(markdown(now))
