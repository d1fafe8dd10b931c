"""Reading `--json` output in tests: `result_of(text)` parses it, checks the envelope every document carries
(`kokuban_version`, `schema_version`, `command`; README "JSON output") and returns the result inside it."""

from __future__ import annotations

import json
from typing import Any

from kokuban import __version__
from kokuban.present.jsonout import SCHEMA_VERSION
from kokuban.present.jsonout import result_of as _inside


def envelope_of(text: str, command: str | None = None) -> dict[str, Any]:
    """The parsed document, after checking its envelope (and its `command`, if given)."""
    doc = json.loads(text)
    assert isinstance(doc, dict), f"the top level is a {type(doc).__name__}, not an object"
    assert doc.get("kokuban_version") == __version__, doc.get("kokuban_version")
    assert doc.get("schema_version") == SCHEMA_VERSION, doc.get("schema_version")
    assert isinstance(doc.get("command"), str), doc.get("command")
    if command is not None:
        assert doc["command"] == command, (doc["command"], command)
    return doc


def result_of(text: str, key: str | None = None, command: str | None = None) -> Any:
    """The result inside the `--json` text: its keys without the envelope's, or the list under `key`."""
    return _inside(envelope_of(text, command), key)
