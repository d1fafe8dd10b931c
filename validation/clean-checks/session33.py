"""Session 33's clean checks and its MI300X fit, written to each folder's report.json and report.md and to
session33.json and session33.md beside this file:

    python validation/clean-checks/session33.py

1. Three checks predicted once with the model shipped when their rules were written (session 32's final,
   "kernel-2026-12-05a"): single-request decode and first tokens from LMDeploy 0.1 and llama.cpp's CUDA scoreboard
   (`lmdeploy01/inclusion-rule.md`), and AMD's vLLM 0.9.0.1 latency table on eight MI300X (`amd-vllm/`); pooled with
   the TensorRT-LLM rows that model never saw (`session32.py`: 0.12, 0.19, v0.21), each measurement once.
2. Two MI300X candidates fitted on the AMD rows then seen (`fit_session33.py`), each on judges no fit had seen: the
   memory stream ratio (`amd-vllm-judge/`: rejected) and the weight stream ratio (`amd-vllm-nov/`: shipped, the
   catalog's `kernel_weight_memory_ratio`).
3. Today's model on every row it never saw: the TensorRT-LLM ones, LMDeploy's, llama.cpp's and the second candidate's
   judges and the table beside them (the AMD rows the fits used are not among them).
"""

from __future__ import annotations

import importlib.util
import json
import re
import tempfile
from pathlib import Path

from kokuban.specs.hardware import PROFILES, Efficiency
from kokuban.usecases.validation import read_measurements
from kokuban.validation.accuracy import engine_family, engine_version, predict_row

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
CHECKED = PROFILES["kernel-2026-12-05a"]  # the model the checks predicted: session 32's final
#: "today's model" of this session's reports: session 33's final (the shipped one until session 34's MMQ rate)
TODAY = PROFILES["kernel-2026-12-05b"]
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


def check(folder: str) -> dict:
    """One folder's rows predicted once with the model as checked, and with today's beside (report.json "as_checked",
    "today"); for `amd-vllm`, its older releases' tables too, by version."""
    here = HERE / folder
    checked, today = CHECKED(), TODAY()
    saved = {name: REPORT.predict(here / "rows.toml", eff, groups_of) for name, eff in (("as_checked", checked),
                                                                                     ("today", today))}
    rule = "inclusion-rule.md" if folder == "amd-vllm" else "../lmdeploy01/inclusion-rule.md"
    lines = [f"# {CHECKS[folder]}", "", "Predicted once by `../session33.py` with the model shipped when the rule was "
             f"written (\"kernel-2026-12-05a\"; rule: `{rule}`; rows: `rows.toml`, built by `build_rows.py` from "
             "`table.md`): the first five columns. The last three: today's model, for reference.", ""]
    lines += REPORT.table(saved["as_checked"]["groups"], [("today", saved["today"]["groups"], REPORT.FULL)])
    if folder == "amd-vllm":
        saved["versions"] = REPORT.predict(here / "versions.toml", checked, version_of)
        lines += ["", "The older releases' tables (the same cells measured with older vLLM; not pooled), by the table, "
                  "as checked:", ""] + REPORT.table(saved["versions"]["groups"], [])
    (here / "report.json").write_text(json.dumps(saved, indent=1) + "\n")
    (here / "report.md").write_text("\n".join(lines) + "\n")
    return saved


def version_of(r) -> tuple[str, ...]:
    """An older AMD table's rows by their table (vLLM version and date, in the row's id) and model."""
    version, date = re.match(r"amdvllm-([\d.]+)-(\d{4}-\d\d-\d\d)-", r.id).groups()
    return (f"table vLLM {version} of {date}", f"model {r.model}")


def judge_of(r) -> tuple[str, ...]:
    """A judging row's judge (the July latency tables or the throughput tables), its model and its batch's size."""
    kind = "judge 1: July 2025 latency" if "-latency-" in r.id else "judge 2: throughput"
    return (kind, f"{kind}, model {r.model}", f"version {version_text(r.engine)}")


def version_text(engine: str) -> str:
    """The version an engine string names, as written ('vLLM 0.9.1 (…)' → '0.9.1'; `accuracy.engine_version`)."""
    return ".".join(map(str, engine_version(engine)))


def judge() -> dict:
    """The first MI300X candidate (`amd-vllm-judge/inclusion-rule.md`: the memory stream ratio `fit_session33.py`
    fits) on its two judges, predicted once with it and without it (the model as checked); its report.json and
    report.md."""
    here = HERE / "amd-vllm-judge"
    out = {name: REPORT.predict(here / "rows.toml", eff, judge_of)
           for name, eff in (("with", FIT.candidate(CANDIDATE_RATIO, CHECKED())), ("without", CHECKED()))}
    groups = out["with"]["groups"]
    ships = all(groups[k]["median_abs_error"] < out["without"]["groups"][k]["median_abs_error"]
                for k in ("judge 1: July 2025 latency", "judge 2: throughput"))
    out["decision"] = "ships" if ships else "does not ship"
    lines = ["# The MI300X's memory stream ratio on tables no fit had seen (session 33)", "",
             "Predicted once by `../session33.py` (rule: `inclusion-rule.md`; rows: `rows.toml`, built by "
             "`build_rows.py` from `table.md`). The first five columns: with the candidate (the MI300X's "
             "`kernel_memory_ratio` 0.50); the last three: without it (session 32's final model). The rule: it ships "
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


def second_judge_of(r) -> tuple[str, ...]:
    """A row of the second candidate's judges (`amd-vllm-nov/inclusion-rule.md`): which judge, and its model."""
    if r.id.startswith("oracle-"):
        return ("judge B: Oracle",)
    kind = "latency" if "benchmark_latency" in r.engine else "throughput"
    return (f"vLLM {version_text(r.engine)} {kind}", f"vLLM {version_text(r.engine)} {kind}, {r.model}")


def second_judge() -> dict:
    """The second MI300X candidate (its weight stream ratio, the catalog's `kernel_weight_memory_ratio`) on its
    judges and the table beside them, predicted once with it (today's shipped model) and without it (session 32's
    final model, "kernel-2026-12-05a"); amd-vllm-nov/report.json and report.md."""
    here = HERE / "amd-vllm-nov"
    models = (("with", TODAY()), ("without", PROFILES["kernel-2026-12-05a"]()))
    out = {name: {f: REPORT.predict(here / f"{f}.toml", eff, second_judge_of) for f in ("rows", "beside")}
           for name, eff in models}
    w, wo = out["with"]["rows"]["groups"], out["without"]["rows"]["groups"]
    lower = [w[k]["median_abs_error"] < wo[k]["median_abs_error"] for k in ("vLLM 0.11.1 latency", "judge B: Oracle")]
    not_higher = w["vLLM 0.11.1 throughput"]["median_abs_error"] <= wo["vLLM 0.11.1 throughput"]["median_abs_error"]
    out["decision"] = "ships" if all(lower) and not_higher else "does not ship"
    lines = ["# The MI300X's weight stream ratio on tables no fit had seen (session 33)", "",
             "Predicted once by `../session33.py` (rule: `inclusion-rule.md`; rows: `rows.toml` (the judges) and "
             "`beside.toml` (vLLM 0.10.0's README, not deciding), built by `build_rows.py` from `source-*.md` and "
             "`../oracle-mi300x/source.md`). The first five columns: with the candidate (the MI300X's "
             "`kernel_weight_memory_ratio` 0.50, today's shipped model); the last three: without it "
             "(\"kernel-2026-12-05a\"). The rule: it ships if lower on the vLLM 0.11.1 latency rows and on Oracle's, "
             f"and not higher on the 0.11.1 throughput rows. **Decision: it {out['decision']}.**", ""]
    lines += REPORT.table(w, [("without", wo, REPORT.FULL)])
    lines += ["", "Beside them, vLLM 0.10.0's README tables (August 2025):", ""]
    lines += REPORT.table(out["with"]["beside"]["groups"], [("without", out["without"]["beside"]["groups"],
                                                            REPORT.FULL)])
    (here / "report.json").write_text(json.dumps(out, indent=1) + "\n")
    (here / "report.md").write_text("\n".join(lines) + "\n")
    return out


#: today's model's clean AMD rows: the second candidate's judges and the table beside them
AMD_TODAY = (HERE / "amd-vllm-nov" / "rows.toml", HERE / "amd-vllm-nov" / "beside.toml")


def pooled(efficiency: Efficiency, rows: list[dict]) -> dict:
    """The groups of `rows` predicted with `efficiency`, read as one file (in a temporary folder), and issue 13's
    prefill regime beside them (rows whose predicted prefill outlasts their decode, and every first-token row:
    `accuracy.row_workloads`)."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "rows.toml"
        path.write_text(TABLE.toml(rows))
        groups = REPORT.predict(path, efficiency, groups_of)["groups"]
        preds = [predict_row(r, efficiency) for r in read_measurements(str(path))]
    groups["workload prefill"] = REPORT.figures([p for p in preds if "prefill" in p.workloads])
    return groups


def pools() -> dict:
    """The model as checked on every row it never saw (the TensorRT-LLM ones, `session32.distinct_rows`, and the three
    checks), and with the AMD tables the rules keep beside the pool; today's model on every row it never saw."""
    trtllm = S32.distinct_rows(TRTLLM_CLEAN, TRTLLM_SEEN)
    checks = [r for c in CHECKS for r in S32._rows(c)]
    beside = [r for path in AMD_BESIDE for r in _toml_rows(path)]
    clean_today = [r for c in CHECKS if c != "amd-vllm" for r in S32._rows(c)]
    clean_today += [r for path in AMD_TODAY for r in _toml_rows(path)]
    return {"as_checked": pooled(CHECKED(), trtllm + checks),
            "as_checked_every_amd_table": pooled(CHECKED(), trtllm + checks + beside),
            "today": pooled(TODAY(), trtllm + clean_today)}


def _brief(groups: dict) -> dict:
    return {k: v for k, v in groups.items() if k == "all" or k.startswith(("workload", "engine", "dtype"))}


def markdown(checks: dict, now: dict) -> str:
    lines = ["# Session 33: clean checks from three engines, and the MI300X's weight stream", ""]
    for folder, out in checks.items():
        lines += [f"## {CHECKS[folder]} (as checked)", ""] + REPORT.table(out["as_checked"]["groups"], []) + [""]
    lines += ["## Every row the model as checked never saw, pooled (TensorRT-LLM 0.12, 0.19, v0.21 and the three "
              "above; each measurement once)", ""] + REPORT.table(now["as_checked"], [])
    lines += ["", "The same with every AMD table the rules keep beside the pool (the older releases' 112 rows and the "
              "first candidate's 126 judging rows):", ""] + REPORT.table(_brief(now["as_checked_every_amd_table"]), [])
    lines += ["", "## Today's model (the MI300X's weight stream ratio 0.50) on every row it never saw (TensorRT-LLM "
              "0.12, 0.19, v0.21, LMDeploy's, llama.cpp's, and the second candidate's judging and beside rows)", ""]
    lines += REPORT.table(now["today"], [])
    return "\n".join(lines) + "\n"


def main() -> dict:
    checks = {c: check(c) for c in CHECKS}
    first, second = judge(), second_judge()
    now = {"checks": {c: {k: v["groups"] for k, v in out.items()} for c, out in checks.items()}, **pools(),
           "judge": {"with": first["with"]["groups"], "without": first["without"]["groups"],
                     "decision": first["decision"]},
           "second_judge": {m: {f: second[m][f]["groups"] for f in ("rows", "beside")} for m in ("with", "without")}
           | {"decision": second["decision"]}}
    (HERE / "session33.json").write_text(json.dumps(now, indent=1) + "\n")
    (HERE / "session33.md").write_text(markdown(checks, now))
    return now


if __name__ == "__main__":
    main()
    print((HERE / "session33.md").read_text())
