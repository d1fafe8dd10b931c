"""The one JSON serialiser: every face (CLI `--json`, files, the web API) turns results into text here.

Every `--json` document is one object, the *envelope*: `kokuban_version` (the package's version), `schema_version`
(`SCHEMA_VERSION`, raised when a key is renamed or removed, so a script can check what it reads), `command` (the
command path, e.g. "prices explain"), then the result's own keys — a list-shaped result under a named key
(`"gpus": [...]`), a refusal under `"error"`. The key names follow one vocabulary (README, "JSON output").
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

#: The version of the `--json` key vocabulary and shape; raised on any rename or removal of a key.
SCHEMA_VERSION = 1
#: The keys every `--json` document starts with.
ENVELOPE_KEYS = ("kokuban_version", "schema_version", "command")


def plain(obj: Any) -> Any:
    """NumPy scalars and arrays as plain numbers and lists (the `default=` hook of `json.dumps`)."""
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")


def to_json(data: Any) -> str:
    """`data` as indented JSON text (SI units and stable keys are the callers' `as_dict()` contract)."""
    return json.dumps(data, indent=2, default=plain)


def envelope(command: str, data: Any, key: str | None = None) -> dict[str, Any]:
    """`data` inside the envelope: {"kokuban_version", "schema_version", "command", **data}. A result that is
    not a dict (a list of rows) goes under `key`, so the top level is always an object."""
    from kokuban import __version__

    if not isinstance(data, dict):
        if key is None:
            raise TypeError(f"a {type(data).__name__} result needs a key to go under")
        data = {key: data}
    clash = set(ENVELOPE_KEYS) & set(data)
    if clash:
        raise ValueError(f"result keys {sorted(clash)} are the envelope's")
    return {"kokuban_version": __version__, "schema_version": SCHEMA_VERSION, "command": command} | data


def result_of(document: dict[str, Any], key: str | None = None) -> Any:
    """The result inside an envelope (the inverse of `envelope`): its own keys, or the list under `key`."""
    if key is not None:
        return document[key]
    return {k: v for k, v in document.items() if k not in ENVELOPE_KEYS}


def read_envelope(text: str, command: str | None = None) -> dict[str, Any]:
    """A `--json` document read back and its envelope checked, for a script that consumes kokuban's output: one
    object, this package's `kokuban_version`, this `SCHEMA_VERSION` (a script written for another reads a key that
    may have moved), a `command` (and the one given, if any). Anything else is a ValueError naming what differs."""
    from kokuban import __version__

    doc = json.loads(text)
    if not isinstance(doc, dict):
        raise ValueError(f"a --json document is one object, got a {type(doc).__name__}")
    expected = {"kokuban_version": __version__, "schema_version": SCHEMA_VERSION}
    for name, value in expected.items():
        if doc.get(name) != value:
            raise ValueError(f"{name} is {doc.get(name)!r}, expected {value!r}")
    if not isinstance(doc.get("command"), str) or (command is not None and doc["command"] != command):
        raise ValueError(f"command is {doc.get('command')!r}, expected {command or 'a command path'!r}")
    return doc


def read_result(text: str, key: str | None = None, command: str | None = None) -> Any:
    """The result inside a `--json` document (`read_envelope`, then `result_of`): its own keys, or the list under
    `key`."""
    return result_of(read_envelope(text, command), key)
