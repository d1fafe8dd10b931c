"""The generated blocks of the README and the guides: every figure they quote, made again from the code and the
evidence, so that prose cannot drift from what kokuban computes.

    python -m evidence            # the evidence reports, then every stale block rewritten in place
    python -m evidence --check    # exit 1 naming each stale report or block (CI runs this)

A block is delimited in a Markdown page by two comments:

    <!-- gen: NAME ARGS -->
    …what the block's function returns…
    <!-- /gen -->

NAME `run` runs `kokuban ARGS` in this process at 100 columns and shows the command line and what it printed
(stderr, then stdout) in a code fence; every other NAME is a function of `BLOCKS` (below), given ARGS as one string.
The pages are README.md and docs/*.md (not docs/history/, which keeps what was true when it was written).
"""

from __future__ import annotations

import contextlib
import functools
import io
import json
import os
import re
import shlex
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BLOCK = re.compile(r"(<!-- gen: (?P<name>[\w-]+)(?: (?P<args>[^\n]*?))? -->\n)(?P<body>.*?)(<!-- /gen -->)", re.S)
WIDTH = 100


def pages(root: Path = ROOT) -> list[Path]:
    """The pages whose blocks are generated: the README and the guides under docs/."""
    return [root / "README.md", *sorted((root / "docs").glob("*.md"))]


# ---- the blocks ------------------------------------------------------------------------------------------------
def run(args: str, width: int = WIDTH) -> str:
    """`kokuban ARGS` run here at 100 columns: the command line, then stderr and stdout, in a code fence."""
    from kokuban.cli import main

    out, err = io.StringIO(), io.StringIO()
    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(width)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(shlex.split(args))
    finally:
        if old is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = old
    if code != 0:
        raise RuntimeError(f"`kokuban {args}` exited {code}: {err.getvalue().strip()}")
    printed = [line.rstrip() for line in (err.getvalue() + out.getvalue()).splitlines()]
    while printed and not printed[-1]:
        printed.pop()
    return "\n".join(["```console", f"$ kokuban {args}", *printed, "```"]) + "\n"


def run_wide(args: str) -> str:
    """`run` at 140 columns, for a table whose columns 100 would squeeze."""
    return run(args, 140)


def refused(args: str) -> str:
    """`kokuban ARGS` refused, as `run` shows a run: the command line, stderr (its one-line error), then stdout (with
    `--json`, the error envelope). A command that is not refused (exit code 2) is an error of the page."""
    from kokuban.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(shlex.split(args))
    if code != 2:
        raise RuntimeError(f"`kokuban {args}` exited {code}, not 2 (refused)")
    printed = [line.rstrip() for line in (err.getvalue() + out.getvalue()).splitlines()]
    return "\n".join(["```console", f"$ kokuban {args}", *printed, "```"]) + "\n"


#: The guide of each command (or command group), linked from the README's table of commands.
GUIDES = {
    "estimate": "docs/estimate.md", "models": "docs/estimate.md", "gpus": "docs/estimate.md",
    "batch": "docs/economics.md", "io": "docs/economics.md", "lanes": "docs/economics.md",
    "frontier": "docs/economics.md", "context": "docs/economics.md",
    "prices": "docs/prices.md",
    "simulate": "docs/simulate.md", "capacity": "docs/simulate.md", "serving-accuracy": "docs/serving-accuracy.md",
    "agent": "docs/agents.md",
    "serve": "docs/web.md",
    "accuracy": "docs/accuracy.md", "calibrate": "docs/calibration.md", "validate": "docs/calibration.md",
    "probe": "docs/calibration.md",
}


def commands(_: str = "") -> str:
    """Every command of the CLI (subcommands of a group on their own rows), the question its help answers, its
    guide. A command without a guide is an error, so a new command cannot be left out of the README."""
    import click

    from kokuban.cli import cli

    rows = ["| command | what it answers | guide |", "| --- | --- | --- |"]
    for name, command in sorted(cli.commands.items()):
        if name not in GUIDES:
            raise KeyError(f"the command {name!r} has no guide in evidence.docs.GUIDES")
        guide = GUIDES[name]
        link = f"[{Path(guide).stem}]({guide})"
        subs = sorted(command.commands.items()) if isinstance(command, click.Group) else [(None, command)]
        for sub, leaf in subs:
            label = f"`kokuban {name}{' ' + sub if sub else ''}`"
            question = leaf.get_short_help_str(limit=200).replace("|", "\\|")  # a pipe would end the cell
            rows.append(f"| {label} | {question} | {link} |")
    return "\n".join(rows) + "\n"


def catalogs(_: str = "") -> str:
    """How many models, accelerators, price rows and engine profiles ship, counted from the catalogs."""
    from kokuban.prices.sheets import load_prices
    from kokuban.sim.profiles import profiles
    from kokuban.specs.catalog import accelerator_catalog, model_catalog

    return (f"{len(model_catalog())} models, {len(accelerator_catalog())} accelerators, {len(load_prices())} API price "
            f"rows and {len(profiles())} serving-engine profiles ship inside the package, each entry with its "
            "source and the date it was read.\n")


def _benchmark(name: str) -> dict:
    return json.loads((ROOT / "benchmarks" / "results" / f"{name}.json").read_text(encoding="utf-8"))


def _figure(value: float, unit: str) -> str:
    if unit == "configurations/s":
        return f"{value / 1e6:.1f} M configurations/s"
    if unit == "s" and value < 1e-3:
        return f"{value * 1e6:.0f} µs"
    if unit == "s" and value < 0.1:
        return f"{value * 1e3:.2f} ms"
    return f"{value:.2f} s"


def _benchmark_line(b: dict) -> str:
    """A benchmark record in one line: its command, each case's figure, the CPUs it was pinned to and the load."""
    cases = "; ".join(f"{r['case']} {_figure(r['value'], r['unit'])}" for r in b["rows"])
    return (f"- `{b['command']}`: {cases} ({b.get('cpus_allowed', b['cpus'])} of {b['cpus']} CPUs, "
            f"load {b['load_before']:g}–{b['load_after']:g}, Python {b['python']}, commit {b['commit']}).")


def speed(_: str = "") -> str:
    """One line per recorded benchmark (benchmarks/results/*.json, written by `--record`)."""
    paths = sorted((ROOT / "benchmarks" / "results").glob("*.json"))
    return "\n".join(_benchmark_line(_benchmark(p.stem)) for p in paths) + "\n"


def _pool() -> dict:
    return json.loads((ROOT / "evidence" / "pool.json").read_text(encoding="utf-8"))


def _pct(x: float) -> str:
    return f"{100 * x:.1f} %"


def accuracy_headline(_: str = "") -> str:
    """One sentence: the shipped step model's error on every measured row no fit saw (evidence/pool.json)."""
    from evidence.pool import headline

    h = headline()
    return (f"On {h.rows:,} published measurements from {h.sources} sources that no fit has seen, the shipped step "
            f"model ({h.step_model}) is off by {_pct(h.median_abs_error)} at the median (95 % interval "
            f"{_pct(h.median_abs_error_ci[0])}–{_pct(h.median_abs_error_ci[1])}), {_pct(h.p90_abs_error)} at the p90, "
            f"with a signed median of {h.median_signed_error * 100:+.1f} % (positive: kokuban predicts faster than "
            "measured).\n")


def accuracy_table(_: str = "") -> str:
    """The pool's error by engine, GPU vendor and workload (evidence/pool.json), one row each."""
    by = _pool()["by"]
    rows = [[f"{facet} {name}", f"{g['count']:,}", _pct(g["median_abs_error"]), _pct(g["p90_abs_error"]),
             f"{g['median_signed_error'] * 100:+.1f} %"]
            for facet in ("engine", "vendor", "workload") for name, g in sorted(by[facet].items())]
    return _table(["rows", "count", "median \\|error\\|", "p90 \\|error\\|", "median signed"], rows)


def cpu_spread(_: str = "") -> str:
    """The CPU check's held-out error (context 4,096) on each recorded run, beside the machine's load
    (`evidence.cpu.spread`)."""
    from evidence.cpu.spread import runs

    found = runs()
    rows = [[r.name, f"{r.load_before:.1f}–{r.load_after:.1f}", f"{r.seconds:.0f} s", _pct(r.held_out_before),
             _pct(r.held_out_after)] for r in found]
    after = [r.held_out_after for r in found]
    return (_table(["run", "load average (2 cores)", "took", "held out, textbook fractions", "held out, fitted"], rows)
            + f"\nOver these {len(found)} runs the fitted model's held-out median |error| ranges from "
            f"{_pct(min(after))} to {_pct(max(after))}: read one run's figure to within that spread.\n")


@functools.cache
def _serving():
    """`kokuban serving-accuracy` on the bundled rows (every row replayed once), shared by the blocks below."""
    from kokuban.validation.serving import serving_accuracy

    return serving_accuracy()


def serving_held_out(_: str = "") -> str:
    """The held-out table of `kokuban serving-accuracy`: median, interval and p90 |error| by engine and metric."""
    from kokuban.present.serving import markdown_table

    return markdown_table(_serving().summary("held_out")) + "\n"


def serving_knees(_: str = "") -> str:
    """The TTFT knee of each load sweep, measured and predicted, and the summary line (`kokuban serving-accuracy`)."""
    from kokuban.present.serving import knee_markdown_table, knee_summary_line
    from kokuban.validation.serving import knee_summary

    knees = _serving().knees()
    return knee_markdown_table(knees) + "\n\n" + knee_summary_line(knee_summary(knees)) + "\n"


def benchmark(name: str) -> str:
    """One recorded benchmark (benchmarks/results/NAME.json) as `speed` words it, or how to record it."""
    if not (ROOT / "benchmarks" / "results" / f"{name}.json").exists():
        return f"- `{name}`: no record in this tree yet (`python benchmarks/{name}.py --record` writes one).\n"
    return _benchmark_line(_benchmark(name)) + "\n"


def _result(args: str) -> dict:
    """What `kokuban ARGS --json` prints, the envelope's result keys (the run fails loudly as `run` does)."""
    from kokuban.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([*shlex.split(args), "--json"])
    if code != 0:
        raise RuntimeError(f"`kokuban {args} --json` exited {code}: {err.getvalue().strip()}")
    return json.loads(out.getvalue())


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows]) + "\n"


def vocabulary(_: str = "") -> str:
    """Every canonical flag of the CLI, its older spellings, meaning, unit and commands (`cli.vocabulary`)."""
    from kokuban.cli import cli
    from kokuban.cli.vocabulary import markdown_table

    return markdown_table(cli)


def price_rows(provider: str) -> str:
    """The bundled price rows of one provider (data/prices.toml), each with its source and read date."""
    from kokuban.prices.sheets import load_prices

    def usd(x: float | None) -> str:
        return "–" if x is None else f"${x:g}"

    rows = [[f"`{r.provider}/{r.model}`", r.open_model or "–", usd(r.input_usd_per_m), usd(r.cached_input_usd_per_m),
             usd(r.output_usd_per_m), f"[{r.retrieved}]({r.source})"] for r in load_prices() if r.provider == provider]
    if not rows:
        raise KeyError(f"no bundled price row of provider {provider!r}")
    return _table(["row", "open model", "input / M", "cached / M", "output / M", "read"], rows)


#: DeepSeek's published V3/R1 inference day ("Day 6", open-infra-index,
#: 202502OpenSourceWeek/day_6_one_more_thing_deepseekV3R1_inference_system_overview.md): per-node throughputs,
#: average nodes, cost per day and cost profit margin.
DEEPSEEK_DAY = {"decode": 14.8e3, "prefill": 73.7e3, "nodes": 226.75, "cost": 87_072, "margin": 5.45}
DEEPSEEK_FLEET = ("prices fleet deepseek/deepseek-reasoner --gpu-file docs/examples/h800.toml --input-tokens-per-day "
                  "608e9 --cached-tokens-per-day 342e9 --output-tokens-per-day 168e9 --context 4989 --speed 21")
TEXTBOOK_FLAGS = "--efficiency-file scalar --compute-eff 0.6 --memory-eff 0.8 --link-eff 0.75 --step-overhead 0"


def deepseek_bracket(_: str = "") -> str:
    """DeepSeek's published day against `kokuban prices fleet` from the roofline alone: two all-to-all assumptions
    (`h800`: every routed expert over InfiniBand; `h800-nodelimited`: node-limited routing) at the scalar set and at
    the textbook fractions; then the scalar set with only its link fraction raised to 0.75."""
    runs = [(gpu, flags) for flags in ("--efficiency-file scalar", TEXTBOOK_FLAGS)
            for gpu in ("h800", "h800-nodelimited")]
    days = [_result(f"{DEEPSEEK_FLEET} --gpu {gpu} {flags}")["day"] for gpu, flags in runs]

    def k(x: float, published: float) -> str:
        return f"{x / 1e3:.1f}k ({100 * (x / published - 1):+.0f} %)".replace("-", "−")

    rows = [
        ["decode output tokens/s per node", f"~{DEEPSEEK_DAY['decode'] / 1e3:.1f}k",
         *(k(d["decode_tokens_per_s_per_node"], DEEPSEEK_DAY["decode"]) for d in days)],
        ["prefill input tokens/s per node (cache hits included)", f"~{DEEPSEEK_DAY['prefill'] / 1e3:.1f}k",
         *(k(d["prefill_tokens_per_s_per_node"], DEEPSEEK_DAY["prefill"]) for d in days)],
        ["average nodes", f"{DEEPSEEK_DAY['nodes']:g}", *(f"{d['average_nodes']:,.0f}" for d in days)],
        ["cost per day", f"${DEEPSEEK_DAY['cost']:,}", *(f"${d['cost_usd_per_day']:,.0f}" for d in days)],
        ["profit ÷ cost", f"{100 * DEEPSEEK_DAY['margin']:.0f} %",
         *(f"{100 * d['profit_over_cost']:.0f} %" for d in days)],
    ]
    link = [_result(f"{DEEPSEEK_FLEET} --gpu {gpu} --efficiency-file scalar --link-eff 0.75")["day"]
            for gpu in ("h800", "h800-nodelimited")]
    return (_table(["", "published", "(a) IB per expert, scalar", "(b) node-limited, scalar",
                    "(a) IB per expert, textbook", "(b) node-limited, textbook"], rows)
            + f"\nThe scalar set with only the link fraction at 0.75 (`--efficiency-file scalar --link-eff 0.75`): "
              f"profit ÷ cost {100 * link[0]['profit_over_cost']:.0f} % (a), {100 * link[1]['profit_over_cost']:.0f} "
              "% (b).\n")


def crossover(_: str = "") -> str:
    """The crossover batch of a few deployments: the blackboard formula (`economics.batch.
    blackboard_crossover_batch`) and the core's first compute-bound batch (`crossover_batch`)."""
    from kokuban import Deployment, load_accelerator, load_model
    from kokuban.economics.batch import blackboard_crossover_batch, crossover_batch
    from kokuban.specs.hardware import Efficiency

    cases = [("llama-3.1-8b", 1, "bf16", "textbook", 1), ("llama-3.1-8b", 1, "fp8", "textbook", 1),
             ("mixtral-8x7b", 2, "bf16", "textbook", 1), ("llama-3.1-70b", 4, "bf16", "textbook", 1024),
             ("llama-3.1-70b", 4, "bf16", "scalar", 1024)]
    rows = []
    for model, gpus, weights, eff, context in cases:
        dep = Deployment.make(load_model(model), load_accelerator("h100-sxm"), gpus, weights_dtype=weights,
                              efficiency=getattr(Efficiency, eff)())
        rows.append([f"{model}, {gpus}× H100 SXM, {weights} weights", eff, f"{blackboard_crossover_batch(dep):.1f}",
                     f"{crossover_batch(dep, context)} (context {context:,})"])
    return _table(["deployment", "fractions", "blackboard B*", "first compute-bound batch"], rows)


AGENT_POLICIES = ("threshold:100000,8000", "every:20,8000", "none")
AGENT_PLACES = (("anthropic/claude-sonnet-4.5", None), ("deepseek/deepseek-v4-pro", None),
                ("gpt-oss-120b", "h100-sxm"), ("gpt-oss-120b", "h200"))


def agent_runs(_: str = "") -> str:
    """docs/agents.md's worked example: the `tracelab-session` preset, 20 runs, three compaction policies, on two
    APIs and self-hosted at the scalar set, with and without caching (self-hosted without: every gap drops the KV)."""
    from kokuban.usecases.agent import AgentRequest, run_agent

    rows = []
    for where, gpu in AGENT_PLACES:
        for caching in ("on", "off"):
            if gpu is None:
                place = {"price": where} | ({} if caching == "on" else {"cache_retention": "none"})
            else:
                place = {"model": where, "gpu": gpu, "efficiency_file": "scalar"} | (
                    {} if caching == "on" else {"survival": "drop"})
            res = run_agent(AgentRequest(preset="tracelab-session", runs=20, compaction=AGENT_POLICIES, **place))
            ran = {p.policy.spec: p for p in res.policies}
            label = where if gpu is None else f"{where} on {gpu}"
            for spec in AGENT_POLICIES:
                if spec not in ran:
                    rows.append([label, spec, caching, "does not fit", "–"])
                    continue
                s = res.policy_summary(ran[spec])
                read = s.get("cache_read_share")  # an API bill's share; a self-hosted run keeps KV, not a bill's reads
                rows.append([label, spec, caching, f"${s['usd']['mean']:.4f}",
                             "–" if read is None else f"{100 * read:.1f} %"])
    return _table(["where", "compaction", "caching", "USD per run (mean)", "input tokens read from cache"], rows)


def agent_step_one(_: str = "") -> str:
    """Step 1 of the worked example self-hosted on one H100 (gpt-oss-120b, scalar set): its terms and the
    break-even gaps of the three ways its KV survives the gap before it."""
    from kokuban.usecases.agent import AgentRequest, run_agent

    s = run_agent(AgentRequest(preset="tracelab-session", runs=20, compaction=AGENT_POLICIES, model="gpt-oss-120b",
                               gpu="h100-sxm", efficiency_file="scalar")).steps_frame().iloc[1]
    return (f"- KV held from step 0: {s.cached_tokens:,} tokens, {s.kv_held_bytes:,.0f} bytes; at that context the "
            f"H100 holds B = {s.slots:.0f} such sessions.\n"
            f"- prefill of the {s.prompt_tokens - s.cached_tokens:,} new tokens: {s.prefill_s:.6f} s, "
            f"${s.prefill_usd:.9f}.\n"
            f"- decode of {s.output_tokens} tokens at decode batch 32: {s.decode_s:.6f} s per session, "
            f"${s.decode_usd:.8f}.\n"
            f"- surviving the {s.gap_before_s:.2f} s gap: keep ${s.keep_usd:.8f}, offload ${s.offload_usd:.10f}, drop "
            f"${s.drop_usd:.8f}; chosen: {s.survival}.\n"
            f"- step 1 in all: ${s.usd:.8f} and {s.gpu_s:.5f} GPU-seconds.\n"
            f"- break-even gaps: keep = drop at {s.break_even_keep_drop_s:.2f} s, keep = offload at "
            f"{s.break_even_keep_offload_s:.3f} s, offload = drop at {s.break_even_offload_drop_s:.0f} s.\n")


AGENT_RETENTIONS = ("evict", "pin:30", "offload:5.12e10,5e11")


def agent_retention(_: str = "") -> str:
    """Twelve `swe-bench` sessions on llama-3.1-8b on one H100 SXM (scalar set) under each KV retention policy."""
    from kokuban.usecases.agent_sim import AgentSimRequest, run_agent_simulate

    rows = []
    for retention in AGENT_RETENTIONS:
        d = run_agent_simulate(AgentSimRequest(model="llama-3.1-8b", gpu="h100-sxm", preset="swe-bench", sessions=12,
                                               efficiency_file="scalar", retention=retention)).as_dict()
        s, c = d["sessions"], d["sessions"]["cache"]
        rows.append([retention, f"{100 * c['hit_rate']:.1f} %", f"{s['run_latency_s']['p90']:.0f} s",
                     f"{s['ttft_per_call_s']['mean']:.2f} s", f"${s['usd_per_run']['mean']:.4f}",
                     f"{c['reloads']} ({c['reload_s']:.2f} s)", str(d["requests"]["preemptions"])])
    return _table(["retention", "hit rate", "p90 run latency", "mean TTFT", "USD per run", "reloads",
                   "preemptions"], rows)


def engine_overheads(_: str = "") -> str:
    """The overhead terms of the engine profiles that carry them (data/engines.toml), each marked fitted or assumed
    as its source says, and the step model each profile runs."""
    from kokuban.sim.profiles import profiles

    names = {"vllm-v1": "vLLM V1", "vllm-v0": "vLLM V0", "vllm-v0-multistep": "vLLM V0 multi-step",
             "sglang": "SGLang", "trtllm": "TensorRT-LLM"}
    lines = []
    for key, p in profiles().items():
        o = p.overheads
        if o is None or p.step_overhead_s is None:
            continue
        sources = dict(p.sources)

        def kind(term: str, sources: dict = sources) -> str:
            return "fitted" if sources.get(term, "").startswith("fitted") else "assumed"

        text = (f"- {names.get(key, key)}'s {p.step_overhead_s * 1e3:.3f} ms per step, {o.per_layer_s * 1e6:.0f} µs "
                f"per layer per step, {o.per_seq_s * 1e6:.3g} µs per sequence, {o.per_token_s * 1e6:.2f} µs per token "
                f"and {o.front_end_s * 1e3:.2f} ms per request ({kind('step_overhead')})")
        if o.eager_per_layer_s:
            text += (f"; a floor of {o.eager_per_layer_s * 1e3:.2f} ms per layer on a step run without a CUDA graph "
                     f"(decode batches above {o.graph_max_batch}, every prefill; {kind('eager_per_layer')})")
        lines.append(f"{text}: `{key}`, step model {p.efficiency or 'the shipped one'}.")
    return "\n".join(lines) + "\n"


#: Mistral-7B-Instruct-v0.3 on one RTX 4090 under vLLM, `--request-rate inf --max-concurrency C`, 256-token prompts,
#: 300 requests (mushfiqrahman.dev, "Benchmarking Mistral-7B on RTX 4090"): C → requests/s, output tokens/s, mean and
#: p99 TTFT in ms, as published.
MISTRAL_4090 = {4: (2.09, 210, 63, 157), 8: (3.78, 377, 79, 268), 16: (6.44, 644, 155, 503),
                32: (9.73, 975, 362, 938), 48: (11.87, 1190, 667, 1483)}


def mistral_4090(_: str = "") -> str:
    """The published vLLM concurrency sweep of Mistral 7B on an RTX 4090 against `kokuban simulate` of the same
    client (outputs uniform in 50…150 tokens: the post's ~100 output tokens per request), shipped step model."""
    rows = []
    for c, (rps, tps, ttft, ttft99) in MISTRAL_4090.items():
        d = _result("simulate mistral-7b-v0.3 --gpu rtx-4090 --rate inf --requests 300 --prompt-tokens 256 "
                    f"--output-tokens uniform:50,150 --max-concurrency {c}")

        def vs(x: float, published: float, fmt: str) -> str:
            return f"{x:{fmt}} ({100 * (x / published - 1):+.0f} %)".replace("-", "−")

        t = d["latency_s"]["ttft"]
        rows.append([str(c), f"{rps:g}", vs(d["throughput"]["requests_per_s"], rps, ".2f"), f"{tps:g}",
                     vs(d["throughput"]["output_tokens_per_s"], tps, ".0f"), f"{ttft:g}",
                     vs(1e3 * t["mean"], ttft, ".0f"), f"{ttft99:g}", vs(1e3 * t["p99"], ttft99, ".0f")])
    return _table(["C", "req/s published", "kokuban", "output tok/s published", "kokuban", "mean TTFT published (ms)",
                   "kokuban", "p99 TTFT published (ms)", "kokuban"], rows)


BLOCKS: dict[str, Callable[[str], str]] = {
    "run-wide": run_wide,
    "run": run, "refused": refused, "commands": commands, "catalogs": catalogs, "speed": speed,
    "accuracy-headline": accuracy_headline, "accuracy-table": accuracy_table, "serving-held-out": serving_held_out,
    "serving-knees": serving_knees, "cpu-spread": cpu_spread,
    "benchmark": benchmark, "vocabulary": vocabulary, "price-rows": price_rows, "deepseek-bracket": deepseek_bracket,
    "crossover": crossover, "agent-runs": agent_runs, "agent-step-one": agent_step_one,
    "agent-retention": agent_retention, "engine-overheads": engine_overheads, "mistral-4090": mistral_4090,
}


# ---- writing and checking ------------------------------------------------------------------------------------
def render(text: str, where: str = "") -> str:
    """`text` with every block's body replaced by what its function returns now."""
    def body(m: re.Match) -> str:
        name, args = m["name"], m["args"] or ""
        if name not in BLOCKS:
            raise KeyError(f"{where}: unknown generated block {name!r} (known: {', '.join(sorted(BLOCKS))})")
        return m.group(1) + BLOCKS[name](args) + m.group(5)

    return BLOCK.sub(body, text)


def stale(root: Path = ROOT) -> dict[Path, str]:
    """The pages whose generated blocks differ from what the code and evidence give now, with their new text."""
    out = {}
    for page in pages(root):
        text = page.read_text(encoding="utf-8")
        new = render(text, str(page.relative_to(root)))
        if new != text:
            out[page] = new
    return out


def describe(page: Path, new: str) -> list[str]:
    """The names of the blocks of `page` that `new` changes."""
    old = [m["body"] for m in BLOCK.finditer(page.read_text(encoding="utf-8"))]
    return [f"{m['name']} {m['args'] or ''}".strip() for m, before in zip(BLOCK.finditer(new), old, strict=True)
            if m["body"] != before]


def settle(changed: dict[Path, tuple[str, str]], check: bool) -> int:
    """Write each changed file (path → (new text, what changed in it)), or with `check` name each as stale; the
    number of files."""
    for path, (text, what) in changed.items():
        label = f"{path.relative_to(ROOT)}{f' ({what})' if what else ''}"
        if check:
            print(f"stale: {label}", file=sys.stderr)
        else:
            path.write_text(text, encoding="utf-8")
            print(f"wrote {label}")
    return len(changed)
