"""The committed llama.cpp report (validation/cpu/llamacpp.*) and the numbers docs/validation.md quotes from it."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CPU = ROOT / "validation" / "cpu"
REPORT = CPU / "llamacpp-report.json"


def _docs_section() -> str:
    text = (ROOT / "docs" / "validation.md").read_text()
    start = text.index("## llama.cpp on this CPU")
    end = text.find("\n## ", start + 1)
    return text[start:end if end > 0 else None]


def _pct(cell: str) -> float:
    return float(cell.strip().strip("*").rstrip("%").strip()) / 100


@pytest.mark.parametrize("folder", [CPU, CPU / "repeat"], ids=["record", "repeat"])
def test_report_files_agree(folder: Path):
    raw = json.loads((folder / "llamacpp.json").read_text())
    rows = list(csv.DictReader(open(folder / "llamacpp.csv")))
    assert len(rows) == len(raw["rows"]) > 0
    assert "0c1e570" in (folder / "llamacpp.txt").read_text() and raw["date"]
    assert raw["plan"] == json.loads((CPU / "llamacpp.json").read_text())["plan"]  # the repeat is the same plan
    for run in raw["runs"] + raw.get("attempts", []):
        assert run.get("command") or run.get("commands")  # every run keeps its command line
    assert all(a["others_cores"] <= raw["max_others_cores"] for a in raw["attempts"] if a["kept"])


def test_docs_table_matches_committed_report():
    """Every row of the docs' held-out table: count, median and p90 |error| by phase as the report computed them,
    for the curve model and for the flat (previous) model beside it."""
    report = json.loads(REPORT.read_text())
    table = [ln for ln in _docs_section().splitlines() if re.match(r"^\| (F16|Q8_0|Q4_0|Q4_K_M|all types) \|", ln)]
    assert len(table) == 15  # 4 types and the joint fit × decode, prefill, all

    def summary(side: dict, phase: str) -> dict:
        return side["phases"] if phase == "all" else side["phases"]["by_phase"][phase]

    for line in table:
        cells = [c.strip() for c in line.strip("|").split("|")]
        gguf_type, phase, count, median, p90, flat_median, flat_p90 = cells
        side = report["all_types"] if gguf_type == "all types" else report["per_type"][gguf_type]
        got = summary(side, phase)
        assert int(count) == got["count"], line
        assert _pct(median) == pytest.approx(got["median_abs_error"], abs=5e-4), line
        assert _pct(p90) == pytest.approx(got["p90_abs_error"], abs=5e-4), line
        if gguf_type == "all types":
            assert flat_median == flat_p90 == "–"
            continue
        flat = summary(report["flat"][gguf_type], phase)
        assert flat["count"] == got["count"]  # the same held-out rows
        assert _pct(flat_median) == pytest.approx(flat["median_abs_error"], abs=5e-4), line
        assert _pct(flat_p90) == pytest.approx(flat["p90_abs_error"], abs=5e-4), line


def test_docs_prose_numbers_match_committed_report():
    raw = json.loads((CPU / "llamacpp.json").read_text())
    report = json.loads(REPORT.read_text())
    text = " ".join(_docs_section().split())
    attempts = raw["attempts"]
    kept = {(a["case"], a["type"], a["test"]) for a in attempts if a["kept"]}
    never = {(a["case"], a["type"], a["test"]) for a in attempts} - kept
    assert f"({sum(a['kept'] for a in attempts)} of {len(attempts)} runs kept; {len(never)} tests never" in text
    rows = list(csv.DictReader(open(CPU / "llamacpp.csv")))
    spread = max(max(s) / min(s) - 1 for s in ([float(x) for x in r["samples_s"].split()] for r in rows))
    assert f"spread 0–{100 * spread:.0f} %" in text
    fractions = {t: report["per_type"][t]["after"]["compute"] for t in ("F16", "Q8_0", "Q4_0", "Q4_K_M")}
    quoted = (f"compute {fractions['F16']:.2f} F16, {fractions['Q8_0']:.2f} Q8_0, {fractions['Q4_0']:.2f} Q4_0, "
              f"{fractions['Q4_K_M']:.2f} Q4_K_M")
    assert quoted in text
    memory = [report["per_type"][t]["after"]["memory"] for t in fractions]
    assert f"{min(memory):.2f}–{max(memory):.2f} of the probed read bandwidth" in text
    kv = [report["per_type"][t]["after"]["kv_memory"] for t in fractions]
    assert f"the KV cache read at {min(kv):.2f}–{max(kv):.2f} of it" in text
    m_half = [report["per_type"][t]["m_half_tokens"] for t in fractions]
    assert f"M_half {min(m_half):.1f}–{max(m_half):.1f} tokens" in text
    # a batch-2 step's matmuls at 2 ÷ (2 + M_half) of the large-M rate: the largest M_half gives the low end
    assert f"run at {100 * 2 / (2 + max(m_half)):.0f}–{100 * 2 / (2 + min(m_half)):.0f} % of their large-M rate" in text
    bits = [raw["cases"][c]["files"]["Q4_K_M"]["body_bits_per_weight"] for c in
            ("llama2-h1024-L4", "llama2-h1536-L6", "llama3.2-1b-L4")]
    assert f"Q4_K_M {bits[0]:.3f}, {bits[1]:.3f} and {bits[2]:.3f} bits" in text
    train = sorted(report["per_type"][t]["train_rows"] for t in fractions)
    assert (f"The fit sees {train[0]} rows per type" if train[0] == train[-1]
            else f"The fit sees {train[0]}–{train[-1]} rows") in text


def test_readme_numbers_match_committed_report():
    """README's llama.cpp bullet: held-out median decode / prefill per type, the curve model's then the flat one's."""
    report = json.loads(REPORT.read_text())
    text = " ".join((ROOT / "README.md").read_text().split())

    def medians(side: dict) -> tuple[float, float]:
        phases = side["phases"]["by_phase"]
        return 100 * phases["decode"]["median_abs_error"], 100 * phases["prefill"]["median_abs_error"]

    types = ("F16", "Q8_0", "Q4_0", "Q4_K_M")
    curve = ", ".join("{} {:.1f} % / {:.1f} %".format(t, *medians(report["per_type"][t])) for t in types)
    flat = ", ".join("{:.1f} / {:.1f}".format(*medians(report["flat"][t])) for t in types)
    assert f"decode / prefill: {curve} (one flat compute fraction on the same split: {flat} %)" in text


def test_lm_head_bytes_are_the_committed_files():
    """The vocabulary matrix kokuban charges per step is the one the GGUF file stores: `output` when untied, the tied
    `token_embd` otherwise, in the file's own type (gguf_bytes of the committed record), for every case and type."""
    from kokuban.core.bytes import lm_head_bytes
    from kokuban.specs.model import ModelSpec
    from kokuban.validation.llamacpp import GGUF_TYPES, llamacpp_deployment

    raw = json.loads((CPU / "llamacpp.json").read_text())
    entry = {"id": "cpu", "name": "cpu", "memory_bytes": 8e9, "memory_bandwidth_bytes_per_s": 1e9, "flops_fp32": 1e9,
             "flops_bf16": 1e9}
    tied = raw["cases"]["llama3.2-1b-L4"]["files"]
    # 128,256 × 2,048 = 262,668,288 weights: F16 2 B, Q8_0 34/32 B, Q6_K 210/256 B each (the Q4 files)
    assert [tied[t]["parts"]["token_embd"]["bytes"] for t in GGUF_TYPES] == [525_336_576, 279_085_056, 215_470_080,
                                                                             215_470_080]
    for name, case in raw["cases"].items():
        spec = ModelSpec.from_config(case["config"], name=name)
        for gguf_type, f in case["files"].items():
            head = "token_embd" if spec.tied_embeddings else "output"
            assert f["parts"][head]["weights"] == spec.params_lm_head
            dep = llamacpp_deployment(spec, entry, gguf_type)
            assert lm_head_bytes(dep) == pytest.approx(f["parts"][head]["bytes"], rel=1e-12), (name, gguf_type)


def test_pooled_per_type_figures_are_the_csv_rows():
    """The pooled per-type figures README and the docs quote, recomputed here from the committed CSV alone: every
    held-out row's |predicted_fit_s ÷ best_s − 1| (each row predicted by its own type's fit), median by phase
    (decode = tg + batched-tg, prefill = pp + batched-pp), and the report's JSON agrees."""
    import statistics

    report = json.loads(REPORT.read_text())
    with open(CPU / "llamacpp.csv") as fh:
        rows = [r for r in csv.DictReader(fh) if r["held_out"] == "True"]
    readme = " ".join((ROOT / "README.md").read_text().split())
    docs = " ".join(_docs_section().split())
    on_median = []
    for name in ("decode", "prefill"):
        mine = [r for r in rows if r["regime"].endswith("tg") == (name == "decode")]
        errs = [abs(float(r["predicted_fit_s"]) / float(r["best_s"]) - 1) for r in mine]
        median = statistics.median(errs)
        assert report["per_type_pooled"]["by_phase"][name]["count"] == len(errs)
        assert report["per_type_pooled"]["by_phase"][name]["median_abs_error"] == pytest.approx(median, rel=1e-9)
        assert f"{name} {100 * median:.1f} % ({len(errs)} rows)" in readme
        assert f"{name} {100 * median:.1f} % ({len(errs)} rows)" in docs
        assert f"| each type's fit, pooled | {name} | {len(errs)} | {100 * median:.1f} % |" in _docs_section()
        # the median repetition's fit predicts other seconds (the CSV keeps the fastest's), so only the report
        # has it: the docs quote that
        pooled = report["median_statistic_pooled"]["by_phase"][name]
        assert pooled["count"] == len(errs)
        on_median.append(100 * pooled["median_abs_error"])
    assert "judged on the median repetition instead of the fastest, {:.1f} % and {:.1f} %".format(*on_median) in docs


def test_repeat_pass_figures_are_its_report():
    """The second pass (validation/cpu/repeat/): the per-type medians the docs quote are its own report's, README's
    worst cell is their maximum, and the between-pass differences the docs quote are recomputed here from the two
    CSVs: |fastest repetition of pass 1 ÷ that of pass 2 − 1| per test, median and p90 (numpy's linear percentile),
    over every test, the generation rows (regime ending in tg) and the prompt rows."""
    import numpy as np

    repeat = json.loads((CPU / "repeat" / "llamacpp-report.json").read_text())
    docs = " ".join(_docs_section().split())
    attempts = json.loads((CPU / "repeat" / "llamacpp.json").read_text())["attempts"]
    assert f"{sum(a['kept'] for a in attempts)} of {len(attempts)} runs kept)" in docs
    readme = " ".join((ROOT / "README.md").read_text().split())
    cells = []
    quoted = []
    for t in ("F16", "Q8_0", "Q4_0", "Q4_K_M"):
        phases = repeat["per_type"][t]["phases"]["by_phase"]
        decode, prefill = (100 * phases[p]["median_abs_error"] for p in ("decode", "prefill"))
        cells += [decode, prefill]
        quoted.append(f"{t} {decode:.1f} / {prefill:.1f} %")
    assert "gives decode / prefill " + ", ".join(quoted) in docs
    assert max(cells) < 15 and f"(worst cell {max(cells):.1f} %)" in readme

    def best(path: Path) -> dict[str, tuple[str, float]]:
        with open(path) as fh:
            return {r["id"]: (r["regime"], float(r["best_s"])) for r in csv.DictReader(fh)}

    first, second = best(CPU / "llamacpp.csv"), best(CPU / "repeat" / "llamacpp.csv")
    assert first.keys() == second.keys()

    def median_p90(keep) -> tuple[str, str]:
        d = np.array([abs(first[k][1] / second[k][1] - 1) for k in first if keep(first[k][0])])
        return f"{100 * np.median(d):.1f}", f"{100 * np.percentile(d, 90):.1f}"

    every = median_p90(lambda r: True)
    gen = median_p90(lambda r: r.endswith("tg"))
    prompt = median_p90(lambda r: not r.endswith("tg"))
    assert (f"differs by {every[0]} % median, {every[1]} % p90 (generation {gen[0]} / {gen[1]} %, "
            f"prompts {prompt[0]} / {prompt[1]} %") in docs


def test_docs_record_figures_are_the_committed_rows():
    """The prose figures the docs quote about the 2026-12-04 record, each recomputed here from the committed files:
    flash-attention rates (both passes), the matmul rate by type (compute fraction × the probe's fp32 rate), what
    depth 512 adds to the 1024-wide shape's 32-token prompt, the series not monotone in depth, batched-bench's
    2-row ÷ 1-row generation step in the fitted shape, the held-out shape's batched generation errors, and how far
    each per-type median moved between the passes."""
    import tomllib

    docs = " ".join(_docs_section().split())
    report = json.loads(REPORT.read_text())
    repeat = json.loads((CPU / "repeat" / "llamacpp-report.json").read_text())
    fa, fa2 = report["flash_attention"], repeat["flash_attention"]
    assert (f"**{fa['rows_flops_s'] / 1e9:.1f} GFLOP/s row by row, {fa['tiled_flops_s'] / 1e9:.1f} GFLOP/s tiled** "
            f"({fa['pairs_fitted']} pairs; the repeat pass: {fa2['rows_flops_s'] / 1e9:.1f} and "
            f"{fa2['tiled_flops_s'] / 1e9:.1f})") in docs
    types = ("F16", "Q8_0", "Q4_0", "Q4_K_M")
    peak = tomllib.loads((CPU / "probe.toml").read_text())["accelerator"][0]["flops_fp32"]
    rates = [report["per_type"][t]["after"]["compute"] * peak / 1e9 for t in types]
    assert f"({min(rates):.0f}–{max(rates):.0f} GFLOP/s here, by type)" in docs
    with open(CPU / "llamacpp.csv") as fh:
        rows = {r["id"]: r for r in csv.DictReader(fh)}

    def best(case: str, t: str, test: str) -> float:
        return float(rows[f"{case}/{t}/{test}"]["best_s"])

    added = [1e3 * (best("llama2-h1024-L4", t, "pp32 @ d512") - best("llama2-h1024-L4", t, "pp32")) for t in types]
    assert f"shape is {min(added):.1f}–{max(added):.1f} ms across the four types" in docs
    held = [1e3 * (best(c, t, "pp32 @ d512") - best(c, t, "pp32")) for c in ("llama2-h1536-L6", "llama3.2-1b-L4")
            for t in types]
    assert f"({min(held):.0f}–{max(held):.0f} ms in the held-out shapes)" in docs
    raw = json.loads((CPU / "llamacpp.json").read_text())
    others = max(a["others_cores"] for a in raw["attempts"] if a["kept"])
    assert f"the kept runs' others used ≤ {others:.2f} cores" in docs
    # the F16 Llama-3.2 shape's tied LM head (128,256 × 2,048 F16 weights = 525,336,576 B) at the F16 fit's read rate
    head_s = 128_256 * 2_048 * 2 / (report["per_type"]["F16"]["after"]["memory"] * tomllib.loads(
        (CPU / "probe.toml").read_text())["accelerator"][0]["memory_bandwidth_bytes_per_s"])
    assert f"(a 525 MB read in the F16 Llama-3.2 shape, about {1e3 * head_s:.0f} ms at the fitted read rate)" in docs
    cases = ("llama2-h1024-L4", "llama2-h1536-L6", "llama2-h2048-L8", "llama3.2-1b-L4")
    series = [[best(c, t, test + s) for s in ("", " @ d256", " @ d512")]
              for c in cases for t in types for test in ("pp32", "pp128", "tg16")]
    uneven = sum(not (a <= b <= c) for a, b, c in series)
    assert f"{uneven} of the {len(series)} series" in docs

    def step_ratio(t: str) -> float:
        return best("llama2-h1024-L4", t, "batched-tg8-b2@d64") / best("llama2-h1024-L4", t, "batched-tg8-b1@d64")

    q4 = sorted(step_ratio(t) for t in ("Q4_0", "Q4_K_M"))
    assert (f"takes {q4[0]:.1f}–{q4[1]:.1f}× the 1-row step in Q4_0 and Q4_K_M (repacked GEMV), "
            f"{step_ratio('F16'):.1f}× in F16 and {step_ratio('Q8_0'):.1f}× in Q8_0") in docs

    def err(t: str, batch: int) -> float:
        r = rows[f"llama2-h1536-L6/{t}/batched-tg8-b{batch}@d64"]
        return 100 * (float(r["predicted_fit_s"]) / float(r["best_s"]) - 1)

    def signed(x: float) -> str:
        return f"{'−' if round(x) < 0 else '+'}{abs(round(x))}"

    spans = [[err(t, b) for b in (2, 4, 8)] for t in types]
    quoted = [f"{t} {signed(min(v))} to {signed(max(v))} %" for t, v in zip(types, spans, strict=True)]
    assert f"{quoted[0]}, {quoted[1]}, {quoted[2]} and {quoted[3]}" in docs
    assert max(abs(err(t, 1)) for t in types) <= 9 and "at batch 1 it is within 9 % in every type" in docs
    moved = [abs(report["per_type"][t]["phases"]["by_phase"][p]["median_abs_error"]
                 - repeat["per_type"][t]["phases"]["by_phase"][p]["median_abs_error"]) * 100
             for t in types for p in ("decode", "prefill")]
    assert f"moved by {min(moved):.1f}–{max(moved):.1f} points between passes" in docs
