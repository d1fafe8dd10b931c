"""The committed llama.cpp report (evidence/cpu/llamacpp.*): its files agree with each other, and its figures are its
rows."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CPU = ROOT / "evidence" / "cpu"
REPORT = CPU / "llamacpp-report.json"






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
    """The pooled per-type figures, recomputed here from the committed CSV alone: every held-out row's
    |predicted_fit_s ÷ best_s − 1| (each row predicted by its own type's fit), median by phase (decode = tg +
    batched-tg, prefill = pp + batched-pp), are the report's JSON; the median repetition's fit (which the CSV does not
    keep) holds the same rows."""
    import statistics

    report = json.loads(REPORT.read_text())
    with open(CPU / "llamacpp.csv") as fh:
        rows = [r for r in csv.DictReader(fh) if r["held_out"] == "True"]
    for name in ("decode", "prefill"):
        mine = [r for r in rows if r["regime"].endswith("tg") == (name == "decode")]
        errs = [abs(float(r["predicted_fit_s"]) / float(r["best_s"]) - 1) for r in mine]
        median = statistics.median(errs)
        assert report["per_type_pooled"]["by_phase"][name]["count"] == len(errs)
        assert report["per_type_pooled"]["by_phase"][name]["median_abs_error"] == pytest.approx(median, rel=1e-9)
        assert report["median_statistic_pooled"]["by_phase"][name]["count"] == len(errs)


def test_repeat_pass_figures_are_its_report():
    """The second pass (evidence/cpu/repeat/): its per-type held-out medians, decode and prefill, are all under 15 %,
    and it measured the same tests as the first."""
    repeat = json.loads((CPU / "repeat" / "llamacpp-report.json").read_text())
    cells = [repeat["per_type"][t]["phases"]["by_phase"][p]["median_abs_error"]
             for t in ("F16", "Q8_0", "Q4_0", "Q4_K_M") for p in ("decode", "prefill")]
    assert max(cells) < 0.15

    def tests(path: Path) -> set[str]:
        with open(path) as fh:
            return {r["id"] for r in csv.DictReader(fh)}

    assert tests(CPU / "llamacpp.csv") == tests(CPU / "repeat" / "llamacpp.csv")


def test_batched_generation_at_batch_1_is_within_9_percent():
    """The held-out shape's batched-bench generation at batch 1 (llama2-h1536-L6, 8 tokens at depth 64): the fitted
    prediction is within 9 % of the fastest repetition in every type."""
    with open(CPU / "llamacpp.csv") as fh:
        rows = {r["id"]: r for r in csv.DictReader(fh)}
    for t in ("F16", "Q8_0", "Q4_0", "Q4_K_M"):
        r = rows[f"llama2-h1536-L6/{t}/batched-tg8-b1@d64"]
        assert abs(float(r["predicted_fit_s"]) / float(r["best_s"]) - 1) <= 0.09, t
