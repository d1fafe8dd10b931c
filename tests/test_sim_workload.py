"""Workloads: seeded generators, length distributions, trace files and their errors."""

from __future__ import annotations

import json

import numpy as np
import pytest

from kokuban.errors import KokubanError
from kokuban.sim.workload import arrival_times, lengths, read_trace, synthetic, write_trace


def test_seeded_and_reproducible():
    a = synthetic(500, 3.0, "lognormal:800,0.6", "uniform:10,300", seed=7)
    b = synthetic(500, 3.0, "lognormal:800,0.6", "uniform:10,300", seed=7)
    c = synthetic(500, 3.0, "lognormal:800,0.6", "uniform:10,300", seed=8)
    assert np.array_equal(a.arrival_s, b.arrival_s) and np.array_equal(a.prompt_tokens, b.prompt_tokens)
    assert not np.array_equal(a.arrival_s, c.arrival_s)


def test_arrival_processes_have_the_asked_rate():
    rng = np.random.default_rng(1)
    n, rate = 200_000, 4.0
    for process in ("poisson", "gamma", "fixed"):
        t = arrival_times(n, rate, process, burstiness=0.25, rng=rng)
        # mean gap 1/rate = 0.25 s for every process
        assert np.diff(t).mean() == pytest.approx(0.25, rel=0.02)
    gaps = np.diff(arrival_times(n, rate, "gamma", burstiness=0.25, rng=rng))
    # gamma gaps with shape k: coefficient of variation 1/√k = 2 (Poisson: 1)
    assert gaps.std() / gaps.mean() == pytest.approx(2.0, rel=0.05)
    assert np.ptp(np.diff(arrival_times(10, rate, "fixed"))) < 1e-12


def test_length_distributions():
    rng = np.random.default_rng(0)
    assert set(lengths("123", 5, rng)) == {123}
    u = lengths("uniform:10,20", 50_000, rng)
    assert u.min() == 10 and u.max() == 20 and u.mean() == pytest.approx(15, rel=0.01)
    ln = lengths("lognormal:1000,0.5", 50_000, rng)
    assert np.median(ln) == pytest.approx(1000, rel=0.02)  # the median of exp(N(ln m, σ)) is m
    h = lengths("hist:100=1,1000=3", 40_000, rng)
    assert set(h) == {100, 1000} and (h == 1000).mean() == pytest.approx(0.75, abs=0.01)


@pytest.mark.parametrize("spec", ["abc", "uniform:5", "uniform:9,3", "lognormal:0,1", "hist:1=x", "zipf:3", "0"])
def test_bad_length_specs_are_one_line_errors(spec):
    with pytest.raises(KokubanError) as err:
        lengths(spec, 3)
    assert "\n" not in str(err.value)


def test_zero_rate_is_an_error():
    with pytest.raises(KokubanError, match="rate"):
        synthetic(10, 0.0)


def test_csv_and_jsonl_traces(tmp_path):
    csv = tmp_path / "t.csv"
    csv.write_text("arrival_s,prompt_tokens,output_tokens,prefix_id,prefix_tokens\n0.5,100,10,sys,64\n0.1,50,5,,\n")
    wl = read_trace(csv)
    assert list(wl.arrival_s) == [0.1, 0.5]  # sorted by arrival
    assert list(wl.prefix_tokens) == [0, 64] and wl.prefix_key[0] == -1 and wl.prefix_key[1] >= 0
    jl = tmp_path / "t.jsonl"
    rows = [{"arrival_s": 0.0, "prompt_tokens": 300, "output_tokens": 40, "session_id": "a"},
            {"arrival_s": 2.0, "prompt_tokens": 400, "output_tokens": 20, "session_id": "a"},
            {"arrival_s": 2.5, "prompt_tokens": 90, "output_tokens": 20, "session_id": "b"}]
    jl.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    wl = read_trace(jl)
    # turn 2 of session a starts with turn 1's prompt + output = 340 tokens of shared prefix
    assert list(wl.prefix_tokens) == [0, 340, 0]
    assert wl.prefix_key[0] == wl.prefix_key[1] != wl.prefix_key[2]
    assert wl.session.all()
    out = tmp_path / "round.csv"
    write_trace(wl, out)
    again = read_trace(out)
    assert np.array_equal(again.prompt_tokens, wl.prompt_tokens)


def test_trace_errors_name_the_line(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("arrival_s,prompt_tokens,output_tokens\n0,10,5\n1,ten,5\n")
    with pytest.raises(KokubanError, match=r"bad.csv line 3: prompt_tokens 'ten'"):
        read_trace(bad)
    broken = tmp_path / "bad.jsonl"
    broken.write_text('{"arrival_s": 0, "prompt_tokens": 5, "output_tokens": 1}\n{oops\n')
    with pytest.raises(KokubanError, match=r"bad.jsonl line 2: not valid JSON"):
        read_trace(broken)
    empty = tmp_path / "empty.csv"
    empty.write_text("arrival_s,prompt_tokens,output_tokens\n")
    with pytest.raises(KokubanError, match="no requests"):
        read_trace(empty)
    missing = tmp_path / "m.csv"
    missing.write_text("arrival_s,prompt_tokens\n0,5\n")
    with pytest.raises(KokubanError, match="line 2: missing 'output_tokens'"):
        read_trace(missing)
