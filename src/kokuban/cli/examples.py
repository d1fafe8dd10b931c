"""A worked example for every command's `--help`, taken from the runs the README and docs show (each is
parsed by `tests/test_cli_examples.py`, so an example cannot name a flag that does not exist). Those that carry
`--efficiency-file scalar` (estimate, batch, io, lanes, frontier, context, accuracy) are stated at the scalar set;
the others carry no efficiency flag and run at their command's own default."""

from __future__ import annotations

#: Command path → an example command line (without the leading `kokuban`) and where its output is shown.
EXAMPLES: dict[str, tuple[str, str]] = {
    "estimate": ("estimate llama-3.1-70b --gpu h200 --weights fp8 --batch 32 --prompt-tokens 2000 "
                 "--output-tokens 500 --efficiency-file scalar", "docs/estimate.md"),
    "models": ("models --json", "README.md"),
    "gpus": ("gpus", "README.md"),
    "batch": ("batch llama-3.1-70b --gpu h100-sxm --gpus 4 --context 1024 --batch 64 --plot batch.png "
              "--efficiency-file scalar",
              "docs/economics.md"),
    "io": ("io deepseek-v3 --gpu h200 --gpus 8 --layout ep --batch 256 --context 4096 --prompt-tokens 2000 "
           "--efficiency-file scalar",
           "docs/economics.md"),
    "lanes": ("lanes llama-3.1-8b --gpu h100-sxm --rate 5 --prompt-tokens 1000 --output-tokens 500 "
              "--tpot-slo 0.012 --ttft-slo 2 --efficiency-file scalar",
              "docs/economics.md"),
    "frontier": ("frontier llama-3.1-70b --gpu h100-sxm --gpu h200 --weights bf16 --weights fp8 --context 2048 "
                 "--tps-slo 50 --efficiency-file scalar", "docs/economics.md"),
    "context": ("context deepseek-v3 --gpu h200 --gpus 8 --layout ep --to 262144 --threshold 128000 "
                "--efficiency-file scalar",
                "docs/economics.md"),
    "prices list": ("prices list --provider deepseek", "docs/prices.md"),
    "prices explain": ("prices explain anthropic/claude-sonnet-4", "docs/prices.md"),
    "prices infer": ("prices infer openai/gpt-5.4-mini --speed 100", "docs/prices.md"),
    "prices compare": ("prices compare llama-3.3-70b --prompt-tokens 2000 --output-tokens 400 --requests 100000 "
                       "--cache-hit 0.5",
                       "docs/prices.md"),
    "prices fleet": ("prices fleet deepseek/deepseek-reasoner --gpu h800 --gpu-file docs/examples/h800.toml "
                     "--input-tokens-per-day 608e9 --cached-tokens-per-day 342e9 --output-tokens-per-day 168e9 "
                     "--context 4989 --speed 21",
                     "docs/prices.md"),
    "serve": ("serve --port 8000", "docs/web.md"),
    "simulate": ("simulate llama-3.1-8b --gpu h100-sxm --rate 20 --requests 2000 --prompt-tokens lognormal:1000,0.6 "
                 "--output-tokens uniform:50,350 --ttft-slo 0.5 --tpot-slo 0.05", "docs/simulate.md"),
    "capacity": ("capacity llama-3.1-8b --gpu h100-sxm --requests 1000 --ttft-slo 0.5 --tpot-slo 0.05",
                 "docs/simulate.md"),
    "probe": ("probe --device cpu --seconds 4 --out-file probe.toml", "docs/calibration.md"),
    "validate": ("validate --gpu-file evidence/cpu/probe.toml --out-dir out", "docs/calibration.md"),
    "accuracy": ("accuracy --efficiency-file scalar --compute-eff 0.6 --memory-eff 0.8 --link-eff 0.75 "
                 "--step-overhead 0",
                 "docs/calibration.md"),
    "calibrate": ("calibrate --source published", "docs/calibration.md"),
    "serving-accuracy": ("serving-accuracy --split", "docs/serving-accuracy.md"),
    "agent api": ("agent api anthropic/claude-sonnet-4.5 --preset swe-bench --compaction auto", "docs/agents.md"),
    "agent self-hosted": ("agent self-hosted gpt-oss-120b --gpu h100-sxm --preset tracelab-session "
                          "--compaction threshold:100000,8000 --survival best", "docs/agents.md"),
    "agent simulate": ("agent simulate llama-3.1-8b --gpu h100-sxm --preset swe-bench --sessions 12 "
                       "--retention offload:5.12e10,5e11", "docs/agents.md"),
    "agent presets": ("agent presets", "docs/agents.md"),
}


def epilog(path: str) -> str | None:
    """The `--help` epilog of the command at `path`: its example, kept on one line by click's `\\b` marker."""
    if path not in EXAMPLES:
        return None
    line, where = EXAMPLES[path]
    return f"\b\nExample (output in {where}):\n  kokuban {line}"
