"""The `inflight` policy (TensorRT-LLM in-flight batching without context chunking, GUARANTEED_NO_EVICT): step
sequences worked out by hand, and its properties on any trace (hypothesis, derandomized)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_sim_seams import DEP, ConstantStep, traces

from kokuban.sim import SchedulerConfig, Workload, simulate

SETTINGS = settings(max_examples=60, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow])


def run(policy, wl, budget, *, seqs=8, blocks=None, block_size=16):
    cfg = SchedulerConfig(policy, seqs, budget, block_size=block_size, prefix_caching=False)
    return simulate(DEP, wl, cfg, kv_blocks=blocks, step_model=ConstantStep())


def test_a_prompt_that_does_not_fit_waits_for_the_next_step():
    # A (40 prompt, 3 out) and B (30 prompt, 2 out) at t = 0, budget 64; a step lasts 1 ms + 1 µs per token.
    # inflight: step 1 A's whole prompt (40); B's 30 > 64 − 40 = 24 left, so B waits (not split)      → 40 tokens
    #           step 2 A decodes 1, B's whole prompt 30 (≤ 63 left)                                    → 31 tokens
    #           step 3 A decodes its 3rd token, B its 2nd: both finish                                 →  2 tokens
    # end = 1.040 + 1.031 + 1.002 ms = 3.073 ms; TTFT A = 1.040 ms, B = 1.040 + 1.031 = 2.071 ms.
    wl = Workload.make([0, 0], [40, 30], [3, 2])
    r = run("inflight", wl, 64)
    assert r.step_tokens.tolist() == [40, 31, 2]
    assert r.end_s == pytest.approx(3.073e-3, rel=1e-12)
    assert r.first_token_s.tolist() == pytest.approx([1.040e-3, 2.071e-3], rel=1e-12)
    # continuous (vLLM V1) splits B instead: step 1 A 40 + B's first 24, step 2 A 1 + B's last 6, step 3 two decodes
    assert run("continuous", wl, 64).step_tokens.tolist() == [64, 7, 2]


def test_a_prompt_longer_than_the_budget_runs_alone_in_chunks():
    # budget 16; A (40 prompt, 2 out) and B (10 prompt, 2 out) at t = 0. A's prompt can never fit whole (TensorRT-LLM
    # would refuse it), so into the empty engine it goes in budget-sized chunks, and B waits its turn, unsplit:
    # step 1: A's first 16                                            → 16
    # step 2: A's next 16; no budget left for B                       → 16
    # step 3: A's last 8 (its first token); B's 10 > 8 left: waits    →  8
    # step 4: A decodes its 2nd token and finishes; B's whole 10      → 11
    # step 5: B decodes its 2nd token                                 →  1
    r = run("inflight", Workload.make([0, 0], [40, 10], [2, 2]), 16)
    assert r.step_tokens.tolist() == [16, 16, 8, 11, 1]
    assert r.step_batch.tolist() == [1, 1, 1, 2, 1]


def test_a_prompt_longer_than_the_budget_waits_for_the_engine_to_drain_and_holds_the_queue():
    # budget 16, a step lasts 1 ms + 1 µs per token. A (5 prompt, 4 out) at t = 0; B (40 prompt, 2 out) at 0.5 ms;
    # C (5 prompt, 2 out) at 0.6 ms. B can never fit whole, so it runs only once nothing else does, and C, behind
    # it, waits too (first come first served, no overtaking):
    # step 1: A's prompt (its 1st token)                                    →  5
    # steps 2-4: A decodes its 2nd-4th tokens and finishes; B and C wait    →  1, 1, 1
    # steps 5-6: B's first two chunks of 16                                 → 16, 16
    # step 7: B's last 8 (its 1st token) and C's whole 5 (5 ≤ 16 − 8)       → 13
    # step 8: B and C decode their 2nd tokens and finish                    →  2
    r = run("inflight", Workload.make([0, 0.5e-3, 0.6e-3], [5, 40, 5], [4, 2, 2]), 16)
    assert r.step_tokens.tolist() == [5, 1, 1, 1, 16, 16, 13, 2]
    assert r.first_scheduled_s[1] == r.finish_s[0] and r.first_token_s[1] == r.first_token_s[2]


def test_a_new_request_starts_only_when_its_whole_sequence_fits_the_free_blocks():
    # 16-token blocks, a pool of 3. A: 20 prompt + 13 out → holds 20 + 13 − 1 = 32 tokens → 2 blocks;
    # B: 10 + 20 − 1 = 29 tokens → 2 blocks. GUARANTEED_NO_EVICT reserves them at admission: A takes 2, B's 2 > 1
    # free, so B waits until A finishes (A: its prompt in step 1, then 12 decode steps: done at the end of step 13)
    # and nothing is ever preempted.
    wl = Workload.make([0, 0], [20, 10], [13, 20])
    r = run("inflight", wl, 64, blocks=3)
    assert r.first_scheduled_s[1] == r.finish_s[0]
    assert r.step_tokens[:13].tolist() == [20] + [1] * 12
    assert r.preemptions.sum() == 0
    # continuous reserves blocks as tokens come: B starts at once (20 + 10 tokens: 2 + 1 blocks), and when B's
    # 17th token needs a second block none is free: B, the newest, is preempted
    assert run("continuous", wl, 64, blocks=3).preemptions[1] >= 1


@SETTINGS
@given(wl=traces(max_requests=16, max_gap_s=0.01, max_output=30), seqs=st.integers(1, 6), budget=st.integers(8, 300),
       slack=st.integers(0, 20),
       cap=st.sampled_from([None, 2]))
def test_prompts_are_never_split_and_nothing_is_evicted(wl, seqs, budget, slack, cap):
    bs = 16
    blocks = int((-(-(wl.prompt_tokens + wl.output_tokens - 1) // bs)).max()) + slack  # each fits alone
    cfg = SchedulerConfig("inflight", seqs, budget, block_size=bs, prefix_caching=False, max_concurrency=cap)
    r = simulate(DEP, wl, cfg, kv_blocks=blocks, step_model=ConstantStep())
    assert np.array_equal(r.generated_tokens, wl.output_tokens)
    assert r.preemptions.sum() == 0 and r.recomputed_tokens.sum() == 0
    # a whole prompt in one step (the first token comes out of the step the request was first scheduled in),
    # unless the prompt is longer than the whole budget
    ends = dict(zip(r.step_start_s.tolist(), (r.step_start_s + r.step_s).tolist(), strict=True))
    fits = wl.prompt_tokens <= budget
    assert [ends[s] for s in r.first_scheduled_s[fits].tolist()] == r.first_token_s[fits].tolist()
    assert r.step_tokens.max() <= budget
    assert r.step_batch.max() <= seqs
