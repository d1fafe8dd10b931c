"""Session 32's clean checks (TensorRT-LLM 0.15's and v0.20's tables), its decision rule, and the figures
docs/validation.md ("Session 32") and the README quote, rebuilt from the committed reports and today's predictions."""

from __future__ import annotations

import importlib.util
import json
import tomllib
from dataclasses import replace
from pathlib import Path

import pytest

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


def _text(name: str) -> str:
    return " ".join((ROOT / name).read_text().split())


def _pct(x: float) -> str:
    return f"{100 * x:.1f}"


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
    for check in ("trtllm015", "trtllm020"):  # not merged into the published set
        ids = {r["id"] for r in tomllib.loads((CHECKS / check / "rows.toml").read_text())["result"]}
        assert not ids & {r.id for r in load_published()}


def test_the_candidate_is_todays_model_and_the_checked_one_session_31s():
    assert load_profile("trtllm").memory_rule.non_torch_bytes == 3.0e9
    checked = PROFILES["kernel-2026-12-04d"]()
    assert checked.engine_non_torch_bytes == NON_TORCH_BYTES_UNTIL_SESSION_32 == 0.6e9
    assert replace(checked, engine_non_torch_bytes=None) == Efficiency.shipped()
    # one row the rule's change moves: Llama-3.1-70B fp8 on one H100, 128/2,048 (its batch is the KV pool's)
    row = next(r for r in load_published() if r.id == "trtllm019-llama31-70b-h100-tp1-fp8-128-2048")
    before, after = predict_row(row, checked), predict_row(row, Efficiency.shipped())
    assert after.batch_per_replica < before.batch_per_replica and after.predicted < before.predicted


@pytest.mark.parametrize("check", ["trtllm015", "trtllm020"])
def test_the_reports_are_the_predictions_and_the_rule_decides(check):
    report, committed = _module(CHECKS / check / "report.py"), _report(check)
    check_main = getattr(report, "CHECK", report)  # v0.20's script runs 0.15's functions
    rows = CHECKS / check / "rows.toml"
    for key, candidate in (("shipped", False), ("candidate", True)):
        fresh = check_main.report(rows, candidate=candidate)
        assert set(committed[key]["groups"]) == set(fresh["groups"])
        for name, group in fresh["groups"].items():
            for field, value in group.items():
                assert committed[key]["groups"][name][field] == pytest.approx(value, rel=1e-9), (name, field)
    # the rule: the candidate ships only if its median is lower on both tables
    assert committed["candidate"]["groups"]["all"]["median_abs_error"] < committed["shipped"]["groups"]["all"][
        "median_abs_error"]


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
    assert (f"A100 PCIe at TP 2 and 8 {signed(g15, pcie + '2')} and {signed(g15, pcie + '8')} (0.15), L40S at TP 4 "
            f"and 8 {signed(g15, l40s + '4')} and {signed(g15, l40s + '8')}") in docs
    assert f"(v0.20, 13 rows): +{_pct(g20['model llama-4-maverick']['median_signed_error'])} % median" in docs
    fp16 = [100 * g15[f"gpu h100-sxm fp16 tp{n}"]["median_signed_error"] for n in (2, 4, 8)]
    b200 = [signed(g20, f"gpu b200 nvfp4 tp{n}") for n in (2, 8)]
    assert f"+{min(fp16):.0f}–{max(fp16):.0f} % (0.15)" in docs
    assert f"NVFP4 at TP 2 and 8 {b200[0]} and {b200[1]}" in docs
    pooled = json.loads((CHECKS / "session32.json").read_text())
    p = pooled["clean"]
    lo, hi = p["all"]["median_abs_error_ci"]
    head = (f"**{_pct(p['all']['median_abs_error'])} % median ({_pct(lo)}–{_pct(hi)} %), "
            f"p90 {_pct(p['all']['p90_abs_error'])} %**")
    assert f"pooled, 709 rows: `validation/clean-checks/session32.md`): {head}" in docs
    assert head in readme
    m = {k: _pct(v["median_abs_error"]) for k, v in p.items()}
    assert (f"one GPU {m['workload one gpu']} %, several {m['workload multi-gpu']} %; fp8 {m['dtype fp8']} %, fp16 "
            f"{m['dtype fp16']} %, fp4 {m['dtype fp4']} %; MoE {m['workload moe']} %, dense {m['workload dense']} %"
            ) in docs
    assert max(v["median_abs_error"] for k, v in p.items() if k.startswith(("dtype", "workload"))) < 0.20
    dev = {c: pooled[c]["all"] for c in ("trtllm013", "trtllm014", "trtllm017")}
    assert (f"0.13 {_pct(dev['trtllm013']['median_abs_error'])} %, p90 {_pct(dev['trtllm013']['p90_abs_error'])} %; "
            f"0.14 {_pct(dev['trtllm014']['median_abs_error'])} %, {_pct(dev['trtllm014']['p90_abs_error'])} %; "
            f"0.17 {_pct(dev['trtllm017']['median_abs_error'])} %, {_pct(dev['trtllm017']['p90_abs_error'])} %") in docs


def test_the_summary_is_todays_model():
    """session32.json's clean pool is today's shipped model on the two clean tables (the development ones are the
    same computation on more rows, left to `session32.py`)."""
    summary = _module(CHECKS / "session32.py")
    saved = json.loads((CHECKS / "session32.json").read_text())
    fresh = summary.today(("trtllm020",))
    for key in ("clean", "trtllm020"):
        assert set(saved[key]) == set(fresh[key])
        for name, group in fresh[key].items():
            for field, value in group.items():
                assert saved[key][name][field] == pytest.approx(value, rel=1e-9), (key, name, field)
