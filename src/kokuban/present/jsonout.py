"""The one JSON serialiser: every face (CLI `--json`, files, the web API) turns results into text here."""

from __future__ import annotations

import json
from typing import Any

import numpy as np


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
