"""Property tests: conservation of requests, tokens and KV blocks, under any scheduler and preemption."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from kokuban.sim import SchedulerConfig, Workload, simulate
from kokuban.specs.catalog import load_accelerator, load_model
from kokuban.specs.deployment import Deployment

DEP = Deployment.make(load_model("llama-3.2-1b"), load_accelerator("l4"))


@st.composite
def traces(draw):
    n = draw(st.integers(1, 25))
    gaps = draw(st.lists(st.floats(0, 0.5), min_size=n, max_size=n))
    prompt = draw(st.lists(st.integers(1, 300), min_size=n, max_size=n))
    output = draw(st.lists(st.integers(1, 60), min_size=n, max_size=n))
    keys = draw(st.lists(st.integers(-1, 2), min_size=n, max_size=n))
    prefix = [min(p, draw(st.integers(0, 120))) for p in prompt]
    session = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    return Workload.make(np.cumsum(gaps), prompt, output, keys, prefix, session)


@st.composite
def schedulers(draw):
    return SchedulerConfig(
        policy=draw(st.sampled_from(["continuous", "prefill_first", "static", "inflight", "sglang"])),
        max_num_seqs=draw(st.integers(1, 8)), max_num_batched_tokens=draw(st.integers(8, 400)),
        block_size=draw(st.sampled_from([4, 16])), prefix_caching=draw(st.booleans()),
        batch_timeout_s=draw(st.sampled_from([0.0, 0.05])),
    )


# derandomize: the same examples on every run and every machine (a test that fails by chance is a defect)
SETTINGS = settings(max_examples=50, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(wl=traces(), cfg=schedulers(), slack=st.integers(0, 40))
def test_conservation(wl, cfg, slack):
    bs = cfg.block_size
    # a KV cache just big enough for the largest request, plus some slack: preemption is frequent
    blocks = int((-(-(wl.prompt_tokens + wl.output_tokens - 1) // bs)).max()) + slack
    r = simulate(DEP, wl, cfg, kv_blocks=blocks)
    # every request that arrives finishes, once, in order arrival ≤ first scheduled ≤ first token ≤ finish
    assert not np.isnan(r.finish_s).any()
    assert np.all(r.arrival_s <= r.first_scheduled_s)
    assert np.all(r.first_scheduled_s <= r.first_token_s)
    assert np.all(r.first_token_s <= r.finish_s)
    assert np.array_equal(r.generated_tokens, wl.output_tokens)
    # tokens add up: computed = prompts + (outputs − 1) + thrown away by preemption − read from the prefix cache
    expected = (wl.prompt_tokens + wl.output_tokens - 1).sum() + r.recomputed_tokens.sum() - r.cached_tokens.sum()
    assert r.step_tokens.sum() == expected
    # one inter-token gap per token after the first
    assert r.itl_weights.sum() == (wl.output_tokens - 1).sum()
    # KV blocks never exceed the capacity, and all come back
    assert r.step_kv_blocks.max() <= blocks
    assert r.kv_blocks_free_at_end == blocks
    # nothing ever ran beyond the limits
    assert r.step_batch.max() <= cfg.max_num_seqs
    assert r.step_tokens.max() <= cfg.max_num_batched_tokens
    # no preemption unless KV ran short (static reserves, so it never preempts)
    if cfg.policy == "static":
        assert r.preemptions.sum() == 0


# the counterexample `--hypothesis-seed=11` found against the old guard (budget = longest prompt + seqs = 64): two
# 62-token prompts admitted in one step, the second cut to 2 tokens; kept as an explicit example
SEED_11 = Workload.make(np.zeros(20), [1, 1, 1, 1, 5, 62, 62] + [1] * 13, [1] * 20)


@SETTINGS
@given(wl=traces(), seqs=st.integers(1, 8), budget=st.integers(64, 400))
@example(wl=SEED_11, seqs=2, budget=64)
def test_static_batching_is_never_better_than_continuous(wl, seqs, budget):
    # Same trace, same limits, a KV cache that holds every request whole (no preemption): continuous
    # batching finishes the last request no later, and the mean end-to-end latency is no higher, than
    # static batching (which must wait for the whole batch before admitting anyone).
    # No prompt may be split: a split prompt re-reads its cached KV in the next chunk (a real cost of chunked
    # prefill, a few µs here), which can make continuous batching that much slower on a tiny trace. A step
    # holds at most `seqs` requests, k of them prompts and the rest decodes (1 token each), so it needs at most
    # (the k longest prompts) + (seqs − k) ≤ (the `seqs` longest prompts) + seqs tokens: a budget that large
    # never splits one (one longest prompt + seqs is not enough: continuous batching admits several prompts
    # in one step, and the second was cut, as `--hypothesis-seed=11` found).
    plain = Workload.make(wl.arrival_s, wl.prompt_tokens, wl.output_tokens)
    longest = np.sort(plain.prompt_tokens)[::-1][:seqs]
    budget = max(budget, int(longest.sum()) + seqs)
    blocks = int((-(-(plain.prompt_tokens + plain.output_tokens) // 16)).sum())
    cont = simulate(DEP, plain, SchedulerConfig("continuous", seqs, budget), kv_blocks=blocks)
    static = simulate(DEP, plain, SchedulerConfig("static", seqs, budget), kv_blocks=blocks)
    # the guard holds: every prompt ran in one step (its first token ends the step it was first scheduled in)
    for run in (cont, static):
        assert run.preemptions.sum() == 0
        first = np.searchsorted(run.step_start_s, run.first_scheduled_s)
        assert np.array_equal(run.first_token_s, run.step_start_s[first] + run.step_s[first])
    assert cont.end_s <= static.end_s * (1 + 1e-9)
    assert cont.e2e_s.mean() <= static.e2e_s.mean() * (1 + 1e-9)
