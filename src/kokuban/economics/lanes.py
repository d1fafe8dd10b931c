"""Fast and slow lanes: the train timetable.

Requests of P prompt and O output tokens arrive at rate λ (per second). A train (a batch) departs
every W seconds, or as soon as it is full (the largest batch that fits at P + O tokens, B_fit):
    arrivals per departure  = λ·W
    batch                   B = clip(round(λ·W), 1, B_fit)            (W = 0: each request rides alone)
    wait for the train      min(W, B_fit ÷ λ): the timetable, or until the train is full
    queueing delay          that wait ÷ 2 on average (arrivals are spread evenly over it)
    departure interval      B ÷ λ between trains that carry anyone
    TTFT                    = queueing delay + prefill(B, P)           TPOT = decode time ÷ (O − 1)
    cost per output token   = USD/s × (prefill + decode) ÷ (B·O)       (`core.generation.generation`)
    deployments busy        = (prefill + decode) × λ ÷ B                (replicas the timetable needs)
A fast lane takes the largest batch its latency target allows; a slow (batch/offline) lane waits a
long window and rides full. Their cost ratio is the price multiplier of speed.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd

from kokuban.core import cost, memory
from kokuban.core.generation import generation
from kokuban.economics.batch import _fit_or_raise, decode_columns
from kokuban.errors import KokubanError, require_positive
from kokuban.specs.deployment import Deployment

DEFAULT_SLOW_WINDOW_S = 3600.0


def _check(dep: Deployment, rate: float, prompt: int, output: int) -> int:
    require_positive("rate_per_s", rate)
    require_positive("prompt", prompt, integer=True)
    require_positive("output", output, integer=True)
    if output < 2:
        raise KokubanError(
            f"must be at least 2 tokens to have a time per output token, got {output}", field="output", value=output
        )
    dep.model.require_context(prompt + output, field="output")
    return _fit_or_raise(dep, prompt + output)


def lane_table(dep: Deployment, rate_per_s: float, prompt: int, output: int, windows_s: Any) -> pd.DataFrame:
    """One row per window W (seconds): `decode_columns` at the batch and the mid-generation context
    P + O/2 (per-token parts, bound), then the timetable above."""
    fit = _check(dep, rate_per_s, prompt, output)
    w = np.asarray(windows_s, dtype=np.float64).ravel()
    if w.size == 0 or np.any(~np.isfinite(w)) or np.any(w < 0):
        raise KokubanError("windows must be a non-empty list of seconds ≥ 0")
    arrivals = rate_per_s * w
    batch = np.clip(np.round(arrivals), 1, fit).astype(np.int64)
    full = arrivals >= fit
    wait = np.minimum(w, fit / rate_per_s)
    interval = batch / rate_per_s
    gens = {int(b): generation(dep, int(b), prompt, output) for b in np.unique(batch)}
    g = [gens[int(b)] for b in batch]
    prefill_s = np.array([x.ttft_s for x in g])
    service_s = np.array([x.total_time_s for x in g])
    df = pd.DataFrame({
        "window_s": w, "arrivals_per_departure": arrivals, "full": full, "departure_interval_s": interval,
        "queue_wait_s": wait / 2, "prefill_s": prefill_s, "ttft_s": wait / 2 + prefill_s,
        "tpot_s": np.array([x.decode_time_s for x in g]) / (output - 1), "service_s": service_s,
        "deployments_busy": service_s / interval,
        "usd_per_request": np.array([x.usd_per_request for x in g]),
    })
    df["usd_per_m_output_all_in"] = cost.usd_per_m_tokens(df["usd_per_request"], output)
    dec = pd.DataFrame(decode_columns(dep, batch, prompt + output // 2)).astype({"batch": "int64", "context": "int64"})
    return pd.concat([dec, df], axis=1)


@dataclass(frozen=True)
class LanePrices:
    """Fast lane (largest batch within the SLO) against the slow lane (a long window, riding full)."""

    rate_per_s: float
    prompt_tokens: int
    output_tokens: int
    tpot_target_s: float | None
    ttft_target_s: float | None
    fast: dict[str, Any]
    slow: dict[str, Any]
    fast_binding: str
    price_multiplier: float
    sentence: str

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _row(df: pd.DataFrame, i: int) -> dict[str, Any]:
    return {k: (v.item() if hasattr(v, "item") else v) for k, v in df.iloc[i].to_dict().items()}


def lane_prices(dep: Deployment, rate_per_s: float, prompt: int, output: int, *, tpot_target_s: float | None = None,
                ttft_target_s: float | None = None, slow_window_s: float = DEFAULT_SLOW_WINDOW_S) -> LanePrices:
    """Search every batch 1…B_fit (window B ÷ λ; batch 1 departs at once, W = 0) for the cheapest that
    meets the targets; the slow lane is the row at `slow_window_s`. Raises, naming the binding target
    and the shortfall, when not even a lone request meets them."""
    if tpot_target_s is None and ttft_target_s is None:
        raise KokubanError(
            "give a latency target: seconds per output token and/or seconds to first token", field="tpot_target_s"
        )
    for name, v in (("tpot_target_s", tpot_target_s), ("ttft_target_s", ttft_target_s)):
        if v is not None:
            require_positive(name, v)
    require_positive("slow_window_s", slow_window_s)
    fit = _check(dep, rate_per_s, prompt, output)
    windows = np.concatenate([[0.0], np.arange(2, fit + 1) / rate_per_s])
    table = lane_table(dep, rate_per_s, prompt, output, windows)
    ok_tpot = table["tpot_s"] <= tpot_target_s if tpot_target_s is not None else pd.Series(True, index=table.index)
    ok_ttft = table["ttft_s"] <= ttft_target_s if ttft_target_s is not None else pd.Series(True, index=table.index)
    first = table.iloc[0]
    if not ok_tpot.iloc[0]:
        over = first["tpot_s"] - tpot_target_s
        raise KokubanError(
            f"no batch meets {tpot_target_s:g} s per output token: a lone request already takes {first['tpot_s']:.4g} "
            "s "
            f"({first['bound']}-bound), {over:.3g} s ({over / tpot_target_s:.0%}) over; use more or faster GPUs",
            field="tpot_target_s",
            value=tpot_target_s,
        )
    if not ok_ttft.iloc[0]:
        over = first["ttft_s"] - ttft_target_s
        raise KokubanError(
            f"no batch meets a first-token time of {ttft_target_s:g} s: the prefill of one {prompt}-token prompt alone "
            f"takes {first['ttft_s']:.4g} s, {over:.3g} s ({over / ttft_target_s:.0%}) over; use more or faster GPUs",
            field="ttft_target_s", value=ttft_target_s)
    ok = ok_tpot & ok_ttft
    i = int(table.loc[ok, "usd_per_m_output_all_in"].idxmin())
    nxt = i + 1
    if nxt >= len(table):
        binding = "memory (the largest batch that fits)"
    elif not ok_tpot.iloc[nxt]:
        binding = "tpot"
    elif not ok_ttft.iloc[nxt]:
        binding = "ttft (queueing for the train + prefill)"
    else:
        binding = "cost (a larger batch would cost more)"
    slow_table = lane_table(dep, rate_per_s, prompt, output, [slow_window_s])
    fast, slow = _row(table, i), _row(slow_table, 0)
    mult = fast["usd_per_m_output_all_in"] / slow["usd_per_m_output_all_in"]
    sentence = (
        f"At {rate_per_s:g} requests/s the fast lane departs every {fast['departure_interval_s']:.3g} s with batch "
        f"{fast['batch']} (bound by {binding}) at ${fast['usd_per_m_output_all_in']:.3g}/M output tokens; the slow "
        "lane "
        f"rides batch {slow['batch']} at ${slow['usd_per_m_output_all_in']:.3g}/M: speed costs ×{mult:.2f}."
    )
    return LanePrices(
        rate_per_s=rate_per_s,
        prompt_tokens=prompt,
        output_tokens=output,
        tpot_target_s=tpot_target_s,
        ttft_target_s=ttft_target_s,
        fast=fast,
        slow=slow,
        fast_binding=binding,
        price_multiplier=mult,
        sentence=sentence,
    )


def default_windows(
    rate_per_s: float, fit: int, slow_window_s: float = DEFAULT_SLOW_WINDOW_S, points: int = 60
) -> np.ndarray:
    """W = 0 and `points` windows from one arrival (1/λ) to past a full train or the slow window."""
    hi = max(slow_window_s, 2 * fit / rate_per_s)
    return np.concatenate([[0.0], np.geomspace(1 / rate_per_s, hi, points)])


def max_batch_for(dep: Deployment, prompt: int, output: int) -> int:
    """B_fit: the largest batch that fits at the end of a generation, P + O tokens (0 if none)."""
    return int(memory.max_batch(dep, prompt + output))
