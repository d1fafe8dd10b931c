"""`kokuban agent api | self-hosted | presets`: what an agent run costs. Parse → `run_agent` → present.

Unset flags stay unset, so the defaults are the use case's (`usecases.agent`); the help words them, and
`tests/test_agents.py` checks that it words them right."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from kokuban.cli.options import SECONDS, OutputPath, deployment_options, emit_json, request
from kokuban.cli.progress import progress_bar
from kokuban.cli.vocabulary import VocabOption, option


def scenario_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """Where the run comes from, its shapes, the sampling and the compaction policies; --json and --plot."""
    spec = "a number or uniform:LO,HI, lognormal:MEDIAN,SIGMA, exp:MEAN"
    options = [
        click.option("--preset", default=None, help="A bundled scenario (`kokuban agent presets`)."),
        option(
            "--preset-file",
            "scenario_file",
            type=click.Path(dir_okay=False),
            default=None,
            help="A TOML workload file (the preset keys).",
        ),
        option(
            "--trace-file",
            "trace",
            default=None,
            help="A JSONL trace of real steps (session, step, input_tokens, cached_input_tokens, output_tokens, "
                 "gap_s), or 'example'.",
        ),
        click.option("--steps", default=None, help=f"Steps per run: {spec}."),
        option("--system-tokens", type=int, default=None, help="System prompt + tool definitions (tokens)."),
        option("--output-tokens", "output_tokens", default=None, help=f"Output tokens per step: {spec}."),
        option("--tool-tokens", default=None, help=f"Tool-result tokens added after each step: {spec}."),
        option("--gap", "gap_s", default=None, help=f"Tool/think seconds between steps: {spec}."),
        click.option("--subagents", type=int, default=None, help="Parallel child runs each run fans out."),
        click.option("--subagent-steps", default=None, help="Steps of each child run (default: --steps)."),
        click.option("--runs", type=int, default=None, help="Sampled runs (default 100; 1 when every size is fixed)."),
        option("--seed", type=int, default=None, help="Sampling seed (default 0)."),
        option(
            "--compaction",
            list_values=True,
            default=None,
            help="Policies to price (the first is shown step by step): none (default), every:M,K, "
                 "threshold:T,K, or auto.",
        ),
        option(
            "--plot",
            "plot_path",
            type=OutputPath(),
            default=None,
            help="Write the figure (.png, .svg or .pdf).",
        ),
    ]
    for decorate in reversed(options):
        func = decorate(func)
    return func


def _finish(kw: dict[str, Any], **extra: Any) -> None:
    from kokuban.usecases.agent import AgentRequest, run_agent

    plot_path = kw.pop("plot_path")
    if plot_path:
        from kokuban.present.plots import check_plot_path

        check_plot_path(plot_path)
    fields = {k: tuple(v) if isinstance(v, (list, tuple)) else v for k, v in kw.items() if v is not None and v != ()}
    result = run_agent(request(AgentRequest, fields, **extra))
    if kw.get("as_json"):
        emit_json(result.as_dict())
    else:
        from kokuban.present.agent import agent_tables
        from kokuban.present.format import console

        agent_tables(console(), result)
    if plot_path:
        from kokuban.present.agent import plot_agent

        click.echo(f"wrote {plot_agent(result, plot_path)}", err=bool(kw.get("as_json")))


@click.group()
def agent() -> None:
    """What an agent run costs: growing context, caches, gaps, compaction."""


@agent.command("api")
@click.argument("price")
@scenario_options
@option("--price-file", "price_file", type=click.Path(dir_okay=False),
        help="Extra price file(s) in the bundled schema.")
@option(
    "--cache-retention",
    type=click.Choice(["none", "standard", "extended"]),
    default=None,
    help="standard (default): the sheet's cache; none: no prompt cache; extended: the sheet's longer TTL at its write "
         "price (Anthropic 1h).",
)
@option("--cache-ttl", "cache_ttl_s", type=SECONDS, default=None,
        help="Cache lifetime in seconds (default: the sheet's).")
@option(
    "--lane",
    type=click.Choice(["standard", "batch", "flex", "priority"]),
    default=None,
    help="Price lane (default standard).",
)
@click.option("--start-utc-hour", type=float, default=None, help="UTC hour the run starts (applies off-peak prices).")
@click.option("--weekend", is_flag=True, help="The run starts on a weekend day.")
@option("--json", "as_json", is_flag=True, help="Print JSON (SI units, stable keys).")
def agent_api(**kw: Any) -> None:
    """Price agent runs on an API price sheet row (provider/model)."""
    _finish(kw)


@agent.command("self-hosted")
@deployment_options
@scenario_options
@option("--batch", type=int, default=None, help="Sessions decoded together (default 32).")
@click.option(
    "--survival",
    type=click.Choice(["keep", "offload", "drop", "best"]),
    default=None,
    help="How the KV survives each gap: keep resident, offload to host, drop and recompute, or best (default: the "
         "cheapest).",
)
@click.option("--host-link-bytes-per-s", type=float, default=None,
              help="GPU-host bytes/s one way (default 5.12e+10: PCIe Gen5 x16 × 0.8).")
@click.option("--host-usd-per-gb-hour", type=float, default=None,
              help="Host memory price (default 0.0095, an upper bound).")
def agent_self_hosted(**kw: Any) -> None:
    """Price agent runs on your own deployment: GPU-seconds and dollars from the roofline."""
    _finish(kw)


@agent.command("simulate")
@deployment_options
@click.option("--sessions", type=int, default=None, help="Concurrent agent sessions (default 16).")
@click.option("--retention", default=None,
              help="KV between a session's calls: evict (default: the prefix cache's LRU), pin:TTL (seconds), "
                   "offload:BW,CAP (host tier: bytes/s, bytes).")
@option("--run-latency-slo", "run_latency_target", type=SECONDS, default=None,
        help="Seconds: also search the most sessions whose p90 run latency is within it.")
@click.option("--max-sessions", type=int, default=None, help="Ceiling of that search (default 256).")
@option("--stagger", "stagger_s", type=SECONDS, default=None,
        help="Session j starts at j × this (default 0: all at once).")
@click.option("--kv-blocks", type=int, default=None, help="KV capacity in blocks (default: what the HBM leaves).")
@click.option("--max-num-seqs", type=int, default=None, help="Scheduler limit (default: vLLM's).")
@click.option("--max-num-batched-tokens", type=int, default=None, help="Scheduler token budget (default: vLLM's).")
def agent_simulate(**kw: Any) -> None:
    """Simulate concurrent agent sessions on a deployment, closed loop: run latency, queueing, cache hits, cost."""
    from kokuban.usecases.agent_sim import AgentSimRequest, run_agent_simulate

    fields = {k: v for k, v in kw.items() if v is not None}
    with progress_bar("agent sessions", "run") as progress:
        result = run_agent_simulate(request(AgentSimRequest, fields), progress=progress)
    if kw.get("as_json"):
        emit_json(result.as_dict())
        return
    from kokuban.present.agent import agent_sim_tables
    from kokuban.present.format import console

    agent_sim_tables(console(), result)


# the scenario options a simulation takes (no trace, sampled runs, fan-out or plot) are self-hosted's, shared
agent_simulate.params[1:1] = [p for p in agent_self_hosted.params if p.name in (
    "preset", "scenario_file", "steps", "system_tokens", "output_tokens", "tool_tokens", "gap_s", "seed")]
agent_simulate.params.append(VocabOption(["--compaction"], default=None,
                                         help="none (default), every:M,K or threshold:T,K."))


@agent.command("presets")
@option("--json", "as_json", is_flag=True, help="Print JSON.")
def agent_presets(as_json: bool) -> None:
    """List the bundled scenarios, their sources and assumptions."""
    from kokuban.agents.presets import presets

    rows = [s.as_dict() for s in presets().values()]
    if as_json:
        emit_json(rows, key="presets")
        return
    from kokuban.present.format import console

    out = console()
    for r in rows:
        out.print(
            f"[bold]{r['name']}[/bold]: steps {r['steps']}, system {r['system_tokens']:,}, output "
            f"{r['output_tokens']}, "
            f"tool {r['tool_tokens']}, gap {r['gap_s']} s\n  source: {r['source']}\n  assumed: {r['assumptions']}"
        )


commands = [agent]
