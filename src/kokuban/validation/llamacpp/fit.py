"""The fit on the training rows: the GEMM curve's half-point (`fit_m_half`), the flash-attention kernel's rates
(`fit_flash_attention`) and the efficiency fractions (`calibrate_rows`), each judged on the held-out rows."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from kokuban.errors import KokubanError
from kokuban.specs.deployment import Deployment
from kokuban.specs.hardware import Efficiency
from kokuban.specs.model import ModelSpec
from kokuban.validation.llamacpp.flash_attention import FlashAttention, flash_attention_flops, flash_attention_path
from kokuban.validation.llamacpp.matmul import matmul_path, step_efficiency
from kokuban.validation.llamacpp.predict import predict_test, step_tokens
from kokuban.validation.llamacpp.rows import Row

#: What the per-type fit frees: compute (the GEMM curve's e, and the GEMV's and attention's flat fraction), the
#: weight read, the KV-cache read of the attention kernels and the per-step overhead; M_half besides (`fit_m_half`).
FIT_PARAMS = ("compute", "memory", "kv_memory", "step_overhead_s")
#: The flat model, reported beside it: one flat compute fraction for every M, the KV cache read at the weight
#: read's fraction.
FLAT_PARAMS = ("compute", "memory", "step_overhead_s")
#: M_half is searched as log10 in this range of tokens (1 token to 4,096).
M_HALF_BOUNDS = (1.0, 4096.0)


def _measured(rows: Sequence[Row], statistic: str) -> list[float]:
    if statistic not in ("best", "median"):
        raise KokubanError(f"'{statistic}' is not a statistic; allowed: best, median", field="statistic",
                           value=statistic)
    return [r.best_s if statistic == "best" else r.median_s for r in rows]


def _row_predictor(rows: Sequence[Row], deployment_of: Callable[[Row, Efficiency], Deployment],
                   attention: FlashAttention | None = None) -> Callable[[Efficiency, float | None], np.ndarray]:
    """predict(eff, M_half): every row's seconds, each step at `step_efficiency` of its M (and with `attention`,
    the flash-attention kernel's rates: `predict_test`)."""
    def predict(eff: Efficiency, m_half_tokens: float | None) -> np.ndarray:
        cache: dict[tuple[str, str, str], Deployment] = {}
        out = []
        for r in rows:
            m = step_tokens(r.kind, r.tokens, r.batch)
            key = (r.model, r.gguf_type, matmul_path(m))  # the two paths' deployments differ only in curves
            if key not in cache:
                cache[key] = deployment_of(r, step_efficiency(eff, m_half_tokens, m))
            out.append(predict_test(cache[key], r.kind, tokens=r.tokens, depth=r.depth, batch=r.batch,
                                    attention=attention))
        return np.array(out)
    return predict


def fit_m_half(rows: Sequence[Row], held_out: Sequence[bool],
               deployment_of: Callable[[Row, Efficiency], Deployment], *, params: Sequence[str] = FIT_PARAMS,
               start: Efficiency | None = None, statistic: str = "best",
               attention: FlashAttention | None = None) -> float:
    """M_half (tokens) of the GEMM curve, fitted jointly with `params` on the rows not held out.

    loss = mean over training rows of ln(predicted ÷ measured)² (`calibrate.log_loss`), Nelder–Mead over the
    fractions in logit space, the seconds and log10 M_half (bounded to `M_HALF_BOUNDS`), from four starts (the
    starting fractions and calibrate's three alternatives, each with its own M_half: 16, 4, 64, 16 tokens).
    Only M_half is kept: `calibrate_rows` refits the fractions at it and reports both sides."""
    from scipy.optimize import minimize

    from kokuban.validation.calibrate import FRACTIONS, decode_params, encode_params, log_loss

    train = [r for r, h in zip(rows, held_out, strict=True) if not h]
    measured = np.asarray(_measured(train, statistic))
    predict = _row_predictor(train, deployment_of, attention)
    start = start or Efficiency.scalar()
    lo, hi = np.log10(M_HALF_BOUNDS[0]), np.log10(M_HALF_BOUNDS[1])
    n = len(params)

    def loss(z: np.ndarray) -> float:
        return log_loss(predict(decode_params(z[:n], start, params), 10 ** float(np.clip(z[n], lo, hi))), measured)

    starts = []
    for (frac, secs), m_half in zip(((None, None), (0.9, 1e-4), (0.4, 1e-3), (0.7, 1e-2)), (16, 4, 64, 16),
                                    strict=True):
        eff = start if frac is None else start.updated(**{p: frac if p in FRACTIONS else secs for p in params})
        starts.append(np.append(encode_params(eff, params), np.log10(m_half)))
    best = min((minimize(loss, z0, method="Nelder-Mead", options={"xatol": 1e-3, "fatol": 1e-6,
                                                                   "maxiter": 400 * (n + 1)})
                for z0 in starts), key=lambda res: res.fun)
    return float(10 ** np.clip(best.x[n], lo, hi))


def fit_flash_attention(rows: Sequence[Row], held_out: Sequence[bool], specs: dict[str, ModelSpec], *,
                        statistic: str = "best") -> FlashAttention | None:
    """The flash-attention kernel's two rates from what depth adds to a prompt, on the rows not held out.

    Each training llama-bench prompt at depth D > 0 is paired with the training row of the same case, type and prompt
    length at depth 0: the two differ only in attention (the same weights, FLOPs and KV written), so
    Δt = t(D) − t(0) is priced as Δt = ΔW ÷ R with ΔW = `flash_attention_flops`(P, D) − (P, 0). Per path
    (`flash_attention_path` of P), 1 ÷ R = the median of Δt ÷ ΔW over its pairs (a median: a pair is the difference of
    two noisy rows, and one disturbed run moves a mean; pairs whose depth row is faster count too, as negative
    seconds). Every GGUF type is pooled: the kernel and the F16 KV cache are the same in all of them. None when a path
    has no pair or a median that is not positive."""
    measured = dict(zip((r.id for r in rows), _measured(rows, statistic), strict=True))
    base = {(r.model, r.gguf_type, r.tokens, r.batch): r for r, h in zip(rows, held_out, strict=True)
            if not h and r.regime == "pp" and r.depth == 0}
    per_path: dict[str, list[float]] = {"rows": [], "tiled": []}
    for r, h in zip(rows, held_out, strict=True):
        b = base.get((r.model, r.gguf_type, r.tokens, r.batch))
        if h or r.regime != "pp" or r.depth == 0 or b is None:
            continue
        spec = specs[r.model]
        added = (flash_attention_flops(spec, r.tokens, r.depth, r.batch)
                 - flash_attention_flops(spec, r.tokens, 0, r.batch))
        per_path[flash_attention_path(r.tokens)].append((measured[r.id] - measured[b.id]) / added)
    seconds_per_flop = {p: float(np.median(v)) if v else float("nan") for p, v in per_path.items()}
    if not all(x > 0 for x in seconds_per_flop.values()):
        return None
    return FlashAttention(rows_flops_s=1.0 / seconds_per_flop["rows"], tiled_flops_s=1.0 / seconds_per_flop["tiled"],
                          pairs_fitted=sum(len(v) for v in per_path.values()))


def calibrate_rows(rows: Sequence[Row], held_out: Sequence[bool],
                   deployment_of: Callable[[Row, Efficiency], Deployment],
                   *, params: Sequence[str] = FIT_PARAMS, start: Efficiency | None = None,
                   statistic: str = "best", m_half_tokens: float | None = None,
                   attention: FlashAttention | None = None) -> Any:
    """Fit `params` on the rows not held out (`calibrate.calibrate`, log-error least squares), report both sides.

    `deployment_of(row, efficiency)` builds the row's deployment; each row's steps run at `step_efficiency` of
    their M with this `m_half_tokens` (None: the flat model) and attention at `attention`'s rates (None: the
    roofline's); the regime labels are the rows' regimes.
    `statistic`: 'best' (fastest repetition) or 'median' of each row's samples is what is compared.
    """
    from kokuban.validation.calibrate import calibrate

    measured = _measured(rows, statistic)
    regimes = np.array([r.regime for r in rows])
    predict_rows_at = _row_predictor(rows, deployment_of, attention)

    def predict(eff: Efficiency) -> tuple[np.ndarray, np.ndarray]:
        return predict_rows_at(eff, m_half_tokens), regimes

    start = start or Efficiency.scalar()  # the scalar set: what the committed report starts from (no GPU curves)
    return calibrate("llama.cpp", [r.id for r in rows], measured, predict, params, start=start, held_out=held_out)
