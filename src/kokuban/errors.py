"""One error type for bad input. It carries the *field* it is about (a Python/JSON name such as `max_batch`),
never a command-line flag: each face words the field its own way (the CLI as its option of that name, the web
API as the JSON key), so the computing layers stay face-neutral."""

from __future__ import annotations

import difflib
import math
from collections.abc import Callable, Iterable
from typing import Any

_UNSET: Any = object()


class KokubanError(ValueError):
    """Bad input or an impossible configuration: one line, meant for a person.

    `field` names the input at fault (a request field such as "batch"), `value` the value given, `detail` the
    numbers behind the reason when a script may want them (a configuration that does not fit: what it needs,
    what is offered, what would fit; JSON-ready, in the `--json` key vocabulary). `str(err)`
    reads "batch: must be a positive integer, got 0"; `err.worded(flag_of)` puts the face's name for the field
    in front instead (the CLI passes a function that names the command's option for the field).
    """

    def __init__(self, reason: str, *, field: str | None = None, value: Any = _UNSET,
                 detail: dict[str, Any] | None = None) -> None:
        self.reason = reason
        self.field = field
        self.value = None if value is _UNSET else value
        self.detail = detail
        super().__init__(self.worded())

    def worded(self, name_of: Callable[[str], str] | None = None) -> str:
        """The one-line message with the field named by `name_of(field)` (default: the field itself)."""
        text = self.reason if self.field is None else f"{(name_of or str)(self.field)}: {self.reason}"
        return text.replace("\r", "\\r").replace("\n", "\\n")  # one line, whatever a value held

    def as_dict(self) -> dict[str, Any]:
        """The error as JSON for a web face: {"field", "value", "reason", "message"}, and "detail" when set."""
        value = self.value if isinstance(self.value, (int, float, str, bool, type(None))) else repr(self.value)
        out = {"field": self.field, "value": value, "reason": self.reason, "message": self.worded()}
        return out | ({"detail": self.detail} if self.detail is not None else {})


def short_numbers(text: str) -> str:
    """Long integers in a validation library's message written short: "less than or equal to 1e+21", not 22 digits."""
    import re

    def short(match: re.Match[str]) -> str:
        digits = match.group(1)
        written = f"{float(digits):g}"
        return written if float(written) == int(digits) else match.group(0)  # only where nothing is lost

    return re.sub(r"(?<![\w.'])(\d{10,})(?:\.0)?(?![\w.'])", short, text)


def unknown_name(kind: str, name: str, choices: Iterable[str], *, field: str | None = None) -> KokubanError:
    """Build the error for an unknown catalog name, suggesting the closest known names."""
    choices = sorted(choices)
    close = difflib.get_close_matches(name.lower(), choices, n=3, cutoff=0.4)
    hint = f"did you mean {', '.join(close)}?" if close else f"known: {', '.join(choices[:12])}…"
    return KokubanError(f"unknown {kind} '{name}': {hint} (see `kokuban {kind}s`)", field=field, value=name)


def require_positive(field: str, value: float, *, integer: bool = False) -> None:
    """Raise a one-line error about `field` unless value is a positive finite number (an integer if asked)."""
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0
    if integer and ok:
        ok = float(value).is_integer()
    if not ok:
        kind = "a positive integer" if integer else "a positive finite number"
        raise KokubanError(f"must be {kind}, got {value!r}", field=field, value=value)
