"""Session 32's clean checks (TensorRT-LLM 0.15's and v0.20's tables), its decision rule, and the figures
docs/validation.md ("Session 32") and the README quote, rebuilt from the committed reports and today's predictions."""

from __future__ import annotations

import importlib.util
import json
import tomllib
from dataclasses import replace
from pathlib import Path

import pytest
from test_session31_checks import _pct, _same, _text  # the same readers of reports and docs

from kokuban.sim.profiles import load_profile
from kokuban.specs.hardware import NON_TORCH_BYTES_UNTIL_SESSION_32, PROFILES, Efficiency
from kokuban.validation.accuracy import load_published, predict_row

ROOT = Path(__file__).resolve().parents[1]
CHECKS = ROOT / "validation/clean-checks"


def _module(path: Path):
    spec = importlib.util.spec_from_file_location(path.stem + path.parent.name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _report(check: str) -> dict:
    return json.loads((CHECKS / check / "report.json").read_text())


def test_the_rows_are_the_tables_by_their_rules():
    b15 = _module(CHECKS / "trtllm015/build_rows.py")
    assert sum(1 for *_, values in b15.cells() for v in values if v) == 547  # every non-empty cell of the table
    rows15 = b15.rows()
    # the rule leaves out Mistral 7B beyond 4,096 tokens (three lengths × six columns)
    assert len(rows15) == 529 and b15.TABLE.toml(rows15) in (CHECKS / "trtllm015/rows.toml").read_text()
    assert all(r["input_tokens"] + r["output_tokens"] <= 4096 for r in rows15 if r["model"] == "mistral-7b-v0.3")
    gh200 = {r["engine"] for r in rows15 if r["accelerator"] == "gh200"}
    assert gh200 == {"TensorRT-LLM 0.15 (gptManagerBenchmark IFB)"}
    assert {(r["accelerator"], r["weights_dtype"]) for r in rows15} == {
        ("h100-sxm", "fp8"), ("h100-sxm", "fp16"), ("a100-80gb", "fp16"), ("a100-pcie-80gb", "fp16"), ("l40s", "fp8"),
        ("gh200", "fp8")}
    b20 = _module(CHECKS / "trtllm020/build_rows.py")
    rows20 = b20.rows()
    assert len(rows20) == 180 and b20.TABLE.toml(rows20) in (CHECKS / "trtllm020/rows.toml").read_text()
    assert all(r["kv_dtype"] == "fp8" and not r["expert_parallel"] for r in rows20)
    assert {r["weights_dtype"] for r in rows20 if r["accelerator"] == "b200"} == {"nvfp4"}
    b12 = _module(CHECKS / "trtllm012/build_rows.py")
    rows12 = b12.rows()
    assert len(rows12) == 217 and b12.TABLE.toml(rows12) in (CHECKS / "trtllm012/rows.toml").read_text()
    assert not any(r["accelerator"] == "gh200" or "gptj" in r["id"] or "falcon" in r["id"] for r in rows12)
    assert sum(r["accelerator"] == "l40s" and r["num_gpus"] > 1 for r in rows12) == 14  # the decision rows
    b19, b21 = _module(CHECKS / "trtllm019/build_rows.py"), _module(CHECKS / "trtllm021/build_rows.py")
    every19 = b19.BUILD.rows(CHECKS / "trtllm019/table.md", "trtllm019", "", "")
    twins = b19.published_twins(every19)  # the 4 cells the published set holds: equal values, left out
    assert len(every19) == 184 and len(twins) == 4
    assert all(next(r["value"] for r in every19 if r["id"] == k) == v for k, (_, v) in twins.items())
    rows19, rows21 = b19.rows(), b21.rows()
    assert len(rows19) == 180 and b19.BUILD.TABLE.toml(rows19) in (CHECKS / "trtllm019/rows.toml").read_text()
    assert len(rows21) == 131 and b21.BUILD.TABLE.toml(rows21) in (CHECKS / "trtllm021/rows.toml").read_text()
    maverick20 = {(r["accelerator"], r["input_tokens"], r["output_tokens"], r["value"]) for r in rows20
                  if r["model"] == "llama-4-maverick"}
    maverick21 = {(r["accelerator"], r["input_tokens"], r["output_tokens"], r["value"]) for r in rows21
                  if r["model"] == "llama-4-maverick"}
    assert len(maverick21) == 11 and maverick21 <= maverick20  # v0.21 prints v0.20's Maverick cells again
    for check in ("trtllm015", "trtllm020", "trtllm012", "trtllm019", "trtllm021"):  # not merged into the set
        ids = {r["id"] for r in tomllib.loads((CHECKS / check / "rows.toml").read_text())["result"]}
        assert not ids & {r.id for r in load_published()}


def test_the_models_session_32_checked():
    """Session 31's model (as checked), session 32's first (the memory rule, "kernel-2026-12-04e") and today's (with
    the per-card PCIe fractions) differ by exactly those changes."""
    from kokuban.specs.catalog import load_accelerator

    assert load_profile("trtllm").memory_rule.non_torch_bytes == 3.0e9
    checked, first, today = PROFILES["kernel-2026-12-04d"](), PROFILES["kernel-2026-12-04e"](), Efficiency.shipped()
    assert checked.engine_non_torch_bytes == NON_TORCH_BYTES_UNTIL_SESSION_32 == 0.6e9
    assert replace(checked, engine_non_torch_bytes=3.0e9) == first
    assert replace(first, engine_non_torch_bytes=None,
                   kernels=replace(first.kernels, own_pcie=True, own_weight_memory=True,  # + session 33's
                                   ggml_mmq_ops_per_cycle=520.0, ggml_sm_stream_bytes_per_cycle=5.5,  # + 34's
                                   tp_sync_loss=0.14)) == today  # + session 35's barrier wait
    assert {g: load_accelerator(g).kernel_constants["pcie_allreduce_fraction"] for g in ("l40s", "a100-pcie-80gb")} == {
        "l40s": 0.45, "a100-pcie-80gb": 0.40}
    assert "pcie_allreduce_fraction" not in load_accelerator("rtx-4090").kernel_constants  # its box: the curve's 0.85
    # one row the memory rule moves: Llama-3.1-70B fp8 on one H100, 128/2,048 (its batch is the KV pool's)
    row = next(r for r in load_published() if r.id == "trtllm019-llama31-70b-h100-tp1-fp8-128-2048")
    before, after = predict_row(row, checked), predict_row(row, first)
    assert after.batch_per_replica < before.batch_per_replica and after.predicted < before.predicted


@pytest.mark.parametrize("check", ["trtllm015", "trtllm020"])
def test_the_reports_are_the_predictions_and_the_rule_decides(check):
    report, committed = _module(CHECKS / check / "report.py"), _report(check)
    check_main = getattr(report, "CHECK", report)  # v0.20's script runs 0.15's functions
    rows = CHECKS / check / "rows.toml"
    for key, candidate in (("shipped", False), ("candidate", True)):
        _same(committed[key]["groups"], check_main.report(rows, candidate=candidate)["groups"])
    # the rule: the candidate ships only if its median is lower on both tables
    assert committed["candidate"]["groups"]["all"]["median_abs_error"] < committed["shipped"]["groups"]["all"][
        "median_abs_error"]


@pytest.mark.parametrize("check", ["trtllm019", "trtllm021"])
def test_the_last_reports_are_session_32s_final_predictions(check):
    report = _module(CHECKS / "trtllm021/report.py")
    _same(_report(check)["shipped"]["groups"], report.report(CHECKS / check)["groups"])
    s = _report(check)["shipped"]["groups"]["all"]
    lo, hi = s["median_abs_error_ci"]
    assert (f"**{_pct(s['median_abs_error'])} % ({_pct(lo)}–{_pct(hi)} %), p90 {_pct(s['p90_abs_error'])} %**"
            in _text("docs/validation.md"))


def test_the_012_report_is_the_prediction_and_its_rule_keeps_the_pcie_fractions():
    report, committed = _module(CHECKS / "trtllm012/report.py"), _report("trtllm012")
    for key, before in (("shipped", False), ("before_pcie", True)):
        _same(committed[key]["groups"], report.report(before_pcie=before)["groups"])
        decision = report.l40s_several(before_pcie=before)
        assert decision["count"] == 14
        assert committed["l40s_several"][key]["median_abs_error"] == pytest.approx(decision["median_abs_error"])
    d = committed["l40s_several"]
    assert d["shipped"]["median_abs_error"] < d["before_pcie"]["median_abs_error"]  # the rule: they stay
    docs = _text("docs/validation.md")
    s, b = committed["shipped"]["groups"]["all"], committed["before_pcie"]["groups"]["all"]
    lo, hi = s["median_abs_error_ci"]
    now, old = _pct(d["shipped"]["median_abs_error"]), _pct(d["before_pcie"]["median_abs_error"])
    assert (f"Today's model: **{_pct(s['median_abs_error'])} % median ({_pct(lo)}–{_pct(hi)} %), p90 "
            f"{_pct(s['p90_abs_error'])} %**, against {_pct(b['median_abs_error'])} %, p90 "
            f"{_pct(b['p90_abs_error'])} % without the PCIe fractions; the decision rows, 14 L40S rows at TP 4 and 8: "
            f"**{now} %** with them, {old} % "
            "without.") in docs


def test_the_docs_quote_the_reports():
    docs, readme = _text("docs/validation.md"), _text("README.md")
    for check, label in (("trtllm015", "0.15"), ("trtllm020", "v0.20")):
        r = _report(check)
        s, c = r["shipped"]["groups"]["all"], r["candidate"]["groups"]["all"]
        (lo, hi), (clo, chi) = s["median_abs_error_ci"], c["median_abs_error_ci"]
        line = (f"| {label} | {s['count']} | **{_pct(s['median_abs_error'])} %** ({_pct(lo)}–{_pct(hi)} %) | "
                f"**{_pct(s['p90_abs_error'])} %** | {_pct(c['median_abs_error'])} % ({_pct(clo)}–{_pct(chi)} %) | "
                f"{_pct(c['p90_abs_error'])} % |")
        assert line in docs, line
    g15, g20 = _report("trtllm015")["candidate"]["groups"], _report("trtllm020")["candidate"]["groups"]

    def signed(g, key):
        return f"+{100 * g[key]['median_signed_error']:.0f} %"

    pcie, l40s = "gpu a100-pcie-80gb fp16 tp", "gpu l40s fp8 tp"
    assert (f"(0.15: A100 PCIe at TP 2 and 8 {signed(g15, pcie + '2')} and {signed(g15, pcie + '8')}, L40S at TP 4 "
            f"and 8 {signed(g15, l40s + '4')} and {signed(g15, l40s + '8')})") in docs
    assert f"(v0.20, 13 rows): +{_pct(g20['model llama-4-maverick']['median_signed_error'])} % median" in docs
    fp16 = [100 * g15[f"gpu h100-sxm fp16 tp{n}"]["median_signed_error"] for n in (2, 4, 8)]
    b200 = [signed(g20, f"gpu b200 nvfp4 tp{n}") for n in (2, 8)]
    assert f"+{min(fp16):.0f}–{max(fp16):.0f} % (0.15)" in docs
    assert f"NVFP4 at TP 2 and 8 {b200[0]} and {b200[1]}" in docs
    now = json.loads((CHECKS / "session32.json").read_text())
    for name, count in (("today", 517), ("first", 1226)):
        p = now[name]["clean"]
        assert p["all"]["count"] == count
        lo, hi = p["all"]["median_abs_error_ci"]
        m = {k: _pct(v["median_abs_error"]) for k, v in p.items()}
        head = (f"**{m['all']} % median ({_pct(lo)}–{_pct(hi)} %), p90 {_pct(p['all']['p90_abs_error'])} %**; one GPU "
                f"{m['workload one gpu']} %, several {m['workload multi-gpu']} %; fp8 {m['dtype fp8']} %, fp16 "
                f"{m['dtype fp16']} %, fp4 {m['dtype fp4']} %; MoE {m['workload moe']} %, prefill-dominated "
                f"{m['workload prefill-dominated']} %")
        assert head in docs, head
        assert max(v["median_abs_error"] for k, v in p.items() if k.startswith(("dtype", "workload"))) < 0.20
    t = now["today"]["clean"]
    lo, hi = t["all"]["median_abs_error_ci"]
    assert (f"**{_pct(t['all']['median_abs_error'])} % median ({_pct(lo)}–{_pct(hi)} %), p90 "
            f"{_pct(t['all']['p90_abs_error'])} %** on {t['all']['count']} rows") in readme
    labels = {"trtllm013": "0.13", "trtllm014": "0.14", "trtllm017": "0.17", "trtllm015": "0.15", "trtllm020": "v0.20",
              "trtllm012": "0.12", "trtllm019": "0.19", "trtllm021": "v0.21"}
    summary = _module(CHECKS / "session32.py")
    for check, (key, _, _) in summary.CHECKS.items():
        saved = _report(check)[key]
        c = saved.get("groups", saved)["all"]
        f, t = now["first"][check]["all"], now["today"][check]["all"]
        cells = [f"{_pct(x['median_abs_error'])} %, p90 {_pct(x['p90_abs_error'])} %" for x in (c, f, t)]
        assert f"| {labels[check]} | {c['count']} | {cells[0]} | {cells[1]} | {cells[2]} |" in docs, check


def test_the_summary_is_the_models_predictions():
    """session32.json: each model's clean pool and one table recomputed (the other tables are the same computation
    on more rows, left to `session32.py`)."""
    summary = _module(CHECKS / "session32.py")
    saved = json.loads((CHECKS / "session32.json").read_text())
    fresh = summary.summary(("trtllm021",))
    for name in ("first", "today"):
        for key in ("clean", "trtllm021"):
            _same(saved[name][key], fresh[name][key])


def test_the_fits_are_the_scripts_and_the_notes_quote_them():
    """fit_session32.py's grids: each shipped value has the least mean squared log error of its grid (the memory
    reserve: within the flat minimum, 2.5–3.5 GB at 4 decimals, whose centre is taken), and the catalog, the engine
    profile and the docs quote its figures."""
    fit = _module(CHECKS / "fit_session32.py")
    reserve = {gb: round(msle, 4) for gb, (msle, _) in fit.reserve_scores().items()}
    flat = sorted(gb for gb, v in reserve.items() if v == min(reserve.values()))
    assert flat == [2.5, 3.0, 3.5] and (flat[0] + flat[-1]) / 2 == 3.0
    assert (reserve[3.0], reserve[0.6]) == (0.0134, 0.0145)
    engines = (ROOT / "src/kokuban/data/engines.toml").read_text()
    assert "flat at 0.0134 for 2.5-3.5 GB against 0.0145 at the 0.6 GB" in engines
    catalog = tomllib.loads((ROOT / "src/kokuban/data/accelerators.toml").read_text())["accelerator"]
    notes = {a["id"]: a.get("kernel_note", "") for a in catalog}
    for gpu, chosen in (("l40s", 0.45), ("a100-pcie-80gb", 0.40)):
        scores = fit.pcie_scores(gpu)
        assert min(scores, key=lambda f: scores[f][0]) == chosen
        (msle, median), (msle_box, median_box) = scores[chosen], scores[0.85]
        assert (f"least at {chosen:.2f} ({msle:.4f}; median |error| {100 * median:.1f} %) against {msle_box:.4f} "
                f"({100 * median_box:.1f} %)") in notes[gpu], gpu
    assert "**L40S 0.45** (222 rows: median 40.1 % → 6.1 %), **A100 PCIe 0.40** (139 rows: 41.7 % → 12.3 %" in _text(
        "docs/validation.md")
    assert 0.45 * 32e9 == pytest.approx(14.4e9) and 0.40 * 32e9 == pytest.approx(12.8e9)  # the bus bandwidths quoted
