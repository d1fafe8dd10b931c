"""Notes: remarks for the person running kokuban about a choice made on their behalf (a family name taken as
its common variant, a model variant taken as its catalog base). A note is a `KokubanNote` warning, so the Python
API can filter or record it; the CLI prints it as one line, "note: …", on stderr (never into --json output)."""

from __future__ import annotations

import warnings


class KokubanNote(UserWarning):
    """A choice kokuban made for the caller, worth saying."""


class KokubanWarning(KokubanNote):
    """Something kokuban could not read as given (a checkpoint's unknown quantisation): the CLI prints "warning: …"."""


def note(message: str, *, stacklevel: int = 3, warning: bool = False) -> None:
    """Issue `message` as a KokubanNote, or a KokubanWarning with `warning` (by default attributed to the caller's
    caller)."""
    warnings.warn(message, KokubanWarning if warning else KokubanNote, stacklevel=stacklevel)
