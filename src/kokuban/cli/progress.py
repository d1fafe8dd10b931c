"""Progress bars for the commands that can run for more than a second: a tqdm bar on stderr, drawn only when
stderr is a terminal (piped into a log, nothing: no carriage-return litter). The computing layers only call the
`kokuban.progress.Progress` callback this hands them."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

from kokuban.progress import Progress


@contextmanager
def progress_bar(desc: str, unit: str = "it") -> Iterator[Progress | None]:
    """A `progress(done, total)` callback drawing a bar named `desc` while the block runs, or None off a
    terminal (the computation then skips its reports)."""
    if not sys.stderr.isatty():
        yield None
        return
    from tqdm import tqdm

    bar = tqdm(desc=desc, unit=unit, leave=False, file=sys.stderr, dynamic_ncols=True)

    def update(done: int, total: int) -> None:
        if done < bar.n:  # a new stage (validate: the probe, then the timed calls)
            bar.reset(total)
        bar.total = total
        bar.update(done - bar.n)  # tqdm redraws at most every 0.1 s

    try:
        yield update
    finally:
        bar.close()
