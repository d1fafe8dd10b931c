"""Clients: who sends the workload's requests to the engine, and when.

The engine asks its client, at every step boundary, to release the requests sent by then (`release`), asks when
the next one will be sent (`next_release_s`, inf if none is due before something finishes), and, for a
closed-loop client (`closed_loop = True`), tells it each finish (`finished`), which may let another request be
sent. Event skipping (`decoderun`) stops at completions for a closed-loop client, since a finish can release
a request.

open loop     every request is sent at its workload arrival time (`vllm bench serve --request-rate`)
concurrency   at most C requests in flight (`vllm bench serve --max-concurrency C`): a request is sent at
              max(its arrival, the moment a slot frees); its arrival in the metrics is that send time

A closed-loop agent session (the next turn of a session is sent when the previous turn finished, plus a think
gap) is one more client: `finished(r, t)` queues the send time t + gap of r's next turn and `next_release_s` /
`release` hand it over; the engine needs no change.
"""

from __future__ import annotations

import heapq
from collections import deque
from typing import Protocol

import numpy as np


class Client(Protocol):
    """What the engine asks of a client (see the module docstring)."""

    closed_loop: bool
    sent_s: np.ndarray  # per request: when it was sent (the arrival the metrics use); final once released

    def next_release_s(self) -> float:
        """When the next request will be sent, as known now (inf: none until something finishes, or none left)."""
        ...

    def release(self, t: float, waiting: deque[int]) -> None:
        """Append to `waiting` every request sent by time t, in the order sent."""
        ...

    def finished(self, r: int, t: float) -> None:
        """Request r finished at time t (called only when `closed_loop`)."""
        ...


class OpenLoop:
    """Every request is sent at its arrival time."""

    closed_loop = False

    def __init__(self, arrival_s: np.ndarray) -> None:
        self.sent_s = arrival_s.copy()
        self._arrival = arrival_s.tolist()  # scalars without NumPy's per-access cost
        self._next = 0

    def next_release_s(self) -> float:
        return float(self._arrival[self._next]) if self._next < len(self._arrival) else np.inf

    def release(self, t: float, waiting: deque[int]) -> None:
        arrival, i, n = self._arrival, self._next, len(self._arrival)
        while i < n and arrival[i] <= t:
            waiting.append(i)
            i += 1
        self._next = i

    def finished(self, r: int, t: float) -> None:
        pass


class ConcurrencyCap:
    """At most `max_concurrency` requests in flight: one is sent when it has arrived and a slot is free."""

    closed_loop = True

    def __init__(self, arrival_s: np.ndarray, max_concurrency: int) -> None:
        self.sent_s = arrival_s.copy()
        self._arrival = arrival_s.tolist()
        self._next = 0
        self._free_at = [0.0] * int(max_concurrency)  # a heap: when each free slot became free

    def _send_time(self) -> float:
        heap = self._free_at
        return max(self._arrival[self._next], heap[0]) if heap else np.inf

    def next_release_s(self) -> float:
        return float(self._send_time()) if self._next < len(self._arrival) else np.inf

    def release(self, t: float, waiting: deque[int]) -> None:
        n = len(self._arrival)
        while self._next < n:
            a = self._send_time()
            if a > t:
                return
            heapq.heappop(self._free_at)
            self.sent_s[self._next] = a
            waiting.append(self._next)
            self._next += 1

    def finished(self, r: int, t: float) -> None:
        heapq.heappush(self._free_at, t)


def client_for(arrival_s: np.ndarray, max_concurrency: int | None) -> Client:
    """The client a scheduler configuration asks for: capped when `max_concurrency` is set, else open loop."""
    return ConcurrencyCap(arrival_s, max_concurrency) if max_concurrency else OpenLoop(arrival_s)


class SerialIntake:
    """A `Client` whose requests reach the engine one at a time, `intake_s` apart, in the order sent: a front end
    that handles one request at a time (parsing, tokenising) before handing it on. Request i, sent at s_i, reaches
    the engine at h_i = max(s_i, h_{i-1}) + intake_s; its send time stays `sent_s` (the metrics include the wait).
    Everything else is the wrapped client's."""

    def __init__(self, inner: Client, intake_s: float) -> None:
        self.inner, self.intake_s = inner, float(intake_s)
        self.closed_loop = inner.closed_loop
        self._queue: deque[tuple[int, float]] = deque()  # (request, when it reaches the engine)
        self._last = -np.inf

    @property
    def sent_s(self) -> np.ndarray:
        return self.inner.sent_s

    def next_release_s(self) -> float:
        ahead = self._queue[0][1] if self._queue else np.inf
        return min(ahead, self.inner.next_release_s() + self.intake_s)

    def release(self, t: float, waiting: deque[int]) -> None:
        sent: deque[int] = deque()
        self.inner.release(t, sent)
        for r in sent:
            self._last = max(float(self.inner.sent_s[r]), self._last) + self.intake_s
            self._queue.append((r, self._last))
        while self._queue and self._queue[0][1] <= t:
            waiting.append(self._queue.popleft()[0])

    def finished(self, r: int, t: float) -> None:
        self.inner.finished(r, t)
