"""Predict the TensorRT-LLM 0.15 rows once with the shipped step model and, beside it, the candidate of the rule
(`inclusion-rule.md`: the trtllm profile's memory outside the KV pool at 3.0e9); writes report.json and report.md:

    python validation/clean-checks/trtllm015/report.py
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

from kokuban.specs.hardware import Efficiency

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
    """Rows and groups of `rows` as the shipped model predicts them, or (`candidate`) the rule's candidate."""
    if candidate:
        return REPORT.predict_with_reserve(rows, Efficiency.shipped(), groups_of, REPORT.CANDIDATE_NON_TORCH_BYTES)
    return REPORT.predict(rows, Efficiency.shipped(), groups_of)


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
