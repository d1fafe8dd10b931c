"""Predict the TensorRT-LLM 0.12 rows once with session 32's final model (the shipped one until session 35's barrier
wait: profile kernel-2026-12-05a) and with the model before the per-card PCIe
all-reduce fractions (the dated profile "kernel-2026-12-04e"), by the rule of `inclusion-rule.md`; writes report.json
("shipped", "before_pcie", and the rule's decision figure for each: "l40s_several") and report.md:

    python validation/clean-checks/trtllm012/report.py
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

from kokuban.specs.hardware import PROFILES
from kokuban.usecases.validation import read_measurements
from kokuban.validation.accuracy import predict_row

HERE = Path(__file__).parent
_spec = importlib.util.spec_from_file_location("report015", HERE.parent / "trtllm015" / "report.py")
CHECK = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(CHECK)
REPORT = CHECK.REPORT


def model(before_pcie: bool = False):
    """Session 32's final model, or (`before_pcie`) the model before the PCIe fractions."""
    return PROFILES["kernel-2026-12-04e"]() if before_pcie else PROFILES["kernel-2026-12-05a"]()


def report(before_pcie: bool = False) -> dict:
    """Every row and group as `model(before_pcie)` predicts them."""
    return REPORT.predict(HERE / "rows.toml", model(before_pcie), CHECK.groups_of)


def l40s_several(before_pcie: bool = False) -> dict:
    """The rule's decision figure: the L40S rows on several GPUs (`perf_report.figures`), under `model(before_pcie)`."""
    rows = [r for r in read_measurements(str(HERE / "rows.toml")) if r.accelerator == "l40s" and r.num_gpus > 1]
    return REPORT.figures([predict_row(r, model(before_pcie)) for r in rows])


def markdown(shipped: dict, before: dict, decision: dict) -> str:
    now, old = decision["shipped"], decision["before_pcie"]
    lines = ["# TensorRT-LLM 0.12's throughput table: a clean check (session 32)", "",
             "Predicted once by `report.py` (rule: `inclusion-rule.md`; rows: `rows.toml`; table: `table.md`) with "
             "session 32's final model (profile kernel-2026-12-05a, shipped until session 35): the first five columns. "
             "The last three: the model before the per-card PCIe "
             "all-reduce fractions (\"kernel-2026-12-04e\"), fixed before the table was read too.", "",
             f"The rule's decision figure, the {now['count']} L40S rows on several GPUs: median |error| "
             f"{REPORT.pct(now['median_abs_error'])} with the PCIe fractions, {REPORT.pct(old['median_abs_error'])} "
             "without.", ""]
    lines += REPORT.table(shipped["groups"], [("before PCIe", before["groups"], REPORT.FULL)])
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    shipped, before = report(), report(before_pcie=True)
    decision = {"shipped": l40s_several(), "before_pcie": l40s_several(before_pcie=True)}
    (HERE / "report.json").write_text(json.dumps({"shipped": shipped, "before_pcie": before,
                                                  "l40s_several": decision}, indent=1) + "\n")
    (HERE / "report.md").write_text(markdown(shipped, before, decision))
    print(markdown(shipped, before, decision))
