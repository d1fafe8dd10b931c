"""`kokuban accuracy`'s report: bootstrap intervals, workloads/dtypes/engines, the worst rows, and `--file`."""

from __future__ import annotations

import json
import tomllib
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from json_envelope import result_of

from kokuban.cli import main
from kokuban.errors import KokubanError
from kokuban.present.jsonout import to_json
from kokuban.specs.hardware import Efficiency
from kokuban.usecases.validation import AccuracyRequest, read_measurements, run_accuracy
from kokuban.validation.accuracy import (
    BOOTSTRAP_LEVEL,
    BOOTSTRAP_RESAMPLES,
    WORST_ROWS,
    accuracy,
    bootstrap_median_ci,
    engine_family,
    load_published,
    predict_row,
)

HEADER = "model,gpu,gpus,layout,weights,batch,prompt,output,metric,value,unit,engine,source"

ROOT = Path(__file__).resolve().parents[1]
#: the commit of TensorRT-LLM's v0.6.1 performance document, in the source of each of its 29 rows (0.5 and 0.6.1 tables)
TRTLLM_061_DOC = "77d24b5fa178f11ed7fafdd9833b7245e075f721"


def _new_rows():
    """The 29 rows of TensorRT-LLM 0.5/0.6.1's tables, found by their source."""
    return [r for r in load_published() if TRTLLM_061_DOC in r.source]


# ---- the bootstrap, by hand ------------------------------------------------------------------------------
def test_bootstrap_of_three_errors_by_hand():
    """Resampling [0.1, 0.2, 0.3] (n = 3, odd): each resample's median is one of the three values.

    P(median = 0.1) = P(at least two of three draws are 0.1) = 3·(1/3)²·(2/3) + (1/3)³ = 7/27 ≈ 0.259;
    likewise P(0.3) = 7/27, P(0.2) = 13/27 ≈ 0.481. So the 2.5th and 97.5th percentiles of the resampled
    medians fall inside the 0.1 and 0.3 masses: the 95 % interval is (0.1, 0.3). A 40 % interval takes the
    30th and 70th percentiles, both inside the 0.2 mass (7/27 = 0.259 < 0.30 and 0.70 < 20/27 = 0.741): (0.2, 0.2).
    With 10,000 resamples the share of 0.1-medians is 0.259 ± 0.004 (one s.d.), 9 s.d. from 0.30; the seed is
    fixed, so the draw is the same on every run."""
    assert bootstrap_median_ci([0.1, 0.2, 0.3]) == pytest.approx((0.1, 0.3))
    assert bootstrap_median_ci([0.1, 0.2, 0.3], level=0.4) == pytest.approx((0.2, 0.2))
    assert (BOOTSTRAP_RESAMPLES, BOOTSTRAP_LEVEL) == (10_000, 0.95)


def test_bootstrap_degenerate_and_deterministic():
    assert bootstrap_median_ci([0.25]) == (0.25, 0.25)  # one row: every resample is that row
    assert bootstrap_median_ci([0.4] * 7) == pytest.approx((0.4, 0.4))
    errors = [0.05, 0.3, 0.12, 0.7, 0.2, 0.01]
    assert bootstrap_median_ci(errors) == bootstrap_median_ci(list(errors))  # same seed, same interval
    lo, hi = bootstrap_median_ci(errors)
    assert min(errors) <= lo <= np.median(errors) <= hi <= max(errors)
    with pytest.raises(KokubanError, match="errors"):
        bootstrap_median_ci([])
    with pytest.raises(KokubanError, match="level"):
        bootstrap_median_ci(errors, level=1.0)


def test_engine_family():
    assert engine_family("TensorRT-LLM 1.0 (PyTorch backend, trtllm-bench)") == "TensorRT-LLM"
    assert engine_family("vLLM 0.9.0.1 (rocm/vllm:rocm6.4.1_vllm_0.9.0.1_20250605)") == "vLLM"
    assert engine_family("vLLM (ROCm), benchmark_latency.py") == "vLLM"
    assert engine_family("MLC LLM (TVM, Aug 2023)") == "MLC LLM"
    assert engine_family("gpt-fast (PyTorch torch.compile)") == "gpt-fast"
    assert engine_family("") == ""


# ---- the report on the published rows --------------------------------------------------------------------
OLD_ROW_KEYS = {"id", "metric", "measured", "predicted", "error", "regime", "batch_per_replica", "replicas",
                "tp_or_ep", "input_tokens", "output_tokens", "lengths_assumed"}
NEW_ROW_KEYS = {"signed_error", "engine", "weights_dtype", "workloads", "terms", "floor", "beyond_floor", "withdrawn"}


def test_json_keeps_its_keys_and_adds_the_listed_ones():
    """The documented `kokuban accuracy --json` keys stay; new ones are exactly these."""
    data = json.loads(to_json(run_accuracy(AccuracyRequest()).as_dict()))
    assert set(data) == {"rows", "summary", "efficiency", "worst", "source", "beyond_floor"}
    assert all(set(r) == OLD_ROW_KEYS | NEW_ROW_KEYS for r in data["rows"])
    s = data["summary"]
    assert set(s) == {"count", "median_abs_error", "p90_abs_error", "max_abs_error", "median_signed_error",
                      "by_regime", "by_metric", "median_abs_error_ci", "by_workload", "by_weights", "by_engine",
                      "bootstrap", "without_withdrawn"}
    assert set(s["without_withdrawn"]) == {"count", "median_abs_error", "p90_abs_error", "max_abs_error",
                                           "median_signed_error", "median_abs_error_ci", "bootstrap"}
    assert s["bootstrap"] == {"statistic": "median_abs_error", "method": "percentile", "resamples": 10_000,
                              "level": 0.95, "seed": 0}
    assert set(s["by_workload"]) == {"decode_batch_1", "throughput", "prefill", "moe", "multi_gpu"}


def test_groups_are_the_rows_they_name():
    """Each group's count and median are those of the rows carrying its label (computed here from the rows)."""
    acc = accuracy()
    s = acc.summary
    for name, group in s["by_workload"].items():
        err = [p.error for p in acc.predictions if name in p.workloads]
        assert group["count"] == len(err) and group["median_abs_error"] == pytest.approx(np.median(err))
        assert tuple(group["median_abs_error_ci"]) == pytest.approx(bootstrap_median_ci(err))
    # The counts read straight from the data file, by rules written here rather than the code's grouping:
    # per-user speed rows at batch 1 on one replica (every such row in the set is single-stream); throughput
    # rows; fp8 weights; TensorRT-LLM of any version; MoE = the catalog models with routed experts.
    rows = tomllib.loads((ROOT / "src/kokuban/data/published_results.toml").read_text())["result"]
    per_user = [r for r in rows if r["metric"] == "tokens_per_s_per_user" and r["batch"] == 1]
    throughput = [r for r in rows if r["metric"] == "output_tokens_per_s"]
    fp8 = [r for r in rows if r["weights_dtype"] == "fp8"]
    trtllm = [r for r in rows if r["engine"].startswith("TensorRT-LLM")]
    moe = [r for r in rows if r["model"].startswith(("qwen3-30b-a3b", "qwen3-235b", "deepseek", "mixtral", "gpt-oss"))]
    assert s["by_workload"]["decode_batch_1"]["count"] == len(per_user)
    assert s["by_workload"]["throughput"]["count"] == len(throughput)
    assert s["by_weights"]["fp8"]["count"] == len(fp8) and s["by_engine"]["TensorRT-LLM"]["count"] == len(trtllm)
    assert s["by_workload"]["moe"]["count"] == len(moe)


def test_intervals_of_the_shipped_step_model():
    """The shipped step model: all 196 rows 8.9 % median |error| (95 % interval 7.7–10.7 %); by workload decode
    batch 1 9.5 % (4.8–12.4 %), throughput 8.4 % (6.6–10.4 %), multi-GPU
    12.8 % (8.1–15.8 %), MoE 21.2 % (12.8–37.1 %); vLLM 5.6 % (5 rows), llama.cpp 10.3 % (6). The scalar set: 24.9 %
    (20.7–28.4 %)."""
    s = accuracy().summary

    def q(g):
        return round(100 * g["median_abs_error"], 1), *(round(100 * x, 1) for x in g["median_abs_error_ci"])

    assert q(s) == (8.9, 7.7, 10.7)
    w = s["by_workload"]
    assert [q(w[k]) for k in ("decode_batch_1", "throughput", "multi_gpu", "moe")] == [
        (9.5, 4.8, 12.4), (8.4, 6.6, 10.4), (12.8, 8.1, 15.8), (21.2, 12.8, 37.1)]
    assert (s["by_engine"]["vLLM"]["count"], q(s["by_engine"]["vLLM"])[0]) == (5, 5.6)
    assert (s["by_engine"]["llama.cpp"]["count"], q(s["by_engine"]["llama.cpp"])[0]) == (6, 10.3)
    assert q(accuracy(Efficiency.scalar()).summary) == (24.9, 20.7, 28.4)


def test_held_out_intervals_of_the_scalar_fits(v4_non_torch_bytes):
    """Seed 0's held-out rows (26 of the 88 rows before the llm-perf-bench rows; 29 of the 100 before TensorRT-LLM
    0.9's), median |error| and its 95 % interval: textbook 27.4 % (13.7–42.3 %; 33.0 %, 15.5–39.6 %), the scalar fit
    0.742 / 0.835 / 0.271 / 2.74 ms 28.0 % (13.1–38.1 %), the scalar fit 0.465 / 0.565 / 0.374 / 0.634 ms
    17.6 % (13.9–27.6 %): the interval of the held-out rows only, as
    `kokuban calibrate --source published` prints it (the fit itself is too slow for a unit test)."""
    from kokuban.validation.calibrate import holdout_mask

    def held(eff, old_rows=False):  # the 100 rows before TensorRT-LLM 0.9's
        eff = replace(eff, engine_non_torch_bytes=v4_non_torch_bytes)  # TensorRT-LLM's pool as those figures had it
        preds = [p for p in accuracy(eff).predictions if not p.id.startswith("trtllm09-")]
        keep = np.array([not (old_rows and p.id.startswith("perfbench-")) for p in preds])
        err = np.array([p.error for p in preds])[holdout_mask([p.id for p in preds]) & keep]
        return len(err), round(100 * np.median(err), 1), *(round(100 * x, 1) for x in bootstrap_median_ci(err))

    fitted = Efficiency().updated(compute=0.742, memory=0.835, interconnect=0.271, step_overhead_s=2.74e-3)
    earlier = Efficiency().updated(compute=0.465, memory=0.565, interconnect=0.374, step_overhead_s=0.634e-3)
    # the 88 rows without the 12 llm-perf-bench rows, then all 100
    assert held(Efficiency.textbook(), old_rows=True) == (26, 27.4, 13.7, 42.3)
    assert held(fitted, old_rows=True) == (26, 28.0, 13.1, 38.1)
    assert held(earlier, old_rows=True) == (26, 17.6, 13.9, 27.6)
    assert held(Efficiency.textbook()) == (29, 33.0, 15.5, 39.6)
    assert held(fitted) == (29, 26.7, 11.3, 36.3)
    assert held(earlier) == (29, 17.5, 12.7, 27.6)


def test_calibrate_held_out_intervals_are_of_held_out_rows_only():
    """A cheap synthetic fit: predicted = measured·(compute ÷ 0.5). The held-out summaries carry the interval
    of the held-out rows' errors alone; the training summaries carry none."""
    from kokuban.validation.calibrate import calibrate, holdout_mask

    ids = [f"r{i}" for i in range(30)]
    measured = np.linspace(1.0, 3.0, 30) * (1 + 0.1 * np.sin(np.arange(30)))
    skew = 1 + 0.05 * np.cos(np.arange(30))

    def predict(eff):
        return measured * skew * eff.compute / 0.5, np.array(["weights"] * 30)

    cal = calibrate("synthetic", ids, measured, predict, ("compute",), start=Efficiency.textbook())
    held = holdout_mask(ids)
    for summary, eff in ((cal.holdout_before, Efficiency.textbook()), (cal.holdout_after, cal.after)):
        err = np.abs(predict(eff)[0] - measured)[held] / measured[held]
        assert tuple(summary["median_abs_error_ci"]) == pytest.approx(bootstrap_median_ci(err))
        assert tuple(summary["by_regime"]["weights"]["median_abs_error_ci"]) == pytest.approx(bootstrap_median_ci(err))
    assert "median_abs_error_ci" not in cal.train_after


def test_worst_rows_are_the_largest_errors_in_order(step_v3):
    acc = accuracy()
    worst = acc.worst
    assert len(worst) == WORST_ROWS == 10
    errors = [p.error for p in worst]
    assert errors == sorted(errors, reverse=True)
    assert min(errors) >= max(p.error for p in acc.predictions if p not in worst)
    assert acc.as_dict()["worst"] == [p.as_dict() for p in worst]
    # the shipped step model's worst: NVIDIA's Llama-2-70B fp8 run on one H200 without XQA,
    # predicted 2.15× too fast, compute-bound; then Mixtral 8x7B fp8 on two H200s in TensorRT-LLM 0.9 at batch 1,024
    assert worst[0].id == "trtllm-noxqa-h200-llama2-70b-fp8-tp1-b192-128-2048" and worst[0].terms["bound"] == "compute"
    assert worst[1].id == "trtllm09-mixtral-8x7b-fp8-tp2-h200-b1024-128-128" and worst[1].terms["phase"] == "decode"
    places = {p.id: i + 1 for i, p in enumerate(worst)}
    mix = "trtllm09-mixtral-8x7b-fp8-tp2-"
    assert [places[f"{mix}{k}"] for k in ("h200-b1024-128-128", "h200-b64-2048-128", "h100-b512-128-128",
                                         "h100-b64-2048-128")] == [2, 5, 6, 9]
    # the barrier wait makes the A100 Mixtral fp16 rows too slow: its first token at 128 tokens third
    assert worst[2].id == "trtllm09-ttft-mixtral-8x7b-fp16-tp2-a100-128" and worst[2].signed_error < -0.7
    named = ("trtllm09-ttft-mixtral-8x7b-fp8-tp4-l40s-128", "trtllm10-qwen3-235b-h100-fp8-tp8-128-2048",
             "trtllm05-h200-llama2-70b-fp8-tp2-b512-128-2048", "trtllm09-ttft-mixtral-8x7b-fp16-tp2-a100-128",
             "trtllm09-mixtral-8x7b-fp16-tp2-a100-b32-2048-2048")
    assert [places[k] for k in named] == [8, 4, 10, 3, 7]
    assert "oracle-llama31-405b-mi300x-fp8-bs1-128-128" not in places  # out of the ten with the MI300X's weight stream
    assert [k for k, i in places.items() if worst[i - 1].withdrawn] == [worst[i].id for i in (1, 4, 5, 7, 8)]
    # step-v3-loop's: the Mixtral row first, then Qwen3-235B fp8 on eight H100s in TensorRT-LLM 1.0
    before = accuracy(step_v3("step-v3-loop")).worst
    assert before[0].id == "trtllm09-mixtral-8x7b-fp8-tp2-h200-b1024-128-128"
    assert before[1].id == "trtllm10-qwen3-235b-h100-fp8-tp8-128-2048" and before[1].terms["phase"] == "inflight"


def test_terms_of_a_row_by_hand():
    """llama-2-7b fp16 on an RTX 4090 at batch 1 (the rule of test_validate_accuracy): the weights term is
    13,214,687,232 B ÷ (bandwidth · 0.8) and the KV term 34,078,720 B ÷ (bandwidth · 0.8), textbook fractions;
    no communication on one GPU, no fixed overhead in the textbook set; the decode step decides.

    Weights read per step (Llama-2-7B: 32 layers, hidden 4096, MLP 11008, vocab 32000; the input embedding is a
    lookup, not a read): per layer 4·4096² + 3·4096·11008 + 2·4096 (norms) = 202,383,360; × 32 = 6,476,267,520;
    + LM head 32000·4096 = 131,072,000 + final norm 4096 → 6,607,343,616 weights × 2 B = 13,214,687,232 B.
    KV read: 2 (K, V) · 32 layers · 4096 · 2 B = 524,288 B per token, at the mid-generation context of tg128,
    which starts from an empty cache (a 1-token prompt in the row), 1 + 128/2 = 65 tokens: 34,078,720 B."""
    from kokuban.specs.catalog import load_accelerator

    row = next(r for r in load_published() if r.id == "llamacpp-llama2-7b-f16-rtx4090-tg128")
    t = predict_row(row, Efficiency.textbook()).terms
    bw = load_accelerator("rtx-4090").memory_bandwidth_bytes_per_s
    assert t["phase"] == "decode" and t["bound"] == "weights"
    assert t["weights_s"] == pytest.approx(13_214_687_232 / (bw * 0.8), rel=1e-6)
    assert t["kv_s"] == pytest.approx(34_078_720 / (bw * 0.8), rel=1e-6)
    assert t["comm_s"] == 0 and t["overhead_s"] == 0
    # overlap 1 and compute below memory in both kernels: step = weights + KV
    assert t["step_time_s"] == pytest.approx(t["weights_s"] + t["kv_s"], rel=1e-9)


def test_time_to_first_token_row_by_hand():
    """TensorRT-LLM 0.5's A100 table: Llama-2-7B fp16, batch 1, 2,048-token prompt, 133 ms to the first token.
    Predicted (textbook fractions: compute 0.6 of 312 TFLOP/s, memory 0.8, no overhead) as one prefill step:

    multiplies: 2 FLOPs × (2,048 tokens × (6,476,267,520 layer weights + 4,096 final norm) + 131,072,000 LM head for
    the last token only) = 26,527,070,683,136; attention: 32 layers × 2,048·2,049/2 causal pairs × 2·32
    heads·(128 + 128) = 1,100,048,498,688. Both compute-bound (the 13.2 GB weight read takes 8.1 ms at 0.8 of
    2.04 TB/s, far under 142 ms of multiplies), so the step is their sum ÷ (312e12 · 0.6) = 0.1476 s: 11 % above
    the measured 0.133 s."""
    row = next(r for r in load_published() if r.id == "trtllm05-ttft-llama2-7b-fp16-tp1-a100-80gb-2048")
    assert (row.metric, row.value, row.batch, row.input_tokens) == ("time_to_first_token_s", 0.133, 1, 2048)
    multiplies = 2 * (2048 * (6_476_267_520 + 4_096) + 131_072_000)
    attention = 32 * (2048 * 2049 // 2) * 2 * 32 * 256
    want = (multiplies + attention) / (312e12 * 0.6)
    p = predict_row(row, Efficiency.textbook())
    assert p.predicted == pytest.approx(want, rel=1e-9) and p.terms["bound"] == "compute"
    assert round(want, 4) == 0.1476 and p.workloads == ("prefill",) and p.error == pytest.approx(want / 0.133 - 1)
    # a longer predicted time is a slower prediction: the signed error (> 0 = too fast) is negative here
    assert p.signed_error == pytest.approx(-(want / 0.133 - 1))


def test_ttft_rows_in_a_users_file(tmp_path):
    """A CSV time to first token in ms is stored in seconds; ms/s units and the TTFT metric go together only."""
    ok = _csv(tmp_path, "llama-2-7b,a100-80gb,1,tp,fp16,1,2048,1,time_to_first_token_s,133,ms,TensorRT-LLM 0.5,x")
    (row,) = read_measurements(ok)
    assert (row.metric, row.value, row.per_gpu) == ("time_to_first_token_s", pytest.approx(0.133), False)
    for line in ("llama-2-7b,a100-80gb,1,tp,fp16,1,2048,1,time_to_first_token_s,133,tokens/s,,x",
                 "llama-2-7b,a100-80gb,1,tp,fp16,1,2048,1,output_tokens_per_s,133,ms,,x"):
        with pytest.raises(KokubanError, match="row 2: unit: a time to first token is in s or ms"):
            read_measurements(_csv(tmp_path, line))
    for metric in ("tokens_per_s_per_user", "time_to_first_token_s"):  # only a whole-deployment rate is split per GPU
        with pytest.raises(KokubanError, match="row 2: unit: tokens/s/gpu is for metric output_tokens_per_s only"):
            read_measurements(_csv(tmp_path, f"llama-2-7b,a100-80gb,2,tp,fp16,1,128,128,{metric},50,tokens/s/gpu,,x"))
    toml_path = tmp_path / "per_gpu.toml"
    toml_path.write_text('[[result]]\nid = "t"\nmodel = "llama-2-7b"\naccelerator = "a100-80gb"\nnum_gpus = 1\n'
                         'weights_dtype = "fp16"\nmetric = "time_to_first_token_s"\nvalue = 0.1\nper_gpu = true\n'
                         'source = "x"\n')
    with pytest.raises(KokubanError, match="result 1: per_gpu: only an output_tokens_per_s row is quoted per GPU"):
        read_measurements(str(toml_path))


# ---- --file ----------------------------------------------------------------------------------------------
def _csv(tmp_path, *lines: str, header: str = HEADER):
    path = tmp_path / "my.csv"
    path.write_text("\n".join([header, *lines]) + "\n")
    return str(path)


def test_file_json_is_the_use_case(capsys, tmp_path):
    path = _csv(tmp_path, "llama-3.1-8b,h100-sxm,1,tp,bf16,1,512,256,tokens_per_s_per_user,7.5,ms/token,vLLM 0.11,lab",
                "llama-3.1-70b,h100-sxm,4,tp,fp8,64,1000,500,output_tokens_per_s,2500,tokens/s,,my run")
    assert main(["accuracy", "--file", path, "--json"]) == 0
    data = result_of(capsys.readouterr().out)
    assert data == json.loads(to_json(run_accuracy(AccuracyRequest(file=path)).as_dict()))
    assert data["source"] == path and len(data["rows"]) == 2 and len(data["worst"]) == 2
    assert data["rows"][0]["measured"] == pytest.approx(1 / 7.5e-3)  # 7.5 ms/token = 133.3 tokens/s
    assert data["rows"][0]["id"] == f"{path}:2"  # no id column: FILE:line
    assert set(data["summary"]["by_engine"]) == {"vLLM"}  # the row without an engine is in no engine group
    assert main(["accuracy", "--file", path]) == 0  # the tables print
    assert "worst rows" in capsys.readouterr().out


def test_a_csv_row_predicts_as_the_published_row_it_copies(tmp_path):
    """The bundled llama.cpp row (llama-2-7b f16, RTX 4090, batch 1, 1-token prompt, 128 output, 61.0 tok/s)
    written as a CSV row, and as a TOML row in the published schema, predicts the same."""
    bundled = next(r for r in load_published() if r.id == "llamacpp-llama2-7b-f16-rtx4090-tg128")
    csv_path = _csv(tmp_path, "llama-2-7b,rtx-4090,1,tp,fp16,1,1,128,tokens_per_s_per_user,61.0,tokens/s,llama.cpp,x")
    toml_path = tmp_path / "my.toml"
    toml_path.write_text('[[result]]\nid = "mine"\nmodel = "llama-2-7b"\naccelerator = "rtx-4090"\nnum_gpus = 1\n'
                         'weights_dtype = "fp16"\nkv_dtype = "fp16"\nmetric = "tokens_per_s_per_user"\nvalue = 61.0\n'
                         'batch = 1\ninput_tokens = 1\noutput_tokens = 128\nsource = "x"\n')
    want = predict_row(bundled).predicted
    (from_csv,) = read_measurements(csv_path)
    (from_toml,) = read_measurements(str(toml_path))
    assert predict_row(from_csv).predicted == pytest.approx(want, rel=1e-12)
    assert predict_row(from_toml).predicted == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize(("line", "header", "says"), [
    ("llama-3.1-8b,h100-sxm,1,tp,bf16,-1,0,0,output_tokens_per_s,100,tokens/s,,x", HEADER, "row 2: batch:"),
    ("llama-3.1-8b,h100-sxm,1,tp,bf16,1,0,0,output_tokens_per_s,100,tok/s,,x", HEADER, "row 2: unit:"),
    ("llama-3.1-8b,h100-sxm,1,tp,bf16,1,0,0,output_tokens_per_s,7,ms/token,,x", HEADER, "row 2: unit:"),
    ("llama-3.1-8b,h100-sxm,1,tp,bf16,1,0,0,output_tokens_per_s,nan,tokens/s,,x", HEADER, "row 2: value:"),
    ("llama-3.1-8b,h100-sxm,1,tp,bf16,1,0,0,output_per_s,100,tokens/s,,x", HEADER, "row 2: metric:"),
    ("llama-3.1-8b,h100-sxm,1,pp,bf16,1,0,0,output_tokens_per_s,100,tokens/s,,x", HEADER, "row 2: layout:"),
    ("llama-3.1-8b,h100-sxm,1,tp,fp3,1,0,0,output_tokens_per_s,100,tokens/s,,x", HEADER, "row 2: weights:"),
    ("llama-9,h100-sxm,1,tp,bf16,1,0,0,output_tokens_per_s,100,tokens/s,,x", HEADER, "row 2: model:"),
    ("llama-3.1-8b,h900,1,tp,bf16,1,0,0,output_tokens_per_s,100,tokens/s,,x", HEADER, "row 2: gpu:"),
    ("llama-3.1-8b,h100-sxm,1,tp,bf16,1,0,0,output_tokens_per_s,100,tokens/s,", HEADER.replace(",source", ""),
     "row 2: source:"),
    ("llama-3.1-8b,h100-sxm,1,tp,bf16,1,0,0,output_tokens_per_s,100,tokens/s,,x,red", HEADER + ",colour",
     "row 2: colour:"),
])
def test_a_bad_row_is_one_line_naming_file_row_and_field(capsys, tmp_path, line, header, says):
    path = _csv(tmp_path, line, header=header)
    assert main(["accuracy", "--file", path]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "Traceback" not in err
    assert err.startswith(f"error: --measurements-file: {path} {says}"), err


def test_bad_files(capsys, tmp_path):
    toml_path = tmp_path / "bad.toml"
    toml_path.write_text('[[result]]\nid = "a"\nmodel = "llama-3.1-8b"\n')
    empty = _csv(tmp_path)
    too_big = tmp_path / "big.csv"
    too_big.write_text(HEADER + "\nllama-3.1-405b,rtx-4090,1,tp,bf16,1,0,0,output_tokens_per_s,5,tokens/s,,x\n")
    for path, says in ((str(toml_path), "result 1: accelerator:"), (empty, "has no rows"),
                       (str(tmp_path / "nope.csv"), "cannot read"), (str(too_big), "does not fit")):
        assert main(["accuracy", "--file", path]) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("error: --measurements-file: ") and says in err and "\n" not in err, err


# ---- the report's groups and its sign ------------------------------------------------------------------------------
def test_the_weakest_engines_and_the_worst_row():
    """Of the engines with more than one row, ExLlamaV2 and llama.cpp have the largest median |error|; the worst row
    is NVIDIA's Llama-2-70B fp8 run on one H200 without XQA, compute-bound and predicted too fast."""
    report = accuracy(Efficiency.shipped()).as_dict()
    big = {k: g for k, g in report["summary"]["by_engine"].items() if g["count"] > 1}
    assert sorted(big, key=lambda k: -big[k]["median_abs_error"])[:2] == ["ExLlamaV2", "llama.cpp"]
    worst = report["worst"][0]
    assert worst["id"] == "trtllm-noxqa-h200-llama2-70b-fp8-tp1-b192-128-2048" and worst["regime"] == "compute"
    assert worst["signed_error"] > 0


def test_trtllm_061_rows_and_an_a100_static_batchs_bandwidth_by_hand():
    """TensorRT-LLM 0.5/0.6.1's 29 rows: 19 throughput and 10 first-token rows, 11 of them fp16, of Llama-2-7B and
    Llama-2-70B; the A100's batch of 60 at 128/2,048 streams weights and KV at 0.78 of its bandwidth."""
    from kokuban.specs.catalog import load_accelerator

    rows = _new_rows()
    metrics = [r.metric for r in rows]
    assert (len(rows), metrics.count("output_tokens_per_s"), metrics.count("time_to_first_token_s")) == (29, 19, 10)
    assert sum(r.weights_dtype == "fp16" for r in rows) == 11
    assert {r.model for r in rows} == {"llama-2-7b", "llama-2-70b"}
    # the A100 batch of 60 at 128/2048 (1,928 tok/s): weights + KV at the mean decode context 128 + 2048/2 = 1,152
    row = next(r for r in rows if r.id == "trtllm061-llama2-7b-fp16-tp1-a100-80gb-b60-128-2048")
    weights, kv = 6_607_343_616 * 2, 60 * 1152 * 524_288  # bytes (test_terms_of_a_row_by_hand's counts)
    per_token_s = 60 / row.value  # one output token of each of the 60 requests
    share = (weights + kv) / per_token_s / load_accelerator("a100-80gb").memory_bandwidth_bytes_per_s
    assert (round(weights / 1e9, 1), round(kv / 1e9, 1), round(1e3 * per_token_s, 1), round(share, 2)) == (
        13.2, 36.2, 31.1, 0.78)


def test_a_shorter_predicted_time_is_a_positive_signed_error():
    """A signed error > 0 is a faster prediction (a higher rate, a shorter time): the scalar set's ten first-token
    predictions of TensorRT-LLM 0.5/0.6.1's rows, each shorter than measured, have a positive signed error."""
    scalar = [p for p in accuracy(Efficiency.scalar(), rows=_new_rows()).predictions
              if p.metric == "time_to_first_token_s"]
    assert len(scalar) == 10
    for p in scalar:
        assert (p.signed_error > 0) == (p.predicted < p.measured)
