"""Notes: remarks for the person running kokuban about a choice made on their behalf (a family name taken as
its common variant, a model variant taken as its catalog base). A note is a `KokubanNote` warning, so the Python
API can filter or record it; the CLI prints it as one line, "note: …", on stderr (never into --json output)."""

from __future__ import annotations

import warnings


class KokubanNote(UserWarning):
    """A choice kokuban made for the caller, worth saying."""


def note(message: str, *, stacklevel: int = 3) -> None:
    """Issue `message` as a KokubanNote (by default attributed to the caller's caller)."""
    warnings.warn(message, KokubanNote, stacklevel=stacklevel)
