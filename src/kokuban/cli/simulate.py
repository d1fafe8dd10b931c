"""`kokuban simulate` and `kokuban capacity`: the serving simulator on the command line.

Parse → use case (`usecases.simulate`) → present (`present.sim`). Flags are the request fields with dashes.
"""

from __future__ import annotations

from typing import Any

import click

from kokuban.cli.options import (
    BYTES,
    BYTES_PER_S,
    SECONDS,
    OutputDir,
    OutputPath,
    deployment_options,
    emit_json,
    request,
)
from kokuban.cli.progress import progress_bar
from kokuban.cli.vocabulary import option
from kokuban.present.format import console


def workload_options(func: Any) -> Any:
    """The workload-shape and scheduler options `simulate` and `capacity` share (`ServingRequest`'s fields)."""
    options = [
        option("--requests", default=1000, show_default=True, type=int, help="Requests to simulate."),
        option("--prompt-tokens", "prompt", default="1000", show_default=True,
               help="Prompt tokens: N, uniform:LO,HI, lognormal:MEDIAN,SIGMA or hist:V=W,…"),
        option("--output-tokens", "output", default="200", show_default=True,
               help="Output tokens (same forms as --prompt-tokens)."),
        click.option("--arrival", default="poisson", show_default=True,
                     help="Arrival process: poisson, gamma or fixed."),
        click.option("--burstiness", type=float, default=1.0, show_default=True,
                     help="Gamma shape for --arrival gamma (< 1: burstier than Poisson)."),
        option("--seed", type=int, default=0, show_default=True),
        click.option("--scheduler", default=None,
                     help=("Scheduling policy: continuous, prefill_first, static, inflight or sglang (default: the "
                           "engine's).")),
        click.option("--max-num-seqs", type=int, default=None, help="Running requests at most (default: vLLM's)."),
        click.option("--max-num-batched-tokens", type=int, default=None, help="Tokens per step (default: vLLM's)."),
        click.option("--block-size", type=int, default=None, help="KV block size, tokens (default: the engine's; 16)."),
        click.option("--prefix-caching/--no-prefix-caching", default=None,
                     help="Prefix caching (default: the engine's; on)."),
        click.option("--batch-timeout", type=SECONDS, default=0.0, show_default=True,
                     help="Static batching: max wait, s."),
        click.option("--max-concurrency", type=int, default=None, help="Client cap on requests in flight."),
        click.option("--engine", default="kokuban", show_default=True,
                     help="Engine profile: scheduler defaults and overheads (kokuban, vllm-v1, vllm-v0, "
                          "vllm-v0-multistep, sglang, trtllm; data/engines.toml)."),
        click.option("--gpu-memory-utilization", type=float, default=None,
                     help="The engine's memory fraction: vLLM's gpu_memory_utilization, SGLang's mem_fraction_static, "
                          "TensorRT-LLM's free_gpu_memory_fraction (default: the engine's; 0.9)."),
        click.option("--kv-blocks", type=int, default=None,
                     help="KV blocks of one scheduler, e.g. from the engine's log (default: computed)."),
        click.option("--cpu-offload", type=BYTES, default=None,
                     help="Host (CPU) KV tier per scheduler, e.g. 64GB: preempted requests and evicted prefixes "
                          "are kept there and reloaded instead of recomputed."),
        click.option("--offload-bandwidth", type=BYTES_PER_S, default=None,
                     help="Each GPU's host link for the offload tier, e.g. 50GB/s (default: PCIe 5.0 x16, 64GB/s)."),
        click.option("--router", type=click.Choice(["round_robin", "random", "least_outstanding", "prefix_aware"]),
                     default=None, help="Run each data-parallel rank (--layout ep) as its own scheduler behind "
                                        "this router (least_outstanding, prefix_aware: read the ranks' state)."),
    ]
    for decorate in reversed(options):
        func = decorate(func)
    return func


@click.command()
@deployment_options
@option("--rate", default=None, help="Mean arrival rate, requests/s ('inf': all at t=0).")
@workload_options
@option("--trace-file", "trace", type=click.Path(), default=None,
        help="Replay a CSV/JSONL trace instead of a synthetic workload.")
@option("--shared-prefix", type=int, default=0, help="Tokens of a shared system prompt prepended to each prompt.")
@click.option("--num-prefixes", type=int, default=1, show_default=True, help="Distinct shared prefixes.")
@option("--ttft-slo", type=SECONDS, default=None, help="TTFT objective, s (goodput).")
@option("--tpot-slo", type=SECONDS, default=None, help="TPOT objective, s (goodput).")
@click.option("--replicas", type=int, default=1, show_default=True,
              help="Copies of the deployment behind one router (default router: round_robin).")
@click.option("--disaggregate", default=None,
              help="P:D — prefill on P copies of the deployment, decode on D, the KV sent between them.")
@click.option("--kv-link-bandwidth", type=BYTES_PER_S, default=None,
              help="With --disaggregate: each GPU's link for the KV transfer (default: its interconnect).")
@click.option("--kv-link-latency", type=SECONDS, default=0.0, show_default=True,
              help="With --disaggregate: latency of one KV transfer, s.")
@option("--records", type=OutputPath(), default=None, help="Write per-request records to this CSV.")
@option("--plot-dir", "plots", type=OutputDir(), default=None,
        help="Write latency CDFs, occupancy and step plots here.")
def simulate(**kw: Any) -> None:
    """Serve a stream of requests with continuous (or static) batching; every step timed by the core."""
    from kokuban.usecases.simulate import SimulateRequest, run_simulate

    with progress_bar("simulating", "req") as progress:
        sim = run_simulate(request(SimulateRequest, kw), progress=progress)
    if kw["records"]:
        sim.result.records().to_csv(kw["records"], index=False)
    plots = None
    if kw["plots"]:
        from kokuban.present.sim_plots import save_all

        plots = [str(p) for p in save_all(sim.result, kw["plots"])]
    if kw["as_json"]:
        emit_json(sim.as_dict() | ({"plots": plots} if plots else {}))
    else:
        from kokuban.present.sim import simulation

        simulation(console(), sim)


@click.command()
@deployment_options
@workload_options
@option("--ttft-slo", "ttft_p99", type=SECONDS, default=None, help="SLO: p99 time to first token within this, s.")
@option("--tpot-slo", "tpot_p99", type=SECONDS, default=None, help="SLO: p99 time per output token within this, s.")
@click.option("--target-rate", type=float, default=None,
              help="Find the cheapest deployment serving this many requests/s (searches --candidates).")
@option("--candidates", join=True, default=None, help="GPU ids to try with --target-rate (default: --gpu).")
@option("--counts", join=True, default="1,2,4,8", show_default=True, help="GPU counts to try with --target-rate.")
@option("--seqs", join=True, default=None, help="max_num_seqs values to try with --target-rate (default: vLLM's).")
@click.option("--workers", type=int, default=None, help="Local processes (default: all cores).")
@click.option("--ray", "ray_address", default=None, help="Run the sweep on a Ray cluster at this address.")
def capacity(**kw: Any) -> None:
    """Highest request rate within an SLO; with --target-rate, the cheapest deployment that serves it."""
    from kokuban.present import sim as present
    from kokuban.usecases.simulate import CapacityRequest, run_capacity

    with progress_bar("capacity", "run") as progress:
        result = run_capacity(request(CapacityRequest, kw), progress=progress)
    if kw["as_json"]:
        emit_json(result.as_dict())
    elif kw["target_rate"] is None:
        present.max_rate(console(), result)
    else:
        present.cheapest(console(), result)


commands = [simulate, capacity]
