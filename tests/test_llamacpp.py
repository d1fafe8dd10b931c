"""The llama.cpp validation: parsers (on captured real output), the prediction of a test by hand, the fit wiring,
and a tiny end-to-end run when llama.cpp's tools are installed (KOKUBAN_LLAMA_CPP_BIN or PATH; skipped otherwise)."""

from __future__ import annotations

import json
import os
from dataclasses import asdict, replace
from pathlib import Path

import numpy as np
import pytest

from kokuban.errors import KokubanError
from kokuban.specs.hardware import Efficiency
from kokuban.specs.model import ModelSpec
from kokuban.validation import llamacpp as lc

FIXTURES = Path(__file__).parent / "fixtures"
# d=64, 2 layers, 4 heads of 16, 2 KV heads, MLP 128, vocab 100, untied (as tests/test_validate.py)
TINY = {
    "model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
    "num_key_value_heads": 2, "intermediate_size": 128, "vocab_size": 100, "max_position_embeddings": 4096,
    "tie_word_embeddings": False, "rope_theta": 10000.0,
}
ENTRY = {"id": "test-cpu", "name": "test machine", "memory_bytes": 8e9, "memory_bandwidth_bytes_per_s": 1e9,
         "flops_fp32": 1e9, "flops_bf16": 5e9}
# 1e11 FLOP/s: token generation memory-bound, prompts of 128 compute-bound, so both fractions are identified
FAST = {**ENTRY, "flops_fp32": 1e11}
EXACT = Efficiency(compute=1.0, memory=1.0, step_overhead_s=0.0)


def test_predict_tg_and_pp_by_hand():
    dep = lc.llamacpp_deployment(ModelSpec.from_config(TINY), ENTRY, "Q8_0", EXACT)
    # always-read params: 2 layers × 36,992 + final norm 64 + LM head 6,400 = 80,448; Q8_0 body and head 34/32 B
    weights_s = 80448 * 34 / 32 / 1e9  # 85.476 µs per pass at 1e9 B/s
    # KV fp16: 2 layers × 2 (K, V) × 2 KV heads × 16 = 128 elements = 256 B per token of context
    # tg4 @ d0: contexts 1, 2, 3, 4 → 10 tokens of KV read; compute is 160,896 FLOP per token → 0.16 ms at 1e9 FLOP/s:
    # the linear kernel is compute-bound, max(0.160896 ms − LM head..., weights) per step. Per step:
    # linear FLOPs = 2·(80,448 − 6,400) + 2·6,400 = 160,896 → 160.896 µs > 85.476 µs (compute-bound);
    # attention: context c pairs × 2 layers × 2·4·(16 + 16) = 256 FLOP → 512·c FLOP = 0.512·c µs vs KV 0.256·c µs
    tg = 4 * 160.896e-6 + 0.512e-6 * (1 + 2 + 3 + 4)
    assert lc.predict_test(dep, "tg", tokens=4) == pytest.approx(tg, rel=1e-9)
    # pp8 @ d0: linear 8·2·74,048 + 2·6,400 (one LM head) = 1,197,568 FLOP, less the last layer's feed-forward
    # block for the 7 rows that are not the output: 7·2·(3·64·128 = 24,576) = 344,064 FLOP → 853,504 FLOP =
    # 0.853504 ms (> weights 85 µs); attention: causal pairs 8·9/2 = 36 per layer × 2 layers × 256 FLOP = 18,432
    # FLOP = 18.432 µs (> KV 2.048 µs)
    assert lc.predict_test(dep, "pp", tokens=8) == pytest.approx(0.853504e-3 + 18.432e-6, rel=1e-9)
    assert weights_s < 160.896e-6
    # pp8 @ d4: 8 new tokens after 4 cached: pairs Σ_{t=5..12} t = 68 per layer → 2·68·256 = 34,816 FLOP
    assert lc.predict_test(dep, "pp", tokens=8, depth=4) == pytest.approx(0.853504e-3 + 34.816e-6, rel=1e-9)
    with pytest.raises(KokubanError):
        lc.predict_test(dep, "pg", tokens=8)


def test_flash_attention_pairs_and_prediction_by_hand():
    """ggml's CPU flash attention (FLASH_ATTENTION_SOURCE): row by row below 64 queries per sequence (the causal pairs),
    64 × 64 tiles from 64 on (a key tile computed whole unless all of it is masked, a partial query tile padded)."""
    assert [lc.flash_attention_path(q) for q in (1, 32, 63, 64, 128)] == ["rows", "rows", "rows", "tiled", "tiled"]
    # rows: Q·D + Q(Q+1)/2 — 32·512 + 32·33/2 = 16,384 + 528; one query after 99 cached: 99 + 1
    assert lc.flash_attention_pairs(32, 512) == 16_912 and lc.flash_attention_pairs(1, 99) == 100
    # tiled, 128 queries at depth 0: query tile 0 (positions 1–64) sees key tile 0, tile 1 (65–128) key tiles 0–1:
    # 3 tiles × 64·64 = 12,288 (the causal count is 128·129/2 = 8,256)
    assert lc.flash_attention_pairs(128, 0) == 3 * 4096
    # at depth 512: ⌈(512 + 64)/64⌉ = 9 and ⌈(512 + 128)/64⌉ = 10 key tiles → 19 × 4,096
    assert lc.flash_attention_pairs(128, 512) == 19 * 4096
    # 100 queries: the second query tile has 36 rows, computed as 64, against ⌈100/64⌉ = 2 key tiles → 3 tiles
    assert lc.flash_attention_pairs(100, 0) == 3 * 4096
    assert lc.flash_attention_pairs(64, 0, batch=2) == 2 * 4096  # two sequences of 64, one tile each
    spec = ModelSpec.from_config(TINY)
    # 2 layers × 4·4 heads·16 = 256 FLOP per pair per layer → pp8: 36 pairs × 2 × 256 = 18,432 FLOP
    assert lc.flash_attention_flops(spec, 8, 0) == 18_432
    attention = lc.FlashAttention(rows_flops_s=1e8, tiled_flops_s=1e9)
    dep = lc.llamacpp_deployment(spec, ENTRY, "Q8_0", EXACT)
    # pp8 @ d0 (test_predict_tg_and_pp_by_hand): linear 0.853504 ms; attention 18,432 FLOP at 1e8 = 184.32 µs in place
    # of 18.432 µs at the compute fraction (still above the KV read, 2.048 µs)
    assert lc.predict_test(dep, "pp", tokens=8, attention=attention) == pytest.approx(0.853504e-3 + 184.32e-6,
                                                                                       rel=1e-9)
    # generation steps keep the roofline's attention (bound by the KV read): tg4 @ d0 as without the kernel's rates
    assert lc.predict_test(dep, "tg", tokens=4, attention=attention) == pytest.approx(4 * 160.896e-6 + 0.512e-6 * 10,
                                                                                       rel=1e-9)
    # pp128 runs the tiled path: 12,288 pairs × 512 FLOP = 6,291,456 FLOP at 1e9 = 6.291456 ms
    step_s = lc.predict_test(dep, "pp", tokens=128, attention=attention)
    assert step_s - lc.predict_test(dep, "pp", tokens=128) == pytest.approx(6.291456e-3 - 128 * 129 / 2 * 512 / 1e9,
                                                                            rel=1e-9)


def test_flash_attention_fit_needs_depth_pairs_on_both_paths():
    spec = {"a": ModelSpec.from_config(TINY)}
    rows = [lc.Row(f"a/F16/pp{n}@{d}", "a", "F16", "pp", n, d, 1, (t,)) for n, d, t in
            ((32, 0, 1.0), (32, 64, 1.5), (128, 0, 2.0), (128, 64, 2.0))]
    # tiled pair: no time added by depth → not a positive rate → no fit
    assert lc.fit_flash_attention(rows, [False] * 4, spec) is None
    # row pair alone (the pp128 rows held out): no tiled rate → no fit
    assert lc.fit_flash_attention(rows, [False, False, True, True], spec) is None
    rows[3] = replace(rows[3], samples_s=(2.5,))
    fa = lc.fit_flash_attention(rows, [False] * 4, spec)
    # pp32: 0.5 s for 32·64 = 2,048 more pairs × 2 layers × 256 FLOP = 1,048,576 FLOP; pp128: 0.5 s for
    # ⌈128/64⌉ + ⌈192/64⌉ = 5 key tiles at depth 64 against 1 + 2 = 3 at depth 0: 2 more tiles × 4,096 pairs × 512 FLOP
    assert fa.rows_flops_s == pytest.approx(1_048_576 / 0.5, rel=1e-12)
    assert fa.tiled_flops_s == pytest.approx(2 * 4096 * 512 / 0.5, rel=1e-12) and fa.pairs_fitted == 2


def test_deployment_types():
    spec = ModelSpec.from_config(TINY)
    assert lc.llamacpp_deployment(spec, ENTRY, "F16").weights_dtype == "fp16"
    assert lc.llamacpp_deployment(spec, ENTRY, "Q4_K_M").weights_dtype == "q4_k_m"
    dep = lc.llamacpp_deployment(spec, ENTRY, "Q4_0")
    assert (dep.kv_dtype, dep.compute_dtype, dep.accelerator.flops("bf16")) == ("fp16", "fp32", 1e9)
    with pytest.raises(KokubanError) as err:
        lc.llamacpp_deployment(spec, ENTRY, "IQ2_XS")
    assert err.value.field == "gguf_type"


def test_llama_config_rounds_mlp_to_k_quant_blocks():
    cfg, changes = lc.llama_config("llama-2-7b", num_layers=4, hidden_size=1024)
    # 11008·1024/4096 = 2752 (a multiple of 64) → rounded up to 11·256 = 2816
    assert cfg["intermediate_size"] == 2816 and cfg["num_hidden_layers"] == 4 and cfg["num_attention_heads"] == 8
    assert any("2816" in c for c in changes)
    with pytest.raises(KokubanError):
        lc.llama_config("qwen3-8b", num_layers=2)


def test_parse_llama_bench_json_fixture():
    tests = lc.parse_llama_bench_json((FIXTURES / "llama-bench.json").read_text())
    kinds = {(t.kind, t.n_prompt, t.n_gen, t.n_depth) for t in tests}
    assert ("pp", 16, 0, 0) in kinds and ("tg", 0, 4, 8) in kinds
    for t in tests:
        assert len(t.samples_s) == 2 and all(s > 0 for s in t.samples_s)
        assert t.threads == 2 and t.model_params > 0
    raw = json.loads((FIXTURES / "llama-bench.json").read_text())
    assert tests[0].samples_s[0] == raw[0]["samples_ns"][0] * 1e-9
    rows = lc.rows_from_bench("tiny", "Q4_0", tests)
    assert {r.regime for r in rows} == {"pp", "tg"}
    with pytest.raises(KokubanError):
        lc.parse_llama_bench_json("not json")


def test_parse_llama_bench_markdown_fixture():
    rows = lc.parse_llama_bench_markdown((FIXTURES / "llama-bench.md").read_text())
    assert {(r["n_prompt"], r["n_gen"], r["n_depth"]) for r in rows} >= {(16, 0, 0), (0, 4, 8)}
    assert all(r["tokens_per_s"] > 0 and r["tokens_per_s_std"] >= 0 for r in rows)
    # a hand-made row in llama-bench's layout
    md = ("| model | size | params | backend | threads | test | t/s |\n"
          "| --- | ---: | ---: | --- | ---: | ---: | ---: |\n"
          "| llama 7B Q4_0 | 3.56 GiB | 6.74 B | CPU | 2 | tg128 @ d512 | 12.50 ± 0.25 |\n")
    (row,) = lc.parse_llama_bench_markdown(md)
    got = (row["n_prompt"], row["n_gen"], row["n_depth"], row["tokens_per_s"], row["tokens_per_s_std"])
    assert got == (0, 128, 512, 12.5, 0.25)


def test_parse_batched_bench_fixture():
    for name in ("batched-bench.jsonl", "batched-bench.md"):
        tests = lc.parse_batched_bench((FIXTURES / name).read_text())
        assert [t.batch for t in tests] == [1, 2] and all(t.t_pp_s > 0 and t.t_tg_s > 0 for t in tests)
    rows = lc.rows_from_batched("tiny", "F16", [tests, tests])
    assert {r.regime for r in rows} == {"batched-pp", "batched-tg"} and all(len(r.samples_s) == 2 for r in rows)
    with pytest.raises(KokubanError):
        lc.parse_batched_bench("nothing here")


def test_matmul_path_and_gemm_curve_by_hand():
    """M = 1 runs ggml's GEMV (the flat fraction), M ≥ 2 the GEMM curve compute·M ÷ (M + M_half)."""
    spec = ModelSpec.from_config(TINY)
    assert [lc.step_tokens("tg", 16, 1), lc.step_tokens("tg", 8, 4), lc.step_tokens("pp", 64, 2)] == [1, 4, 128]
    assert [lc.matmul_path(m) for m in (1, 2, 128)] == ["gemv", "gemm", "gemm"]
    flat = lc.step_efficiency(EXACT, None, 128)
    assert flat.kernels is None and lc.step_efficiency(EXACT, 32.0, 1).kernels is None
    assert lc.step_efficiency(EXACT, 32.0, 2).kernels.m_half_tokens == 32.0

    def dep(kind, tokens, batch=1):
        eff = lc.step_efficiency(EXACT, 32.0, lc.step_tokens(kind, tokens, batch))
        return lc.llamacpp_deployment(spec, ENTRY, "Q8_0", eff)

    # tg4 at batch 1 is the GEMV path: the flat prediction of test_predict_tg_and_pp_by_hand, unchanged by M_half
    assert lc.predict_test(dep("tg", 4), "tg", tokens=4) == pytest.approx(4 * 160.896e-6 + 0.512e-6 * 10, rel=1e-9)
    # pp8 (M = 8): the body's 8·148,096 = 1,184,768 FLOP less the last feed-forward block's 7 non-output rows
    # (344,064 FLOP, as above) = 840,704 FLOP at 8 ÷ (8 + 32) = 0.2 of 1e9 FLOP/s = 4.20352 ms; the LM head (one
    # position, 12,800 FLOP) and attention (18,432 FLOP) stay at the flat fraction 1: 12.8 + 18.432 µs
    assert lc.predict_test(dep("pp", 8), "pp", tokens=8) == pytest.approx(4.20352e-3 + 12.8e-6 + 18.432e-6, rel=1e-9)
    # one generation step at batch 2, context 1 (M = 2): body 2·148,096 = 296,192 FLOP at 2 ÷ 34 → 5.035264 ms; two
    # LM-head rows 25.6 µs; attention 2 sequences × 512 FLOP per context token = 1.024 µs (> its KV read 0.512 µs);
    # the weight read (85.5 µs) hides under the compute
    assert lc.predict_test(dep("tg", 1, 2), "tg", tokens=1, batch=2) == pytest.approx(5.035264e-3 + 25.6e-6 + 1.024e-6,
                                                                                     rel=1e-9)


def test_last_layer_ffn_runs_on_output_rows_only():
    """llama.cpp drops the rows that are not outputs before the last layer's feed-forward block (OUTPUT_ROWS_SOURCE):
    a prompt keeps one row per sequence, a generation step keeps all of them."""
    spec = ModelSpec.from_config(TINY)
    assert lc.ffn_params_per_layer(spec) == 3 * 64 * 128 == 24_576
    assert lc.skipped_ffn_flops(spec, 4, 4) == 0.0  # a generation step of 4 sequences: every row is an output
    # batched prompts: 2 sequences × 4 tokens = 8 rows, 2 outputs → 6 rows skipped × 2 × 24,576 = 294,912 FLOP
    assert lc.skipped_ffn_flops(spec, lc.step_tokens("pp", 4, 2), 2) == 294_912
    dep = lc.llamacpp_deployment(spec, ENTRY, "Q8_0", EXACT)
    # linear: 8·2·74,048 + 2 LM-head rows·12,800 = 1,210,368 − 294,912 = 915,456 FLOP = 0.915456 ms (> weights
    # 85 µs); attention: 2 prompts × 4·5/2 = 10 pairs × 2 layers × 256 FLOP = 10,240 FLOP = 10.24 µs (> KV 2.048 µs)
    assert lc.predict_test(dep, "pp", tokens=4, batch=2) == pytest.approx(0.915456e-3 + 10.24e-6, rel=1e-9)
    # the Llama-3.2-1B shape of the committed run: 3·2048·8192 = 50,331,648 weights a layer, of 4 layers' body
    cfg, _ = lc.llama_config("llama-3.2-1b", num_layers=4)
    assert lc.ffn_params_per_layer(ModelSpec.from_config(cfg)) == 50_331_648


def test_split_holds_out_sizes_and_depths_not_batched_rows():
    plan = lc.Plan(cases=(lc.Case("a", "llama-2-7b", 2, 256), lc.Case("b", "llama-2-7b", 3, 384, held_out=True)),
                   held_out_depths=(64,))
    row = lc.Row("a/F16/batched-tg8-b2@d64", "a", "F16", "batched-tg", 8, 32, 2, (1.0,))
    assert not lc.is_held_out(row, plan)  # a fitted size's batched row at a depth that is not held out trains
    assert lc.is_held_out(replace(row, depth=64), plan) and lc.is_held_out(replace(row, model="b"), plan)
    assert [lc.phase(r) for r in ("tg", "batched-tg", "pp", "batched-pp")] == ["decode", "decode", "prefill", "prefill"]


def test_fit_recovers_known_fractions_on_held_out_rows():
    """Rows 'measured' as kokuban's own prediction at known fractions and a known GEMM half-point: the fit on the
    fitted rows must reproduce them and the held-out ones (the wiring of split, fit and re-prediction; not a claim
    about llama.cpp). Two fitted sizes, as the committed plan has: with one, M_half's fixed cost per step
    (2·params·M_half ÷ (peak·e)) and the per-step overhead trade against each other along a valley of equal loss."""
    truth, m_half = Efficiency(compute=0.2, memory=0.6, kv_memory=0.3, step_overhead_s=1e-4), 8.0
    # attention slow enough that a prompt's attention compute exceeds its KV read at every depth (case a, pp32 @ d0:
    # 528 pairs × 2 layers × 4·2 heads·128 = 1.08 MFLOP at 2e9 = 0.54 ms > 64 kB of KV at 3e8 B/s = 0.22 ms), so what
    # depth adds to a prompt is attention alone and the fit must find these two rates exactly
    attention = lc.FlashAttention(rows_flops_s=2e9, tiled_flops_s=5e9)
    plan = lc.Plan(cases=(lc.Case("a", "llama-2-7b", 2, 256), lc.Case("c", "llama-2-7b", 4, 512),
                          lc.Case("b", "llama-2-7b", 3, 384, held_out=True)),
                   types=("Q4_0",), depths=(0, 64, 128), held_out_depths=(64,))
    record = {"plan": json.loads(json.dumps(asdict(plan))), "cases": {}, "rows": []}
    for case in plan.cases:
        cfg, _ = case.config()
        record["cases"][case.name] = {"config": cfg}
        for depth in plan.depths:
            for kind, n, b in (("pp", 32, 1), ("pp", 128, 1), ("tg", 16, 1), ("tg", 8, 4), ("tg", 8, 8)):
                eff = lc.step_efficiency(truth, m_half, lc.step_tokens(kind, n, b))
                dep = lc.llamacpp_deployment(ModelSpec.from_config(cfg), FAST, "Q4_0", eff)
                t = lc.predict_test(dep, kind, tokens=n, depth=depth, batch=b, attention=attention)
                regime = kind if b == 1 else f"batched-{kind}"
                record["rows"].append(lc.row_dict(lc.Row(f"{case.name}/{regime}{n}-b{b}@{depth}", case.name, "Q4_0",
                                                         regime, n, depth, b, (t, t * 1.1))))
    result = lc.analyse(record, FAST, flat=False)
    cal = result["per_type"]["Q4_0"]
    # held out: case b (3 depths × 5 tests = 15 rows) + cases a and c at depth 64 (5 rows each); trained: a and c at
    # depths 0 and 128 (2 × 2 × 5 = 20 rows)
    assert cal["holdout_rows"] == 25 and cal["train_rows"] == 20
    # pairs: pp32 and pp128 at depth 128 against depth 0 in the two fitted cases (depth 64 is held out)
    assert result["flash_attention"] == pytest.approx({"rows_flops_s": 2e9, "tiled_flops_s": 5e9, "pairs_fitted": 4},
                                                      rel=1e-9)
    assert cal["holdout_after"]["median_abs_error"] < 0.01  # Nelder–Mead stops at xatol 1e-3 (logit space)
    # M_half is seen only through the GEMM rows' M = 4, 8, 32, 128 (some of them weight-read-bound): within 10 %
    assert cal["m_half_tokens"] == pytest.approx(m_half, rel=0.1)
    assert cal["after"]["step_overhead_s"] == pytest.approx(1e-4, rel=0.1)  # no longer traded against M_half
    assert cal["after"]["compute"] == pytest.approx(0.2, rel=0.05)
    assert cal["after"]["memory"] == pytest.approx(0.6, rel=0.05)
    assert set(cal["phases"]["by_phase"]) == {"decode", "prefill"} and cal["phases"]["count"] == 25
    assert all(np.isfinite(r["predicted_fit_s"]) for r in result["rows"])
    assert {r["path"] for r in result["rows"] if r["regime"] == "tg"} == {"gemv"}
    assert {r["path"] for r in result["rows"] if r["regime"] != "tg"} == {"gemm"}


def _tools():
    return lc.find_tools(os.environ.get("KOKUBAN_LLAMA_CPP_BIN"))


@pytest.mark.skipif(_tools() is None, reason="llama.cpp tools not found (set KOKUBAN_LLAMA_CPP_BIN)")
def test_end_to_end_tiny(tmp_path):
    pytest.importorskip("gguf")
    tools = _tools()
    cfg, _ = lc.llama_config({**TINY, "hidden_size": 256, "num_attention_heads": 4, "num_key_value_heads": 2,
                              "intermediate_size": 512, "vocab_size": 1000})
    f16 = tmp_path / "tiny-F16.gguf"
    assert lc.write_gguf(cfg, f16) == ModelSpec.from_config(cfg).params_total
    from kokuban.specs.dtypes import q4_k_m_body_bytes

    for gguf_type, bits in (("Q4_0", 4.5), ("Q8_0", 8.5), ("Q4_K_M", 8 * q4_k_m_body_bytes(2, 256, 128, 512))):
        out = tmp_path / f"tiny-{gguf_type}.gguf"
        lc.quantize(tools, f16, out, gguf_type)
        assert lc.gguf_bytes(out)["body_bits_per_weight"] == pytest.approx(bits, rel=1e-12)
    tests = lc.parse_llama_bench_json(lc.run_tool(lc.bench_command(tools, tmp_path / "tiny-Q4_0.gguf", prompts=[16],
                                                                   gens=[4], depths=[0, 8], repeats=2)))
    assert len(tests) == 4 and all(min(t.samples_s) > 0 for t in tests)
    plan = lc.Plan(cases=(), batched_prompt=16, batched_gen=4, batched_batches=(1, 2))
    batched, _ = lc.run_batched(tools, f16, plan)
    assert [t.batch for t in batched] == [1, 2] and all(t.t_tg_s > 0 for t in batched)


def test_merge_records_concatenates_samples():
    plan = asdict(lc.Plan(cases=(), repeats=3, batched_runs=2))
    row = lc.row_dict(lc.Row("m/Q4_0/tg16", "m", "Q4_0", "tg", 16, 0, 1, (0.3, 0.2, 0.4)))
    first = {"date": "d1", "plan": plan, "rows": [row], "runs": [{"command": ["a"]}]}
    second = {"date": "d2", "plan": {**plan, "repeats": 6}, "runs": [{"command": ["b"]}],
              "rows": [{**row, "samples_s": [0.1]},
                       lc.row_dict(lc.Row("m/Q4_0/pp32", "m", "Q4_0", "pp", 32, 0, 1, (1.0,)))]}
    merged = lc.merge_records(first, second)
    by_id = {r["id"]: r for r in merged["rows"]}
    assert by_id["m/Q4_0/tg16"]["samples_s"] == [0.3, 0.2, 0.4, 0.1] and by_id["m/Q4_0/tg16"]["best_s"] == 0.1
    assert by_id["m/Q4_0/pp32"]["samples_s"] == [1.0]
    assert [p["repeats"] for p in merged["passes"]] == [3, 6] and len(merged["runs"]) == 2


def test_others_cores_by_hand():
    # the machine was busy 3.0 CPU-s during a 2.0 s run that itself used 2.0 CPU-s: others kept 0.5 cores busy
    assert lc.others_cores(3.0, 2.0, 2.0) == 0.5
    assert lc.others_cores(1.9, 2.0, 1.0) == 0.0  # tick rounding never makes it negative
    assert lc.others_cores(1.0, 0.0, 0.0) == float("inf")  # no wall time: never counted as quiet
    assert lc.cpu_busy_s() >= 0.0


def test_tensor_types_reproduce_the_committed_files():
    """`body_matrices` gives every committed file's body: its count of tensors per type and its bytes exactly
    (gguf_bytes of the record), so the per-tensor kernel paths are those of the files measured."""
    from kokuban.specs.dtypes import use_more_bits

    # use_more_bits(i, n): i < n//8, i ≥ 7n//8 or (i − n//8) mod 3 = 2 → 4 layers: {2, 3}; 6: {2, 5}; 8: {0, 3, 6, 7}
    assert [i for i in range(4) if use_more_bits(i, 4)] == [2, 3]
    assert [i for i in range(6) if use_more_bits(i, 6)] == [2, 5]
    assert [i for i in range(8) if use_more_bits(i, 8)] == [0, 3, 6, 7]
    raw = json.loads((Path(__file__).parents[1] / "evidence" / "cpu" / "llamacpp.json").read_text())
    for name, case in raw["cases"].items():
        spec = ModelSpec.from_config(case["config"], name=name)
        for gguf_type, f in case["files"].items():
            matrices = lc.body_matrices(spec, gguf_type)
            counts: dict[str, int] = {}
            for _matrix, _weights, tensor_type in matrices:
                counts[f"body:{tensor_type}"] = counts.get(f"body:{tensor_type}", 0) + 1
            assert counts == {k: v for k, v in f["tensor_types"].items() if k.startswith("body:")}, (name, gguf_type)
            assert sum(w for _m, w, _t in matrices) == f["parts"]["body"]["weights"]
            assert lc.file_body_bytes(spec, gguf_type) == f["parts"]["body"]["bytes"], (name, gguf_type)
        # every matrix has a multiple of 8 output rows (hidden, KV width, MLP width), as the repacking needs
        # (ne[1] % 8 == 0), so every Q4_0 and Q4_K matrix is repacked
        assert all(x % 8 == 0 for x in (spec.hidden_size, spec.kv_elements_per_token_per_layer // 2, spec.mlp_width))
    # by hand, the 4-layer Llama-2 shape's Q4_K_M body: attn_v 1024² = 1,048,576 and ffn_down 2816·1024 = 2,883,584
    # weights in Q6_K (210/256 B) in layers 2 and 3, the other 51,380,224 − 2·3,932,160 = 43,515,904 in Q4_K (144/256 B)
    spec = ModelSpec.from_config(raw["cases"]["llama2-h1024-L4"]["config"])
    assert lc.file_body_bytes(spec, "Q4_K_M") == 2 * 3_932_160 * 210 / 256 + 43_515_904 * 144 / 256 == 30_928_896


def test_gemm_rows_by_kernel():
    """KERNEL_SOURCE: repacked Q4_0/Q4_K run their GEMM on whole blocks of 4 rows when there are more than 3 (GEMV on
    the rest), Q6_K the tiled matmul from 8 rows (vec_dot below), F16 and Q8_0 tinyBLAS from 2 rows."""
    for t in ("Q4_0", "Q4_K"):
        assert [lc.gemm_rows(t, m) for m in (1, 2, 3, 4, 5, 7, 8, 128)] == [0, 0, 0, 4, 4, 4, 8, 128]
    assert [lc.gemm_rows("Q6_K", m) for m in (1, 2, 4, 7, 8, 32)] == [0, 0, 0, 0, 8, 32]
    for t in ("F16", "Q8_0"):
        assert [lc.gemm_rows(t, m) for m in (1, 2, 4, 8)] == [0, 2, 4, 8]


def test_kernel_paths_and_file_bytes_by_hand():
    """A step of M = 2 or 4 rows in the repacked types prices each matrix by the kernel it runs (compute, and a pass
    over the weights per GEMV row); a one-sequence prompt (every matrix on a GEMM kernel, one output) is unchanged;
    the weight read moves to the file's bytes."""
    from kokuban.core.roofline import decode_step, prefill

    spec = ModelSpec.from_config(TINY)
    eff = lc.step_efficiency(Efficiency(compute=0.5, memory=1.0, step_overhead_s=0.0), 4.0, 2)
    # TINY's matrices per layer: q 64·64 = 4,096, k and v 64·32 = 2,048 each, o 4,096, gate/up/down 3·64·128 = 24,576:
    # 36,864 per layer, 73,728 in 2 layers. At M = 2 the GEMM curve is 0.5·2 ÷ (2 + 4) = 1/6 of peak, the GEMV 0.5.
    q40 = lc.llamacpp_deployment(spec, ENTRY, "Q4_0", eff)
    step = decode_step(q40, 2, 10)
    moved = lc.with_kernel_paths(q40, step, 2, 2)
    # Q4_0 at M = 2 runs the repacked GEMV: 2·73,728·2 FLOP at 0.5 instead of 1/6 of 1e9 FLOP/s:
    # 294,912·(2 − 6) ÷ 1e9 = −1.179648 ms
    assert moved.compute_s - step.compute_s == pytest.approx(-1.179648e-3, rel=1e-9)
    # … and each of its 2 GEMV calls passes over the weights: one more pass over 73,728 × 18/32 = 41,472 B, and
    # over the Q6_K LM head (vec_dot for 2 outputs): 100·64 = 6,400 × 210/256 = 5,250 B; 46,722 B at 1e9 B/s
    assert moved.weights_s - step.weights_s == pytest.approx(46_722 / 1e9, rel=1e-9)
    assert [lc.weight_passes("Q4_0", m) for m in (1, 2, 3, 4, 5, 7, 8)] == [1, 2, 3, 1, 2, 4, 1]
    assert [lc.weight_passes("Q6_K", m) for m in (1, 2, 7, 8)] == [1, 2, 7, 1]
    assert [lc.weight_passes(t, m) for t in ("F16", "Q8_0") for m in (1, 3)] == [1, 1, 1, 1]
    assert [lc.lm_head_tensor_type(t) for t in lc.GGUF_TYPES] == ["F16", "Q8_0", "Q6_K", "Q6_K"]
    # Q4_K_M at M = 4: 2 layers → use_more_bits(i, 2) only for i = 1 (i ≥ 7·2//8 = 1): attn_v 2,048 + ffn_down 8,192
    # = 10,240 weights in Q6_K run vec_dot (M < 8) at 0.5 instead of the curve's 0.5·4 ÷ 8 = 0.25; the Q4_K ones run
    # the repacked GEMM on all 4 rows, as before: 2·10,240·4·(2 − 4) ÷ 1e9 = −0.16384 ms
    eff4 = lc.step_efficiency(Efficiency(compute=0.5, memory=1.0, step_overhead_s=0.0), 4.0, 4)
    qkm = lc.llamacpp_deployment(spec, ENTRY, "Q4_K_M", eff4)
    step = decode_step(qkm, 4, 10)
    moved = lc.with_kernel_paths(qkm, step, 4, 4)
    assert moved.compute_s - step.compute_s == pytest.approx(-0.16384e-3, rel=1e-9)
    # passes: Q4_K one (its GEMM takes all 4 rows), the Q6_K matrices and LM head 4 (vec_dot per row): 3 more over
    # 10,240 × 210/256 = 8,400 B and 5,250 B → 3·13,650 = 40,950 B
    assert moved.weights_s - step.weights_s == pytest.approx(40_950 / 1e9, rel=1e-9)
    # a 32-row prompt: every matrix on a GEMM kernel (Q4_K repacked GEMM, Q6_K tiled): the same step
    pp = prefill(qkm, 1, 32)
    assert lc.with_kernel_paths(qkm, pp, 32, 1) is pp
    # the GEMV deployment (M = 1) has no curves: unchanged
    gemv = lc.llamacpp_deployment(spec, ENTRY, "Q4_K_M", lc.step_efficiency(eff, 4.0, 1))
    one = decode_step(gemv, 1, 10)
    assert lc.with_kernel_paths(gemv, one, 1, 1) is one
    # the file's bytes: 10,240 weights at 210/256 B and 63,488 at 144/256 B = 8,400 + 35,712 = 44,112 B, against
    # 73,728 × kokuban's q4_k_m bytes per weight; the read moves by the difference at 1e9 B/s × 1.0
    delta = 44_112 - 73_728 * qkm.weight_bytes_per_param
    assert lc.file_body_bytes(spec, "Q4_K_M") == 44_112
    assert lc.with_file_bytes(gemv, one).weights_s - one.weights_s == pytest.approx(delta / 1e9, rel=1e-9)
    q40_one = decode_step(lc.llamacpp_deployment(spec, ENTRY, "Q4_0", lc.step_efficiency(eff, 4.0, 1)), 1, 10)
    assert lc.with_file_bytes(q40, q40_one) is q40_one  # one type per body: nothing to move
