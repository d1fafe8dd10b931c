"""`sim.clients.SerialIntake`: a front end that hands requests to the engine one at a time, `intake_s` apart."""

from __future__ import annotations

from collections import deque

import numpy as np
import pytest

from kokuban.sim import SchedulerConfig, Workload, simulate
from kokuban.sim.clients import OpenLoop, SerialIntake
from kokuban.specs.catalog import load_accelerator, load_model
from kokuban.specs.deployment import Deployment


def test_requests_sent_together_reach_the_engine_one_intake_apart():
    # sent at 0, 0, 0 and 5 s, 1 s each: h = max(sent, previous h) + 1 → 1, 2, 3, then max(5, 3) + 1 = 6 s
    client = SerialIntake(OpenLoop(np.array([0.0, 0.0, 0.0, 5.0])), 1.0)
    got: deque[int] = deque()
    assert client.next_release_s() == 1.0  # the first send (0 s) + 1 s
    client.release(0.5, got)
    assert not got and client.next_release_s() == 1.0
    client.release(2.0, got)
    assert list(got) == [0, 1] and client.next_release_s() == 3.0
    client.release(3.0, got)
    assert list(got) == [0, 1, 2] and client.next_release_s() == 6.0  # request 3: sent at 5 s, + 1 s
    client.release(6.0, got)
    assert list(got) == [0, 1, 2, 3] and client.next_release_s() == np.inf
    assert client.sent_s.tolist() == [0.0, 0.0, 0.0, 5.0]  # what the metrics measure from


def test_an_engine_behind_the_intake_sees_each_request_a_second_apart():
    # three short requests sent at t = 0 through a 1-s intake: request i reaches the engine at i + 1 s and is
    # prefilled at once (one step of milliseconds on an H100), so its TTFT is i + 1 s and a few ms
    dep = Deployment.make(load_model("llama-3.2-1b"), load_accelerator("h100-sxm"), 1, weights_dtype="bf16")
    wl = Workload.make([0.0, 0.0, 0.0], [32, 32, 32], [4, 4, 4])
    r = simulate(dep, wl, SchedulerConfig(), client=SerialIntake(OpenLoop(wl.arrival_s), 1.0))
    assert r.arrival_s.tolist() == [0.0, 0.0, 0.0]
    assert r.first_scheduled_s.tolist() == pytest.approx([1.0, 2.0, 3.0], abs=1e-12)
    assert ((r.ttft_s - np.array([1.0, 2.0, 3.0]) > 0) & (r.ttft_s - np.array([1.0, 2.0, 3.0]) < 0.05)).all()
