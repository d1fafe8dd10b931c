"""The second clean check (docs/validation.md, "A second clean check"): TensorRT-LLM 0.17's throughput table, copied
by a rule written before any prediction, predicted once; the committed report is what the code predicts today, and
the docs quote it."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HERE = ROOT / "validation/clean-checks/trtllm017"


def _script(name: str):
    spec = importlib.util.spec_from_file_location(name, HERE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_rows_are_the_table_by_the_rule():
    build = _script("build_rows")
    rows = build.rows()
    assert build.toml(rows) in (HERE / "rows.toml").read_text()
    # counted from the table: every non-empty cell (lengths × GPUs with a value), Mistral up to 4,096 tokens
    count = {}
    for r in rows:
        count[r["model"]] = count.get(r["model"], 0) + 1
    assert count == {"llama-3.1-8b": 9 * 5, "mistral-7b-v0.3": 6 * 5, "llama-3.1-405b": 9, "mixtral-8x22b": 9 * 3,
                     # TP1: H200 9, H100 7, GH200 8; TP2: H200 9, H100 9, A100 7; TP4 and TP8: four GPUs × 9
                     "llama-3.1-70b": (9 + 7 + 8) + (9 + 9 + 7) + 36 + 36,
                     # TP1 and TP2: three GPUs × 9; TP4 and TP8: four GPUs × 9
                     "mixtral-8x7b": 27 + 27 + 36 + 36}
    assert all(r["input_tokens"] + r["output_tokens"] <= 4096 for r in rows if r["model"] == "mistral-7b-v0.3")
    assert {(r["accelerator"], r["weights_dtype"]) for r in rows} == {
        ("h200", "fp8"), ("h100-sxm", "fp8"), ("gh200", "fp8"), ("l40s", "fp8"), ("a100-80gb", "fp16")}
    first = rows[0]
    assert (first["id"], first["value"]) == ("trtllm017-llama-3.1-8b-h200-fp8-tp1-128-128", 29526.04)


def test_the_report_is_todays_prediction_and_the_docs_quote_it():
    report = _script("report")
    now, flat = report.report(), report.report(flat_pcie=True)
    committed = json.loads((HERE / "report.json").read_text())
    today = report.report(today=True)
    for saved, fresh in ((committed["as_checked"]["groups"], now["groups"]), (committed["flat_pcie"], flat["groups"]),
                         (committed["today"], today["groups"])):
        assert set(saved) == set(fresh)
        for key, group in fresh.items():
            for name, value in group.items():
                assert saved[key][name] == pytest.approx(value, rel=1e-9), (key, name)
    g, f = now["groups"], flat["groups"]

    def p(x):
        return f"{100 * x:.1f}"

    text = " ".join((ROOT / "docs/validation.md").read_text().split())
    a = g["all"]
    lo, hi = a["median_abs_error_ci"]
    assert (f"median |error| **{p(a['median_abs_error'])} %** (95 % interval {p(lo)}–{p(hi)} %), **p90 "
            f"{p(a['p90_abs_error'])} %**, signed +{p(a['median_signed_error'])} % on {a['count']} rows") in text
    one, several = g["workload one gpu"], g["workload multi-gpu"]
    assert (f"One GPU {p(one['median_abs_error'])} % ({one['count']} rows), several "
            f"{p(several['median_abs_error'])} % ({several['count']})") in text
    med = {k: p(v["median_abs_error"]) for k, v in g.items()}
    assert (f"H200 {med['gpu h200']} %, GH200 {med['gpu gh200']} %, H100 {med['gpu h100-sxm']} %; Mixtral 8x7B "
            f"{med['model mixtral-8x7b']} %, MoE {med['workload moe']} %") in text
    a100 = [g[f"gpu a100-80gb tp{n}"]["median_signed_error"] for n in (2, 4, 8)]
    assert f"+{p(min(a100))} … +{p(max(a100))} % by TP (on one A100, {med['gpu a100-80gb tp1']} %)" in text
    l40 = [(g[f"gpu l40s tp{n}"]["median_signed_error"], f[f"gpu l40s tp{n}"]["median_signed_error"]) for n in (4, 8)]
    assert (f"+{p(l40[0][0])} % and +{p(l40[1][0])} % with the PCIe curve of this session, {p(l40[0][1])} % and "
            f"{p(l40[1][1])} % with the flat model").replace("-", "−") in text.replace("-", "−")
    assert f"on one L40S, {med['gpu l40s tp1']} %" in text
    fa = f["all"]
    assert (f"({p(a['median_abs_error'])} % against {p(fa['median_abs_error'])} %, p90 {p(a['p90_abs_error'])} % "
            f"against {p(fa['p90_abs_error'])} %)") in text
    assert f"Mixtral 8x22B on eight GPUs is +{p(g['model mixtral-8x22b']['median_signed_error'])} %" in text


def test_readme_quotes_it(capsys):
    """The README quotes the check as it was run (session 30's step model) and, beside it, today's model on the same
    rows (`kokuban accuracy --measurements-file`), which sessions 31 and 32 changed after seeing them."""
    from json_envelope import result_of

    from kokuban.cli import main

    report = _script("report")
    checked = report.report()["groups"]
    s = checked["all"]
    lo, hi = (f"{100 * x:.1f}" for x in s["median_abs_error_ci"])
    readme = " ".join((ROOT / "README.md").read_text().split())
    assert f"all {s['count']} catalog cells of TensorRT-LLM 0.17's throughput table" in readme
    med, p90 = (f"{100 * s[k]:.1f}" for k in ("median_abs_error", "p90_abs_error"))
    assert f"read **{med} % median ({lo}–{hi} %), p90 {p90} %**" in readme
    g = checked
    assert (f"one GPU {100 * g['workload one gpu']['median_abs_error']:.1f} %, H200 "
            f"{100 * g['gpu h200']['median_abs_error']:.1f} %, MoE {100 * g['workload moe']['median_abs_error']:.1f} %"
            in readme)
    groups = [("a100-80gb", n) for n in (2, 4, 8)] + [("l40s", n) for n in (4, 8)]
    too_fast = [g[f"gpu {gpu} tp{n}"]["median_signed_error"] for gpu, n in groups]
    assert f"{100 * min(too_fast):.0f}–{100 * max(too_fast):.0f} % too fast" in readme
    assert main(["accuracy", "--measurements-file", str(HERE / "rows.toml"), "--json"]) == 0
    t = result_of(capsys.readouterr().out)["summary"]
    assert (f"today's model, changed after they were seen and fitted on them in sessions 32 and 35, "
            f"{100 * t['median_abs_error']:.1f} %, p90 {100 * t['p90_abs_error']:.1f} %") in readme
