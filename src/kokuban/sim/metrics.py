"""What a simulated run measured: per-request latencies, throughput, goodput, occupancy and cost.

Per request (seconds), with the definitions of `vllm bench serve`:
    TTFT   first token − arrival              queue   first scheduled − arrival
    TPOT   (finish − first token) ÷ (output − 1)   (undefined for one-token outputs)
    ITL    every gap between consecutive tokens of a request (a distribution over tokens)
    E2E    finish − arrival
Run: duration = last finish − first arrival; throughput = requests (tokens) ÷ duration, also per
accelerator; goodput = requests meeting the SLO ÷ duration; busy fraction = Σ step times ÷ duration;
batch and KV occupancy are averaged over steps weighted by step time; cost per million tokens =
deployment USD/s × duration ÷ tokens × 10⁶. Percentiles are NumPy's linear interpolation (as vLLM's).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kokuban.core import cost

PERCENTILES = (50, 90, 99)


@dataclass(frozen=True)
class SLO:
    """Latency objectives in seconds (None = no objective). A request meets the SLO when its TTFT and
    TPOT are within them; a run meets it when the p99s are (`SimResult.meets`)."""

    ttft_s: float | None = None
    tpot_s: float | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"ttft_s": self.ttft_s, "tpot_s": self.tpot_s}


def weighted_percentile(values: np.ndarray, weights: np.ndarray, q: float) -> float:
    """Smallest value whose cumulative weight reaches q% of the total (the inverted CDF)."""
    if values.size == 0:
        return float("nan")
    order = np.argsort(values)
    cum = np.cumsum(weights[order])
    return float(values[order][np.searchsorted(cum, q / 100.0 * cum[-1])])


def _stats(x: np.ndarray) -> dict[str, float]:
    x = x[~np.isnan(x)]
    if x.size == 0:
        return {"mean": float("nan"), **{f"p{p}": float("nan") for p in PERCENTILES}}
    return {"mean": float(x.mean()), **{f"p{p}": float(np.percentile(x, p)) for p in PERCENTILES}}


@dataclass(frozen=True)
class SimResult:
    """Everything one simulation recorded. Arrays are per request (in arrival order) or per step."""

    description: str
    scheduler: dict[str, Any]
    num_gpus: int
    usd_per_s: float
    kv_capacity_blocks: int
    block_size: int
    arrival_s: np.ndarray
    prompt_tokens: np.ndarray
    output_tokens: np.ndarray
    first_scheduled_s: np.ndarray
    first_token_s: np.ndarray
    finish_s: np.ndarray
    preemptions: np.ndarray
    cached_tokens: np.ndarray
    itl_values_s: np.ndarray
    itl_weights: np.ndarray
    step_start_s: np.ndarray
    step_s: np.ndarray
    step_tokens: np.ndarray
    step_batch: np.ndarray
    step_decodes: np.ndarray
    step_kv_blocks: np.ndarray
    end_s: float
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def build(cls, engine: Any, end_s: float) -> SimResult:
        dep = engine.model.dep
        same = np.array(engine.itl_same, dtype=np.float64).reshape(-1, 2)
        mixed = np.concatenate(engine.itl_mixed) if engine.itl_mixed else np.zeros(0)
        tl = np.array(engine.timeline, dtype=np.float64).reshape(-1, 6)
        return cls(
            description=dep.describe(), scheduler=engine.cfg.as_dict(), num_gpus=dep.num_gpus, usd_per_s=dep.usd_per_s,
            kv_capacity_blocks=engine.pool.total, block_size=engine.cfg.block_size,
            arrival_s=engine.arrival, prompt_tokens=engine.wl.prompt_tokens, output_tokens=engine.wl.output_tokens,
            first_scheduled_s=engine.first_sched, first_token_s=engine.first_token, finish_s=engine.finish,
            preemptions=engine.preemptions, cached_tokens=engine.cached_tokens,
            itl_values_s=np.concatenate([same[:, 0], mixed]),
            itl_weights=np.concatenate([same[:, 1], np.ones(mixed.size)]),
            step_start_s=tl[:, 0], step_s=tl[:, 1], step_tokens=tl[:, 2].astype(np.int64),
            step_batch=tl[:, 3].astype(np.int64), step_decodes=tl[:, 4].astype(np.int64),
            step_kv_blocks=tl[:, 5].astype(np.int64), end_s=float(end_s),
            extra={"recomputed_tokens": engine.recomputed, "blocks_available_at_end": engine.pool.available,
                   "generated": engine.generated},
        )

    # ---- per request ---------------------------------------------------------------------------------
    @property
    def ttft_s(self) -> np.ndarray:
        return self.first_token_s - self.arrival_s

    @property
    def tpot_s(self) -> np.ndarray:
        gaps = (self.output_tokens - 1).astype(np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(gaps > 0, (self.finish_s - self.first_token_s) / gaps, np.nan)

    @property
    def e2e_s(self) -> np.ndarray:
        return self.finish_s - self.arrival_s

    @property
    def queue_s(self) -> np.ndarray:
        return self.first_scheduled_s - self.arrival_s

    @property
    def duration_s(self) -> float:
        return float(self.end_s - self.arrival_s.min())

    def meets(self, slo: SLO) -> bool:
        """Whether the run's p99 TTFT and p99 TPOT are within the SLO."""
        ok = True
        if slo.ttft_s is not None:
            ok &= float(np.percentile(self.ttft_s, 99)) <= slo.ttft_s
        if slo.tpot_s is not None:
            tpot = self.tpot_s[~np.isnan(self.tpot_s)]
            ok &= tpot.size == 0 or float(np.percentile(tpot, 99)) <= slo.tpot_s
        return bool(ok)

    def good(self, slo: SLO) -> np.ndarray:
        """Per request: met both objectives."""
        ok = np.ones(self.arrival_s.size, bool)
        if slo.ttft_s is not None:
            ok &= self.ttft_s <= slo.ttft_s
        if slo.tpot_s is not None:
            tpot = self.tpot_s
            ok &= np.isnan(tpot) | (tpot <= slo.tpot_s)
        return ok

    def summary(self, slo: SLO | None = None) -> dict[str, Any]:
        """The run as plain numbers (stable keys, SI units)."""
        dur = self.duration_s
        n = int(self.arrival_s.size)
        inp, outp = int(self.prompt_tokens.sum()), int(self.output_tokens.sum())
        busy = float(self.step_s.sum())
        w = self.step_s if busy > 0 else np.ones_like(self.step_s)
        occupancy = self.step_kv_blocks / max(self.kv_capacity_blocks, 1)
        out: dict[str, Any] = {
            "deployment": self.description,
            "scheduler": self.scheduler,
            "requests": n,
            "duration_s": dur,
            "steps": int(self.step_s.size),
            "throughput": {
                "requests_per_s": n / dur,
                "input_tokens_per_s": inp / dur,
                "output_tokens_per_s": outp / dur,
                "output_tokens_per_s_per_gpu": outp / dur / self.num_gpus,
                "total_tokens_per_s_per_gpu": (inp + outp) / dur / self.num_gpus,
            },
            "latency_s": {
                "ttft": _stats(self.ttft_s), "tpot": _stats(self.tpot_s), "e2e": _stats(self.e2e_s),
                "queue": _stats(self.queue_s),
                "itl": {
                    "mean": float(np.average(self.itl_values_s, weights=self.itl_weights)) if self.itl_weights.sum()
                    else float("nan"),
                    **{f"p{p}": weighted_percentile(self.itl_values_s, self.itl_weights, p) for p in PERCENTILES},
                },
            },
            "busy_fraction": busy / dur,
            "batch": {"mean": float(np.average(self.step_batch, weights=w)) if w.size else 0.0,
                      "max": int(self.step_batch.max(initial=0))},
            "kv_cache": {
                "capacity_blocks": self.kv_capacity_blocks, "block_size_tokens": self.block_size,
                "capacity_tokens": self.kv_capacity_blocks * self.block_size,
                "mean_occupancy": float(np.average(occupancy, weights=w)) if w.size else 0.0,
                "peak_occupancy": float(occupancy.max(initial=0.0)),
            },
            "preemptions": int(self.preemptions.sum()),
            "prefix_cache_hit_tokens": int(self.cached_tokens.sum()),
            "cost": {
                "usd_per_hour": self.usd_per_s * 3600,
                "usd_per_m_output_tokens": cost.usd_per_m_tokens(self.usd_per_s * dur, outp),
                "usd_per_m_total_tokens": cost.usd_per_m_tokens(self.usd_per_s * dur, inp + outp),
            },
        }
        if slo is not None:
            good = int(self.good(slo).sum())
            out["slo"] = slo.as_dict() | {"goodput_requests_per_s": good / dur, "fraction_good": good / n,
                                          "p99_within_slo": self.meets(slo)}
        return out

    def records(self):
        """Per-request records as a pandas DataFrame (seconds, tokens)."""
        import pandas as pd

        return pd.DataFrame({
            "arrival_s": self.arrival_s, "prompt_tokens": self.prompt_tokens, "output_tokens": self.output_tokens,
            "queue_s": self.queue_s, "ttft_s": self.ttft_s, "tpot_s": self.tpot_s, "e2e_s": self.e2e_s,
            "finish_s": self.finish_s, "preemptions": self.preemptions, "cached_prompt_tokens": self.cached_tokens,
        })
