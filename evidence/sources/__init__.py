"""The copied source tables: one package per source, each with its copied `table.md`, the `inclusion_rule.md` that
chose its rows before any was predicted, `build.py` (its `rows()`, and `files()`: the rows.toml it writes) and the
current model's `report.md`/`report.json` (`evidence.report`)."""

from __future__ import annotations

import importlib
from functools import cache
from pathlib import Path

HERE = Path(__file__).parent
#: every source, in the order the reports list them
SOURCES = ("trtllm010", "trtllm011", "trtllm012", "trtllm013", "trtllm014", "trtllm015", "trtllm017", "trtllm019",
           "trtllm020", "trtllm021", "lmdeploy01", "llamacpp_cuda", "llamacpp_sm", "llamacpp_xd", "amd_vllm",
           "amd_vllm_judge", "amd_vllm_nov")


def build(source: str):
    """The source's `build` module."""
    return importlib.import_module(f"evidence.sources.{source}.build")


def path(source: str, name: str = "rows.toml") -> Path:
    return HERE / source / name


@cache
def measurements(source: str, name: str = "rows.toml") -> tuple:
    """The rows of one of a source's files (`rows.toml`, or `versions.toml`/`beside.toml`) as
    `kokuban.validation.accuracy.PublishedResult`s, checked as `kokuban accuracy --measurements-file` checks them."""
    from kokuban.usecases.validation import read_measurements

    return tuple(read_measurements(str(path(source, name))))
