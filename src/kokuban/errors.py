"""One error type for bad input, with the closest-name suggestion the CLI prints on one line."""

from __future__ import annotations

import difflib
import math
from collections.abc import Iterable


class KokubanError(ValueError):
    """Bad input or an impossible configuration. The message is one line, meant for a person."""


def unknown_name(kind: str, name: str, choices: Iterable[str]) -> KokubanError:
    """Build the error for an unknown catalog name, suggesting the closest known names."""
    choices = sorted(choices)
    close = difflib.get_close_matches(name.lower(), choices, n=3, cutoff=0.4)
    hint = f"did you mean {', '.join(close)}?" if close else f"known: {', '.join(choices[:12])}…"
    return KokubanError(f"unknown {kind} '{name}': {hint} (see `kokuban {kind}s`)")


def require_positive(name: str, value: float, *, integer: bool = False) -> None:
    """Raise a one-line error unless value is a positive number (and an integer if asked)."""
    ok = isinstance(value, (int, float)) and value > 0 and not math.isnan(value)
    if integer and ok:
        ok = float(value).is_integer()
    if not ok:
        kind = "a positive integer" if integer else "a positive number"
        raise KokubanError(f"{name} must be {kind}, got {value!r}")
