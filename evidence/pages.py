"""The reports of the shipped step model that `python -m evidence` regenerates: each source's `report.json` and
`report.md` (every row of the source predicted), the pool's `pool.json` (`evidence.pool`) and `docs/accuracy.md`,
rendered from pool.json."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from evidence import pool, report
from evidence.sources import build, measurements, path

ROOT = Path(__file__).resolve().parents[1]
ACCURACY = ROOT / "docs" / "accuracy.md"
#: the files beside a source's rows.toml that its rule reports but does not pool as that source's rows
BESIDE = {"amd_vllm": ("versions.toml",), "amd_vllm_nov": ("beside.toml",)}
#: where the prediction made when a source's rule was written is kept (frozen, with the step model of its time)
FIRST_PREDICTION = {
    "trtllm010": "../../changes/tp_barrier_wait/judgement.md",
    "trtllm011": "../../changes/tp_barrier_wait/judgement.md",
    "trtllm012": "../../changes/pcie_allreduce_fractions/judgement.md",
    "trtllm013": "../../changes/gemm_shape_term/judgement.md",
    "trtllm014": "../../changes/a100_kernel_tables/judgement.md",
    "trtllm015": "../../changes/trtllm_non_torch_memory/judgement_trtllm015.md", "trtllm017": "as_checked.md",
    "trtllm019": "as_checked.md", "trtllm020": "../../changes/trtllm_non_torch_memory/judgement_trtllm020.md",
    "trtllm021": "as_checked.md", "lmdeploy01": "as_checked.md", "llamacpp_cuda": "as_checked.md",
    "llamacpp_sm": "../../changes/ggml_mmq_rate/judgement.md",
    "llamacpp_xd": "../../changes/ggml_mmvq_stream_per_cycle/judgement.md", "amd_vllm": "as_checked.md",
    "amd_vllm_judge": "../../changes/mi300x_memory_stream/judgement.md",
    "amd_vllm_nov": "../../changes/mi300x_weight_stream/judgement.md",
}


def dumps(data: Any) -> str:
    return json.dumps(data, indent=1, ensure_ascii=False) + "\n"


def source_keys(row, pred) -> list[str]:
    """A source report's groups: GPU, GPU and GPU count, model, weights dtype, workload, one GPU or several, MoE or
    dense (`report.facets`)."""
    f = report.facets(row, pred)
    return [f"gpu {row.accelerator}", f"gpu {row.accelerator} ×{row.num_gpus}", f"model {row.model}",
            f"dtype {row.weights_dtype}", *(f"workload {w}" for w in f["workload"]), f"gpus {f['gpus'][0]}",
            f"{f['moe'][0]}"]


def pooled_as(source: str) -> str:
    """Where the source stands in the pool (`evidence.pool`), in a sentence."""
    if source in pool.EXCLUDED:
        return f"Not in the pool: {pool.EXCLUDED[source]}."
    if source == "llamacpp_sm":
        return f"In the pool: its prompt (pp512) rows; not its decode rows: {pool.EXCLUDED['llamacpp_sm decode']}."
    here = {r for name in ("rows.toml", *BESIDE.get(source, ())) for r in measurements(source, name)}
    counted = sum(r in here for _, r in pool.rows())
    return (f"In the pool: {counted} of its rows (each measurement once, none a development table holds; "
            "`../../pool.py`).")


def scored(rows: tuple, predictor: report.Predictor) -> dict[str, Any]:
    preds = predictor.all(rows)
    return {"rows": [{"id": p.id, "measured": p.measured, "predicted": p.predicted, "signed_error": p.signed_error}
                     for p in preds], "groups": report.grouped(rows, preds, source_keys)}


def source_report(source: str, predictor: report.Predictor) -> dict[Path, str]:
    """A source's report.json and report.md: every row of its rows.toml (and of the files `BESIDE` it) predicted by
    the shipped step model, summarised by group."""
    title = build(source).TITLE
    out = {"step_model": report.step_model(), "source": title, **scored(measurements(source), predictor)}
    for name in BESIDE.get(source, ()):
        out[Path(name).stem] = scored(measurements(source, name), predictor)
    lines = [f"# {title}: the shipped step model's error", "",
             f"Every row of `rows.toml` ({len(out['rows'])} rows: `build.py` maps the copied table by "
             f"`inclusion_rule.md`) predicted by the shipped step model ({out['step_model']}); "
             "`python -m evidence` regenerates this page. " + pooled_as(source) + " The prediction made when the rule "
             f"was written, with the step model of its time: `{FIRST_PREDICTION[source]}`.", ""]
    lines += report.table(out["groups"])
    for name in BESIDE.get(source, ()):
        side = out[Path(name).stem]
        lines += ["", f"Beside them, `{name}` ({len(side['rows'])} rows, reported by the rule, not pooled as this "
                  "source's rows):", ""] + report.table(side["groups"])
    return {path(source, "report.json"): dumps(out), path(source, "report.md"): "\n".join(lines) + "\n"}


#: what a facet's groups mean, where the name does not say
NOTES = {"workload": "A row is in one of first token, decode batch 1 (a user's speed, or one request's whole "
                     "generation, at batch 1) and throughput; \"prefill\" holds every row whose predicted prefill "
                     "outlasts its decode, first tokens included.",
         "dtype": "The weights' dtype (nvfp4: NVIDIA's 4-bit float; q4_0, q4_k_m: GGUF blocks).",
         "source": "\"amd_vllm_nov beside\" is vLLM 0.10.0's README tables, which that rule reports beside its judges; "
                   "Oracle's rows are written with `amd_vllm_nov`'s."}
#: pool.json's facets, and the heading of each on the page
FACETS = (("source", "By source (`evidence/sources/<source>/`)"), ("engine", "By engine"), ("vendor", "By GPU vendor"),
          ("workload", "By workload"), ("dtype", "By weights dtype"), ("metric", "By metric"),
          ("gpus", "One GPU or several"), ("moe", "MoE or dense"), ("family", "By model family"), ("gpu", "By GPU"))


def accuracy_page(saved: dict[str, Any]) -> str:
    """docs/accuracy.md: the pool's figures (pool.json) as tables, its worst rows, the method and the exclusions."""
    a = saved["all"]
    lines = ["# How far off kokuban is, on measurements no fit has seen", "",
             "<!-- generated by `python -m evidence` from evidence/pool.json; do not edit by hand -->", "",
             f"The shipped step model ({saved['step_model']}) on the {saved['rows']:,} rows of "
             f"{len(saved['sources'])} copied tables that no fit has seen: median |error| "
             f"**{report.pct(a['median_abs_error'])}** "
             f"(95 % bootstrap interval {report.interval(a)}), p90 **{report.pct(a['p90_abs_error'])}**, median "
             f"signed error {report.pct(a['median_signed_error'])} (positive: kokuban predicts faster than measured).",
             "", "## Method", "",
             "1. Each source table was copied by a rule written before any of its values was predicted "
             "(`evidence/sources/<source>/inclusion_rule.md`); `build.py` maps it to rows of the published schema.",
             "2. Every row is predicted once by the shipped step model (`kokuban accuracy --measurements-file` does "
             "the same for a user's rows); error = |predicted − measured| ÷ measured, signed + when faster.",
             "3. The interval is a percentile bootstrap of the median (10,000 resamples, seed 0); rows are pooled "
             "once per measurement, and no row of a table any constant was fitted on or changed after enters "
             "(`evidence/pool.py`).", ""]
    for facet, title in FACETS:
        lines += [f"## {title}", ""] + ([NOTES[facet], ""] if facet in NOTES else [])
        lines += report.table(saved["by"][facet], label=facet) + [""]
    lines += ["## The worst rows", "", "| row | source | measured | predicted | signed error | bound |",
              "|---|---|---|---|---|---|"]
    lines += [f"| `{w['id']}` | {w['source']} | {w['measured']:.4g} | {w['predicted']:.4g} | "
              f"{report.pct(w['signed_error'])} | {w['bound']} |" for w in saved["worst"]]
    lines += ["", "## Rows left out, and why", "",
              "- The published set (`kokuban/data/published_results.toml`, `kokuban accuracy`): the kernel "
              "profile's fractions were fitted on it.",
              "- Development tables, none of whose measurements enters even where a later table prints it again: "
              + ", ".join(f"`{s}`" for s in saved["development"]) + "."]
    lines += [f"- `{s}`: {why}." for s, why in saved["excluded"].items()]
    return "\n".join(lines) + "\n"


def outputs() -> dict[Path, str]:
    """Every generated file and its text: each source's rows (`build.files()`) and report, the pool and the page."""
    from evidence.sources import SOURCES

    predictor = report.Predictor()
    out: dict[Path, str] = {}
    for source in SOURCES:
        out |= build(source).files()
    for source in SOURCES:
        out |= source_report(source, predictor)
    saved = pool.score(predictor)
    out[pool.JSON] = dumps(saved)
    out[ACCURACY] = accuracy_page(saved)
    return out
