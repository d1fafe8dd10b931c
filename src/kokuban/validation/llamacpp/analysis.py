"""The report's analysis of a measured record: per-type, flat and joint fits, judged on the held-out rows."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

import numpy as np

from kokuban.specs.deployment import Deployment
from kokuban.specs.hardware import Efficiency
from kokuban.specs.model import ModelSpec
from kokuban.validation.llamacpp.fit import FIT_PARAMS, FLAT_PARAMS, calibrate_rows, fit_flash_attention, fit_m_half
from kokuban.validation.llamacpp.matmul import matmul_path
from kokuban.validation.llamacpp.plan import is_held_out, plan_from_dict
from kokuban.validation.llamacpp.predict import llamacpp_deployment, step_tokens
from kokuban.validation.llamacpp.rows import Row, phase, row_dict, row_from_dict


def analyse(record: dict[str, Any], accelerator_entry: dict[str, Any], *, statistic: str = "best",
            flat: bool = True) -> dict[str, Any]:
    """Calibrate on the fitted rows, judge on the held-out ones: per GGUF type (each its own compute, memory, KV-read
    and overhead fractions and GEMM half-point M_half) and once for all types together (one set, as kokuban's single
    Efficiency has), every prompt's attention at the flash-attention kernel's two rates, fitted first on the training
    rows of every type together (`fit_flash_attention`). With `flat`, also the flat model per type (one flat
    compute fraction: `FLAT_PARAMS`, no curve, the roofline's attention), fitted and judged on the same rows, to
    report beside it.

    Returns {"per_type": {type: Calibration.as_dict() + m_half_tokens, phases}, "per_type_pooled": the held-out
    summary (overall and by phase) of every type's rows under its own fit together, "flat": {type: the same for the
    flat model}, "all_types": ..., "flash_attention": FlashAttention as a dict (None when it could not be fitted),
    "rows": [...]} where each row carries its measured and predicted seconds (defaults,
    per-type fit, flat per-type fit, joint fit), its matmul path and whether it was held out; `phases` are the
    held-out summaries by phase (`phase`: decode, prefill) and overall."""
    from kokuban.validation.accuracy import error_summary

    plan = plan_from_dict(record["plan"])
    rows = [row_from_dict(r) for r in record["rows"]]
    specs = {name: ModelSpec.from_config(c["config"], name=name) for name, c in record["cases"].items()}

    def deployment_of(row: Row, eff: Efficiency) -> Deployment:
        return llamacpp_deployment(specs[row.model], accelerator_entry, row.gguf_type, eff)

    held = np.array([is_held_out(r, plan) for r in rows])
    attention = fit_flash_attention(rows, held, specs, statistic=statistic)

    def fitted(sub: Sequence[Row], held_sub: np.ndarray, model: str) -> dict[str, Any]:
        if model == "flat":
            m_half, params, attn = None, FLAT_PARAMS, None
        else:
            m_half = fit_m_half(sub, held_sub, deployment_of, statistic=statistic, attention=attention)
            params, attn = FIT_PARAMS, attention
        cal = calibrate_rows(sub, held_sub, deployment_of, params=params, statistic=statistic,
                             m_half_tokens=m_half, attention=attn).as_dict()
        held_rows = [pr for pr in cal["rows"] if pr["held_out"]]
        phases = [phase(r.regime) for r, h in zip(sub, held_sub, strict=True) if h]
        cal["phases"] = error_summary([pr["measured"] for pr in held_rows], [pr["predicted_after"] for pr in held_rows],
                                      groups=phases)
        return {**cal, "m_half_tokens": m_half}

    per_type, flat_fits, predicted, skipped = {}, {}, {}, []
    for gguf_type in plan.types:
        sel = [i for i, r in enumerate(rows) if r.gguf_type == gguf_type]
        if not sel or held[sel].all() or not held[sel].any():
            skipped.append(gguf_type)  # nothing to fit on, or nothing to judge on
            continue
        sub = [rows[i] for i in sel]
        per_type[gguf_type] = fitted(sub, held[sel], "curve")
        if flat:
            flat_fits[gguf_type] = fitted(sub, held[sel], "flat")
        for k, i in enumerate(sel):
            pr = per_type[gguf_type]["rows"][k]
            predicted[i] = (pr["predicted_before"], pr["predicted_after"],
                            flat_fits[gguf_type]["rows"][k]["predicted_after"] if flat else float("nan"))
    joint = fitted(rows, held, "curve")
    out_rows = []
    for i, r in enumerate(rows):
        if i not in predicted:
            continue
        before, after, flat_after = predicted[i]
        out_rows.append({**row_dict(r), "held_out": bool(held[i]),
                         "path": matmul_path(step_tokens(r.kind, r.tokens, r.batch)), "predicted_default_s": before,
                         "predicted_fit_s": after, "predicted_flat_s": flat_after,
                         "predicted_joint_s": joint["rows"][i]["predicted_after"]})
    # every type's held-out rows under its own fit, pooled: the error of the per-type calibration as one figure
    pooled = [r for r in out_rows if r["held_out"]]
    per_type_pooled = error_summary([r["best_s" if statistic == "best" else "median_s"] for r in pooled],
                                    [r["predicted_fit_s"] for r in pooled],
                                    groups=[phase(r["regime"]) for r in pooled]) if pooled else {}
    return {"statistic": statistic, "per_type": per_type, "per_type_pooled": per_type_pooled, "flat": flat_fits,
            "all_types": joint, "rows": out_rows,
            "skipped": skipped, "flash_attention": None if attention is None else asdict(attention)}
