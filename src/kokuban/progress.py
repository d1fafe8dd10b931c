"""The progress callback the long computations take: `progress(done, total)`, called as work completes.

Computing layers never draw anything: they take `progress: Progress | None = None` and call it (through `tick`)
with how much of how much is done; a face decides what to show (`kokuban.cli.progress`: a tqdm bar on a
terminal, nothing when stderr is piped).
"""

from __future__ import annotations

from collections.abc import Callable

#: `progress(done, total)`: `done` of `total` units of the work are finished (0 ≤ done ≤ total).
Progress = Callable[[int, int], None]


def tick(progress: Progress | None, done: int, total: int) -> None:
    """Report `done` of `total` to `progress`, if there is one."""
    if progress is not None:
        progress(done, total)


__all__ = ["Progress", "tick"]
