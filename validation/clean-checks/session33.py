"""Session 33's clean checks, predicted once with today's shipped model: single-request decode and first tokens from
two engines no fit has seen (the rule: `lmdeploy01/inclusion-rule.md`) and AMD's vLLM latency table on eight MI300X
(`amd-vllm/inclusion-rule.md`); then pooled with the TensorRT-LLM rows today's model never saw (`session32.py`: 0.12,
0.19 and v0.21, each measurement once); and the MI300X candidate fitted on the AMD rows, on its two judges
(`amd-vllm-judge/inclusion-rule.md`). Writes each folder's report.json and report.md, and session33.json and
session33.md beside this file:

    python validation/clean-checks/session33.py
"""

from __future__ import annotations

import importlib.util
import json
import re
import tempfile
from pathlib import Path

from kokuban.specs.hardware import Efficiency
from kokuban.usecases.validation import read_measurements
from kokuban.validation.accuracy import engine_family, predict_row

HERE = Path(__file__).parent


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


REPORT = _load("perf_report", HERE / "perf_report.py")
TABLE = _load("perf_table", HERE / "perf_table.py")
S32 = _load("session32", HERE / "session32.py")
FIT = _load("fit_session33", HERE / "fit_session33.py")
CANDIDATE_RATIO = 0.50  # the least of fit_session33.py's grid (tests/test_session33_checks.py checks it)
CHECKS = {"lmdeploy01": "LMDeploy 0.1's TurboMind tables on A100-80G: a clean check (session 33)",
          "llamacpp-cuda": "llama.cpp's CUDA scoreboard (Llama 2 7B Q4_0): a clean check (session 33)",
          "amd-vllm": "AMD's vLLM 0.9.0.1 latency table on eight MI300X: a clean check (session 33)"}
#: the TensorRT-LLM tables clean for today's model (session32.py), and those it saw
TRTLLM_CLEAN = [c for c, (_, _, today) in S32.CHECKS.items() if today]
TRTLLM_SEEN = [c for c, (_, _, today) in S32.CHECKS.items() if not today]


def workload(r) -> str:
    """Which of issue 13's regimes the row measures: a user's decode speed at batch 1 (or one request's whole
    generation, `amd-vllm/inclusion-rule.md`), the time to a first token (prefill), or a batch's throughput."""
    if r.metric == "time_to_first_token_s":
        return "workload first token"
    return "workload decode batch 1" if r.batch == 1 else "workload throughput"


def groups_of(r) -> tuple[str, ...]:
    dtype = "fp4" if r.weights_dtype == "nvfp4" else r.weights_dtype
    return (f"engine {engine_family(r.engine)}", workload(r), f"dtype {dtype}", f"gpu {r.accelerator}",
            f"model {r.model}", "workload multi-gpu" if r.num_gpus > 1 else "workload one gpu",
            "workload moe" if r.model.startswith(("mixtral", "llama-4")) else "workload dense")


def check(folder: str, efficiency: Efficiency) -> dict:
    """One folder's rows predicted once: its report.json and report.md (for `amd-vllm`, its older releases' tables
    beside, by version)."""
    here = HERE / folder
    out = REPORT.predict(here / "rows.toml", efficiency, groups_of)
    rule = "inclusion-rule.md" if folder == "amd-vllm" else "../lmdeploy01/inclusion-rule.md"
    lines = [f"# {CHECKS[folder]}", "", "Predicted once by `../session33.py` with today's shipped model (rule: "
             f"`{rule}`; rows: `rows.toml`, built by `build_rows.py` from `table.md`).", ""]
    lines += REPORT.table(out["groups"], [])
    saved = {"shipped": out}
    if folder == "amd-vllm":
        saved["versions"] = REPORT.predict(here / "versions.toml", efficiency, version_of)
        lines += ["", "The older releases' tables (the same cells measured with older vLLM; not pooled), by the table:",
                  ""] + REPORT.table(saved["versions"]["groups"], [])
    (here / "report.json").write_text(json.dumps(saved, indent=1) + "\n")
    (here / "report.md").write_text("\n".join(lines) + "\n")
    return out


def version_of(r) -> tuple[str, ...]:
    """An older AMD table's rows by their table (vLLM version and date, in the row's id) and model."""
    version, date = re.match(r"amdvllm-([\d.]+)-(\d{4}-\d\d-\d\d)-", r.id).groups()
    return (f"table vLLM {version} of {date}", f"model {r.model}")


def judge_of(r) -> tuple[str, ...]:
    """A judging row's judge (the July latency tables or the throughput tables), its model and its batch's size."""
    kind = "judge 1: July 2025 latency" if "-latency-" in r.id else "judge 2: throughput"
    return (kind, f"{kind}, model {r.model}", f"version {engine_version_word(r.engine)}")


def engine_version_word(engine: str) -> str:
    return engine.split("(")[0].split()[-1]


def judge() -> dict:
    """The MI300X candidate (`amd-vllm-judge/inclusion-rule.md`: the memory stream ratio `fit_session33.py` fits) on
    its two judges, predicted once with it and without it (today's shipped model); its report.json and report.md."""
    here = HERE / "amd-vllm-judge"
    out = {name: REPORT.predict(here / "rows.toml", eff, judge_of)
           for name, eff in (("with", FIT.candidate(CANDIDATE_RATIO)), ("without", Efficiency.shipped()))}
    groups = out["with"]["groups"]
    ships = all(groups[k]["median_abs_error"] < out["without"]["groups"][k]["median_abs_error"]
                for k in ("judge 1: July 2025 latency", "judge 2: throughput"))
    out["decision"] = "ships" if ships else "does not ship"
    lines = ["# The MI300X's memory stream ratio on tables no fit had seen (session 33)", "",
             "Predicted once by `../session33.py` (rule: `inclusion-rule.md`; rows: `rows.toml`, built by "
             "`build_rows.py` from `table.md`). The first five columns: with the candidate (the MI300X's "
             "`kernel_memory_ratio` 0.50); the last three: without it (today's shipped model). The rule: it ships "
             f"if lower on each judge. **Decision: it {out['decision']}.**", ""]
    lines += REPORT.table(groups, [("without", out["without"]["groups"], REPORT.FULL)])
    (here / "report.json").write_text(json.dumps(out, indent=1) + "\n")
    (here / "report.md").write_text("\n".join(lines) + "\n")
    return out


def _toml_rows(path: Path) -> list[dict]:
    import tomllib

    return tomllib.loads(path.read_text())["result"]


#: the AMD tables the rules keep out of the pool: older releases of the pooled table, and the candidate's judges
AMD_BESIDE = (HERE / "amd-vllm" / "versions.toml", HERE / "amd-vllm-judge" / "rows.toml")


def pooled(efficiency: Efficiency, every_amd_table: bool = False) -> dict:
    """Every row today's model never saw, each measurement once: the TensorRT-LLM ones (`session32.distinct_rows`)
    and this session's checks (with `every_amd_table`, also the AMD tables the rules report beside them); issue 13's
    prefill regime beside the groups (rows whose predicted prefill outlasts their decode, and every first-token row:
    `accuracy.row_workloads`)."""
    rows = S32.distinct_rows(TRTLLM_CLEAN, TRTLLM_SEEN) + [r for c in CHECKS for r in S32._rows(c)]
    if every_amd_table:
        rows += [r for path in AMD_BESIDE for r in _toml_rows(path)]
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "rows.toml"
        path.write_text(TABLE.toml(rows))
        groups = REPORT.predict(path, efficiency, groups_of)["groups"]
        preds = [predict_row(r, efficiency) for r in read_measurements(str(path))]
    groups["workload prefill"] = REPORT.figures([p for p in preds if "prefill" in p.workloads])
    return groups


def markdown(checks: dict, pool: dict, every: dict) -> str:
    lines = ["# Session 33: single-request decode and first tokens from two engines no fit has seen", ""]
    for folder, out in checks.items():
        lines += [f"## {CHECKS[folder]}", ""] + REPORT.table(out["groups"], []) + [""]
    lines += ["## Every row today's model never saw, pooled (TensorRT-LLM 0.12, 0.19, v0.21 and the three above; each "
              "measurement once)", ""] + REPORT.table(pool, [])
    lines += ["", "The same with every AMD table the rules keep beside the pool (the older releases' 112 rows and the "
              "candidate's 126 judging rows, today's model on both):", ""]
    lines += REPORT.table({k: v for k, v in every.items() if k == "all" or k.startswith(("workload", "engine"))}, [])
    return "\n".join(lines) + "\n"


def main() -> dict:
    eff = Efficiency.shipped()
    checks = {c: check(c, eff) for c in CHECKS}
    verdict = judge()
    now = {"checks": {c: out["groups"] for c, out in checks.items()}, "pooled": pooled(eff),
           "pooled_every_amd_table": pooled(eff, every_amd_table=True),
           "judge": {"with": verdict["with"]["groups"], "without": verdict["without"]["groups"],
                     "decision": verdict["decision"]}}
    (HERE / "session33.json").write_text(json.dumps(now, indent=1) + "\n")
    (HERE / "session33.md").write_text(markdown(checks, now["pooled"], now["pooled_every_amd_table"]))
    return now


if __name__ == "__main__":
    main()
    print((HERE / "session33.md").read_text())
