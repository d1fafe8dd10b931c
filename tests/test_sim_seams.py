"""The simulator's seams: a new policy, step-time model or client plugs in without touching the engine, and
whatever is plugged in, the run record obeys conservation (hypothesis, derandomized)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kokuban.sim import SchedulerConfig, Workload, simulate
from kokuban.sim import policies as policy_registry
from kokuban.sim.clients import ConcurrencyCap, OpenLoop, SerialIntake
from kokuban.sim.metrics import SimResult
from kokuban.sim.record import RunRecord
from kokuban.specs.catalog import load_accelerator, load_model
from kokuban.specs.deployment import Deployment

DEP = Deployment.make(load_model("llama-3.2-1b"), load_accelerator("l4"))
SETTINGS = settings(max_examples=40, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow])


class ConstantStep:
    """A `StepTimeModel` that is not the roofline: 1 ms a step plus 1 µs a token (terms unused)."""

    def decode_terms(self, ctx):
        return 0.0, 0.0

    def chunk_terms(self, chunk_start, chunk_end):
        return 0.0, 0.0

    def one_chunk_terms(self, chunk_start, chunk_end):
        return 0.0, 0.0

    def seconds(self, tokens, heads, attn_s, kv_s):
        return 1e-3 + 1e-6 * tokens

    def decode_run_s(self, ctx):
        return np.full(ctx.shape[0], 1e-3 + 1e-6 * ctx.shape[1])


class Serial:
    """A closed-loop client, as an agent session is: one request in flight; the next is sent `gap_s` after the
    previous one finished (the first at its workload arrival)."""

    closed_loop = True

    def __init__(self, arrival_s: np.ndarray, gap_s: float) -> None:
        self.sent_s = arrival_s.copy()
        self.gap_s, self._next, self._due = gap_s, 0, float(arrival_s[0])

    def next_release_s(self) -> float:
        return self._due if self._next < self.sent_s.size and self._due is not None else np.inf

    def release(self, t, waiting) -> None:
        if self._next < self.sent_s.size and self._due is not None and self._due <= t:
            self.sent_s[self._next] = self._due
            waiting.append(self._next)
            self._next, self._due = self._next + 1, None

    def finished(self, r, t) -> None:
        self._due = t + self.gap_s


class Drain:
    """A policy in a test file, not in the engine: running requests get what they need; waiting ones are admitted
    (chunked, within the budget) only into an empty engine."""

    name, prefix_caching, steady_fast_path, admits_while_running = "drain", False, False, False

    def __init__(self, cfg) -> None:
        pass

    def schedule(self, e, t):
        if e.num_running:
            e.allocate(e.fill(e.num_known_tokens[:e.num_running] - e.num_computed_tokens[:e.num_running]))
            e.step_tokens = int(e.num_scheduled_tokens[: e.num_running].sum())
        else:
            e.step_tokens = e.admit_waiting(e.token_budget, t, "chunk") if e.waiting else 0
        return e.num_running > 0

    def hold_until(self, e, t):
        return None


@pytest.fixture(scope="module")
def drain():
    """Register `Drain` in the one registry, as a new policy's file would (and remove it afterwards)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(policy_registry.POLICIES, "drain", Drain)
        yield


@st.composite
def traces(draw, max_requests=20, max_gap_s=0.3, max_output=40):
    """Up to `max_requests` requests, gaps up to `max_gap_s`, prompts of 1-200 and outputs of 1-`max_output` tokens."""
    n = draw(st.integers(1, max_requests))
    gaps = draw(st.lists(st.floats(0, max_gap_s), min_size=n, max_size=n))
    prompt = draw(st.lists(st.integers(1, 200), min_size=n, max_size=n))
    output = draw(st.lists(st.integers(1, max_output), min_size=n, max_size=n))
    return Workload.make(np.cumsum(gaps), prompt, output)


def check_record(r: RunRecord, wl: Workload) -> None:
    """What any engine assembly must give: every request finishes exactly once with the tokens it asked for,
    no token before its arrival, finish after first token, and the step log adds up."""
    assert isinstance(r, RunRecord)
    assert r.finish_s.shape == r.arrival_s.shape == (len(wl),)
    assert not np.isnan(r.finish_s).any()  # every request finished (the engine's loop ends when all have)
    assert np.array_equal(r.generated_tokens, wl.output_tokens)  # tokens out = tokens asked, request by request
    assert np.all(r.arrival_s <= r.first_scheduled_s)
    assert np.all(r.first_scheduled_s < r.first_token_s)  # a token comes out of a step, which takes time
    assert np.all(r.first_token_s <= r.finish_s)
    assert np.all((r.finish_s == r.first_token_s) == (wl.output_tokens == 1))
    # exactly once: each finish is the end of a step, and one gap per token after the first
    ends = r.step_start_s + r.step_s
    assert np.isin(r.finish_s, ends).all()
    assert r.itl_weights.sum() == (wl.output_tokens - 1).sum()
    computed = (wl.prompt_tokens + wl.output_tokens - 1).sum() + r.recomputed_tokens.sum() - r.cached_tokens.sum()
    assert r.step_tokens.sum() == computed
    assert r.kv_blocks_free_at_end == r.kv_capacity_blocks


CLIENTS = {"open": lambda wl: OpenLoop(wl.arrival_s), "cap2": lambda wl: ConcurrencyCap(wl.arrival_s, 2),
           "serial": lambda wl: Serial(wl.arrival_s, 0.01),
           "intake": lambda wl: SerialIntake(ConcurrencyCap(wl.arrival_s, 2), 0.005)}


@SETTINGS
@given(wl=traces(), policy=st.sampled_from(["continuous", "prefill_first", "static", "inflight", "sglang", "drain"]),
       client=st.sampled_from(sorted(CLIENTS)), constant=st.booleans(), seqs=st.integers(1, 6),
       budget=st.integers(8, 300), slack=st.integers(0, 20))
def test_any_assembly_conserves_requests_and_tokens(drain, wl, policy, client, constant, seqs, budget, slack):
    blocks = int((-(-(wl.prompt_tokens + wl.output_tokens - 1) // 16)).max()) + slack  # tight: preemption happens
    cfg = SchedulerConfig(policy, seqs, budget, batch_timeout_s=0.02)
    r = simulate(DEP, wl, cfg, kv_blocks=blocks, client=CLIENTS[client](wl),
                 step_model=ConstantStep() if constant else None)
    check_record(r, wl)
    if client == "serial":  # closed loop: request i + 1 is sent 10 ms after request i finished
        assert np.allclose(r.arrival_s[1:], r.finish_s[:-1] + 0.01, rtol=0, atol=1e-12)
    if client == "cap2":  # never more than two in flight
        assert r.step_batch.max() <= 2
    if client == "intake":  # each request reaches the engine at least one intake (5 ms) after it was sent
        assert (r.first_scheduled_s - r.arrival_s >= 0.005 - 1e-12).all() and r.step_batch.max() <= 2


def test_constant_step_model_times_every_step():
    # 3 requests of 10 prompt + 2 output tokens at t = 0, continuous batching: step 1 prefills all three
    # (30 tokens: 1 ms + 30 µs), step 2 decodes three (1 ms + 3 µs) and they finish: end = 2.033 ms
    wl = Workload.make([0, 0, 0], [10, 10, 10], [2, 2, 2])
    r = simulate(DEP, wl, SchedulerConfig(max_num_seqs=8, max_num_batched_tokens=64), step_model=ConstantStep())
    assert r.step_tokens.tolist() == [30, 3]
    assert r.end_s == pytest.approx(1.030e-3 + 1.003e-3, rel=1e-12)


def test_metrics_read_only_the_record():
    wl = Workload.make([0.0, 0.5], [100, 200], [5, 1])
    r = simulate(DEP, wl, SchedulerConfig())
    record = RunRecord(**{f: getattr(r, f) for f in RunRecord.__dataclass_fields__})
    again = SimResult.build(record, DEP, SchedulerConfig().resolve(DEP.accelerator))
    assert again.summary() == r.summary()
