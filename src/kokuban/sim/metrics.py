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
A statistic with nothing to measure (TPOT and ITL when every output is one token) is None, never NaN.
A merged data-parallel record (`ranks` = N > 1) holds every rank's steps: busy fraction = Σ step times ÷ duration
÷ N and KV occupancy = a step's blocks ÷ one rank's pool are per rank; batch and step counts are per step of a rank.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

import numpy as np

from kokuban.core import cost
from kokuban.sim.record import RunRecord

if TYPE_CHECKING:
    from kokuban.sim.scheduler import SchedulerConfig
    from kokuban.specs.deployment import Deployment

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


def _stats(x: np.ndarray) -> dict[str, float | None]:
    """Mean and percentiles of the defined values (None when there are none: e.g. TPOT of one-token outputs)."""
    x = x[~np.isnan(x)]
    if x.size == 0:
        return {"mean": None, **{f"p{p}": None for p in PERCENTILES}}
    return {"mean": float(x.mean()), **{f"p{p}": float(np.percentile(x, p)) for p in PERCENTILES}}


def _itl_stats(values: np.ndarray, weights: np.ndarray) -> dict[str, float | None]:
    """`_stats` of the inter-token gaps, each value counted `weights` times (None when no request has a gap)."""
    if not weights.sum():
        return {"mean": None, **{f"p{p}": None for p in PERCENTILES}}
    return {"mean": float(np.average(values, weights=weights)),
            **{f"p{p}": weighted_percentile(values, weights, p) for p in PERCENTILES}}


@dataclass(frozen=True)
class SimResult(RunRecord):
    """A run's record (`record.RunRecord`: arrays per request in arrival order, per gap, per step) with the
    deployment it ran on, and the metrics derived from them."""

    description: str = ""
    scheduler: dict[str, Any] = field(default_factory=dict)
    num_gpus: int = 1
    usd_per_s: float = 0.0

    @classmethod
    def build(cls, record: RunRecord, dep: Deployment, scheduler: SchedulerConfig) -> SimResult:
        """The metrics of `record`, a run of `dep` under `scheduler`."""
        return cls(**{f.name: getattr(record, f.name) for f in fields(RunRecord)}, description=dep.describe(),
                   scheduler=scheduler.as_dict(), num_gpus=dep.num_gpus, usd_per_s=dep.usd_per_s)

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
        occupancy = self.step_kv_blocks * self.ranks / max(self.kv_capacity_blocks, 1)  # of one rank's pool
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
                "itl": _itl_stats(self.itl_values_s, self.itl_weights),
            },
            "busy_fraction": busy / dur / self.ranks,
            "batch": {"mean": float(np.average(self.step_batch, weights=w)) if w.size else 0.0,
                      "max": int(self.step_batch.max(initial=0))},
            "kv_cache": {
                "capacity_blocks": self.kv_capacity_blocks, "block_size": self.block_size,
                "capacity_tokens": self.kv_capacity_blocks * self.block_size,
                "mean_occupancy": float(np.average(occupancy, weights=w)) if w.size else 0.0,
                "peak_occupancy": float(occupancy.max(initial=0.0)),
            },
            "preemptions": int(self.preemptions.sum()),
            "prefix_cache_hit_tokens": int(self.cached_tokens.sum()),
            "cost": {
                "usd_per_hour": self.usd_per_s * 3600,
                "usd_per_m_output": cost.usd_per_m_tokens(self.usd_per_s * dur, outp),
                "usd_per_m_total": cost.usd_per_m_tokens(self.usd_per_s * dur, inp + outp),
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
