# ruff: noqa: E501 — tables of inputs read best one case a line
"""A fuzzing campaign against every kokuban command and file reader (issue 15, "How we will judge it").

Each case is a command line; it runs in a forked child of this process (so start-up is paid once) with an
address-space limit (RLIMIT_AS) and a wall-clock timeout, and is classified:

  ok              exit 0 with finite, non-negative times/costs (or exit 2 with one line)
  traceback       "Traceback" on stderr (an exception escaped)
  hang            still running after the timeout
  oom             MemoryError, or killed by a signal
  nan-output      exit 0 and NaN/inf in the output (JSON numbers, or the words nan/inf in text)
  negative        exit 0 and a negative time, cost or price in the JSON
  accepted-bad    exit 0 for an input marked as certainly invalid
  multi-line      exit 2 with more than one line on stderr
  refused-good    exit 2 for a valid file (a spreadsheet's CSV, a checkpoint folder) given alone
  other-exit      an exit code other than 0 and 2

    python benchmarks/fuzz_campaign.py --cases 1200 --seed 7 [--jobs 2] [--timeout 20] [--show traceback]

The inputs are drawn at random from pools of bad numbers, units, names and files (written to a temporary
folder); `--seed` makes a campaign repeatable. Not a test: tests/test_fuzz_*.py keep the inputs that broke it.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import re
import resource
import signal
import sys
import tempfile
import time
import traceback
from collections import Counter
from pathlib import Path

BAD = "bad"      # certainly invalid: exit 0 is a finding
EITHER = "any"   # may be accepted or refused, but never crash
GOOD = "good"    # a valid file given alone to a command: a refusal is a finding

INTS = [("0", EITHER), ("-1", BAD), ("-0", EITHER), ("1e308", BAD), (str(2**63), BAD), (str(2**64 + 1), BAD),
        ("1e-320", BAD), ("nan", BAD), ("inf", BAD), ("1e999", BAD), ("", BAD), (" 5", EITHER), ("5,", BAD),
        ("0x10", EITHER), ("５", EITHER), ("1.5", BAD), ("abc", BAD), ("9" * 30, BAD), ("2**63", BAD),
        ("-2147483649", BAD), ("1_000", EITHER), ("٣", EITHER)]
FLOATS = [("0", EITHER), ("-1", EITHER), ("-0", EITHER), ("1e308", EITHER), ("1e-320", EITHER), ("nan", BAD),
          ("inf", BAD), ("-inf", BAD), ("1e999", BAD), ("", BAD), (" 5", EITHER), ("5,", BAD), ("0x10", EITHER),
          ("５", EITHER), ("abc", BAD), ("1e-300", EITHER), ("-1e308", EITHER), ("NaN", BAD), ("+inf", BAD)]
TOKENS = INTS + [("2kk", BAD), ("2k", EITHER), ("1M", EITHER), ("-1k", BAD), ("1e12", EITHER), ("10**12", BAD),
                 ("1.5k", EITHER), ("nank", BAD), ("1e999k", BAD), ("0k", BAD), ("4 k", EITHER), ("1e9M", BAD)]
SECONDS = FLOATS + [("500mss", BAD), ("-1ms", BAD), ("500ms", EITHER), ("2h", EITHER), ("nanms", BAD),
                    ("1e999ms", BAD), ("0ms", EITHER), ("1e308s", EITHER), ("5 s", EITHER), ("ms", BAD)]
LISTS = [("", BAD), (",", BAD), ("1,,2", EITHER), ("1e308", BAD), ("nan", BAD), ("[]", BAD), ("1," * 5000, EITHER),
         ("abc", BAD), ("-1", BAD), ("0", BAD), ("1,2,nan", BAD), ("1:1e9", EITHER), ("1,inf", BAD),
         (",".join(str(i) for i in range(1, 3000)), EITHER), ("５,６", EITHER)]
DISTS = [("lognormal:nan,1", BAD), ("uniform:5,1", EITHER), ("hist:100=nan", BAD), ("const:1e12", EITHER),
         ("fixed:-1", BAD), ("lognormal:1e308,1e308", BAD), ("uniform:", BAD), ("normal:100,10", EITHER),
         ("hist:", BAD), ("hist:100=0", BAD), ("hist:100=1,200=-1", BAD), ("lognormal:1000,-0.6", BAD),
         ("1e12", EITHER), ("uniform:1,1e12", EITHER), ("zipf:1", BAD), ("lognormal:1000", BAD), ("", BAD),
         ("100", EITHER), ("nan", BAD), ("gamma:1e-320,1", EITHER), ("exp:0", BAD), ("lognormal:1000,1e3", EITHER)]
MODELS = [("llama-3.1-8", BAD), ("Llama-3.1-8B", EITHER), ("meta-llama/Llama-3.1-8B", EITHER),
          ("meta-llama/Nonexistent-7B", BAD), ("", BAD), ("coarse:", BAD), ("coarse:total=1e308,active=1e308", BAD),
          ("coarse:total=-1", BAD), ("coarse:total=7e9,active=nan", BAD), ("/nonexistent/dir", BAD), ("llama 3.1 8b", EITHER),
          ("coarse:total=7e9,active=7e9,kv=1e-320", EITHER), ("coarse:total=7e9,active=8e9", BAD),
          ("deepseek-v3", EITHER), ("qwen3-235b-a22b", EITHER), ("gpt-oss-20b", EITHER), ("../", BAD)]
GPUS = [("h100", EITHER), ("a100", EITHER), ("mi300", EITHER), ("h1OO", BAD), ("", BAD),
        ("custom:bf16=nan", BAD), ("custom:bf16=1e308,bw=1e-320,mem=1", EITHER),
        ("custom:bf16=1e15,bw=1e12,mem=0", BAD), ("custom:", BAD), ("custom:bf16=1e15,bw=1e12,mem=80e9,price=-1", BAD),
        ("H100 SXM", EITHER), ("nvidia-h200", EITHER), ("b2000", BAD), ("tpu", BAD),
        ("custom:bf16=1e-320,bw=1e-320,mem=1e308", EITHER)]
DTYPES = [("bf16", EITHER), ("fp8", EITHER), ("int4", EITHER), ("fp3", BAD), ("", BAD), ("BF16", EITHER),
          ("fp-8", EITHER), ("nvfp4", EITHER), ("int4-g0", BAD), ("int4-g-1", EITHER), ("q4_k_m", EITHER)]
WORDS = [("", BAD), ("x" * 5000, BAD), ("nan", BAD), ("\x00", BAD), ("ü", BAD), ("-1", BAD)]

#: Values for a second campaign (`--fresh`), written after the first one's fixes: none of them was drawn before.
FRESH_INTS = [("+3", EITHER), ("3.0", EITHER), ("1e3", EITHER), ("-9223372036854775808", BAD), ("0b11", EITHER),
              ("\t7\n", EITHER), ("7 8", BAD), ("1e-5", BAD), ("১২", EITHER), ("Infinity", BAD), ("0.0", EITHER)]
FRESH_FLOATS = [("1e-5", EITHER), ("+0", EITHER), ("1_0.5", EITHER), ("0.99999999999999999", EITHER), ("4e-324", EITHER),
                ("1.7976931348623157e308", EITHER), ("-nan", BAD), ("Infinity", BAD), ("1e+", BAD), (".", BAD),
                ("²", BAD), ("1e2147483647", BAD), ("〇", BAD)]
FRESH_TOKENS = [("2KiB", BAD), ("1.5Ki", EITHER), ("3Gi", EITHER), ("1e3k", EITHER), ("k", BAD), ("2 000", BAD),
                ("1T", BAD), ("0.001k", EITHER), ("9e9G", BAD), ("-0k", BAD)]
FRESH_SECONDS = [("1.5min", EITHER), ("250us", EITHER), ("250µs", EITHER), ("1e9h", BAD), ("-0ms", EITHER),
                 ("3d", BAD), ("1ns", EITHER), ("inf s", BAD), ("10 min", EITHER), ("1e-400s", EITHER)]
FRESH_LISTS = [("1;2", BAD), (" 1 , 2 ", EITHER), ("1,2,", EITHER), ("4096", EITHER), ("2**3", BAD),
               ("1e9", BAD), ("h100,h200", EITHER), ("h100,,h200", EITHER), ("1,-2", BAD), ("tp,tp", EITHER)]
FRESH_DISTS = [("uniform:1,2147483648", EITHER), ("uniform:0,1", BAD), ("lognormal:1,10", EITHER),
               ("lognormal:1,11", BAD), ("hist:2147483649=1", BAD), ("hist:5=inf", BAD), ("hist:5", BAD),
               ("dataset:azure-code", EITHER), ("dataset:nope", BAD), ("exp:1e308", BAD), ("uniform:1,2,3", BAD),
               ("2147483649", BAD), ("LOGNORMAL:100,1", EITHER), ("lognormal: 100 , 1", EITHER)]
FRESH_MODELS = [("meta-llama/Llama-3.1-8B-Instruct", EITHER), ("Qwen/Qwen3-8B", EITHER), ("llama3.1:8b", EITHER),
                ("hf:meta-llama/Llama-3.1-8B", EITHER), ("coarse:total=7e9", EITHER), ("coarse:total=0,active=0", BAD),
                ("coarse:total=7e9,active=7e9,kv=-1", BAD), ("coarse:total=1e400", BAD), ("coarse:foo=1", BAD),
                ("/", BAD), ("~", BAD), ("config.json", BAD), ("llama-3.1-8b\n", EITHER)]
FRESH_GPUS = [("H100", EITHER), ("rtx4090", EITHER), ("NVIDIA H200", EITHER), ("mi300a", BAD), ("h100-pcie-x", BAD),
              ("custom:bf16=1e15,bw=3e12,mem=80e9,fp8=-1", BAD), ("custom:bf16=1e15,bw=3e12,mem=80e9,link=inf", BAD),
              ("custom:bf16=1e15,bw=3e12", BAD), ("custom:mem=80e9,,bw=3e12,bf16=1e15", EITHER), ("custom:x", BAD)]
FRESH_DTYPES = [("int3-g128", EITHER), ("int0-g128", BAD), ("int4-g7", EITHER), ("int4-g99999999999", BAD),
                ("fp8_e4m3", EITHER), ("float16", EITHER), ("mxfp4", EITHER), ("int4-ch", EITHER), ("int33-ch", BAD)]
FRESH_WORDS = [(" ", BAD), ("\t", BAD), ("a" * 101, EITHER), ("../../etc/passwd", EITHER), ("$(echo x)", EITHER)]

#: Flags that came after the first campaign (engine memory rules, routers, the CPU offload tier, disaggregation,
#: serving-accuracy, --scenario / --out-dir).
BYTES = [("64GB", EITHER), ("2KiB", EITHER), ("1e9", EITHER), ("0", EITHER), ("1e308", EITHER), ("nanGB", BAD),
         ("-1GB", BAD), ("GB", BAD), ("1e30GB", EITHER), ("64GBB", BAD), ("inf", BAD)]
RATES = [(v + ("/s" if v[0].isdigit() and not v.endswith("/s") else ""), e) for v, e in BYTES] + [("50GB/s", EITHER)]
ENGINES = [("vllm-v1", EITHER), ("vllm-v0", EITHER), ("vllm-v0-multistep", EITHER), ("sglang", EITHER),
           ("trtllm", EITHER), ("kokuban", EITHER), ("vllm-v2", BAD), ("", BAD), ("TRTLLM", EITHER)]
ROUTERS = [("least_outstanding", EITHER), ("prefix_aware", EITHER), ("round_robin", EITHER), ("least", BAD),
           ("", BAD)]
SPLITS = [("1:1", EITHER), ("2:1", EITHER), ("0:1", BAD), ("1:0", BAD), ("1:", BAD), ("a:b", BAD), ("-1:2", BAD),
          ("1:1:1", BAD), ("1e308:1", BAD), ("100000:1", EITHER), ("1.5:1", BAD)]
NEW_SIM = {"--router": ROUTERS, "--cpu-offload": BYTES, "--offload-bandwidth": RATES, "--disaggregate": SPLITS,
           "--kv-link-bandwidth": RATES, "--kv-link-latency": SECONDS, "--engine": ENGINES,
           "--efficiency-file": [("kernel", EITHER), ("kernal", BAD), ("default", EITHER)],
           "--out-dir": "FILE:outdir"}

#: Each command: its positional argument pool (or None), the options kokuban requires to run at all (valid
#: values), and a pool per option. "FILE:kind" draws from the bad files of that kind.
DEP = {"--gpus": INTS, "--layout": [("pp", BAD), ("TP", EITHER), ("", BAD)], "--weights": DTYPES, "--kv": DTYPES,
       "--compute": DTYPES, "--price-per-hour": FLOATS, "--gpu-file": "FILE:gpu",
       "--efficiency-file": "FILE:eff", "--compute-eff": FLOATS, "--memory-eff": FLOATS, "--kv-eff": FLOATS,
       "--link-eff": FLOATS, "--overlap": FLOATS, "--step-overhead": FLOATS, "--gpu": GPUS}
EFF = {k: v for k, v in DEP.items() if k.endswith("-eff") or k in ("--overlap", "--step-overhead", "--efficiency-file")}
SIMLIKE = DEP | {"--requests": INTS, "--prompt": DISTS, "--output": DISTS, "--arrival": DISTS + [("gamma", EITHER)],
                 "--burstiness": FLOATS, "--seed": INTS, "--scheduler": [("fcfs", EITHER), ("fcfss", BAD), ("", BAD)],
                 "--max-num-seqs": INTS, "--max-num-batched-tokens": INTS, "--block-size": INTS,
                 "--batch-timeout": FLOATS, "--max-concurrency": INTS, "--engine": [("vllm", EITHER), ("vlm", BAD),
                                                                                    ("sglang", EITHER), ("", BAD)],
                 "--gpu-memory-utilization": FLOATS, "--kv-blocks": INTS}
AGENT = {"--preset": [("swe-bench", EITHER), ("swe-bench2", BAD), ("", BAD)], "--scenario-file": "FILE:scenario",
         "--steps": DISTS, "--system-tokens": INTS, "--output-tokens": DISTS, "--tool-tokens": DISTS,
         "--gap-s": DISTS, "--seed": INTS}
PRICES = {"--input-price": FLOATS, "--output-price": FLOATS, "--cached-price": FLOATS, "--context": TOKENS,
          "--file": "FILE:price", "--prompt": TOKENS, "--speed": FLOATS}
COMMANDS: dict[str, tuple[list | None, list[str], dict]] = {
    "estimate": (MODELS, ["--gpu", "h100-sxm"], DEP | {"--batch": TOKENS + [("max", EITHER), ("MAX", EITHER)],
                                                       "--context": TOKENS, "--prompt": TOKENS, "--output": TOKENS,
                                                       "--engine": ENGINES, "--gpu-memory-utilization": FLOATS,
                                                       "--efficiency-file": NEW_SIM["--efficiency-file"],
                                                       "--out-dir": "FILE:outdir"}),
    "models": (None, [], {}),
    "gpus": (None, [], {"--gpu-file": "FILE:gpu"}),
    "batch": (MODELS, ["--gpu", "h100-sxm"], DEP | {"--context": TOKENS, "--min-batch": TOKENS, "--max-batch": TOKENS,
                                                    "--batch": TOKENS, "--csv": "FILE:out", "--plot": "FILE:out"}),
    "lanes": (MODELS, ["--gpu", "h100-sxm", "--rate", "5"], DEP | {
        "--rate": FLOATS, "--prompt": TOKENS, "--output": TOKENS, "--tpot": SECONDS, "--ttft": SECONDS,
        "--slow-window": SECONDS}),
    "frontier": (MODELS, ["--gpu", "h100-sxm"], {
        "--gpu": GPUS, "--counts": LISTS, "--layouts": [("tp,ep", EITHER), ("tp,pp", BAD), ("", BAD)],
        "--weights": DTYPES, "--kv": DTYPES, "--context": TOKENS, "--prompt": TOKENS, "--slo-tps": FLOATS,
        "--slo-ttft": SECONDS, "--price-per-hour": FLOATS, "--gpu-file": "FILE:gpu"} | EFF),
    "context": (MODELS, ["--gpu", "h100-sxm"], DEP | {"--from": TOKENS, "--to": TOKENS, "--points": INTS,
                                                      "--threshold": INTS}),
    "io": (MODELS, ["--gpu", "h100-sxm"], DEP | {"--batch": TOKENS, "--context": TOKENS, "--prompt": TOKENS}),
    "prices list": (None, [], {"--provider": WORDS + [("deepseek", EITHER), ("deepsek", EITHER)],
                               "--file": "FILE:price"}),
    "prices explain": ([("anthropic/claude-sonnet-4", EITHER), ("anthropic/claude-sonet-4", BAD), ("", BAD),
                        ("nobody/nothing", BAD)], [], PRICES | DEP | {"--stand-in": MODELS}),
    "prices infer": ([("openai/gpt-5.4-mini", EITHER), ("openai/gpt-5.4-mni", BAD), ("", BAD)], ["--speed", "100"],
                     PRICES | DEP | {"--batch": INTS, "--kv-per-token": FLOATS, "--total-over-active": FLOATS}),
    "prices compare": ([("llama-3.3-70b", EITHER), ("llama-3.3-7b", BAD), ("", BAD)],
                       ["--prompt", "2000", "--output", "400"],
                       {"--prompt": TOKENS, "--output": TOKENS, "--requests": INTS, "--cache-hit": FLOATS,
                        "--speed": FLOATS, "--api": WORDS, "--lane": [("batch", EITHER), ("bacth", BAD)],
                        "--weights": DTYPES, "--file": "FILE:price"}),
    "prices fleet": ([("deepseek/deepseek-reasoner", EITHER), ("deepseek/deepsek", BAD)],
                     ["--gpu", "h100-sxm", "--input-tokens", "608e9", "--output-tokens", "168e9", "--context", "4989",
                      "--speed", "21"],
                     PRICES | EFF | {"--gpu": GPUS, "--model": MODELS, "--gpus-per-node": INTS, "--prefill-gpus": INTS,
                                     "--decode-gpus": INTS, "--input-tokens": FLOATS, "--cached-tokens": FLOATS,
                                     "--output-tokens": FLOATS, "--prefill-tps": FLOATS, "--decode-tps": FLOATS,
                                     "--gpu-file": "FILE:gpu"}),
    "serve": (None, ["--port", "-1"], {"--port": [("-1", BAD), ("70000", BAD), ("abc", BAD), ("nan", BAD)]}),
    "simulate": (MODELS, ["--gpu", "h100-sxm", "--rate", "20", "--requests", "200"], SIMLIKE | {
        "--rate": LISTS + FLOATS, "--trace": "FILE:trace", "--shared-prefix": INTS, "--num-prefixes": INTS,
        "--ttft-slo": SECONDS, "--tpot-slo": SECONDS, "--router": [("random", EITHER), ("rnd", BAD)],
        "--replicas": INTS, "--records": "FILE:out", "--plots": "FILE:outdir"} | NEW_SIM),
    "capacity": (MODELS, ["--gpu", "h100-sxm", "--requests", "100", "--ttft-p99", "0.5"], SIMLIKE | {
        "--ttft-p99": SECONDS, "--tpot-p99": SECONDS, "--target-rate": FLOATS, "--candidates": LISTS,
        "--counts": LISTS, "--seqs": LISTS, "--workers": INTS, "--ray": WORDS}
                 | {k: v for k, v in NEW_SIM.items() if k in ("--router", "--cpu-offload", "--engine")}),
    "probe": (None, ["--device", "cpu", "--seconds", "0.2"], {"--seconds": FLOATS + SECONDS,
                                                               "--device": [("gpu", BAD), ("CPU", EITHER)],
                                                               "--id": WORDS, "--out": "FILE:out"}),
    "validate": (None, ["--layers", "1", "--hidden", "128", "--batches", "1", "--contexts", "64", "--prompts", "16",
                        "--repeats", "1", "--warmup", "0", "--probe-seconds", "0.2"], {"--model": MODELS, "--layers": INTS, "--hidden": INTS, "--batches": LISTS,
                            "--contexts": LISTS, "--dtype": [("fp64", BAD)], "--gpu-file": "FILE:gpu",
                            "--max-kv-gb": FLOATS, "--repeats": INTS} | EFF),
    "accuracy": (None, [], {"--file": "FILE:measure"} | EFF),
    "calibrate": (None, ["--source", "published", "--params", "compute"], {"--source": [("validate-csv", EITHER), ("publishd", BAD)],
                                                    "--csv": "FILE:vcsv", "--phase": [("prefil", BAD)],
                                                    "--params": WORDS + [("compute,memory", EITHER)],
                                                    "--holdout": FLOATS, "--seed": INTS,
                                                    "--hold-out": WORDS + [("batch", EITHER)]} | EFF),
    "agent api": ([("anthropic/claude-sonnet-4.5", EITHER), ("anthropic/claude-sonet-4.5", BAD)],
                  ["--preset", "swe-bench"], AGENT | {
                      "--trace": "FILE:agenttrace", "--subagents": INTS, "--subagent-steps": DISTS, "--runs": INTS,
                      "--compaction": [("auto", EITHER), ("threshold:nan,8000", BAD), ("threshold:1,1e308", BAD),
                                       ("autoo", BAD), ("", BAD)], "--price-file": "FILE:price",
                      "--cache-retention": [("extnded", BAD)], "--cache-ttl-s": FLOATS,
                      "--lane": [("flex", EITHER), ("flx", BAD)], "--start-utc-hour": FLOATS}),
    "agent self-hosted": ([("gpt-oss-120b", EITHER)] + MODELS, ["--gpu", "h100-sxm", "--preset", "swe-bench"],
                          AGENT | DEP | {"--batch": INTS, "--runs": INTS, "--survival": [("bset", BAD)],
                                         "--host-link-bytes-per-s": FLOATS, "--host-usd-per-gb-hour": FLOATS,
                                         "--compaction": [("threshold:100000,8000", EITHER), ("threshold:-1,0", BAD)]}),
    "agent simulate": ([("llama-3.1-8b", EITHER)] + MODELS, ["--gpu", "h100-sxm", "--preset", "swe-bench",
                                                              "--sessions", "4"],
                       AGENT | DEP | {"--sessions": INTS, "--retention": [("offload:5.12e10,5e11", EITHER),
                                                                          ("offload:nan,1", BAD), ("keep", EITHER),
                                                                          ("ofload", BAD), ("offload:-1,1", BAD)],
                                      "--run-latency-target": FLOATS, "--max-sessions": INTS, "--stagger-s": FLOATS,
                                      "--kv-blocks": INTS, "--max-num-seqs": INTS}),
    "agent presets": (None, [], {}),
    "serving-accuracy": (None, ["--measurements-file", str(Path(__file__).resolve().parents[1] / "tests" / "fixtures"
                                                            / "vllm_bench_small.json")], {
        "--measurements-file": [("/nonexistent/run.json", BAD), ("", BAD), ("/tmp", BAD)], "--gpu": GPUS, "--gpus": INTS, "--engine": ENGINES, "--model": MODELS,
        "--weights": DTYPES, "--efficiency-file": NEW_SIM["--efficiency-file"]}),
}
#: Commands whose valid runs fit or search (seconds of CPU on a loaded machine): four times the timeout.
SLOW = ("calibrate", "capacity", "probe", "validate", "serving-accuracy")
TYPO_COMMANDS = [["estimat", "llama-3.1-8b"], ["simualte"], ["prices", "lst"], ["agent", "ap"], ["Estimate"],
                 ["estimate", "llama-3.1-8b", "--gpu", "h100", "--bacth", "4"],
                 ["estimate", "llama-3.1-8b", "--gpu", "h100", "--batchh", "4"],
                 ["estimate", "llama-3.1-8b", "--gpus-count", "4"], ["estimate", "llama-3.1-8b", "--gpu"],
                 ["estimate"], ["simulate", "llama-3.1-8b", "--gpu", "h100", "--rat", "5"]]


def write_files(root: Path) -> dict[str, list[tuple[str, str]]]:
    """The bad (and a few good) files for each reader, written under `root`; kind → [(path, expectation)]."""
    files: dict[str, list[tuple[str, str]]] = {}

    def put(kind: str, name: str, data: str | bytes, expect: str = BAD) -> str:
        path = root / kind / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data.encode() if isinstance(data, str) else data)
        files.setdefault(kind, []).append((str(path), expect))
        return str(path)

    generic = [("empty", ""), ("blank", "   \n\n"), ("nonutf8", b"\xff\xfe\x00bad\x80\x81"), ("nul", b"\x00" * 64)]
    for kind, suffix in (("gpu", ".toml"), ("eff", ".json"), ("price", ".toml"), ("trace", ".csv"),
                         ("agenttrace", ".jsonl"), ("scenario", ".toml"), ("measure", ".csv"), ("vcsv", ".csv")):
        for name, data in generic:
            put(kind, name + suffix, data)
        (root / kind / "a_directory").mkdir(parents=True, exist_ok=True)
        files[kind].append((str(root / kind / "a_directory"), BAD))
        files[kind].append((str(root / kind / "missing" / ("nothing" + suffix)), BAD))
    good_gpu = ('[[accelerator]]\nid = "mygpu"\nmemory_bytes = 80e9\nmemory_bandwidth_bytes_per_s = 3e12\n'
                'flops_bf16 = 1e15\n')
    put("gpu", "good.toml", good_gpu, GOOD)
    for name, text in {
        "syntax.toml": "[[accelerator]\nid = ",
        "nanmem.toml": good_gpu.replace("80e9", "nan"),
        "infflops.toml": good_gpu.replace("1e15", "inf"),
        "negbw.toml": good_gpu.replace("3e12", "-3e12"),
        "zerobw.toml": good_gpu.replace("3e12", "0"),
        "tinybw.toml": good_gpu.replace("3e12", "1e-320"),
        "hugeflops.toml": good_gpu.replace("1e15", "1e308"),
        "strmem.toml": good_gpu.replace("80e9", '"80GB"'),
        "noid.toml": good_gpu.replace('id = "mygpu"\n', ""),
        "nomem.toml": good_gpu.replace("memory_bytes = 80e9\n", ""),
        "noflops.toml": good_gpu.replace("flops_bf16 = 1e15\n", ""),
        "notable.toml": 'accelerator = "h100"\n',
        "array.json": "[1, 2, 3]",
        "nanjson.json": '{"accelerator": [{"id": "x", "memory_bytes": NaN, "memory_bandwidth_bytes_per_s": 1e12, '
                        '"flops_bf16": 1e15}]}',
        "list_of_str.json": '["h100"]',
        "dup.toml": good_gpu + good_gpu,
        "price_neg.toml": good_gpu + "price_per_hour_usd = -2\n",
        "price_nan.toml": good_gpu + "price_per_hour_usd = nan\n",
        "json_obj_acc_obj.json": '{"accelerator": {"id": "x"}}',
        "tinymem.toml": good_gpu.replace("80e9", "1e-320"),
        "hugemem.toml": good_gpu.replace("80e9", "1e308"),
    }.items():
        put("gpu", name, text)
    for name, text, exp in [
        ("good.json", '{"compute": 0.5}', GOOD), ("nan.json", '{"compute": NaN}', BAD),
        ("zero.json", '{"compute": 0}', BAD), ("two.json", '{"memory": 2}', BAD),
        ("str.json", '{"compute": "0.5"}', BAD), ("array.json", "[0.5]", BAD),
        ("unknown.json", '{"computee": 0.5}', BAD), ("after_nan.json", '{"after": {"overlap": NaN}}', BAD),
        ("syntax.toml", "compute = ", BAD), ("neg.toml", "step_overhead_s = -1\n", BAD),
        ("inf.toml", "step_overhead_s = inf\n", BAD), ("huge.toml", "step_overhead_s = 1e308\n", BAD),
        ("bool.json", '{"compute": true}', BAD), ("null.json", '{"compute": null}', EITHER),
        ("deep.json", "[" * 100000 + "]" * 100000, BAD), ("tiny.json", '{"compute": 1e-320}', EITHER),
    ]:
        put("eff", name, text, exp)
    good_price = ('[[price]]\nprovider = "me"\nmodel = "m"\ninput_usd_per_m = 1.0\noutput_usd_per_m = 2.0\n'
                  'source = "https://x"\nretrieved = "2026-01-01"\n')
    put("price", "good.toml", good_price, GOOD)
    for name, text in {
        "nan.toml": good_price.replace("1.0", "nan"), "neg.toml": good_price.replace("2.0", "-2.0"),
        "inf.toml": good_price.replace("2.0", "inf"), "huge.toml": good_price.replace("2.0", "1e308"),
        "str.toml": good_price.replace("2.0", '"2"'), "missing.toml": good_price.replace('source = "https://x"\n', ""),
        "syntax.toml": "[[price]\n", "noprice.toml": "x = 1\n", "price_is_str.toml": 'price = "x"\n',
        "price_list_str.toml": 'price = ["x", "y"]\n', "cached_nan.toml": good_price + "cached_input_usd_per_m = nan\n",
        "ctx_float.toml": good_price + "context_window_tokens = 1.5\n",
        "ctx_huge.toml": good_price + "context_window_tokens = 1e308\n",
        "speed_inf.toml": good_price + "output_tokens_per_s = inf\n", "date.toml": good_price.replace("2026-01-01", "2026-13-45"),
        "typo.toml": good_price + "ouput_usd_per_m = 2.0\n",
        "batch_nan.toml": good_price + "batch_multiplier = nan\n",
        "dup.toml": good_price + good_price,
        "tiny.toml": good_price.replace("1.0", "1e-320").replace("2.0", "1e-320"),
    }.items():
        put("price", name, text, EITHER if name in ("tiny.toml", "huge.toml") else BAD)
    hdr = "arrival_s,prompt_tokens,output_tokens\n"
    put("trace", "good.csv", hdr + "0,100,10\n0.5,200,20\n", GOOD)
    for name, text in {
        "neg.csv": hdr + "-1,100,10\n", "unsorted.csv": hdr + "5,100,10\n1,100,10\n",
        "huge.csv": hdr + "0,1000000000000,10\n", "hugeout.csv": hdr + "0,10,1000000000000\n",
        "nan.csv": hdr + "nan,100,10\n", "inf.csv": hdr + "inf,100,10\n", "missingcol.csv": "arrival_s,prompt_tokens\n0,1\n",
        "extracol.csv": "arrival_s,prompt_tokens,output_tokens,zzz\n0,100,10,1\n", "bom.csv": "\ufeff" + hdr + "0,100,10\n",
        "crlf.csv": (hdr + "0,100,10\n").replace("\n", "\r\n"), "header_only.csv": hdr, "float_tok.csv": hdr + "0,1.5,10\n",
        "far.csv": hdr + "1e308,100,10\n", "ragged.csv": hdr + "0,100\n", "zerotok.csv": hdr + "0,0,10\n",
        "many_at_once.csv": hdr + "0,100000,10000\n" * 300, "sessions.csv": hdr.strip() + ",session_id\n0,10,10,a\n1,5,5,a\n",
        "prefix.csv": hdr.strip() + ",prefix_id,prefix_tokens\n0,10,10,p,20\n",
        "prefix_nan.csv": hdr.strip() + ",prefix_id,prefix_tokens\n0,10,10,p,nan\n",
        "neg.jsonl": '{"arrival_s": -1, "prompt_tokens": 10, "output_tokens": 1}\n',
        "array.jsonl": "[1,2,3]\n", "str.jsonl": '{"arrival_s": "0", "prompt_tokens": "10", "output_tokens": "1"}\n',
        "bool.jsonl": '{"arrival_s": true, "prompt_tokens": true, "output_tokens": true}\n',
        "huge.jsonl": '{"arrival_s": 0, "prompt_tokens": 1e12, "output_tokens": 1}\n',
        "nan.jsonl": '{"arrival_s": NaN, "prompt_tokens": 10, "output_tokens": 1}\n',
        "syntax.jsonl": '{"arrival_s": 0,\n', "azure.csv": "TIMESTAMP,ContextTokens,GeneratedTokens\nnot-a-date,10,10\n",
        "azure_neg.csv": "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,-10,10\n",
        "mooncake.jsonl": '{"timestamp": -5, "input_length": 10, "output_length": 1, "hash_ids": [1]}\n',
        "mooncake_nan.jsonl": '{"timestamp": NaN, "input_length": 1e12, "output_length": 1, "hash_ids": "x"}\n',
        "dense.csv": hdr + "".join(f"{i*1e-9},50000,2000\n" for i in range(300)),
    }.items():
        put("trace", name, text, GOOD if name in ("bom.csv", "crlf.csv", "extracol.csv", "unsorted.csv", "sessions.csv")
            else EITHER if name in ("many_at_once.csv", "dense.csv", "str.jsonl") else BAD)
    line = '{"session": "a", "step": %s, "input_tokens": %s, "cached_input_tokens": %s, "output_tokens": %s, "gap_s": %s}\n'
    put("agenttrace", "good.jsonl", line % (0, 100, 0, 10, 0) + line % (1, 200, 100, 10, 1.0), GOOD)
    for name, vals in {"neg_gap": (0, 100, 0, 10, -1), "nan_gap": (0, 100, 0, 10, "NaN"), "huge": (0, 10**12, 0, 10, 0),
                       "huge_out": (0, 100, 0, 10**12, 0), "cached_more": (0, 100, 200, 10, 0),
                       "float_tok": (0, 1.5, 0, 10, 0), "str_tok": (0, '"100"', 0, 10, 0),
                       "neg_step": (-1, 100, 0, 10, 0), "inf_gap": (0, 100, 0, 10, "Infinity"),
                       "huge_gap": (0, 100, 0, 10, 1e308), "big_step": (10**18, 100, 0, 10, 0)}.items():
        put("agenttrace", name + ".jsonl", line % vals, EITHER if name in ("neg_step", "big_step") else BAD)
    put("agenttrace", "array.jsonl", "[1]\n")
    put("agenttrace", "syntax.jsonl", "{\n")
    put("agenttrace", "many_steps.jsonl", "".join(line % (i, 100 + i * 1000, 0, 10, 0) for i in range(3000)), EITHER)
    good_sc = 'name = "mine"\nsteps = "11"\nsystem_tokens = 20000\noutput_tokens = "523"\ntool_tokens = "2699"\ngap_s = "3"\n'
    put("scenario", "good.toml", good_sc, GOOD)
    put("scenario", "one_preset_table.toml", "[[preset]]\n" + good_sc, GOOD)  # the documented other form
    for name, text in {"syntax.toml": "steps = ", "nan.toml": good_sc.replace("20000", "nan"),
                       "neg.toml": good_sc.replace("20000", "-5"), "huge.toml": good_sc.replace('"11"', '"1e12"'),
                       "str.toml": good_sc.replace("20000", '"lots"'), "unknown.toml": good_sc + "stepz = 3\n",
                       "dist.toml": good_sc.replace('"3"', '"lognormal:nan,1"'),
                       "bigsys.toml": good_sc.replace("20000", "1e30"),
                       "float_sys.toml": good_sc.replace("20000", "1.5")}.items():
        put("scenario", name, text)
    mhdr = "model,gpu,gpus,batch,prompt,output,metric,value,unit,source\n"
    mrow = "llama-3.1-8b,h100-sxm,1,8,1000,100,output_tokens_per_s,1000,tokens/s,me\n"
    put("measure", "good.csv", mhdr + mrow, GOOD)
    for name, text, exp in [
        ("bom.csv", "\ufeff" + mhdr + mrow, GOOD), ("crlf.csv", (mhdr + mrow).replace("\n", "\r\n"), GOOD),
        ("missingcol.csv", mhdr.replace("metric,", "") + mrow.replace("output_tokens_per_s,", ""), BAD),
        ("extracol.csv", mhdr.strip() + ",zzz\n" + mrow.strip() + ",1\n", BAD),
        ("nan.csv", mhdr + mrow.replace(",1000,", ",nan,"), BAD), ("neg.csv", mhdr + mrow.replace(",1000,", ",-5,"), BAD),
        ("inf.csv", mhdr + mrow.replace(",1000,", ",inf,"), BAD), ("typo_model.csv", mhdr + mrow.replace("8b", "8bb"), BAD),
        ("hugebatch.csv", mhdr + mrow.replace(",8,", ",1000000000000,"), BAD),
        ("header_only.csv", mhdr, BAD), ("ragged.csv", mhdr + "llama-3.1-8b,h100\n", BAD),
        ("toml_nan.toml", '[[result]]\nid = "x"\nmodel = "llama-3.1-8b"\nvalue = nan\n', BAD),
        ("toml_syntax.toml", "[[result]\n", BAD), ("toml_empty_list.toml", "result = []\n", BAD),
        ("toml_str.toml", 'result = "x"\n', BAD), ("toml_list_str.toml", 'result = ["x"]\n', BAD),
        ("semicolon.csv", mhdr.replace(",", ";") + mrow.replace(",", ";"), BAD),
        ("nonutf8.toml", b"\xff\xfe[[result]]\n", BAD), ("dir.toml", "", BAD),
    ]:
        put("measure", name, text, exp)
    vhdr = "phase,batch,context,prompt_tokens,measured_s\n"
    p = put("vcsv", "good.csv", vhdr + "decode,1,128,0,0.01\ndecode,2,256,0,0.02\n", EITHER)
    Path(p).with_suffix(".json").write_text('{"setup": {}}')
    for name, text, setup in [
        ("nosetup.csv", vhdr + "decode,1,128,0,0.01\n", None),
        ("badsetup.csv", vhdr + "decode,1,128,0,0.01\n", "[1]"),
        ("setup_nonutf8.csv", vhdr + "decode,1,128,0,0.01\n", b"\xff\xfe"),
        ("nan.csv", vhdr + "decode,1,128,0,nan\n", '{"setup": {"model": "llama-3.1-8b"}}'),
        ("neg.csv", vhdr + "decode,-1,128,0,-0.01\n", '{"setup": {"model": "llama-3.1-8b"}}'),
        ("missingcol.csv", "phase,batch\ndecode,1\n", '{"setup": {}}'),
        ("str.csv", vhdr + "decode,x,y,z,w\n", '{"setup": {"model": "llama-3.1-8b", "layers": "x"}}'),
        ("setup_wrong.csv", vhdr + "decode,1,128,0,0.01\n", '{"setup": {"model": 5, "gpu": [1]}}'),
    ]:
        p = put("vcsv", name, text)
        if setup is not None:
            Path(p).with_suffix(".json").write_bytes(setup.encode() if isinstance(setup, str) else setup)
    # model folders (config.json [+ quantisation files]) and config files given as the model argument
    good_cfg = {"model_type": "llama", "hidden_size": 512, "num_hidden_layers": 4, "num_attention_heads": 8,
                "num_key_value_heads": 4, "vocab_size": 32000, "intermediate_size": 1024,
                "max_position_embeddings": 4096, "torch_dtype": "bfloat16"}

    def folder(name: str, cfg: object, extra: dict[str, str | bytes] | None = None, expect: str = BAD) -> None:
        d = root / "model" / name
        d.mkdir(parents=True, exist_ok=True)
        if cfg is not None:
            (d / "config.json").write_bytes(cfg if isinstance(cfg, bytes) else
                                            (cfg if isinstance(cfg, str) else json.dumps(cfg)).encode())
        for fname, data in (extra or {}).items():
            (d / fname).write_bytes(data.encode() if isinstance(data, str) else data)
        files.setdefault("model", []).append((str(d), expect))
        if cfg is not None and name in ("zeroheads", "nan_hidden", "array", "good"):
            files["model"].append((str(d / "config.json"), expect))

    folder("good", good_cfg, expect=GOOD)
    folder("good_awq", good_cfg | {"quantization_config": {"quant_method": "awq", "bits": 4, "group_size": 128}},
           expect=GOOD)
    folder("good_quantize_config", good_cfg, {"quantize_config.json": '{"bits": 4, "group_size": 128}'}, GOOD)
    folder("bad_quantize_config", good_cfg, {"quantize_config.json": '{"bits": "four"}'})
    folder("nonutf8_quantize_config", good_cfg, {"quantize_config.json": b"\xff\xfe"})
    folder("unknown_quant", good_cfg | {"quantization_config": {"quant_method": "zzz"}}, expect=EITHER)
    folder("ct", good_cfg | {"quantization_config": {"quant_method": "compressed-tensors", "config_groups":
                                                     {"g": {"weights": {"num_bits": 4, "type": "int"}}}}}, expect=GOOD)
    folder("ct_bad", good_cfg | {"quantization_config": {"quant_method": "compressed-tensors", "config_groups":
                                                         {"g": {"weights": {"num_bits": "x"}}}}})
    folder("ct_bad2", good_cfg | {"quantization_config": {"quant_method": "compressed-tensors", "config_groups":
                                                          {"g": [1, 2]}}})
    folder("empty_dir", None)
    folder("empty", "")
    folder("nonutf8", b"\xff\xfe{}")
    folder("array", "[1, 2]")
    folder("missing", {"model_type": "llama", "hidden_size": 512})
    folder("zeroheads", good_cfg | {"num_attention_heads": 0})
    folder("indivisible", good_cfg | {"hidden_size": 500})
    folder("kv_indivisible", good_cfg | {"num_key_value_heads": 3})
    folder("strhidden", good_cfg | {"hidden_size": "512"})
    folder("floathidden", good_cfg | {"hidden_size": 512.0})
    folder("nan_hidden", '{"model_type": "llama", "hidden_size": NaN, "num_hidden_layers": 4, '
                         '"num_attention_heads": 8, "vocab_size": 32000}')
    folder("huge", good_cfg | {"hidden_size": 2**24, "num_hidden_layers": 2**24, "vocab_size": 2**24,
                               "intermediate_size": 2**24, "num_attention_heads": 2**10, "num_key_value_heads": 2**10},
           expect=EITHER)
    folder("bigint", good_cfg | {"num_hidden_layers": 10**400})
    folder("unknown_type", good_cfg | {"model_type": "zzzformer"})
    folder("no_type", {k: v for k, v in good_cfg.items() if k != "model_type"})
    folder("moe_topk", good_cfg | {"model_type": "mixtral", "num_local_experts": 4, "num_experts_per_tok": 8})
    folder("moe_zero", good_cfg | {"model_type": "mixtral", "num_local_experts": 0, "num_experts_per_tok": 2})
    folder("moe_missing", good_cfg | {"model_type": "mixtral"})
    folder("text_config_bad", {"model_type": "llava", "text_config": [1]})
    folder("text_config_str", {"model_type": "llava", "text_config": "x"})
    folder("mla_missing", good_cfg | {"model_type": "deepseek_v3"})
    folder("tiny_window", good_cfg | {"max_position_embeddings": 1}, expect=EITHER)
    folder("sliding_zero", good_cfg | {"sliding_window": 0})
    folder("layer_types_bad", good_cfg | {"layer_types": ["x"] * 4})
    folder("deep", "[" * 100000 + "]" * 100000)
    folder("nested_quant_nan", '{"model_type": "llama", "hidden_size": 512, "num_hidden_layers": 4, '
                               '"num_attention_heads": 8, "vocab_size": 32000, "quantization_config": '
                               '{"quant_method": "gptq", "bits": NaN}}')
    folder("torch_dtype_weird", good_cfg | {"torch_dtype": "float7"}, expect=EITHER)
    folder("torch_dtype_int", good_cfg | {"torch_dtype": 5})
    folder("qwen3_next_bad", good_cfg | {"model_type": "qwen3_next", "full_attention_interval": 0})
    folder("nemotron_bad", good_cfg | {"model_type": "nemotron_h", "hybrid_override_pattern": "MMMM"})
    files["out"] = [("/proc/kokuban-none/x.csv", BAD), (str(root / "gpu"), BAD), ("/proc/version", BAD), ("", BAD),
                    (str(root / "out_ok.csv"), EITHER), (str(root / "out_ok.png"), EITHER),
                    (str(root / "gpu" / "empty.toml" / "x.csv"), BAD)]
    files["outdir"] = [("/proc/kokuban-none/x", BAD), (str(root / "gpu" / "empty.toml"), BAD), ("", BAD), ("/proc/version", BAD),
                       (str(root / "plots_here"), EITHER), (str(root / "gpu"), EITHER)]
    return files


def draw_value(pool, files, rng) -> tuple[str, str]:
    if isinstance(pool, str):
        kind = pool.split(":", 1)[1]
        path, expect = rng.choice(files[kind])
        return path, EITHER if expect == GOOD else expect  # beside other drawn flags, a refusal may be right
    return rng.choice(pool)


def make_cases(n: int, seed: int, files) -> list[tuple[list[str], str]]:
    rng = random.Random(seed)
    cases: list[tuple[list[str], str]] = [(args, BAD) for args in TYPO_COMMANDS]
    names = sorted(COMMANDS)
    # model folders for every model-taking command, and every file of every kind at least once
    for path, exp in files["model"]:
        for cmd in ("estimate", "batch", "simulate"):
            cases.append(((cmd.split() + [path] + COMMANDS[cmd][1]), exp))
    file_flags = {(cmd, flag, pool.split(":")[1]) for cmd, (_, _, opts) in COMMANDS.items()
                  for flag, pool in opts.items() if isinstance(pool, str)}
    for cmd, flag, kind in sorted(file_flags):
        if (cmd, flag) == ("calibrate", "--efficiency-file"):  # the reader `accuracy` drives too; a fit is slow
            continue
        positional = COMMANDS[cmd][0]
        pos = [] if not positional else ["llama-3.1-8b"] if positional is MODELS else [positional[0][0]]
        base = list(COMMANDS[cmd][1])
        if cmd == "calibrate" and flag == "--csv":
            base = ["--source", "validate-csv"]
        if flag in ("--scenario-file", "--trace") and "--preset" in base:  # one scenario source
            del base[base.index("--preset"):base.index("--preset") + 2]
        if cmd == "simulate" and flag == "--trace":  # a trace replaces the synthetic rate and count
            base = ["--gpu", "h100-sxm"]
        for path, exp in files[kind]:
            cases.append((cmd.split() + pos + base + [flag, path], exp))
    while len(cases) < n:
        cmd = rng.choice(names)
        positional, base, options = COMMANDS[cmd]
        args = cmd.split()
        expect = EITHER
        if positional:
            value, e = rng.choice(positional) if rng.random() < 0.3 else positional[0] if cmd not in (
                "estimate", "batch", "io", "context", "lanes", "frontier", "simulate", "capacity") else ("llama-3.1-8b", EITHER)
            args.append(value)
            expect = BAD if e == BAD else expect
        given: dict[str, str] = {}
        for i in range(0, len(base), 2):
            given[base[i]] = base[i + 1]
        for flag in rng.sample(sorted(options), k=min(len(options), rng.choice([1, 1, 1, 2, 3]))):
            value, e = draw_value(options[flag], files, rng)
            given[flag] = value
            if e == BAD:
                expect = BAD
        for flag, value in given.items():
            args += [flag, value]
        if rng.random() < 0.8:
            args.append("--json")
        cases.append((args, expect))
    return cases


NUMBER_WORDS = re.compile(r"(?<![A-Za-z_])(nan|inf|-inf|infinity)(?![A-Za-z_])", re.I)
TIME_COST = re.compile(r"(_s$|_s_|usd|cost|price|time|latency|ttft|tpot|seconds|_per_m)", re.I)
#: Differences and margins, which may be below zero (a profit over cost, a saving, an error).
SIGNED = re.compile(r"(profit|margin|saving|delta|error|diff|change)", re.I)
#: Values marked bad in the pools that a command documents as valid there: (command, flag, value).
DOCUMENTED = {("simulate", "--rate", "inf"),  # 'inf': every request at t = 0 (docs/simulate.md)
              ("probe", "--id", "nan")}  # an id is any name


def walk(data, path=""):
    if isinstance(data, dict):
        for k, v in data.items():
            yield from walk(v, f"{path}.{k}")
    elif isinstance(data, list):
        for v in data:
            yield from walk(v, path)
    elif isinstance(data, (int, float)) and not isinstance(data, bool):
        yield path, float(data)


def classify(args, expect, code, out, err, timed_out, signaled) -> tuple[str, str]:
    if timed_out:
        return "hang", ""
    if "MemoryError" in err or signaled:
        return "oom", err[-300:]
    if "Traceback" in err:
        return "traceback", err.strip().splitlines()[-1][:300]
    if code == 2:
        lines = [line for line in err.splitlines() if line.strip()]
        if len(lines) != 1:
            return "multi-line", err[:400]
        return ("refused-good" if expect == GOOD else "ok"), lines[0][:200]
    if code != 0:
        return "other-exit", f"{code}: {err[-200:]}"
    if "--json" in args:
        try:
            data = json.loads(out)
        except ValueError:
            return "nan-output", "stdout is not JSON: " + out[:200]  # NaN literals make invalid JSON too
        for path, value in walk(data):
            if not math.isfinite(value):
                return "nan-output", f"{path}={value}"
            key = path.rsplit(".", 1)[-1]
            if value < 0 and TIME_COST.search(key) and not SIGNED.search(path):  # rows.error.ttft_s is signed
                return "negative", f"{path}={value}"
    elif NUMBER_WORDS.search(out):
        return "nan-output", NUMBER_WORDS.search(out).group(0) + " in text"
    if expect == BAD and not any(cmd == " ".join(args[:len(cmd.split())]) and f"{flag}\0{value}" in "\0".join(args)
                                 for cmd, flag, value in DOCUMENTED):
        return "accepted-bad", ""
    return "ok", ""


def run_case(args, timeout, mem_bytes, workdir):
    from kokuban.cli import main

    out_f = tempfile.TemporaryFile(dir=workdir)
    err_f = tempfile.TemporaryFile(dir=workdir)
    pid = os.fork()
    if pid == 0:  # child
        try:
            resource.setrlimit(resource.RLIMIT_AS, (mem_bytes, mem_bytes))
            os.dup2(out_f.fileno(), 1)
            os.dup2(err_f.fileno(), 2)
            sys.stdout = os.fdopen(1, "w", closefd=False)
            sys.stderr = os.fdopen(2, "w", closefd=False)
            os.chdir(workdir)
            code = main(list(args))
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        except BaseException:  # noqa: B036
            traceback.print_exc()
            code = 1
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code if isinstance(code, int) else 1)
    start = time.monotonic()
    timed_out = signaled = False
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() - start > timeout:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            timed_out = True
            status = 0
            break
        time.sleep(0.02)
    code = os.waitstatus_to_exitcode(status) if not timed_out else None
    if code is not None and code < 0:
        signaled = True
    out_f.seek(0)
    err_f.seek(0)
    out = out_f.read().decode(errors="replace")
    err = err_f.read().decode(errors="replace")
    return code, out, err, timed_out, signaled, time.monotonic() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=1200)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--timeout", type=float, default=20)
    ap.add_argument("--mem-gb", type=float, default=4)
    ap.add_argument("--show", nargs="*", default=["traceback", "hang", "oom", "nan-output", "negative",
                                                  "accepted-bad", "multi-line", "other-exit", "refused-good"])
    ap.add_argument("--report", default="")
    ap.add_argument("--only", default="", help="run only cases whose command line contains this text")
    ap.add_argument("--fresh", action="store_true", help="add the values no earlier run drew (FRESH_*) to the pools")
    opts = ap.parse_args()
    import importlib
    import pkgutil

    import kokuban  # load every module once, before forking (and before any edit to the source)

    for info in pkgutil.walk_packages(kokuban.__path__, "kokuban."):
        if not info.name.startswith("kokuban.web"):
            try:
                importlib.import_module(info.name)
            except ImportError:  # an optional library not installed
                pass
    print(f"kokuban from {kokuban.__file__}", file=sys.stderr)

    if opts.fresh:
        for pool, extra in ((INTS, FRESH_INTS), (FLOATS, FRESH_FLOATS), (TOKENS, FRESH_INTS + FRESH_TOKENS),
                            (SECONDS, FRESH_FLOATS + FRESH_SECONDS), (LISTS, FRESH_LISTS), (DISTS, FRESH_DISTS),
                            (MODELS, FRESH_MODELS), (GPUS, FRESH_GPUS), (DTYPES, FRESH_DTYPES), (WORDS, FRESH_WORDS)):
            pool.extend(extra)
    root = Path(tempfile.mkdtemp(prefix="kokuban-fuzz-"))
    files = write_files(root)
    cases = make_cases(opts.cases, opts.seed, files)
    if opts.only:
        cases = [c for c in cases if opts.only in " ".join(c[0])]
    counts: Counter[str] = Counter()
    findings = []
    t0 = time.monotonic()
    for i, (args, expect) in enumerate(cases):
        timeout = opts.timeout * (4 if args[0] in SLOW else 1)
        code, out, err, timed_out, signaled, dt = run_case(args, timeout, int(opts.mem_gb * 2**30), root)
        cls, detail = classify(args, expect, code, out, err, timed_out, signaled)
        counts[cls] += 1
        if cls != "ok":
            findings.append({"class": cls, "args": args, "detail": detail, "code": code, "seconds": round(dt, 2)})
            if cls in opts.show:
                print(f"[{cls}] {' '.join(repr(a) if (' ' in a or not a) else a for a in args)[:400]}\n    {detail}",
                      flush=True)
        if (i + 1) % 100 == 0:
            print(f"... {i + 1}/{len(cases)} in {time.monotonic() - t0:.0f} s {dict(counts)}", file=sys.stderr,
                  flush=True)
    print(json.dumps({"cases": len(cases), "seed": opts.seed, "counts": dict(sorted(counts.items())),
                      "seconds": round(time.monotonic() - t0)}))
    if opts.report:
        Path(opts.report).write_text(json.dumps(findings, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()
