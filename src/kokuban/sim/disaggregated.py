"""Disaggregated prefill and decode: P prefill deployments and D decode deployments, the KV cache of every prompt
sent from the first to the second over a link.

    prefill pool   the workload with one output token per request: every request's prompt is computed and its
                   first token sampled there (TTFT is the prefill pool's), on P copies of the deployment behind
                   `router` (`dataparallel.simulate_data_parallel`)
    transfer       the prompt's KV, b = `roofline.attention_kv_bytes_per_request(dep, prompt)` bytes, reaches the
                   decode pool  transfer_s = b ÷ BW + latency  after the first token (`kv_transfer_seconds`); BW is
                   the link's bytes/s per GPU times the GPUs a request's KV is split over
    decode pool    D copies (each data-parallel rank its own scheduler), requests dealt round robin in the order
                   their KV arrives; each is admitted with its prompt's KV present (`Engine.preload`) and decodes its
                   other output − 1 tokens; a request of one output token finishes in the prefill pool

Merged: arrival, first scheduled and first token from the prefill pool, finish and generated tokens from the
decode pool, every step of both pools; the run costs P + D deployments. Not modelled: the decode pool's KV
filling up holding back the prefill pool (backpressure), the transfer's contention on the link, a
linear-attention state's transfer.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from kokuban.core import roofline
from kokuban.errors import KokubanError, require_positive
from kokuban.sim.dataparallel import RankStepModel, merge, simulate_data_parallel, subset
from kokuban.sim.engine import build_engine
from kokuban.sim.kvcache import capacity_blocks
from kokuban.sim.metrics import SimResult
from kokuban.sim.profiles import client_view
from kokuban.sim.scheduler import SchedulerConfig
from kokuban.sim.steptime import StepModel
from kokuban.sim.workload import Workload
from kokuban.specs.deployment import Deployment


def kv_transfer_seconds(kv_bytes: np.ndarray, link_bytes_per_s: float, latency_s: float) -> np.ndarray:
    """Seconds to move a prompt's KV to the decode pool: b ÷ BW + latency."""
    return np.asarray(kv_bytes, np.float64) / link_bytes_per_s + latency_s


@dataclass(frozen=True)
class DisaggregatedRun:
    """The merged run (`merged`: both pools), the prefill pool's (`prefill`) and the decode pool's (`decode`,
    the decoding requests only), and each request's KV transfer seconds."""

    merged: SimResult
    prefill: SimResult
    decode: SimResult | None
    transfer_s: np.ndarray


def simulate_disaggregated(dep: Deployment, workload: Workload, scheduler: SchedulerConfig | None = None, *,
                           prefill: int = 1, decode: int = 1, link_bytes_per_s: float | None = None,
                           latency_s: float = 0.0, router: str = "round_robin", seed: int = 0) -> DisaggregatedRun:
    """Serve `workload` on `prefill` + `decode` copies of `dep` (see the module docstring). `link_bytes_per_s`
    per GPU (default: the accelerator's interconnect, `Accelerator.interconnect_bytes_per_s`)."""
    require_positive("prefill", prefill, integer=True)
    require_positive("decode", decode, integer=True)
    cfg = (scheduler or SchedulerConfig()).resolve(dep.accelerator)
    link = dep.accelerator.interconnect_bytes_per_s if link_bytes_per_s is None else link_bytes_per_s
    require_positive("kv_link_bytes_per_s", link)
    if not (np.isfinite(latency_s) and latency_s >= 0):
        raise KokubanError(f"must be a finite number ≥ 0 s, got {latency_s!r}", field="kv_latency_s", value=latency_s)
    n = len(workload)
    pre_wl = replace(workload, output_tokens=np.ones(n, np.int64))
    pre = simulate_data_parallel(dep, pre_wl, cfg, router=router, seed=seed, replicas=int(prefill)).merged
    kv = np.asarray(roofline.attention_kv_bytes_per_request(dep, workload.prompt_tokens), np.float64)
    transfer = kv_transfer_seconds(kv, link * dep.kv_shards, latency_s)
    record = {name: getattr(pre, name).copy() for name in ("finish_s", "generated_tokens", "preemptions",
                                                            "recomputed_tokens")}
    going = np.flatnonzero(workload.output_tokens > 1)
    dec = None
    records = [pre]
    if going.size:
        ready = pre.first_token_s[going] + transfer[going]
        order = going[np.argsort(ready, kind="stable")]
        dec_wl = Workload(pre.first_token_s[order] + transfer[order], workload.prompt_tokens[order],
                          workload.output_tokens[order], np.full(order.size, -1, np.int64),
                          np.zeros(order.size, np.int64), np.zeros(order.size, bool), workload.name)
        dec, rank_records = _decode_pool(dep, dec_wl, pre.first_token_s[order], cfg, int(decode))
        records += rank_records
        record["finish_s"][order] = dec.finish_s
        record["generated_tokens"][order] = dec.generated_tokens
        record["preemptions"][order] += dec.preemptions
        record["recomputed_tokens"][order] += dec.recomputed_tokens
    steps = merge(records, [np.arange(len(r.arrival_s)) for r in records], n)  # steps of both pools
    merged_rec = replace(pre, **record, output_tokens=workload.output_tokens, step_start_s=steps.step_start_s,
                         step_s=steps.step_s, step_tokens=steps.step_tokens, step_batch=steps.step_batch,
                         step_decodes=steps.step_decodes, step_kv_blocks=steps.step_kv_blocks,
                         itl_values_s=steps.itl_values_s, itl_weights=steps.itl_weights, end_s=steps.end_s,
                         kv_capacity_blocks=steps.kv_capacity_blocks, kv_blocks_free_at_end=steps.kv_blocks_free_at_end,
                         ranks=steps.ranks)
    full = SimResult.build(merged_rec, dep, cfg)
    total = int(prefill) + int(decode)
    full = replace(full, description=f"{prefill} prefill + {decode} decode deployments of {dep.describe()}",
                   num_gpus=dep.num_gpus * total, usd_per_s=dep.usd_per_s * total)
    return DisaggregatedRun(full, pre, dec, transfer)


def _decode_pool(dep: Deployment, wl: Workload, first_token_s: np.ndarray, cfg: SchedulerConfig,
                 replicas: int) -> tuple[SimResult, list[SimResult]]:
    """The decode pool: `replicas` × ranks engines, requests dealt round robin in arrival order, each preloaded."""
    ranks = int(dep.parallel.data_parallel_ranks)
    total = ranks * replicas
    blocks = cfg.kv_blocks or capacity_blocks(dep, cfg.block_size, ranks * int(cfg.max_num_seqs)) // ranks
    context = int((wl.prompt_tokens + wl.output_tokens).max())
    model = RankStepModel(StepModel(dep, ranks * int(cfg.max_num_batched_tokens), context), ranks)
    owner = np.arange(len(wl)) % total
    idx = [np.flatnonzero(owner == r) for r in range(total)]
    results = []
    for where in idx:
        if not where.size:
            continue
        engine = build_engine(dep, subset(wl, where), cfg, kv_blocks=blocks, step_model=model)
        engine.preload(first_token_s[where])
        results.append(SimResult.build(client_view(engine.run(), cfg.overheads), dep, cfg))
    used = [where for where in idx if where.size]
    merged = SimResult.build(merge(results, used, len(wl)), dep, cfg)
    return merged, results


__all__ = ["DisaggregatedRun", "kv_transfer_seconds", "simulate_disaggregated"]
