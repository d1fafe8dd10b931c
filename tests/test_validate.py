"""probe / validate / calibrate: tiny models, few points (fast on a 2-core CPU)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from kokuban.cli import main
from kokuban.errors import KokubanError
from kokuban.present.jsonout import read_result
from kokuban.specs.hardware import Efficiency
from kokuban.specs.model import ModelSpec
from kokuban.validation.calibrate import fit_efficiency, holdout_mask
from kokuban.validation.harness import Point, deployment_for, grid, predict, scaled_config, validation_accelerator

# d=64, 2 layers, 4 heads of 16, 2 KV heads, MLP 128, vocab 100, untied
TINY = {
    "model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
    "num_key_value_heads": 2, "intermediate_size": 128, "vocab_size": 100, "max_position_embeddings": 4096,
    "tie_word_embeddings": False, "rope_theta": 10000.0,
}
# per layer: norms 2·64 = 128; qkv (64 + 2·32)·64 = 8192; o 64·64 = 4096; MLP 3·64·128 = 24576 → 36992
# total = 2·36992 + embedding 6400 + LM head 6400 + final norm 64 = 86848
TINY_PARAMS = 86848
ENTRY = {  # a made-up machine: 1e9 B/s, 1e15 FLOP/s (so compute is negligible at batch 1)
    "id": "test-cpu", "name": "test machine", "memory_bytes": 8e9, "memory_bandwidth_bytes_per_s": 1e9,
    "flops_fp32": 1e15, "flops_bf16": 1e13,
}


def test_scaled_config_hand_derived():
    from kokuban.specs.catalog import DATA

    cfg = json.loads((DATA / "models" / "llama-3.2-1b.json").read_text())
    scaled, changes = scaled_config(cfg, num_layers=3, hidden_size=1024)
    # head_dim 64 kept: 1024/64 = 16 heads; KV heads: largest divisor of 16 not above 8 = 8; MLP 8192·1024/2048 = 4096
    assert (scaled["num_hidden_layers"], scaled["num_attention_heads"], scaled["num_key_value_heads"]) == (3, 16, 8)
    assert scaled["intermediate_size"] == 4096 and scaled["head_dim"] == 64
    assert any("3 of 16 layers" in c for c in changes)
    assert cfg["num_hidden_layers"] == 16  # the input is not modified
    with pytest.raises(KokubanError, match="multiple of head_dim"):
        scaled_config(cfg, hidden_size=1000)
    with pytest.raises(KokubanError, match="builds only"):
        scaled_config({"model_type": "mixtral"})


def test_validation_prediction_by_hand():
    spec = ModelSpec.from_config(TINY, name="tiny")
    assert spec.params_total == TINY_PARAMS
    dep = deployment_for(spec, validation_accelerator(ENTRY, "fp32"), "fp32", Efficiency.textbook().updated(memory=0.5))
    sec, bound = predict(dep, ["decode"], [1], [1])
    # weights read: everything but the input embedding, fp32: (86848 − 6400)·4 = 321792 B
    # KV at 1 token: 2 layers · 2·(2 KV heads·16)·4 B = 512 B; at 0.5·1e9 B/s → 643.6 µs + 1.024 µs
    # compute: 2·80448 FLOP + attention ≈ 1.6e5 / (1e15·0.6) ≈ 3e-10 s (negligible)
    assert sec[0] == pytest.approx((321792 + 512) / 0.5e9, rel=1e-5)
    assert bound[0] == "weights"
    # the fp32 rate replaces bf16 for attention (the whole model runs fp32)
    assert validation_accelerator(ENTRY, "fp32").flops("bf16") == 1e15


def test_grid_and_points():
    pts = grid([1, 2], [8], [4], prefill_batch=3)
    assert pts == [Point("decode", 1, 8), Point("decode", 2, 8), Point("prefill", 3, 4)]


def test_holdout_split_is_stable_and_order_free():
    ids = [f"row-{i}" for i in range(300)]
    mask = holdout_mask(ids, 1 / 3, seed=0)
    assert 60 < mask.sum() < 140  # ≈ 100 expected of 300
    again = holdout_mask(ids[::-1], 1 / 3, seed=0)[::-1]
    assert (mask == again).all()
    assert (holdout_mask(ids, 1 / 3, seed=1) != mask).any()


def test_fit_recovers_known_efficiency():
    spec = ModelSpec.from_config(TINY, name="tiny")
    acc = validation_accelerator({**ENTRY, "flops_fp32": 2e9}, "fp32")
    batches = np.array([1, 2, 4, 8, 16, 32, 64, 128, 256, 512] * 2)
    contexts = np.repeat([16, 2048], 10)
    phases = ["decode"] * 20
    truth = Efficiency(compute=0.5, memory=0.7, step_overhead_s=1e-4)
    measured, _ = predict(deployment_for(spec, acc, "fp32", truth), phases, batches, contexts)

    def run(eff: Efficiency) -> np.ndarray:
        return predict(deployment_for(spec, acc, "fp32", eff), phases, batches, contexts)[0]

    # started from the truth's base (the shipped fractions), so only the three fitted fields differ from it
    fitted, loss = fit_efficiency(run, measured, ("compute", "memory", "step_overhead_s"), Efficiency())
    assert fitted.compute == pytest.approx(0.5, rel=0.03)
    assert fitted.memory == pytest.approx(0.7, rel=0.03)
    assert fitted.step_overhead_s == pytest.approx(1e-4, rel=0.1)
    assert loss < 1e-4


def test_robust_losses_by_hand():
    """Huber on r = |ln(predicted ÷ measured)| with corner 0.1: r²/2 inside, 0.1·(r − 0.05) beyond."""
    from kokuban.validation.calibrate import LOSSES, log_abs_loss, log_huber_loss, log_loss

    assert set(LOSSES) == {"log_squared", "log_huber", "log_abs"}
    near, far = np.array([1.05]), np.array([np.e ** 0.6])  # r = ln 1.05 = 0.04879; r = 0.6
    assert log_huber_loss(near, np.array([1.0])) == pytest.approx(0.5 * 0.048790**2, rel=1e-4)
    assert log_huber_loss(far, np.array([1.0])) == pytest.approx(0.1 * 0.55, rel=1e-9)
    assert log_abs_loss(np.array([2.0, 0.5]), np.array([1.0, 1.0])) == pytest.approx(0.693147, rel=1e-5)
    # the docstring's weights: a row 80 % off (r = ln 1.8 = 0.5878) against rows 10 % off (r = ln 1.1 = 0.09531)
    heavy, light = np.array([1.8]), np.array([1.1])
    one = np.array([1.0])
    assert log_loss(heavy, one) / log_loss(light, one) == pytest.approx(0.5878**2 / 0.09531**2, rel=1e-3)  # ≈ 38
    assert log_huber_loss(heavy, one) / log_huber_loss(light, one) == pytest.approx(
        0.1 * (0.5878 - 0.05) / (0.5 * 0.09531**2), rel=1e-3)  # ≈ 11.8
    assert 37 < log_loss(heavy, one) / log_loss(light, one) < 39
    assert 11 < log_huber_loss(heavy, one) / log_huber_loss(light, one) < 13


def test_validate_errors_are_one_line(capsys):
    assert main(["validate", "--model", "mixtral-8x7b", "--layers", "1"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error:") and "\n" not in err and "builds only" in err
    assert main(["calibrate", "--source", "validate-csv"]) == 2
    assert "--measurements-file" in capsys.readouterr().err


# ---- with PyTorch ------------------------------------------------------------------------------------
def test_decode_with_cache_matches_prefill():
    torch = pytest.importorskip("torch")
    from kokuban.validation.harness import TorchTransformer

    model = TorchTransformer(TINY, device="cpu", dtype="fp32", seed=1)
    assert model.num_parameters() == TINY_PARAMS
    tokens = torch.randint(100, (2, 7), generator=torch.Generator().manual_seed(0))
    with torch.inference_mode():
        full, _ = model.prefill_logits(tokens)
        _, cache = model.prefill_logits(tokens[:, :6])
        grown = [(torch.cat([k, torch.zeros_like(k[:, :, :1])], 2), torch.cat([v, torch.zeros_like(v[:, :, :1])], 2))
                 for k, v in cache]
        step = model.decode_logits(tokens[:, 6], grown)
    # the decode step at position 6 over a 7-slot cache must give the prefill's last-position logits
    assert torch.allclose(step, full, atol=1e-5)


def test_measure_interleaves_rounds_over_one_kv_pool(monkeypatch):
    pytest.importorskip("torch")
    from kokuban.validation import harness as v

    model = v.TorchTransformer(TINY, device="cpu", dtype="fp32", seed=1)
    pool = model.cache_pool([(2, 8), (1, 16)])
    s = model.shape
    assert (
        pool.numel() == 2 * s.layers * 2 * s.kv_heads * 8 * s.head_dim
    )  # the larger of 2·8 and 1·16 positions (equal)
    cache = model.new_cache(2, 8, random=False, pool=pool)
    assert cache[0][0].shape == (2, s.kv_heads, 8, s.head_dim) and cache[0][0].data_ptr() == pool.data_ptr()
    order = []
    real = v.time_calls

    def spy(fn, **kw):
        order.append(fn.func.__name__ + str(tuple(fn.args[0].shape)))
        return real(fn, **kw)

    monkeypatch.setattr(v, "time_calls", spy)
    points = [v.Point("decode", 2, 8), v.Point("prefill", 1, 4)]
    out = v.measure(model, points, warmup=1, repeats=3)
    # three rounds, each visiting both points once: decode, prefill, decode, prefill, …
    assert order == ["decode(2,)", "prefill(1, 4)"] * 3
    assert [len(m.times_s) for m in out] == [3, 3] and all(m.median_s == np.median(m.times_s) for m in out)


def test_time_calls_syncs_every_timed_call():
    from kokuban.validation.probe import time_calls

    calls, syncs = [], []
    times = time_calls(lambda: calls.append(1), warmup=2, repeats=3, sync=lambda: syncs.append(len(calls)))
    assert len(calls) == 5 and times.size == 3
    assert syncs == [2, 3, 4, 5]  # once after the warm-up, then after each timed call


def test_run_validation_cli_json_and_calibrate(tmp_path, capsys):
    pytest.importorskip("torch")
    cfg = tmp_path / "tiny.json"
    cfg.write_text(json.dumps(TINY))
    gpu = tmp_path / "probe.toml"
    from kokuban.validation.probe import entry_to_toml

    gpu.write_text(entry_to_toml(ENTRY))
    out = tmp_path / "report"
    args = ["validate", "--model", str(cfg), "--layers", "0", "--batches", "1,2,4", "--contexts", "8,64",
            "--prompts", "4,16", "--warmup", "0", "--repeats", "2", "--gpu-file", str(gpu), "--out-dir", str(out),
            "--max-kv-gb", "0.000005", "--json"]
    assert main(args) == 0
    data = read_result(capsys.readouterr().out)
    # KV limit 5000 B: 2 layers·2·32 elements·4 B = 512 B per token-request → b·ctx ≤ 9.77: only (1, 8) fits;
    # prefill prompts 4 and 16 at batch 1 → 2048 and 8192 B: only prompt 4 fits
    kept = {(r["phase"], r["batch"], r["context"] or r["prompt_tokens"]) for r in data["rows"]}
    assert kept == {("decode", 1, 8), ("prefill", 1, 4)}
    assert len(data["setup"]["skipped"]) == 6
    for r in data["rows"]:
        assert r["measured_s"] > 0 and r["predicted_s"] > 0 and len(r["repeats_s"]) == 2
        assert r["error"] == pytest.approx(abs(r["predicted_s"] - r["measured_s"]) / r["measured_s"])
        assert r["regime"] in ("compute", "weights", "kv")
    assert {"median_abs_error", "p90_abs_error", "by_regime"} <= set(data["summary"])
    assert (out / "validate.csv").exists() and (out / "validate.png").stat().st_size > 10_000

    # calibration from the report: needs ≥ 1 row on each side; with 2 rows use a 0.5 split salted to split them
    from kokuban.validation.calibrate import calibrate_validation, holdout_mask

    ids = ["decode-b1-t8", "prefill-b1-t4"]
    seed = next(s for s in range(100) if holdout_mask(ids, 0.5, s).sum() == 1)
    cal = calibrate_validation(
        str(out / "validate.csv"), ("memory",), start=Efficiency.textbook(), holdout_fraction=0.5, seed=seed
    )
    assert cal.train_rows == 1 and cal.holdout_rows == 1 and 0 < cal.after.memory <= 1
    # per-row results: the held-out flags are the split's, and the after-predictions give the held-out summary
    assert [r["held_out"] for r in cal.rows] == list(holdout_mask(ids, 0.5, seed))
    held = next(r for r in cal.rows if r["held_out"])
    assert cal.holdout_after["median_abs_error"] == pytest.approx(
        abs(held["predicted_after"] - held["measured"]) / held["measured"]
    )
    # a structured split: the decode row (context 8) held out, the prefill (context 0) fitted on
    by_context = calibrate_validation(str(out / "validate.csv"), ("memory",), start=Efficiency.textbook(),
                                      hold_out=("context", [8]))
    assert [r["held_out"] for r in by_context.rows] == [True, False]
    with pytest.raises(KokubanError, match="0 training"):
        calibrate_validation(
            str(out / "validate.csv"), ("memory",), start=Efficiency.textbook(), hold_out=("batch", [1])
        )
    png = tmp_path / "cal.png"
    assert main(["calibrate", "--source", "validate-csv", "--csv", str(out / "validate.csv"), "--params", "memory",
                 "--holdout", "0.5", "--seed", str(seed), "--plot", str(png), "--json"]) == 0
    assert read_result(capsys.readouterr().out)["rows"][0]["id"] == "decode-b1-t8"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_probe_entry_round_trips(tmp_path):
    from kokuban.specs.catalog import load_accelerator
    from kokuban.validation.probe import entry_to_toml, measure_bandwidth, probe

    bw = measure_bandwidth("cpu", buffer_bytes=8 * 2**20, budget_s=0.05)
    assert bw["best_bytes_per_s"] >= bw["median_bytes_per_s"] > 0
    entry = probe("cpu", seconds=0.3, dtypes=("fp32",), entry_id="here")
    assert entry["measured_on"] and entry["method"].startswith("kokuban probe") and entry["flops_fp32"] > 0
    path = tmp_path / "here.toml"
    path.write_text(entry_to_toml(entry))
    acc = load_accelerator("here", path)
    assert acc.memory_bandwidth_bytes_per_s == pytest.approx(entry["memory_bandwidth_bytes_per_s"])
    assert acc.flops("fp32") == pytest.approx(entry["flops_fp32"])


def test_probe_cli_rejects_missing_gpu(capsys):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    assert main(["probe", "--device", "cuda"]) == 2
    assert "no CUDA GPU" in capsys.readouterr().err
