"""Number formatting for people: SI prefixes, seconds, gigabytes, and the rich console every table prints to."""

from __future__ import annotations

import sys


def si(value: float, unit: str = "", digits: int = 3) -> str:
    """1.23e12 → '1.23 T' + unit."""
    value = float(value)
    for factor, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= factor:
            return f"{value / factor:.{digits}g} {prefix}{unit}"
    return f"{value:.{digits}g} {unit}".rstrip()


def secs(value: float) -> str:
    """Seconds in the unit that reads best: µs, ms or s (3 significant digits)."""
    value = float(value)
    if value == 0:
        return "0 s"
    if value < 1e-3:
        return f"{value * 1e6:.3g} µs"
    if value < 1:
        return f"{value * 1e3:.3g} ms"
    return f"{value:.3g} s"


def gb(value: float) -> str:
    """Bytes as decimal gigabytes (1 GB = 1e9 B)."""
    return f"{float(value) / 1e9:.2f} GB"


def console():
    """A rich Console: the terminal's width; printing to a pipe or a file, $COLUMNS when it is set (the generated
    docs print at 100) or else 140, where rich would assume 80 and squeeze the tables."""
    import os

    from rich.console import Console

    columns = os.environ.get("COLUMNS", "")
    width = (int(columns) if columns.isdigit() and int(columns) >= 40 else 140) if not sys.stdout.isatty() else None
    return Console(highlight=False, width=width)
