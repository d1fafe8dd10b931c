"""Progress bars (issue 15 item 8): the computing layers report `progress(done, total)` and draw nothing; the CLI
draws a tqdm bar only when stderr is a terminal (piped: no carriage returns in the log)."""

from __future__ import annotations

import ast
import io
import subprocess
import sys
from pathlib import Path

import kokuban
from kokuban.cli.progress import progress_bar

ROOT = Path(kokuban.__file__).parent


def test_only_the_faces_import_tqdm():
    importers = []
    for path in ROOT.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            if any(n.split(".")[0] == "tqdm" for n in names):
                importers.append(path.relative_to(ROOT).as_posix())
    assert importers and all(p.startswith("cli/") for p in importers), importers


def test_the_simulator_reports_every_request_done():
    from kokuban.usecases.simulate import SimulateRequest, run_simulate

    calls: list[tuple[int, int]] = []
    run_simulate(SimulateRequest(model="llama-3.1-8b", gpu="h100-sxm", rate="20", requests=300),
                 progress=lambda done, total: calls.append((done, total)))
    assert calls[-1] == (300, 300)  # the last report: all 300 requests finished
    assert all(0 <= d <= t == 300 for d, t in calls)
    assert [d for d, _ in calls] == sorted(d for d, _ in calls)  # never backwards


def test_the_fit_reports_its_budget():
    from kokuban.usecases.validation import CalibrateRequest, run_calibrate

    calls: list[tuple[int, int]] = []
    run_calibrate(CalibrateRequest(source="published", params=("step_overhead_s",)),
                  progress=lambda done, total: calls.append((done, total)))
    # one parameter: 400 Nelder-Mead iterations at most per start, four starts → a budget of 1,600
    assert calls[-1] == (1600, 1600) and all(t == 1600 and 0 <= d <= t for d, t in calls)


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_bar_is_drawn_on_a_terminal_only(monkeypatch):
    monkeypatch.setattr(sys, "stderr", _Terminal())
    with progress_bar("simulating", "req") as progress:
        assert progress is not None
        progress(5, 10)
    assert "\r" in sys.stderr.getvalue() and "simulating" in sys.stderr.getvalue()
    monkeypatch.setattr(sys, "stderr", io.StringIO())  # not a terminal
    with progress_bar("simulating") as progress:
        assert progress is None


def test_piped_commands_leave_no_carriage_returns(tmp_path):
    """A real process with stderr piped (as in CI logs): simulate and capacity print no '\\r'."""
    for args in (["simulate", "llama-3.1-8b", "--gpu", "h100-sxm", "--rate", "20", "--requests", "300"],
                 ["capacity", "llama-3.1-8b", "--gpu", "h100-sxm", "--requests", "100", "--ttft-slo", "0.5",
                  "--workers", "1"]):
        run = subprocess.run([sys.executable, "-c", "import sys; from kokuban.cli import main; sys.exit(main())",
                              *args], capture_output=True, text=True, timeout=300, cwd=tmp_path)
        assert run.returncode == 0, run.stderr
        assert "\r" not in run.stderr and "\r" not in run.stdout


def test_the_session_search_stays_within_its_announced_runs():
    """max_sessions with a latency of n seconds for n sessions and a 12 s target, limit 32: doubling runs 1, 2, 4,
    8, 16 (16 misses), bisection 12 (meets), 14 and 13 (miss): 8 runs, within the bound 2·⌈log₂ 32⌉ + 1 = 11."""
    from types import SimpleNamespace

    import numpy as np

    from kokuban.sim.sessions import max_sessions

    calls: list[tuple[int, int]] = []
    cap = max_sessions(lambda n: SimpleNamespace(run_latency_s=np.array([float(n)])), 12.0, limit=32,
                       progress=lambda done, total: calls.append((done, total)))
    assert cap.max_sessions == 12
    assert calls == [(k, 11) for k in range(1, 9)] + [(8, 8)]


def test_the_session_search_bound_holds_for_any_limit_and_target():
    from types import SimpleNamespace

    import numpy as np
    from hypothesis import given
    from hypothesis import strategies as st

    from kokuban.sim.sessions import max_sessions

    @given(st.integers(1, 4096), st.floats(0.5, 5000))
    def check(limit: int, target: float) -> None:
        calls: list[tuple[int, int]] = []
        max_sessions(lambda n: SimpleNamespace(run_latency_s=np.array([float(n)])), target, limit=limit,
                     progress=lambda done, total: calls.append((done, total)))
        assert all(0 < d <= t for d, t in calls) and calls[-1][0] == calls[-1][1]
        assert len({t for _, t in calls[:-1]}) <= 1  # the announced bound never had to grow

    check()


def test_the_frontier_sweep_reports_each_configuration():
    """llama-3.1-70b (dense, so no ep) on 2 accelerators × 2 weight dtypes × counts 1, 2, 4, 8: 2·2·4 = 16
    configurations, reported 0…16 of 16."""
    from kokuban.usecases.economics import FrontierRequest, run_frontier

    calls: list[tuple[int, int]] = []
    run_frontier(FrontierRequest(model="llama-3.1-70b", gpu=("h100-sxm", "h200"), weights=("bf16", "fp8"),
                                 context=2048), progress=lambda done, total: calls.append((done, total)))
    assert calls == [(k, 16) for k in range(17)]
