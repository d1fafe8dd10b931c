"""Predict the TensorRT-LLM 0.15 rows with the step model shipped when they were checked (session 31's: the dated
profile "kernel-2026-12-04d", TensorRT-LLM's memory outside its KV pool at the 0.6e9 then assumed) and, beside it, the
rule's pre-registered candidate (`inclusion-rule.md`: 3.0e9, fitted on the 0.17 rows), which the rule adopted (the
dated profile "kernel-2026-12-04e"); writes report.json ("shipped": the check, "candidate") and report.md:

    python validation/clean-checks/trtllm015/report.py
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

from kokuban.specs.hardware import PROFILES

HERE = Path(__file__).parent
_spec = importlib.util.spec_from_file_location("perf_report", HERE.parent / "perf_report.py")
REPORT = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(REPORT)
TITLE = "TensorRT-LLM 0.15's throughput table: a clean check (session 32)"


def groups_of(r) -> tuple[str, ...]:
    return (f"model {r.model}", f"gpu {r.accelerator} {r.weights_dtype}",
            f"gpu {r.accelerator} {r.weights_dtype} tp{r.num_gpus}", f"dtype {r.weights_dtype}",
            "workload moe" if r.model.startswith(("mixtral", "llama-4")) else "workload dense",
            "workload multi-gpu" if r.num_gpus > 1 else "workload one gpu")


def report(rows: Path, candidate: bool = False) -> dict:
    """Rows and groups of `rows` as the step model shipped at the check predicts them, or (`candidate`) the rule's
    candidate, whose only change is TensorRT-LLM's 3.0e9 outside the KV pool (the dated profile "kernel-2026-12-04e":
    the rule adopted it, and the shipped model has changed since, `../session32.py`)."""
    return REPORT.predict(rows, PROFILES["kernel-2026-12-04e" if candidate else "kernel-2026-12-04d"](), groups_of)


def markdown(title: str, shipped: dict, candidate: dict) -> str:
    lines = [f"# {title}", "",
             "Predicted once by `report.py` with the shipped step model (rule: `inclusion-rule.md`; rows: `rows.toml`; "
             "table: `table.md`): the first five columns are the check.",
             "The last three: the rule's pre-registered candidate (TensorRT-LLM's memory outside its KV pool at "
             "3.0e9 bytes per GPU, fitted on the 0.17 rows, instead of the assumed 0.6e9), for the rule's decision.",
             ""]
    lines += REPORT.table(shipped["groups"], [("candidate", candidate["groups"], REPORT.FULL)])
    return "\n".join(lines) + "\n"


def main(here: Path, title: str) -> None:
    shipped, candidate = report(here / "rows.toml"), report(here / "rows.toml", candidate=True)
    (here / "report.json").write_text(json.dumps({"shipped": shipped, "candidate": candidate}, indent=1) + "\n")
    (here / "report.md").write_text(markdown(title, shipped, candidate))
    print(markdown(title, shipped, candidate))


if __name__ == "__main__":
    main(HERE, TITLE)
