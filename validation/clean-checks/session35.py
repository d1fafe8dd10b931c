"""Session 35's judgement of a tensor-parallel group's barrier wait, and today's model on every row it never saw,
written to trtllm010/report.json and report.md and to session35.json and session35.md beside this file:

    python validation/clean-checks/session35.py

1. The rule (`trtllm010/inclusion-rule.md`): the candidate C, a TP group on NVLink waits ℓ of its step's body at its
   barriers (`core.roofline.tp_sync_loss`), ℓ fitted on the development tables (`fit_session35.py`), judged on
   TensorRT-LLM 0.10's and 0.11's throughput tables (each measurement once, none a development table holds): it ships
   if the median |error| of the judging rows it changes is lower with it than without.
2. Today's model on every row it never saw: session 34's pool and these tables, each measurement once.
"""

from __future__ import annotations

import importlib.util
import json
import tempfile
from pathlib import Path

from kokuban.specs.hardware import PROFILES, Efficiency

HERE = Path(__file__).parent

_spec = importlib.util.spec_from_file_location("session33", HERE / "session33.py")
S33 = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(S33)
S34 = S33._load("session34", HERE / "session34.py")  # session 33's loader of the scripts beside it
FIT = S33._load("fit_session35", HERE / "fit_session35.py")
REPORT = S33.REPORT
LOSS = 0.14  # the least of fit_session35.py's grid (tests/test_session35_checks.py checks it)
JUDGES = ["trtllm010", "trtllm011"]
#: session 34's final step model: today's without the barrier wait (what its pool was scored with)
BEFORE = PROFILES["kernel-2026-12-05c"]


def judging_rows() -> list[dict]:
    """The two tables' rows, each measurement once, less those a development table holds (`session32.distinct_rows`)."""
    return S33.S32.distinct_rows(JUDGES, list(FIT.DEVELOPMENT))


def models() -> dict[str, Efficiency]:
    return {"with": FIT.candidate(LOSS), "without": BEFORE()}


def judge() -> dict:
    """Every judging row predicted once by each of `models`, the decision, trtllm010/report.json and .md."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "rows.toml"
        path.write_text(S33.TABLE.toml(judging_rows()))
        changed = {r.id for r in FIT.changed(S33.read_measurements(str(path)))}

        def groups_of(r) -> tuple[str, ...]:
            table = "table 0.10" if r.id.startswith("trtllm010") else "table 0.11"
            who = ("changed (TP ≥ 2 on NVLink)",) if r.id in changed else ()
            return (*who, table, f"gpu {r.accelerator}", f"tp{r.num_gpus}", f"dtype {r.weights_dtype}",
                    f"model {r.model}")

        out = {name: REPORT.predict(path, eff, groups_of) for name, eff in models().items()}
    key = "changed (TP ≥ 2 on NVLink)"
    ships = out["with"]["groups"][key]["median_abs_error"] < out["without"]["groups"][key]["median_abs_error"]
    out["decision"] = "ships" if ships else "does not ship"
    here = HERE / "trtllm010"
    lines = ["# A tensor-parallel group's barrier wait, judged on TensorRT-LLM 0.10's and 0.11's tables (session 35)",
             "",
             "Predicted once by `../session35.py` (rule: `inclusion-rule.md`; rows: `rows.toml` here and in "
             "`../trtllm011/`, built by each `build_rows.py` from its `table.md`, each measurement once). The first "
             f"five columns: C (a TP group on NVLink waits {LOSS:g} of its step's body at its barriers, "
             "`../fit_session35.py`); then the model without it (session 34's final, profile kernel-2026-12-05c). "
             "The rule: C ships if the median |error| of the rows it changes is lower with it. "
             f"**Decision: it {out['decision']}.**", ""]
    lines += REPORT.table(out["with"]["groups"], [("without", out["without"]["groups"], REPORT.FULL)])
    (here / "report.json").write_text(json.dumps(out, indent=1) + "\n")
    (here / "report.md").write_text("\n".join(lines) + "\n")
    return out


def never_seen_rows() -> list[dict]:
    """Every row today's model never saw: session 34's pool (`session34.never_seen_rows`) and the two tables, each
    measurement once (a cell 0.10 or 0.11 printed again in 0.12 … v0.21 counts once)."""
    pool = S34.never_seen_rows(True)
    seen = {S33.S32._measurement(r) for r in pool}
    return pool + [r for r in judging_rows() if S33.S32._measurement(r) not in seen]


def by_source(rows: list[dict]) -> dict:
    """`rows` by source (the row id's prefix), by one GPU or a group, and by GPU within a source's groups, predicted
    with C and without it (what docs/validation.md, "Session 35", quotes of what it costs)."""
    def keys(r) -> tuple[str, ...]:
        source, tp = r.id.split("-")[0], "tp>1" if r.num_gpus > 1 else "tp1"
        return source, f"{source} {tp}", f"{source} {r.accelerator} {tp}"

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "rows.toml"
        path.write_text(S33.TABLE.toml(rows))
        return {name: REPORT.predict(path, eff, keys)["groups"] for name, eff in models().items()}


def published() -> dict:
    """The published set's multi-GPU rows by engine (as each source names it), with C and without it."""
    from kokuban.specs.catalog import DATA

    def keys(r) -> tuple[str, ...]:
        return (f"multi-gpu {r.engine}",) if r.num_gpus > 1 else ()

    return {name: REPORT.predict(DATA / "published_results.toml", eff, keys)["groups"]
            for name, eff in models().items()}


def main() -> dict:
    out = judge()
    today = models()["with"] if out["decision"] == "ships" else BEFORE()  # with C, today's shipped model
    now = {"judge": {k: v["groups"] for k, v in out.items() if k != "decision"} | {"decision": out["decision"]},
           "today": S33.pooled(today, never_seen_rows()),
           "today_on_session_34_pool": S33.pooled(today, S34.never_seen_rows(True)),
           "by_source": by_source(never_seen_rows()), "published": published()}
    (HERE / "session35.json").write_text(json.dumps(now, indent=1) + "\n")
    lines = ["# Session 35: a tensor-parallel group's barrier wait, and today's model on every row it never saw", "",
             "## The judgement (`trtllm010/report.md`)", "",
             f"C (ℓ = {LOSS:g} of a TP group's step body on NVLink): **{out['decision']}**.", "",
             "## Today's model on every row it never saw (session 34's pool — TensorRT-LLM 0.12, 0.19, v0.21, "
             "LMDeploy's, the AMD judges and the table beside them, the scoreboard rows of fifteen GPUs, XiongjieDai's "
             "— and TensorRT-LLM 0.10's and 0.11's tables; each measurement once; not the rows today's constants were "
             "fitted on)", ""] + REPORT.table(now["today"], [])
    old = now["today_on_session_34_pool"]["all"]
    before = json.loads((HERE / "session34.json").read_text())["today"]["all"]
    lines += ["", f"On session 34's pool alone ({old['count']} rows, without the two tables): "
              f"{REPORT.pct(old['median_abs_error'])} median |error| "
              f"({REPORT.pct(old['median_abs_error_ci'][0])} – {REPORT.pct(old['median_abs_error_ci'][1])}), "
              f"p90 {REPORT.pct(old['p90_abs_error'])} (session 34's model: {REPORT.pct(before['median_abs_error'])}, "
              f"p90 {REPORT.pct(before['p90_abs_error'])}, `session34.md`)."]
    (HERE / "session35.md").write_text("\n".join(lines) + "\n")
    return now


if __name__ == "__main__":
    main()
    print((HERE / "session35.md").read_text())
