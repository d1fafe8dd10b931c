"""Scenarios built only from published statistics (data/agent_presets.toml: each with its sources and what
was assumed), a scenario file of the same schema, and the example trace."""

from __future__ import annotations

import tomllib
from importlib import resources
from pathlib import Path
from typing import Any

from kokuban.agents.scenario import Scenario
from kokuban.errors import KokubanError, unknown_name

BUNDLED = "agent_presets.toml"
EXAMPLE_TRACE = "agent_trace_example.jsonl"
KEYS = {"name", "steps", "system_tokens", "output_tokens", "tool_tokens", "gap_s", "subagents", "subagent_steps",
        "source", "assumptions", "retrieved"}


def _scenario(entry: dict[str, Any], where: str) -> Scenario:
    unknown = sorted(set(entry) - KEYS)
    if unknown:
        raise KokubanError(f"{where}: '{unknown[0]}' is not a scenario field; allowed: {', '.join(sorted(KEYS))}",
                           field="scenario_file")
    missing = [k for k in ("steps", "system_tokens", "output_tokens", "tool_tokens", "gap_s") if k not in entry]
    if missing:
        raise KokubanError(f"{where}: {missing[0]} is missing", field="scenario_file")
    return Scenario.make(**entry)


def presets() -> dict[str, Scenario]:
    """The bundled presets by name."""
    with (resources.files("kokuban") / "data" / BUNDLED).open("rb") as fh:
        data = tomllib.load(fh)
    return {e["name"]: _scenario(e, f"{BUNDLED} preset {e['name']}") for e in data["preset"]}


def preset(name: str) -> Scenario:
    """One bundled preset; an unknown name suggests the close ones."""
    known = presets()
    if name not in known:
        err = unknown_name("preset", name, known, field="preset")
        raise KokubanError(
            err.reason.replace("`kokuban presets`", "`kokuban agent presets`"), field="preset", value=name
        )
    return known[name]


def read_scenario(path: str | Path) -> Scenario:
    """A scenario file: TOML with the preset keys at the top level (or one [[preset]] table)."""
    from kokuban.specs.files import read_toml

    try:
        data = read_toml(path, "scenario")
    except KokubanError as exc:
        raise KokubanError(exc.reason, field="scenario_file", value=str(path)) from None
    entry = data["preset"][0] if isinstance(data.get("preset"), list) and data["preset"] else data
    if not isinstance(entry, dict):
        raise KokubanError(f"scenario '{path}': a [[preset]] entry must be a table of fields", field="scenario_file",
                           value=str(path))
    return _scenario(dict(entry), str(path))


def example_trace_path() -> str:
    """The bundled example trace (hand-written in TraceLab's per-step accounting shape; illustrative, not measured)."""
    return str(resources.files("kokuban") / "data" / EXAMPLE_TRACE)
