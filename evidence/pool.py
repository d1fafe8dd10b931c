"""The pool: every copied row the shipped step model was never fitted on, scored by it (`evidence/pool.json`).

Which rows, declared here:

- `POOL`: the sources (and files) whose rows enter, in this order; `llamacpp_sm` with its prompt (pp512) rows only,
  since its decode rows fitted MMVQ's bytes per SM per cycle (`evidence/changes/ggml_mmvq_stream_per_cycle/`).
- each measurement once: a row whose model, GPU, dtypes, GPU count, lengths and value an earlier file of the pool
  holds is the same measurement printed again (TensorRT-LLM's later documents reprint cells) and enters once, where
  it was first printed (`measurement`);
- none a development table holds (`DEVELOPMENT`): the TensorRT-LLM tables the shipped constants were fitted on or
  changed after, whose cells later documents reprint (v0.21's Llama 4 Maverick cells are v0.20's).

`EXCLUDED` says why every other copied source is out. The published set (`kokuban/data/published_results.toml`,
`kokuban accuracy`) is out too: the kernel profile's fractions were fitted on it.

    python -m evidence.pool      # print the headline (`python -m evidence` writes pool.json and docs/accuracy.md)
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from evidence import report
from evidence.sources import measurements
from kokuban.validation.accuracy import PublishedResult

HERE = Path(__file__).parent
JSON = HERE / "pool.json"
#: (source, file, the one metric kept or None for all) in the pool's order
POOL = (("trtllm012", "rows.toml", None), ("trtllm019", "rows.toml", None), ("trtllm021", "rows.toml", None),
        ("lmdeploy01", "rows.toml", None), ("llamacpp_xd", "rows.toml", None),
        ("llamacpp_sm", "rows.toml", "time_to_first_token_s"), ("amd_vllm_nov", "rows.toml", None),
        ("amd_vllm_nov", "beside.toml", None), ("trtllm010", "rows.toml", None), ("trtllm011", "rows.toml", None))
#: the TensorRT-LLM tables the shipped constants were fitted on or changed after: none of their measurements enters
DEVELOPMENT = ("trtllm013", "trtllm014", "trtllm015", "trtllm017", "trtllm020")
#: every copied source (or part) out of the pool, and why
EXCLUDED = {
    "trtllm013": "the PCIe all-reduce fractions and the TP barrier wait were fitted on it (it first judged the GEMM "
                 "shape term)",
    "trtllm014": "the GEMM shape term was designed after it was read; the PCIe all-reduce fractions and the TP "
                 "barrier wait were fitted on it",
    "trtllm015": "judged TensorRT-LLM's memory outside the KV pool, then read; the PCIe all-reduce fractions and the "
                 "TP barrier wait were fitted on it",
    "trtllm017": "the A100's kernel tables and the GEMM shape term were designed after it was read; TensorRT-LLM's "
                 "memory outside the KV pool, the PCIe all-reduce fractions and the TP barrier wait were fitted on it",
    "trtllm020": "judged TensorRT-LLM's memory outside the KV pool, then read; the TP barrier wait was fitted on it",
    "llamacpp_cuda": "llama.cpp's MMQ rate and MMVQ stream per SM were fitted on it",
    "llamacpp_sm decode": "its 30 tg128 rows fitted MMVQ's bytes per SM per cycle",
    "amd_vllm": "the MI300X's weight stream ratio was fitted on it (and on its older releases' tables)",
    "amd_vllm_judge": "the MI300X's weight stream ratio was fitted on it",
}


def measurement(row: PublishedResult) -> tuple:
    """What makes two rows the same measurement: model, GPU, dtypes, GPU count, lengths and value."""
    return (row.model, row.accelerator, row.weights_dtype, row.kv_dtype, row.num_gpus, row.input_tokens,
            row.output_tokens, row.value)


@cache
def rows() -> tuple[tuple[str, PublishedResult], ...]:
    """(source, row) of every pooled row, in `POOL`'s order: a file's rows but those an earlier file of the pool or a
    development table holds (within one file every cell is its own measurement, even where two cells are equal)."""
    seen = {measurement(r) for source in DEVELOPMENT for r in measurements(source)}
    out = []
    for source, name, metric in POOL:
        kept = [r for r in measurements(source, name)
                if (metric is None or r.metric == metric) and measurement(r) not in seen]
        seen |= {measurement(r) for r in kept}
        out += [(label(source, name, r), r) for r in kept]
    return tuple(out)


def label(source: str, name: str, row: PublishedResult) -> str:
    """The copied table a pooled row comes from: its source, "<source> beside" for a file beside the rows, and
    `oracle_mi300x` for Oracle's rows, which `amd_vllm_nov` writes with its own (they judged the same change)."""
    if row.id.startswith("oracle-"):
        return "oracle_mi300x"
    return source if name == "rows.toml" else f"{source} {Path(name).stem}"


def worst(pooled: list[tuple[str, PublishedResult]], preds: list, count: int = 15) -> list[dict[str, Any]]:
    """The `count` rows of largest |error|, worst first, each with what it measured and what kokuban predicted."""
    order = sorted(range(len(preds)), key=lambda i: -preds[i].error)[:count]
    return [{"id": pooled[i][1].id, "source": pooled[i][0], "engine": pooled[i][1].engine,
             "gpu": pooled[i][1].accelerator, "gpus": pooled[i][1].num_gpus, "model": pooled[i][1].model,
             "dtype": pooled[i][1].weights_dtype, "metric": preds[i].metric, "measured": preds[i].measured,
             "predicted": preds[i].predicted, "signed_error": preds[i].signed_error, "bound": preds[i].regime}
            for i in order]


def score(predictor: report.Predictor | None = None) -> dict[str, Any]:
    """pool.json: the shipped model's figures on the pool, overall, by source and by each facet of `report.facets`,
    and its worst rows."""
    predictor = predictor or report.Predictor()
    pooled = list(rows())
    preds = predictor.all(r for _, r in pooled)
    by: dict[str, dict[str, list]] = {"source": {}}
    for (source, r), p in zip(pooled, preds, strict=True):
        by["source"].setdefault(source, []).append(p)
        for facet, names in report.facets(r, p).items():
            for name in names:
                by.setdefault(facet, {}).setdefault(name, []).append(p)
    return {"step_model": report.step_model(), "rows": len(pooled),
            "sources": list(dict.fromkeys(s for s, _ in pooled)),
            "development": list(DEVELOPMENT), "excluded": EXCLUDED, "all": report.figures(preds),
            "by": {facet: {name: report.figures(g) for name, g in sorted(groups.items())}
                   for facet, groups in by.items()},
            "worst": worst(pooled, preds)}


@dataclass(frozen=True)
class Headline:
    """The pool's overall figures: `rows` rows of `sources` sources, the shipped `step_model`'s median |error| with
    its 95 % bootstrap interval, p90 |error| and median signed error (+: kokuban faster than measured)."""

    step_model: str
    rows: int
    sources: int
    median_abs_error: float
    median_abs_error_ci: tuple[float, float]
    p90_abs_error: float
    median_signed_error: float


def headline(path: Path = JSON) -> Headline:
    """The headline of the committed pool.json (`python -m evidence --check` keeps it the shipped model's)."""
    import json

    saved = json.loads(path.read_text(encoding="utf-8"))
    a = saved["all"]
    return Headline(saved["step_model"], saved["rows"], len(saved["sources"]), a["median_abs_error"],
                    tuple(a["median_abs_error_ci"]), a["p90_abs_error"], a["median_signed_error"])


if __name__ == "__main__":
    h = headline()
    print(f"{h.step_model}: {h.rows} rows of {h.sources} sources, median |error| {report.pct(h.median_abs_error)} "
          f"({report.pct(h.median_abs_error_ci[0])} – {report.pct(h.median_abs_error_ci[1])}), p90 "
          f"{report.pct(h.p90_abs_error)}, median signed {report.pct(h.median_signed_error)}")
