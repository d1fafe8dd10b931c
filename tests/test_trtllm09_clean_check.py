"""TensorRT-LLM 0.9's performance tables: 96 rows of the published set, added by a rule written before any was
predicted (evidence/fractions/choice-100/inclusion_rule_trtllm09.md) and predicted once (the record:
evidence/fractions/choice-100/trtllm09_as_checked.json); the XQA group-size rule fixed from the source; the 18 rows
the next revision withdrew, and what 16-bit experts would mean for them."""

from __future__ import annotations

import collections
import json
from pathlib import Path

from kokuban.validation.accuracy import floor_row, load_published, predict_row, shares_kv_head

ROOT = Path(__file__).resolve().parents[1]
ROWS = [r for r in load_published() if r.id.startswith("trtllm09-")]
RECORD = ROOT / "evidence/fractions/choice-100/trtllm09_as_checked.json"


def test_the_rows_are_every_catalog_cell_of_the_tables():
    """4 models × 4 GPUs × 4 throughput settings = 64, and × 2 first-token prompts = 32."""
    by_metric = collections.Counter(r.metric for r in ROWS)
    assert by_metric == {"output_tokens_per_s": 4 * 4 * 4, "time_to_first_token_s": 4 * 4 * 2}
    assert {r.model for r in ROWS} == {"llama-2-7b", "llama-2-70b", "mistral-7b-v0.3", "mixtral-8x7b"}
    assert all(r.per_gpu == (r.metric == "output_tokens_per_s") for r in ROWS)


def test_xqa_group_sizes():
    """0.7–0.10 share the KV head at 8 query heads per KV head only; before 0.7 never; from 0.11 always."""
    assert not shares_kv_head("mistral-7b-v0.3", "TensorRT-LLM", (0, 9))  # 32 ÷ 8 = 4
    assert not shares_kv_head("mixtral-8x7b", "TensorRT-LLM", (0, 9))
    assert shares_kv_head("llama-2-70b", "TensorRT-LLM", (0, 9))  # 64 ÷ 8 = 8
    assert not shares_kv_head("llama-2-70b", "TensorRT-LLM", (0, 6, 1))
    assert shares_kv_head("mistral-7b-v0.3", "TensorRT-LLM", (0, 11))
    assert shares_kv_head("mistral-7b-v0.3", "vLLM", (0, 9))  # no rule for that family


def test_the_16_bit_experts_counterfactual():
    """The 18 fp8 Mixtral rows priced with 16-bit experts beside fp8 attention (`experts_dtype`; TensorRT-LLM 0.9 has
    no fp8 MoE GEMM): every L40S row further off, and four rows would then be faster than their floor (`floor_row`:
    the measurement alone against the hardware, whatever the step model), where as mapped none is."""
    from dataclasses import replace

    rows = [r for r in ROWS if r.model == "mixtral-8x7b" and r.weights_dtype == "fp8"]
    assert len(rows) == 3 * (4 + 2)  # three fp8 GPUs × (four throughput settings + two first tokens)
    sixteen = {r.id: replace(r, experts_dtype="fp16") for r in rows}
    before = {r.id: replace(predict_row(r), floor=floor_row(r)) for r in rows}
    after = {k: replace(predict_row(r), floor=floor_row(r)) for k, r in sixteen.items()}
    assert all(after[k].error > before[k].error for k in before if "-l40s-" in k)
    assert not any(p.beyond_floor for p in before.values())
    beyond = {k: p.measured / p.floor if p.metric == "output_tokens_per_s" else p.floor / p.measured
              for k, p in after.items() if p.beyond_floor}
    assert {k: round(v, 2) for k, v in beyond.items()} == {
        "trtllm09-mixtral-8x7b-fp8-tp4-l40s-b32-2048-2048": 1.49, "trtllm09-ttft-mixtral-8x7b-fp8-tp4-l40s-128": 1.36,
        "trtllm09-mixtral-8x7b-fp8-tp2-h100-b32-2048-2048": 1.24, "trtllm09-ttft-mixtral-8x7b-fp8-tp2-h100-128": 1.02}


def test_the_group_size_rule_as_checked():
    """By the model of the check (the record), without the XQA group-size rule (every 0.9 row sharing the KV head) the
    32 Mistral/Mixtral throughput rows read closer than with it: the masked MHA of 0.9 lost less to repeated loads
    than the fitted share said."""
    sel = [r for r in ROWS if r.model in ("mistral-7b-v0.3", "mixtral-8x7b") and r.metric == "output_tokens_per_s"]
    record = json.loads(RECORD.read_text())
    rule, no_rule = record["mistral_mixtral_throughput_as_checked"], record["without_xqa_group_rule"]
    assert rule["count"] == no_rule["mistral_mixtral_throughput"]["count"] == len(sel) == 32
    assert no_rule["mistral_mixtral_throughput"]["median_abs_error"] < rule["median_abs_error"]


def test_the_withdrawn_rows():
    """The 18 fp8 Mixtral rows are exactly the rows that the next revision of the document (66ef1df4) removed; they
    stay scored, and the check's figures without them are recorded beside the headline."""
    withdrawn = {r.id for r in ROWS if r.withdrawn}
    assert withdrawn == {r.id for r in ROWS if r.model == "mixtral-8x7b" and r.weights_dtype == "fp8"}
    assert all(r.withdrawn.startswith("NVIDIA/TensorRT-LLM 66ef1df4 (2024-04-24)") for r in ROWS if r.withdrawn)
    assert not any(r.withdrawn for r in load_published() if not r.id.startswith("trtllm09-"))
    record = json.loads(RECORD.read_text())
    assert (record["as_checked"]["count"], record["as_checked_without_withdrawn"]["count"]) == (96, 78)
    by = collections.Counter(r.model for r in ROWS)
    assert sum(record["as_checked_by"][f"model {m}"]["count"] for m in by) == 96


def test_the_figures_without_the_withdrawn_rows(capsys):
    """`kokuban accuracy --json`'s `without_withdrawn`, beside the headline: every published row but those 18."""
    from kokuban.cli import main
    from kokuban.present.jsonout import read_result

    assert main(["accuracy", "--json"]) == 0
    s = read_result(capsys.readouterr().out)["summary"]
    w = s["without_withdrawn"]
    assert (s["count"], w["count"]) == (len(load_published()), len(load_published()) - 18)
