"""Engine profiles (data/engines.toml), the overhead seams, and the memory / KV-block knobs (issue 12, items 2, 4)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from json_envelope import result_of

from kokuban.cli import main
from kokuban.errors import KokubanError
from kokuban.present.jsonout import to_json
from kokuban.sim import SchedulerConfig, StepModel, simulate, synthetic
from kokuban.sim.profiles import DEFAULT_ENGINE, Overheads, OverheadStepModel, load_profile, profiles
from kokuban.specs.catalog import load_accelerator, load_model
from kokuban.specs.deployment import Deployment
from kokuban.specs.hardware import PROFILES, Efficiency
from kokuban.usecases.simulate import CapacityRequest, SimulateRequest, run_capacity, run_simulate

SMALL = dict(model="llama-3.1-8b", rate=1.0, requests=3, prompt=100, output=3)


def blocks(**kw) -> int:
    return run_simulate(SimulateRequest(**SMALL | kw)).as_dict()["kv_cache"]["capacity_blocks"]


def test_memory_utilization_shrinks_the_pool_on_a_24_gb_card():
    # A10G: 24.15e9 bytes. Llama-3.1-8B bf16 KV per token = 32 layers × 2 (K, V) × 8 KV heads × 128 × 2 bytes
    # = 131,072 bytes; a 16-token block = 2,097,152 bytes. Weights and activations do not depend on the
    # utilisation, so 0.9 → 0.8 frees 0.1 × 24.15e9 = 2.415e9 bytes = 2.415e9 / 2,097,152 = 1151.6 blocks
    # (1151 or 1152 after each pool's floor).
    hi, lo = blocks(gpu="a10g"), blocks(gpu="a10g", gpu_memory_utilization=0.8)
    assert hi - lo in (1151, 1152)
    assert blocks(gpu="a10g", gpu_memory_utilization=0.9) == hi  # 0.9 is the default


def test_kv_blocks_replace_the_computed_pool():
    assert blocks(gpu="h100-sxm", kv_blocks=500) == 500
    # 100 + 3 − 1 = 102 tokens need ⌈102 / 16⌉ = 7 blocks: 6 cannot hold a request
    with pytest.raises(KokubanError) as err:
        blocks(gpu="h100-sxm", kv_blocks=6)
    assert err.value.field == "prompt"


@pytest.mark.parametrize("field, value", [("gpu_memory_utilization", 0.0), ("gpu_memory_utilization", 1.5),
                                          ("kv_blocks", 0), ("engine", "vllm-v9")])
def test_bad_knobs_name_their_field(field, value):
    with pytest.raises(KokubanError) as err:
        SimulateRequest(**SMALL | {"gpu": "h100-sxm", field: value})
    assert err.value.field == field


def test_default_profile_is_todays_scheduler():
    req = SimulateRequest(**SMALL | {"gpu": "h100-sxm"})
    assert req.engine == DEFAULT_ENGINE
    assert req.scheduler_config() == SchedulerConfig()  # continuous, vLLM's limits, 16-token blocks, prefix on
    assert set(SchedulerConfig().as_dict()) == {"policy", "max_num_seqs", "max_num_batched_tokens", "block_size",
                                                "prefix_caching", "batch_timeout_s", "max_concurrency"}
    assert req.deployment().efficiency == Efficiency.shipped()  # the core's shipped step model (the kernel profile)
    assert req.deployment().efficiency.step_overhead_s == 3.8e-3


def test_every_profile_default_has_a_source_and_every_overhead_says_how_it_was_got():
    scheduler = ("policy", "max_num_seqs", "max_num_batched_tokens", "block_size", "prefix_caching", "preemption")
    overheads = ("step_overhead", "per_seq", "per_token", "front_end", "per_layer")
    assert set(profiles()) >= {"kokuban", "vllm-v1", "vllm-v0", "vllm-v0-multistep", "sglang", "trtllm"}
    for p in profiles().values():
        sources = dict(p.sources)
        for key in scheduler:
            if getattr(p, key) is not None:
                assert sources.get(key), (p.name, key)
        for key in overheads:
            value = p.step_overhead_s if key == "step_overhead" else getattr(p.overheads, f"{key}_s", None)
            if value is not None:
                assert sources[key].startswith(("assumed", "observed", "fitted")), (p.name, key)
        if p.overheads is not None and p.overheads.eager_per_layer_s:  # the CUDA-graph terms where a profile sets them
            assert sources["eager_per_layer"].startswith(("assumed", "observed", "fitted")), p.name
            assert p.overheads.graph_max_batch and sources["graph_max_batch"], p.name
        assert p.preemption in (None, "recompute")  # the only preemption kokuban simulates


def test_profile_defaults_fill_only_what_the_user_left_unset():
    v0 = SimulateRequest(**SMALL | {"gpu": "h100-sxm", "engine": "vllm-v0"})
    cfg = v0.scheduler_config()
    # vLLM V0 without chunked prefill: 256 sequences, max(max_model_len, 2048) = max(131,072, 2048) tokens
    assert (cfg.policy, cfg.max_num_seqs, cfg.max_num_batched_tokens, cfg.prefix_caching) == (
        "prefill_first", 256, 131072, False)
    assert v0.deployment().efficiency.step_overhead_s == 2.7e-3
    mine = SimulateRequest(**SMALL | {"gpu": "h100-sxm", "engine": "vllm-v0", "max_num_seqs": 64, "block_size": 32,
                                      "scheduler": "continuous", "step_overhead": 1e-3})
    cfg = mine.scheduler_config()
    assert (cfg.policy, cfg.max_num_seqs, cfg.block_size) == ("continuous", 64, 32)
    assert mine.deployment().efficiency.step_overhead_s == 1e-3  # the user's flag beats the profile
    v1 = SimulateRequest(**SMALL | {"gpu": "h100-sxm", "engine": "vllm-v1"})
    v1_step = v1.deployment().efficiency.step_overhead_s
    assert v1_step == load_profile("vllm-v1").step_overhead_s == 2.068e-3  # fitted by serving-accuracy --refit
    # on the shipped step model, as an estimate of the same deployment (engines.toml names no other for vllm-v1)
    assert v1.deployment().efficiency == Efficiency.shipped().updated(step_overhead_s=v1_step)
    assert v1.deployment().efficiency.kernels.m_half_tokens == 103.0
    assert v0.deployment().efficiency.kernels is None  # vllm-v0's assumed overheads keep the scalar set


def dep8b():
    return Deployment.make(load_model("llama-3.1-8b"), load_accelerator("h100-sxm"))


def test_overhead_step_model_adds_the_cpu_terms():
    base = StepModel(dep8b(), 64, 512)
    over = OverheadStepModel(base, Overheads(per_seq_s=40e-6, per_token_s=1e-6))
    # a step of 48 tokens, 10 of them sampled: + 10 × 40 µs + 48 × 1 µs = 448 µs
    assert over.seconds(48, 10, 1e-4, 2e-4) == pytest.approx(base.seconds(48, 10, 1e-4, 2e-4) + 448e-6, abs=1e-15)
    ctx = np.array([[10, 20, 30], [11, 21, 31]])
    run = over.decode_run_s(ctx)
    for row, s in zip(ctx, run, strict=True):  # the protocol: bit for bit equal to `seconds` row by row
        assert s == over.seconds(3, 3, *over.decode_terms(row))


def test_per_layer_term_adds_a_fixed_time_per_step_that_grows_with_the_layers():
    base = StepModel(dep8b(), 64, 512)
    over = OverheadStepModel(base, Overheads(per_layer_s=50e-6), layers=32)
    # Llama-3.1-8B's 32 layers × 50 µs = 1.6 ms on every step, whatever its tokens or sequences
    for tokens, heads in ((1, 1), (48, 10), (64, 0)):
        assert over.seconds(tokens, heads, 1e-4, 2e-4) == pytest.approx(
            base.seconds(tokens, heads, 1e-4, 2e-4) + 1.6e-3, abs=1e-15)
    # and through the engine: a single request's 9 decode steps after its prefill (10 output tokens) are each
    # 32 × 50 µs longer, its prefill step too: E2E + 10 × 1.6 ms = 16 ms
    wl = synthetic(1, 1.0, 100, 10, seed=0)
    plain = simulate(dep8b(), wl)
    slow = simulate(dep8b(), wl, SchedulerConfig(overheads=Overheads(per_layer_s=50e-6)))
    assert float(slow.e2e_s[0] - plain.e2e_s[0]) == pytest.approx(16e-3, rel=1e-9)
    with pytest.raises(KokubanError) as err:
        Overheads(per_layer_s=-1e-6)
    assert err.value.field == "per_layer_s"


def test_front_end_and_streaming_as_a_client_sees_them():
    dep, wl = dep8b(), synthetic(200, 10.0, 500, 50, seed=1)
    plain = simulate(dep, wl)
    seen = simulate(dep, wl, SchedulerConfig(overheads=Overheads(front_end_s=0.011, stream_tokens=10)))
    # 11 ms more TTFT and E2E for every request; TPOT unchanged; ITL one gap per 10 tokens = 10 steps
    assert np.allclose(seen.ttft_s - plain.ttft_s, 0.011, rtol=0, atol=1e-12)
    assert np.allclose(seen.e2e_s - plain.e2e_s, 0.011, rtol=0, atol=1e-12)
    assert np.allclose(seen.tpot_s, plain.tpot_s, rtol=1e-12)
    s, p = seen.summary()["latency_s"]["itl"], plain.summary()["latency_s"]["itl"]
    assert s["mean"] == pytest.approx(10 * p["mean"], rel=1e-12)


def test_per_sequence_cost_slows_big_batches():
    dep, wl = dep8b(), synthetic(300, float("inf"), 200, 100, seed=2)
    base = simulate(dep, wl, SchedulerConfig(max_num_seqs=256))
    slow = simulate(dep, wl, SchedulerConfig(max_num_seqs=256, overheads=Overheads(per_seq_s=40e-6)))
    # every step is longer by 40 µs × the sequences it samples: Σ over steps ≥ 40 µs × 300 × 100 tokens sampled
    extra = slow.step_s.sum() - base.step_s.sum()
    assert extra >= 40e-6 * 300 * 100 * 0.999
    assert slow.summary()["throughput"]["output_tokens_per_s"] < base.summary()["throughput"]["output_tokens_per_s"]


def test_cli_engine_and_knobs_match_the_use_case(capsys):
    args = ["simulate", "llama-3.1-8b", "--gpu", "a10g", "--rate", "2", "--requests", "20", "--prompt", "200",
            "--output", "20", "--engine", "vllm-v0-multistep", "--gpu-memory-utilization", "0.85", "--kv-blocks",
            "900", "--json"]
    assert main(args) == 0
    got = result_of(capsys.readouterr().out)
    want = run_simulate(SimulateRequest(model="llama-3.1-8b", gpu="a10g", rate=2, requests=20, prompt="200",
                                        output="20", engine="vllm-v0-multistep", gpu_memory_utilization=0.85,
                                        kv_blocks=900))
    assert got == json.loads(to_json(want.as_dict()))
    assert got["scheduler"]["engine"] == "vllm-v0-multistep" and got["kv_cache"]["capacity_blocks"] == 900


def test_cli_unknown_engine_is_a_one_line_error(capsys):
    assert main(["simulate", "llama-3.1-8b", "--gpu", "h100-sxm", "--rate", "1", "--engine", "nope"]) == 2
    err = capsys.readouterr().err
    assert "--engine" in err and "vllm-v1" in err and "Traceback" not in err


def test_load_profile_names_the_known_ones():
    assert load_profile("sglang").block_size == 1
    with pytest.raises(KokubanError, match="allowed: kokuban"):
        load_profile("x")


def test_capacity_takes_the_engine_and_knobs(capsys):
    args = ["capacity", "llama-3.1-8b", "--gpu", "h100-sxm", "--requests", "60", "--prompt", "300", "--output", "30",
            "--ttft-p99", "0.5", "--engine", "vllm-v1", "--kv-blocks", "4000", "--workers", "1", "--json"]
    assert main(args) == 0
    got = result_of(capsys.readouterr().out)
    req = CapacityRequest(model="llama-3.1-8b", gpu="h100-sxm", requests=60, prompt="300", output="30", ttft_p99=0.5,
                          engine="vllm-v1", kv_blocks=4000, workers=1)
    assert got == json.loads(to_json(run_capacity(req).as_dict()))
    # vLLM V1's fitted CPU terms (8 µs per sampled sequence, 5.08 µs per scheduled token) on top of its 1.45 ms
    # per step make it saturate below the same 1.45 ms per step without them
    bare = run_capacity(req.model_copy(update={"engine": "kokuban", "step_overhead": 1.45e-3}))
    assert got["saturation_rate_per_s"] < bare.saturation_rate_per_s


def test_front_end_time_holds_a_concurrency_slot():
    # one request in flight (vllm bench --max-concurrency 1), all 6 due at t = 0: the client sends the next one
    # when it has seen the previous finish, i.e. the engine's finish + 20 ms, which is the finish it records
    dep, wl = dep8b(), synthetic(6, float("inf"), 300, 10, seed=0)
    run = simulate(dep, wl, SchedulerConfig(max_concurrency=1, overheads=Overheads(front_end_s=0.02)))
    assert np.array_equal(run.arrival_s[1:], run.finish_s[:-1])
    plain = simulate(dep, wl, SchedulerConfig(max_concurrency=1))
    # each of the 6 requests holds its slot 20 ms longer: the run lasts 6 × 20 ms = 120 ms more
    assert run.duration_s - plain.duration_s == pytest.approx(6 * 0.02, rel=1e-9)


def test_sglang_running_cap_follows_its_kv_pool():
    from kokuban.sim.profiles import sglang_max_running_requests

    # slots = min(max(⌊pool ÷ context × 512⌋, 2048), 4096) + 1; running = min(⌊pool ÷ 2⌋, slots)
    # 1,150,000 tokens, 131,072 context: ⌊4,492.2⌋ = 4,492 → 4,096 → 4,097 slots; ⌊pool ÷ 2⌋ = 575,000
    assert sglang_max_running_requests(1_150_000, 131_072) == 4097
    # 100,000 tokens: ⌊390.6⌋ = 390 → 2,048 → 2,049 slots (the floor wins)
    assert sglang_max_running_requests(100_000, 131_072) == 2049
    # 3,000 tokens: half the pool, 1,500, is fewer than the 2,049 slots
    assert sglang_max_running_requests(3_000, 131_072) == 1500
    # 8,192-token context, 1,000,000 tokens: ⌊62,500⌋ → 4,096 → 4,097
    assert sglang_max_running_requests(1_000_000, 8_192) == 4097


def test_sglang_profile_runs_with_its_pool_sized_cap_unless_given():
    base = SMALL | {"gpu": "h100-sxm", "engine": "sglang", "kv_blocks": 100_000}
    ran = run_simulate(SimulateRequest(**base)).as_dict()["scheduler"]
    # the profile's rule on a 100,000-token pool (1-token pages) and Llama-3.1-8B's 131,072-token context: 2,049
    # (test above), not vLLM's 1,024 for an H100
    assert ran["max_num_seqs"] == 2049 and "running_rule" not in ran
    assert SimulateRequest(**base).scheduler_config().running_rule == "sglang"
    mine = SimulateRequest(**base | {"max_num_seqs": 64})
    assert mine.scheduler_config().running_rule is None
    assert run_simulate(mine).as_dict()["scheduler"]["max_num_seqs"] == 64
    with pytest.raises(KokubanError) as err:
        SchedulerConfig(running_rule="nope").resolve(load_accelerator("h100-sxm"))
    assert err.value.field == "max_num_seqs"


def test_each_profile_runs_the_step_model_its_overheads_were_fitted_with():
    """The fitted overheads hold only with the step model they were fitted with (data/engines.toml): vllm-v1 and
    trtllm with the shipped one (`STEP_MODEL`, what an estimate of the same deployment uses), sglang with the scalar
    set its eager-step floor was chosen with (0.74 / 0.84 / 0.27, no curves); each with its own step overhead."""
    from dataclasses import replace

    assert load_profile("sglang").base_efficiency() == Efficiency.scalar().updated(step_overhead_s=1.5e-3)
    for name in ("vllm-v1", "trtllm"):
        profile = load_profile(name)
        assert profile.efficiency is None
        assert profile.base_efficiency() == Efficiency.shipped().updated(step_overhead_s=profile.step_overhead_s)
    assert load_profile("kokuban").base_efficiency() == Efficiency.shipped()
    assert {p.efficiency for p in profiles().values()} <= {None, *PROFILES}
    bad = replace(load_profile("vllm-v1"), efficiency="kernel-2026-12-02")  # no such profile: a one-line error
    with pytest.raises(KokubanError, match="kernel-2026-12-02' is not one of default, kernel, step-v8, scalar") as err:
        bad.base_efficiency()
    assert err.value.field == "efficiency"


def test_simulate_doc_quotes_the_shipped_engine_overheads():
    """docs/simulate.md quotes the fitted overheads of vllm-v1 and trtllm; the numbers must be engines.toml's."""
    from pathlib import Path

    doc = " ".join((Path(__file__).resolve().parents[1] / "docs" / "simulate.md").read_text().split())
    for name, sentence in (
        ("vllm-v1", "vLLM V1's {step:.3f} ms per step, {layer:.0f} µs per layer per step, {seq:.0f} µs per sequence, "
                    "{token:.2f} µs per token and {front:.2f} ms per request"),
        ("trtllm", "TensorRT-LLM's {step:.3f} ms per step, {layer:.0f} µs per layer per step, {seq:.1f} µs per "
                   "sequence, {token:.2f} µs per token and {front:.2f} ms per request"),
    ):
        profile = load_profile(name)
        o = profile.overheads
        assert o is not None and profile.step_overhead_s is not None
        quoted = sentence.format(step=profile.step_overhead_s * 1e3, layer=o.per_layer_s * 1e6, seq=o.per_seq_s * 1e6,
                                 token=o.per_token_s * 1e6, front=o.front_end_s * 1e3)
        assert quoted in doc, f"docs/simulate.md no longer quotes {name}'s overheads as {quoted!r}"
