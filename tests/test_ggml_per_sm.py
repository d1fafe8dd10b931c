"""Session 34: llama.cpp's quantized CUDA kernels bound per SM (`core.roofline.ggml_per_sm`). The judging rows the rule
makes from the copied scoreboard, the fits and the decisions, the shipped MMQ rate worked by hand, the rows it must not
move, and the figures docs/validation.md ("Session 34") and the README quote, rebuilt from the committed reports."""

from __future__ import annotations

import json
import tomllib

import pytest
from test_session31_checks import _pct, _same, _text  # the same readers of reports and docs
from test_session32_checks import CHECKS, _module  # and the same loader of the clean-check scripts

from kokuban.specs.catalog import load_accelerator, load_model
from kokuban.specs.hardware import PROFILES, Efficiency

# Llama 2 7B by hand: 32 layers of 4·4096² attention and 3·4096·11008 MLP weights (no bias), the LM head 32000·4096
L7_BODY = 32 * (4 * 4096 * 4096 + 3 * 4096 * 11008)  # 6,476,005,376
L7_HEAD = 32000 * 4096  # 131,072,000
L7_NORMS = 32 * 2 * 4096 + 4096  # two RMSNorm weights a layer and the final one, counted as 2 FLOP each: 266,240


def test_the_judging_rows_are_the_records_by_the_rule():
    build = _module(CHECKS / "llamacpp-sm/build_rows.py")
    built = build.rows()
    assert build.CUDA.TABLE.toml(built) in (CHECKS / "llamacpp-sm/rows.toml").read_text()
    # fifteen chips × two tests × flash attention off and on, every one a catalog GPU with its SMs and clock stated
    assert len(built) == 15 * 2 * 2 == 60 and {r["accelerator"] for r in built} == set(build.GPUS.values())
    for gpu in build.GPUS.values():
        acc = load_accelerator(gpu)
        assert acc.sm_count > 0 and acc.boost_clock_hz > 0, gpu
    records = build.CUDA.records(CHECKS / "llamacpp-sm/table.md")
    assert all("backend=CUDA" in r["notes"] and r["notes"].split("chip=")[-1] in build.GPUS for r in records)
    # none the rule leaves out: the fitted chips, the read ones of unstated variant, the ambiguous and the old
    fitted = {r["accelerator"] for r in _module(CHECKS / "llamacpp-cuda/build_rows.py").rows()}
    assert not fitted & {r["accelerator"] for r in built}
    for chip in ("H100 80 GB", "RTX PRO 6000 Blackwell", "RTX 3060", "RTX 3080", "RTX 5070", "Tesla V100"):
        assert chip not in build.GPUS
    # "pp512 2767.1 tokens/sec" on the A30 without flash attention: 512 tokens in 185.03 ms
    rows = {r["id"]: r for r in tomllib.loads((CHECKS / "llamacpp-sm/rows.toml").read_text())["result"]}
    pp = rows["llamacpp-cuda-llama-2-7b-q4_0-a30-pp512-fa0"]
    assert '"value": 2767.1' in (CHECKS / "llamacpp-sm/table.md").read_text()
    assert pp["value"] == pytest.approx(512 / 2767.1) and pp["engine"].endswith("prompt processing)")
    tg = rows["llamacpp-cuda-llama-2-7b-q4_0-a30-tg128-fa0"]
    assert tg["engine"].endswith("CUDA-graph decode loop)") and (tg["input_tokens"], tg["output_tokens"]) == (1, 128)


def test_the_third_judges_are_the_notebooks_by_the_rule():
    build = _module(CHECKS / "llamacpp-xd/build_rows.py")
    built = build.rows()
    assert build.TABLE.toml(built) in (CHECKS / "llamacpp-xd/rows.toml").read_text()
    # nine notebooks × Llama 3 8B's four tg tests, and 70B's four on the seven 40-GB-and-up cards
    assert len(built) == 9 * 4 + 7 * 4 == 64 and {r["accelerator"] for r in built} == set(build.NOTEBOOKS.values())
    assert {r["weights_dtype"] for r in built} == {"q4_k_m"} and {r["output_tokens"] for r in built} == {
        512, 1024, 4096, 8192}
    assert all(r["engine"].endswith("CUDA-graph decode loop)") for r in built)
    table = (CHECKS / "llamacpp-xd/table.md").read_text()
    assert "F16" not in table and " pp" not in table
    # "tg 512 135.04 ± 0.45" of Llama 3 8B Q4_K_M on the A100-SXM4-80GB (build d11afd66, 2837)
    row = next(r for r in built if r["id"] == "llamacpp-xd-llama-3.1-8b-q4_k_m-a100-80gb-tg512")
    assert "| tg 512     |    135.04 ± 0.45 |" in table and row["value"] == 135.04
    assert row["engine"] == "llama.cpp (CUDA build d11afd66, CUDA-graph decode loop)" and row["input_tokens"] == 1


def test_the_fits_are_the_grids_least_and_the_rule_decides():
    fit = _module(CHECKS / "fit_session34.py")
    summary = _module(CHECKS / "session34.py")
    stream, mmq = fit.stream_scores(), fit.mmq_scores()
    assert fit.least(stream) == summary.STREAM_BYTES_PER_S == 9.0e9
    assert fit.least(mmq) == summary.MMQ_OPS_PER_CYCLE == 520.0
    cycle = fit.cycle_scores()
    assert fit.least(cycle) == summary.STREAM_BYTES_PER_CYCLE == 5.5
    assert stream[9.0e9][0] < stream[0.0][0] and mmq[520.0][0] < mmq[0.0][0] and cycle[5.5][0] < cycle[0.0][0]
    assert len(fit.fit_rows("tokens_per_s_per_user", ("llamacpp-cuda", "llamacpp-sm"))) == 6 + 30
    docs = _text("docs/validation.md")  # the docs quote each fit against the model without it
    assert f"MSLE {stream[0.0][0]:.4f} → {stream[9.0e9][0]:.4f}" in docs
    assert f"MSLE {mmq[0.0][0]:.4f} → {mmq[520.0][0]:.4f}" in docs
    assert f"MSLE {cycle[0.0][0]:.4f} → {cycle[5.5][0]:.4f}" in docs
    saved = json.loads((CHECKS / "session34.json").read_text())["judge"]
    tg, pp = summary.TESTS["tokens_per_s_per_user"], summary.TESTS["time_to_first_token_s"]
    # A: higher on the tg128 rows than the model without it: not shipped; B: lower on the pp512 rows: shipped
    assert saved["A"][tg]["median_abs_error"] > saved["without"][tg]["median_abs_error"]
    assert saved["B"][pp]["median_abs_error"] < saved["without"][pp]["median_abs_error"]
    assert saved["decision"] == {"A": "does not ship", "B": "ships"}
    report = json.loads((CHECKS / "llamacpp-sm/report.json").read_text())
    assert report["decision"] == saved["decision"]
    # the third: A2 lower on all its judging rows, the same on the GDDR parts' rows: shipped
    third = json.loads((CHECKS / "session34.json").read_text())["third_judge"]
    assert third["A2"]["all"]["median_abs_error"] < third["without"]["all"]["median_abs_error"]
    assert third["A2"]["GDDR"]["median_abs_error"] <= third["without"]["GDDR"]["median_abs_error"]
    assert third["decision"] == "ships" == json.loads((CHECKS / "llamacpp-xd/report.json").read_text())["decision"]
    # what shipped: B's rate and A2's stream in the curves, A's bound off; the dated profiles have none
    shipped = Efficiency.shipped().kernels
    assert (shipped.ggml_mmq_ops_per_cycle, shipped.ggml_sm_stream_bytes_per_s,
            shipped.ggml_sm_stream_bytes_per_cycle) == (520.0, 0.0, 5.5)
    for name, profile in PROFILES.items():
        if name.startswith("kernel-") and name != "kernel-2026-12-05c":  # that one is session 34's final model
            k = profile().kernels
            assert k.ggml_mmq_ops_per_cycle == k.ggml_sm_stream_bytes_per_cycle == 0.0, name
    k = PROFILES["kernel-2026-12-05c"]().kernels
    assert (k.ggml_mmq_ops_per_cycle, k.ggml_sm_stream_bytes_per_cycle) == (520.0, 5.5)


def test_the_reports_are_the_predictions():
    summary = _module(CHECKS / "session34.py")
    saved = json.loads((CHECKS / "session34.json").read_text())
    for name, eff in summary.models().items():
        fresh = summary.REPORT.predict(CHECKS / "llamacpp-sm/rows.toml", eff, summary.judge_of)
        _same(saved["judge"][name], fresh["groups"])
        _same(json.loads((CHECKS / "llamacpp-sm/report.json").read_text())[name]["groups"], fresh["groups"])
    for name, eff in summary.third_models().items():
        fresh = summary.REPORT.predict(CHECKS / "llamacpp-xd/rows.toml", eff, summary.third_judge_of)
        _same(saved["third_judge"][name], fresh["groups"])
        _same(json.loads((CHECKS / "llamacpp-xd/report.json").read_text())[name]["groups"], fresh["groups"])
    rows = summary.never_seen_rows(a2_ships=True)
    _same(saved["today"], summary.S33.pooled(summary.TODAY(), rows))  # session 34's final model
    # session 33's pool of 680 less the 12 scoreboard rows the fits used, plus the fifteen GPUs' 30 prompt rows (their
    # 30 decode rows fitted A2) and XiongjieDai's 64
    assert saved["today"]["all"]["count"] == len(rows) == 680 - 12 + 30 + 64 == 762
    assert not any(r["id"].startswith("llamacpp-cuda-llama-2-7b-q4_0-a100") for r in rows)
    assert not any(r["metric"] == "tokens_per_s_per_user" and r["id"].startswith("llamacpp-cuda") for r in rows)


def test_the_mmq_rate_by_hand():
    """A 512-token prompt of Llama 2 7B Q4_0 on the RTX 5090: the body's 2·512·6,476,271,616 FLOP at 170 SMs ×
    2.407 GHz × 520 operations per cycle = 212.78 TFLOP/s is 31.17 ms; the LM head (one position) stays on the
    tensor-core curve."""
    from kokuban.core.roofline import ggml_per_sm, lm_head_time_s, prefill
    from kokuban.specs.deployment import Deployment

    m = load_model("llama-2-7b")
    assert m.flops_per_token == 2 * (L7_BODY + L7_NORMS + L7_HEAD)
    dep = Deployment.make(m, load_accelerator("rtx-5090"), 1, weights_dtype="q4_0", kv_dtype="fp16",
                          efficiency=Efficiency.shipped())
    rate = 170 * 2.407e9 * 520  # 2.12778e14 FLOP/s
    assert ggml_per_sm(dep) == (pytest.approx(170 * 5.5 * 2.407e9), pytest.approx(rate))  # MMVQ: 2.25e12 B/s
    step = prefill(dep, 1, 512)
    body_s = 2 * 512 * (L7_BODY + L7_NORMS) / rate
    assert body_s == pytest.approx(0.031166, rel=1e-4)
    assert float(step.compute_s - step.attn_compute_s) == pytest.approx(body_s + lm_head_time_s(dep))
    # the same prompt at 16 bits, on a GPU whose SMs the catalog does not state (L4), or under the scalar set: no bound
    for weights, gpu, eff in (("fp16", "rtx-5090", Efficiency.shipped()), ("q4_0", "l4", Efficiency.shipped()),
                              ("q4_0", "rtx-5090", Efficiency.scalar())):
        other = Deployment.make(m, load_accelerator(gpu), 1, weights_dtype=weights, kv_dtype="fp16", efficiency=eff)
        assert ggml_per_sm(other) == (0.0, 0.0), (weights, gpu)


def test_the_stream_bound_by_hand():
    """A2, shipped: Llama 2 7B Q4_0's weights on the A30 at 56 SMs × 5.5 B/cycle × 1.44 GHz = 443.5 GB/s, slower than
    0.9 of its 933 GB/s; on the RTX 5090, 170 × 5.5 × 2.407 GHz = 2.25 TB/s, faster than 0.9 of its 1.79 TB/s, so
    its memory decides. A (not shipped) set in an efficiency file adds 9.0e9 B/s an SM: on the A30 56 × 16.92e9 =
    947 GB/s, and its memory decides again."""
    from kokuban.core.roofline import weight_bytes_read_per_gpu, weight_read_s
    from kokuban.specs.deployment import Deployment

    def weights_s(gpu: str, eff: Efficiency) -> tuple[float, float]:
        dep = Deployment.make(load_model("llama-2-7b"), load_accelerator(gpu), 1, weights_dtype="q4_0",
                              kv_dtype="fp16", efficiency=eff)
        return float(weight_read_s(dep, 1)), float(weight_bytes_read_per_gpu(dep, 1))

    t, read = weights_s("a30", Efficiency.shipped())
    assert 56 * 5.5 * 1.44e9 < 0.9 * 933e9 and t == pytest.approx(read / (56 * 5.5 * 1.44e9))
    t, read = weights_s("rtx-5090", Efficiency.shipped())
    memory = Efficiency.shipped().memory  # 0.9
    assert 170 * 5.5 * 2.407e9 > memory * 1.792e12 and t == pytest.approx(read / (memory * 1.792e12))
    t, read = weights_s("a30", Efficiency.shipped().with_kernels(ggml_sm_stream_bytes_per_s=9.0e9))
    assert 56 * (9.0e9 + 5.5 * 1.44e9) > memory * 933e9 and t == pytest.approx(read / (memory * 933e9))


def test_the_published_set_does_not_move():
    """The published set's llama.cpp rows (2023-10, 2024-01) name neither mark: every published row predicts the same
    with and without the shipped MMQ rate."""
    from kokuban.validation.accuracy import load_published, predict_row

    before, after = PROFILES["kernel-2026-12-05b"](), PROFILES["kernel-2026-12-05c"]()  # session 34's change alone
    for row in load_published():
        assert predict_row(row, after).predicted == predict_row(row, before).predicted, row.id


def test_the_blackboard_shows_the_mmq_rate(capsys):
    from kokuban.cli import main

    assert main(["estimate", "llama-2-7b", "--gpu", "rtx-5090", "--weights", "q4_0", "--json"]) == 0
    hw = json.loads(capsys.readouterr().out)["hardware"]
    assert hw["sm_count"] == 170 and hw["ggml_mmvq_bytes_per_s"] == pytest.approx(170 * 5.5 * 2.407e9)
    assert hw["ggml_mmq_flops_per_s"] == pytest.approx(170 * 2.407e9 * 520)
    assert main(["estimate", "llama-2-7b", "--gpu", "rtx-5090", "--weights", "q4_0"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "MMQ (prompts) 170 SMs × 2.41 GHz × 520 ops/cycle = 213 TFLOP/s" in out
    assert "MMVQ (decode) at most 170 SMs × (5.5 B/cycle × 2.41 GHz) = 2.25 TB/s" in out
    assert main(["estimate", "llama-2-7b", "--gpu", "a100", "--weights", "q4_0"]) == 0
    assert "MMVQ (decode) at most 108 SMs × (5.5 B/cycle × 1.41 GHz) = 838 GB/s" in " ".join(
        capsys.readouterr().out.split())  # the figure docs/validation.md quotes
    assert main(["estimate", "llama-2-7b", "--gpu", "rtx-5090", "--weights", "fp16"]) == 0
    assert "MMQ" not in capsys.readouterr().out


def test_a_negative_sm_count_is_refused():
    from kokuban.errors import KokubanError
    from kokuban.specs.hardware import Accelerator

    entry = {"id": "x", "memory_bytes": 1e9, "memory_bandwidth_bytes_per_s": 1e11, "flops_bf16": 1e14, "sm_count": -1}
    with pytest.raises(KokubanError, match="sm_count must be a finite number ≥ 0"):
        Accelerator.from_dict(entry)


def test_the_docs_quote_the_reports():
    saved = json.loads((CHECKS / "session34.json").read_text())
    docs, readme = _text("docs/validation.md"), _text("README.md")
    today = saved["today"]
    t = {k: _pct(v["median_abs_error"]) for k, v in today.items()}
    lo, hi = today["all"]["median_abs_error_ci"]
    head = f"{t['all']} % median ({_pct(lo)}–{_pct(hi)} %), p90 {_pct(today['all']['p90_abs_error'])} %"
    assert head in docs and head in readme
    for key in ("dtype q4_0", "dtype q4_k_m", "workload first token", "workload decode batch 1", "workload multi-gpu"):
        assert f"{key.split(' ', 1)[1]} {t[key]} %" in docs, key
    third = saved["third_judge"]
    for name, key in (("A2", "all"), ("without", "all"), ("A2", "HBM"), ("without", "HBM"), ("A2", "GDDR")):
        assert _pct(third[name][key]["median_abs_error"]) + " %" in docs, (name, key)
    assert f"(+{_pct(third['A2']['HBM']['median_signed_error'])} % signed)" in docs
    assert f"The H100 PCIe reads +{_pct(third['A2']['gpu h100-pcie']['median_signed_error'])} %" in docs
    # the judge table's families, with / without: B on the prompts, A on decode; the A30 and the RTX 5070 Ti quoted
    j, pp, tg = saved["judge"], "pp512 (first token)", "tg128 (decode, batch 1)"
    for name, test in (("B", pp), ("A", tg)):
        for family in ("Ampere GA10x", "Ada", "Blackwell"):
            w, wo = (_pct(j[m][f"{test}, {family}"]["median_abs_error"]) for m in (name, "without"))
            assert f"{family} {w} / {wo} %" in docs, (name, family)
        w, wo = (_pct(j[m][f"{test}, GA100 (HBM2)"]["median_abs_error"]) for m in (name, "without"))
        assert f"A30 {w} / {wo} %" in docs, name
    a30, ti = f"{tg}, gpu a30", f"{tg}, gpu rtx-5070-ti"
    assert f"({_pct(j['without'][a30]['median_abs_error'])} → {_pct(j['A'][a30]['median_abs_error'])} %)" in docs
    assert (f"RTX 5070 Ti {_pct(j['without'][ti]['median_abs_error'])} → {_pct(j['A'][ti]['median_abs_error'])} %"
            in docs)
    ga10x = _pct(j["without"][f"{tg}, Ampere GA10x"]["median_signed_error"])
    assert f"Ampere GA10x cards' Q4_0 decode rows of 2025 read +{ga10x} %" in docs
    # the README's session-34 paragraph: each judgement's with → without, and the HBM parts'
    assert (f"{_pct(j['without'][pp]['median_abs_error'])} % → {_pct(j['B'][pp]['median_abs_error'])} % median" in
            readme)
    assert (f"{_pct(third['without']['all']['median_abs_error'])} % → {_pct(third['A2']['all']['median_abs_error'])} % "
            f"(the HBM parts {_pct(third['without']['HBM']['median_abs_error'])} % → "
            f"{_pct(third['A2']['HBM']['median_abs_error'])} %)") in readme
    j = saved["judge"]
    for name, test in (("B", pp), ("without", pp), ("A", tg), ("without", tg)):
        assert _pct(j[name][test]["median_abs_error"]) + " %" in docs, (name, test)
