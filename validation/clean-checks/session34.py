"""Session 34's judgement of llama.cpp's per-SM kernel bounds, and today's model on every row it never saw, written to
llamacpp-sm/report.json and report.md and to session34.json and session34.md beside this file:

    python validation/clean-checks/session34.py

1. The rule (`llamacpp-sm/inclusion-rule.md`): two candidates fitted on session 33's scoreboard rows
   (`fit_session34.py`: A, the bytes/s one SM draws through MMVQ; B, the operations one SM completes per cycle in
   MMQ), each judged alone against the model without it on the scoreboard rows of fifteen GPUs no fit had seen:
   A on the 30 tg128 rows, B on the 30 pp512 rows; each ships if the median |error| is lower with it.
2. The third candidate (`llamacpp-xd/inclusion-rule.md`, written after the first two were judged): A2, MMVQ's bytes
   per SM per clock cycle, fitted on every scoreboard decode row read (`fit_session34.py`), judged on XiongjieDai's
   llama-bench notebooks (Llama 3 8B/70B Q4_K_M decode on nine GPUs); it ships if lower on all its judging rows and
   not higher on the GDDR parts' rows.
3. Today's model on every row it never saw: session 33's pool less the twelve scoreboard rows the fits used, plus the
   scoreboard rows of fifteen GPUs (less their decode rows if A2, fitted on them, ships) and XiongjieDai's rows.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

from kokuban.specs.hardware import PROFILES, Efficiency

HERE = Path(__file__).parent


_spec = importlib.util.spec_from_file_location("session33", HERE / "session33.py")
S33 = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(S33)
FIT = S33._load("fit_session34", HERE / "fit_session34.py")  # session 33's loader of the scripts beside it
REPORT = S33.REPORT
#: "today's model" of this session's reports: session 34's final (the shipped one until session 35's barrier wait)
TODAY = PROFILES["kernel-2026-12-05c"]
#: the fitted constants (the least of fit_session34.py's grids: tests/test_session34_checks.py checks them)
STREAM_BYTES_PER_S = 9.0e9
MMQ_OPS_PER_CYCLE = 520.0
STREAM_BYTES_PER_CYCLE = 5.5
#: the third candidate's judging GPUs with HBM (the rest are GDDR parts)
HBM = ("a100-80gb", "a100-pcie-80gb", "h100-pcie")
#: the judging GPUs by chip family (the A30 is the one HBM part)
FAMILY = {"a30": "GA100 (HBM2)", "a40": "Ampere GA10x", "rtx-a4000": "Ampere GA10x", "rtx-a4500": "Ampere GA10x",
          "rtx-a5000": "Ampere GA10x", "rtx-a6000": "Ampere GA10x", "l40": "Ada", "rtx-6000-ada": "Ada",
          "rtx-4060-ti": "Ada", "rtx-4070-ti-super": "Ada", "rtx-4080": "Ada", "rtx-4080-super": "Ada",
          "rtx-4090-d": "Ada", "rtx-5070-ti": "Blackwell", "rtx-5080": "Blackwell"}
TESTS = {"tokens_per_s_per_user": "tg128 (decode, batch 1)", "time_to_first_token_s": "pp512 (first token)"}


def judge_of(r) -> tuple[str, ...]:
    test = TESTS[r.metric]
    fa = "fa0" if r.id.endswith("fa0") else "fa1"
    return (test, f"{test}, {FAMILY[r.accelerator]}", f"{test}, {fa}", f"{test}, gpu {r.accelerator}")


def models() -> dict[str, Efficiency]:
    """The model the rule judges against (today's, without either bound) and the candidates alone and together."""
    return {"without": FIT.candidate(), "A": FIT.candidate(stream_bytes_per_s=STREAM_BYTES_PER_S),
            "B": FIT.candidate(mmq_ops_per_cycle=MMQ_OPS_PER_CYCLE),
            "A and B": FIT.candidate(STREAM_BYTES_PER_S, MMQ_OPS_PER_CYCLE)}


def judge() -> dict:
    """Every judging row predicted once by each of `models`, the two decisions, llamacpp-sm/report.json and .md."""
    here = HERE / "llamacpp-sm"
    out = {name: REPORT.predict(here / "rows.toml", eff, judge_of) for name, eff in models().items()}
    def lower(name: str, test: str) -> bool:  # the candidate's median |error| on its test's rows, against without
        return out[name]["groups"][test]["median_abs_error"] < out["without"]["groups"][test]["median_abs_error"]

    out["decision"] = {name: "ships" if lower(name, TESTS[metric]) else "does not ship"
                       for name, metric in (("A", "tokens_per_s_per_user"), ("B", "time_to_first_token_s"))}
    lines = ["# llama.cpp's quantized CUDA kernels bound per SM, judged on fifteen GPUs no fit had seen (session 34)",
             "", "Predicted once by `../session34.py` (rule: `inclusion-rule.md`; rows: `rows.toml`, built by "
             "`build_rows.py` from `table.md`). The first five columns: both candidates (A: "
             f"{STREAM_BYTES_PER_S:.2g} B/s per SM through MMVQ; B: {MMQ_OPS_PER_CYCLE:g} operations per SM per "
             "cycle in MMQ, `../fit_session34.py`); then each alone and the model without them. The rule: A ships if "
             "lower on the tg128 rows, B on the pp512 rows, each alone against the model without them. "
             f"**Decision: A {out['decision']['A']}; B {out['decision']['B']}.**", ""]
    lines += REPORT.table(out["A and B"]["groups"], [(name, out[name]["groups"], REPORT.BRIEF)
                                                      for name in ("A", "B", "without")])
    (here / "report.json").write_text(json.dumps(out, indent=1) + "\n")
    (here / "report.md").write_text("\n".join(lines) + "\n")
    return out


def third_judge_of(r) -> tuple[str, ...]:
    memory = "HBM" if r.accelerator in HBM else "GDDR"
    return (memory, f"gpu {r.accelerator}", f"model {r.model}", f"tg{r.output_tokens}")


def third_models() -> dict[str, Efficiency]:
    """Today's model (MMQ's rate shipped), with A2 at its fitted constant, and with A (not shipped) for reference."""
    return {"without": FIT.candidate(mmq_ops_per_cycle=MMQ_OPS_PER_CYCLE),
            "A2": FIT.candidate(mmq_ops_per_cycle=MMQ_OPS_PER_CYCLE, stream_bytes_per_cycle=STREAM_BYTES_PER_CYCLE),
            "A": FIT.candidate(STREAM_BYTES_PER_S, MMQ_OPS_PER_CYCLE)}


def third_judge() -> dict:
    """Every XiongjieDai row predicted once by each of `third_models`, the decision, llamacpp-xd/report.json and .md."""
    here = HERE / "llamacpp-xd"
    out = {name: REPORT.predict(here / "rows.toml", eff, third_judge_of) for name, eff in third_models().items()}
    a2, wo = out["A2"]["groups"], out["without"]["groups"]
    ships = (a2["all"]["median_abs_error"] < wo["all"]["median_abs_error"]
             and a2["GDDR"]["median_abs_error"] <= wo["GDDR"]["median_abs_error"])
    out["decision"] = "ships" if ships else "does not ship"
    lines = ["# llama.cpp's decode bound per SM and per cycle, judged on XiongjieDai's notebooks (session 34)", "",
             "Predicted once by `../session34.py` (rule: `inclusion-rule.md`; rows: `rows.toml`, built by "
             "`build_rows.py` from `table.md`). The first five columns: A2 (MMVQ at "
             f"{STREAM_BYTES_PER_CYCLE:g} bytes per SM per cycle, `../fit_session34.py`); then today's model without "
             "it and A (the constant form, not shipped). The rule: A2 ships if lower on all rows and not higher on the "
             f"GDDR parts' rows. **Decision: it {out['decision']}.**", ""]
    lines += REPORT.table(a2, [(name, out[name]["groups"], REPORT.FULL) for name in ("without", "A")])
    (here / "report.json").write_text(json.dumps(out, indent=1) + "\n")
    (here / "report.md").write_text("\n".join(lines) + "\n")
    return out


def never_seen_rows(a2_ships: bool) -> list[dict]:
    """Every row today's model never saw: the TensorRT-LLM ones, LMDeploy's, the AMD judges and the table beside them
    (session 33's pool), less the scoreboard rows the fits used, plus the fifteen GPUs' scoreboard rows (their decode
    rows only if A2, fitted on them, did not ship) and XiongjieDai's."""
    trtllm = S33.S32.distinct_rows(S33.TRTLLM_CLEAN, S33.TRTLLM_SEEN)
    sm = [r for r in S33.S32._rows("llamacpp-sm")
          if not (a2_ships and r["metric"] == "tokens_per_s_per_user")]
    checks = [r for c in ("lmdeploy01", "llamacpp-xd") for r in S33.S32._rows(c)]
    return trtllm + checks + sm + [r for path in S33.AMD_TODAY for r in S33._toml_rows(path)]


def main() -> dict:
    out, third = judge(), third_judge()
    now = {"judge": {k: v["groups"] for k, v in out.items() if k != "decision"} | {"decision": out["decision"]},
           "third_judge": {k: v["groups"] for k, v in third.items() if k != "decision"}
           | {"decision": third["decision"]},
           "today": S33.pooled(TODAY(), never_seen_rows(third["decision"] == "ships"))}
    (HERE / "session34.json").write_text(json.dumps(now, indent=1) + "\n")
    lines = ["# Session 34: llama.cpp's kernels bound per SM, and today's model on every row it never saw", "",
             "## The judgement (`llamacpp-sm/report.md`)", "",
             f"A (MMVQ, tg128): **{out['decision']['A']}**; B (MMQ, pp512): **{out['decision']['B']}**.", "",
             "## The third candidate (`llamacpp-xd/report.md`)", "",
             f"A2 (MMVQ per SM and per cycle, XiongjieDai's decode rows): **{third['decision']}**.", "",
             "## Today's model on every row it never saw (TensorRT-LLM 0.12, 0.19, v0.21, LMDeploy's, the AMD judges "
             "and the table beside them, the scoreboard rows of fifteen GPUs and XiongjieDai's; not the rows today's "
             "constants were fitted on)", ""] + REPORT.table(now["today"], [])
    (HERE / "session34.md").write_text("\n".join(lines) + "\n")
    return now


if __name__ == "__main__":
    main()
    print((HERE / "session34.md").read_text())
