"""docs/validation.md's loss comparison is the committed five-split reports (validation/profiles/, one per loss, on
the 88 rows of stop 28; the main report, validation/profiles/report.json, is session 29's on 100 rows)."""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: the shipped procedure's loss (`calibrate.PUBLISHED_LOSS`, log_huber) and the others, each on the same 88 rows
REPORTS = {"log_squared": ROOT / "validation/profiles/log_squared/report.json",
           "log_huber": ROOT / "validation/profiles/log_huber/report.json",
           "log_abs": ROOT / "validation/profiles/log_abs/report.json"}
SHIPPED = "log_huber"
#: the main report: both profiles' five splits on today's rows (session 29: 100)
MAIN = ROOT / "validation/profiles/report.json"


def _figures(profile: dict) -> str:
    """'training median / p90 | held-out median / p90', the training ones the mean over the splits."""
    seeds = profile["per_seed"]
    train_median = sum(s["train_median_abs_error"] for s in seeds) / len(seeds)
    train_p90 = sum(s["train_p90_abs_error"] for s in seeds) / len(seeds)
    pooled = profile["pooled"]
    return (f"{100 * train_median:.2f} % / {100 * train_p90:.2f} % | "
            f"{100 * pooled['median_abs_error']:.2f} % / {100 * pooled['p90_abs_error']:.2f} %")


def test_each_report_was_fitted_with_its_loss_on_the_same_splits():
    reports = {name: json.loads(path.read_text()) for name, path in REPORTS.items()}
    assert {name: r["loss"] for name, r in reports.items()} == {name: name for name in REPORTS}
    assert {tuple(r["seeds"]) for r in reports.values()} == {(0, 1, 2, 3, 4)}


def test_the_docs_table_rows_are_the_reports():
    doc = (ROOT / "docs/validation.md").read_text()
    for name, path in REPORTS.items():
        profiles = json.loads(path.read_text())["profiles"]
        label = f"{name} (shipped)" if name == SHIPPED else name
        row = f"| {label} | {_figures(profiles['default'])} | {_figures(profiles['scalar'])} |"
        assert row in doc, row


def test_the_readme_quotes_the_training_medians():
    def train_median(loss: str, profile: str) -> str:
        seeds = json.loads(REPORTS[loss].read_text())["profiles"][profile]["per_seed"]
        return f"{100 * sum(s['train_median_abs_error'] for s in seeds) / len(seeds):.2f} %"

    readme = " ".join((ROOT / "README.md").read_text().split())
    for profile in ("default", "scalar"):
        quoted = f"{train_median('log_huber', profile)} against {train_median('log_squared', profile)}"
        assert quoted in readme, quoted


def test_the_readme_profile_table_is_the_report():
    """The README's two-profile table (pooled held-out rows of the five splits) is validation/profiles/report.json."""
    profiles = json.loads(MAIN.read_text())["profiles"]
    readme = (ROOT / "README.md").read_text()

    def pct(x: float) -> str:
        return f"{100 * x:.1f} %"

    for name, label in (("scalar", "scalar set"), ("default", "default: kernel profile (curves)")):
        p = profiles[name]["pooled"]
        lo, hi = p["median_abs_error_ci"]
        cells = [f"{pct(p['median_abs_error'])} ({100 * lo:.1f}–{pct(hi)})", pct(p["p90_abs_error"])]
        cells += [pct(p["by_workload"][k]["median_abs_error"]) for k in
                  ("decode_batch_1", "throughput", "prefill", "moe", "multi_gpu")]
        cells += [pct(p["by_weights"][k]["median_abs_error"]) for k in ("fp8", "fp4", "fp16")]
        row = f"| {label} | " + " | ".join(cells) + " |"
        assert row in readme, row
    assert f"pooled ({profiles['default']['pooled']['count']} held-out rows," in readme


def test_the_docs_profile_prose_is_the_report():
    """docs/validation.md after the pooled table: each split's held-out median, scalar → default, the pooled figures
    against the bar, and the ranges of the default's fitted fields."""
    report = json.loads(MAIN.read_text())
    profiles = report["profiles"]
    assert report["rows"] == 196 and report["excluded_sources"] == []
    doc = " ".join((ROOT / "docs/validation.md").read_text().split())
    pairs = [f"{100 * a['median_abs_error']:.1f} → {100 * b['median_abs_error']:.1f} %"
             for a, b in zip(profiles["scalar"]["per_seed"], profiles["default"]["per_seed"], strict=True)]
    assert "Per split the held-out median goes " + ", ".join(pairs) in doc
    assert all(b["median_abs_error"] < a["median_abs_error"]
               for a, b in zip(profiles["scalar"]["per_seed"], profiles["default"]["per_seed"], strict=True))
    pooled = profiles["default"]["pooled"]
    lo, hi = pooled["median_abs_error_ci"]
    assert (f"the median is met — {100 * pooled['median_abs_error']:.1f} % (interval {100 * lo:.1f}–{100 * hi:.1f} %) "
            f"— but **not the p90, {100 * pooled['p90_abs_error']:.1f} %**") in doc
    w, d, ttft = pooled["by_workload"], pooled["by_weights"], pooled["by_metric"]["time_to_first_token_s"]
    # the bar as it says: the median met; the p90 and bf16 missed, MoE now below 20 %
    assert pooled["median_abs_error"] <= 0.10 < 0.30 < pooled["p90_abs_error"]
    assert w["moe"]["median_abs_error"] <= 0.20 < d["bf16"]["median_abs_error"]
    assert (f"MoE is {100 * w['moe']['median_abs_error']:.1f} % on {w['moe']['count']} pooled rows") in doc
    assert f"bf16 {100 * d['bf16']['median_abs_error']:.1f} % on {d['bf16']['count']}" in doc
    m = {k: f"{100 * g['median_abs_error']:.1f} %" for k, g in w.items()}
    others = {k: g for k, g in w.items() if k != "moe"}
    assert (f"Every other workload is at or below {100 * max(g['median_abs_error'] for g in others.values()):.1f} % "
            f"(multi-GPU, {w['multi_gpu']['count']} pooled rows; batch-1 decode {m['decode_batch_1']}, prefill "
            f"{m['prefill']}, throughput {m['throughput']}; the first-token metric "
            f"{100 * ttft['median_abs_error']:.1f} % on {ttft['count']} pooled rows)") in doc
    dt = {k: f"{100 * g['median_abs_error']:.1f} %" for k, g in d.items()}
    rest = {k: g for k, g in d.items() if k != "bf16"}
    assert max(rest, key=lambda k: rest[k]["median_abs_error"]) == "int8"
    assert (f"every other dtype at or below {100 * max(g['median_abs_error'] for g in rest.values()):.1f} % (int8, "
            f"{d['int8']['count']} pooled rows; fp4 {dt['fp4']}, int4 {dt['int4']} on {d['int4']['count']}, q4_0 "
            f"{dt['q4_0']}, fp8 {dt['fp8']}, fp16 {dt['fp16']})") in doc

    def span(key, scale=1.0, digits=2):
        values = [scale * s["fitted"][key] for s in profiles["default"]["per_seed"]]
        return f"{min(values):.{digits}f}–{max(values):.{digits}f}"

    assert (f"Fitted across the five splits: memory {span('memory')}, step overhead {span('step_overhead_s', 1e3, 1)} "
            f"ms, `kv_reread` {span('kv_reread')}") in doc
    assert (f"`dequant_memory` {span('dequant_memory')}, loop overhead {span('loop_overhead_s', 1e3, 1)} ms") in doc
    engines = pooled["by_engine"]
    assert (f"vLLM ({100 * engines['vLLM']['median_abs_error']:.1f} %, 5 rows, MI300X) and gpt-fast "
            f"({100 * engines['gpt-fast']['median_abs_error']:.1f} %, 9 pooled rows)") in doc


def test_the_docs_loss_prose_is_the_reports():
    """docs/validation.md and the README after the loss table: the robust losses lower the default's training median
    on every split; the held-out medians and p90s and the memory ranges quoted."""
    reports = {name: json.loads(path.read_text())["profiles"] for name, path in REPORTS.items()}
    doc = " ".join((ROOT / "docs/validation.md").read_text().split())
    readme = " ".join((ROOT / "README.md").read_text().split())
    squared = [s["train_median_abs_error"] for s in reports["log_squared"]["default"]["per_seed"]]
    for loss in ("log_huber", "log_abs"):
        robust = [s["train_median_abs_error"] for s in reports[loss]["default"]["per_seed"]]
        assert all(r < q for r, q in zip(robust, squared, strict=True)), loss
    held = {k: reports[k]["default"]["pooled"] for k in REPORTS}
    med = {k: f"{100 * h['median_abs_error']:.2f} %" for k, h in held.items()}
    p90 = {k: f"{100 * h['p90_abs_error']:.1f} %" for k, h in held.items()}
    assert (f"({med['log_huber']} and {med['log_abs']} median, against {med['log_squared']}; p90 {p90['log_huber']} "
            f"and {p90['log_abs']} against {p90['log_squared']})") in doc
    memory = {k: [s["fitted"]["memory"] for s in reports[k]["default"]["per_seed"]] for k in REPORTS}
    robust = memory["log_huber"] + memory["log_abs"]
    assert (f"memory fraction at {min(robust):.2f}–{max(robust):.2f}, where the squared loss gives "
            f"{min(memory['log_squared']):.2f}–{max(memory['log_squared']):.2f}") in doc
    assert (f"held out {100 * held['log_huber']['median_abs_error']:.1f} %, p90 "
            f"{100 * held['log_huber']['p90_abs_error']:.1f} %") in readme
    assert all(h["p90_abs_error"] > 0.30 for h in held.values())  # "with either loss the p90 stays above 30 %"
