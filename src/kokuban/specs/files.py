"""Reading a user's files: every failure is one line naming the file (and the line, for a syntax error).

`read_text` refuses what cannot be read, an empty file and bytes that are not UTF-8; `read_json` and `read_toml`
add the parse, and `schema_error` words a pydantic schema's complaint about a file's contents as "file: field …".
"""

from __future__ import annotations

import json
import tomllib
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

from kokuban.errors import KokubanError, short_numbers


def read_text(path: str | Path | Traversable, what: str) -> str:
    """The file's text: UTF-8 (a byte-order mark allowed), not empty; else a one-line KokubanError.
    `path` may be a package resource (`importlib.resources.files(...) / name`)."""
    path = path if isinstance(path, Traversable) else Path(path)
    try:
        data = path.read_bytes()
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the path
        raise KokubanError(f"cannot read {what} '{path}': {getattr(exc, 'strerror', None) or exc}") from None
    if not data.strip():
        raise KokubanError(f"{what} '{path}' is empty")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise KokubanError(f"{what} '{path}' is not UTF-8 text (byte 0x{data[exc.start]:02x} on line {line})") from None


def read_json(path: str | Path | Traversable, what: str) -> Any:
    """The parsed JSON of a file, or a one-line error with the line and column of a syntax error."""
    text = read_text(path, what)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise KokubanError(
            f"{what} '{path}' is not valid JSON: line {exc.lineno}, column {exc.colno}: {exc.msg}"
        ) from None
    except RecursionError:
        raise KokubanError(f"{what} '{path}' is nested too deeply to read") from None


def read_toml(path: str | Path | Traversable, what: str) -> dict[str, Any]:
    """The parsed TOML of a file, or a one-line error (tomllib's message gives the line and column)."""
    text = read_text(path, what)
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise KokubanError(f"{what} '{path}' is not valid TOML: {exc}") from None


def schema_error(exc: Any, where: str) -> KokubanError:
    """The first complaint of a pydantic `ValidationError` about a file's contents, as one line:
    "<where>: field 'num_attention_heads' must be greater than 0, got 0"."""
    first = exc.errors(include_url=False)[0]
    name = ".".join(str(part) for part in first["loc"])
    if first["type"] == "missing":
        return KokubanError(f"{where} is missing the field '{name}'")
    msg = short_numbers(first["msg"].removeprefix("Value error, "))
    if not name:  # a rule across fields (model_validator): its message names them
        return KokubanError(f"{where}: {msg}")
    msg = msg[0].lower() + msg[1:]
    return KokubanError(f"{where}: field '{name}' {msg.removeprefix('input ')}, got {first.get('input')!r}")
