"""Public trace formats read as kokuban traces (issue 12, item 5): Azure LLM inference CSV, Mooncake JSONL."""

from __future__ import annotations

import json

import numpy as np
import pytest

from kokuban.errors import KokubanError
from kokuban.sim import read_trace, simulate
from kokuban.specs.catalog import load_accelerator, load_model
from kokuban.specs.deployment import Deployment


def test_azure_csv(tmp_path):
    trace = tmp_path / "AzureLLMInferenceTrace_conv.csv"
    trace.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n"
                     "2023-11-16 18:15:46.6805900,374,44\n"
                     "2023-11-16 18:15:50.9951690,396,109\n"
                     "2023-11-16 18:15:46.1805900,879,6\n")
    wl = read_trace(trace)
    # arrivals relative to the earliest stamp (18:15:46.18059): 0, 0.5, 4.814579 s; sorted by arrival
    assert wl.arrival_s.tolist() == pytest.approx([0.0, 0.5, 4.814579], abs=1e-9)
    assert wl.prompt_tokens.tolist() == [879, 374, 396] and wl.output_tokens.tolist() == [6, 44, 109]
    assert (wl.prefix_key < 0).all()


def test_azure_bad_timestamp_names_the_line(tmp_path):
    trace = tmp_path / "a.csv"
    trace.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.68,374,44\nyesterday,10,1\n")
    with pytest.raises(KokubanError, match="a.csv line 3: TIMESTAMP 'yesterday'"):
        read_trace(trace)


def mooncake(tmp_path, rows):
    trace = tmp_path / "mooncake_trace.jsonl"
    trace.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return read_trace(trace)


def test_mooncake_jsonl_and_its_shared_blocks(tmp_path):
    wl = mooncake(tmp_path, [
        {"timestamp": 0, "input_length": 6755, "output_length": 500, "hash_ids": list(range(14))},
        {"timestamp": 0, "input_length": 7319, "output_length": 490, "hash_ids": [0, *range(14, 28)]},
        {"timestamp": 3052, "input_length": 900, "output_length": 794, "hash_ids": [99, 100]},
        {"timestamp": 4000, "input_length": 700, "output_length": 5, "hash_ids": [0, 1]},
    ])
    assert wl.arrival_s.tolist() == [0.0, 0.0, 3.052, 4.0]  # ms → s
    assert wl.prompt_tokens.tolist() == [6755, 7319, 900, 700]
    # hash id 0 starts three prompts and id 1 two: request 0 shares its first 2 blocks (2 × 512 = 1,024 tokens),
    # request 1 its first (512), request 3 both of its blocks but only its 700 prompt tokens; request 2 nothing
    assert wl.prefix_tokens.tolist() == [1024, 512, 0, 700]
    assert wl.prefix_key[0] == wl.prefix_key[1] == wl.prefix_key[3] >= 0 and wl.prefix_key[2] < 0


def test_mooncake_prefix_is_reused_by_the_prefix_cache(tmp_path):
    rows = [{"timestamp": 1000 * i, "input_length": 2048, "output_length": 4, "hash_ids": [7, 8, 9, 10 + i]}
            for i in range(5)]
    wl = mooncake(tmp_path, rows)
    assert wl.prefix_tokens.tolist() == [3 * 512] * 5
    dep = Deployment.make(load_model("llama-3.1-8b"), load_accelerator("h100-sxm"))
    run = simulate(dep, wl)
    # requests 1…4 each find the 1,536 shared tokens (96 blocks of 16) that request 0 computed
    assert run.cached_tokens.tolist() == [0] + [1536] * 4


def test_mooncake_errors_name_the_line(tmp_path):
    with pytest.raises(KokubanError, match="line 1: timestamp 'noon'"):
        mooncake(tmp_path, [{"timestamp": "noon", "input_length": 5, "output_length": 1}])
    with pytest.raises(KokubanError, match="line 1: missing 'output_tokens'"):
        mooncake(tmp_path, [{"timestamp": 0, "input_length": 5}])
    with pytest.raises(KokubanError, match="line 1: hash_ids"):
        mooncake(tmp_path, [{"timestamp": 0, "input_length": 5, "output_length": 1, "hash_ids": 3}])


def test_kokuban_rows_pass_through(tmp_path):
    trace = tmp_path / "t.csv"
    trace.write_text("arrival_s,prompt_tokens,output_tokens\n0.5,10,2\n")
    wl = read_trace(trace)
    assert wl.arrival_s.tolist() == [0.5] and np.array_equal(wl.prompt_tokens, [10])
