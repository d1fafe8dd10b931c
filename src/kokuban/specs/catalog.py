"""The bundled catalogs (models as their config.json files, accelerators, with sources) and lookups.

A model is named by a catalog id (`kokuban models`), a path to a config.json, or a coarse spec
`coarse:total=70e9,active=70e9,kv=327680[,experts=E,topk=K,layers=L,hidden=D,max_context=N]`.
An accelerator is a catalog id (`kokuban gpus`) or an id from a user file in the same TOML/JSON schema.
"""

from __future__ import annotations

import json
import tomllib
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from kokuban.errors import KokubanError, unknown_name
from kokuban.specs.hardware import Accelerator
from kokuban.specs.model import ModelSpec

DATA = resources.files("kokuban") / "data"


def _read_toml(path: Any, what: str) -> dict[str, Any]:
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except OSError as exc:
        raise KokubanError(f"cannot read {what} '{path}': {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise KokubanError(f"{what} '{path}' is not valid TOML: {exc}") from None


# ---- models --------------------------------------------------------------------------------------
@cache
def model_catalog() -> dict[str, dict[str, Any]]:
    """Catalog metadata by id: hf_repo, source, retrieved, published parameter counts and their source."""
    entries = _read_toml(DATA / "models" / "catalog.toml", "model catalog").get("model", [])
    return {e["id"]: e for e in entries}


@cache
def _catalog_model(model_id: str) -> ModelSpec:
    entry = model_catalog()[model_id]
    config = json.loads((DATA / "models" / f"{model_id}.json").read_text())
    return ModelSpec.from_config(config, name=model_id, source=entry.get("source", ""))


def parse_coarse(text: str) -> ModelSpec:
    """`coarse:total=…,active=…,kv=…[,experts=…,topk=…,layers=…,hidden=…,max_context=…]` → ModelSpec."""
    keys = {"total": "params_total", "active": "params_active", "kv": "kv_bytes_per_token", "experts": "num_experts",
            "topk": "top_k", "layers": "num_layers", "hidden": "hidden_size", "max_context": "max_context"}
    fields: dict[str, float] = {}
    for part in filter(None, text.split(":", 1)[1].split(",")):
        key, _, value = part.partition("=")
        if key.strip() not in keys:
            raise KokubanError(f"coarse model field '{key}' is not known; allowed: {', '.join(keys)}")
        try:
            fields[keys[key.strip()]] = float(value)
        except ValueError:
            raise KokubanError(f"coarse model field '{key}' must be a number, got '{value}'") from None
    missing = [k for k in ("total", "active", "kv") if keys[k] not in fields]
    if missing:
        raise KokubanError(f"coarse model needs {', '.join(missing)} (e.g. coarse:total=70e9,active=70e9,kv=327680)")
    ints = {k: int(v) for k, v in fields.items() if k in ("num_experts", "top_k", "num_layers", "hidden_size", "max_context")}
    return ModelSpec.coarse("coarse", fields["params_total"], fields["params_active"], fields["kv_bytes_per_token"], **ints)


def load_model(name: str) -> ModelSpec:
    """Resolve a catalog id, a config.json path, or a coarse spec to a ModelSpec."""
    if name.startswith("coarse:"):
        return parse_coarse(name)
    key = name.lower()
    if key in model_catalog():
        return _catalog_model(key)
    path = Path(name)
    if path.suffix == ".json" or path.exists():
        return ModelSpec.from_file(path)
    raise unknown_name("model", name, model_catalog(), field="model")


# ---- accelerators ---------------------------------------------------------------------------------
@cache
def accelerator_catalog() -> dict[str, Accelerator]:
    """The bundled accelerators by id."""
    entries = _read_toml(DATA / "accelerators.toml", "accelerator catalog").get("accelerator", [])
    return {e["id"]: Accelerator.from_dict(e) for e in entries}


def read_accelerator_file(path: str | Path) -> dict[str, Accelerator]:
    """A user's accelerators in the catalog schema, as TOML (`[[accelerator]]` tables) or JSON (a list)."""
    path = Path(path)
    if path.suffix == ".json":
        try:
            data = json.loads(path.read_text())
        except OSError as exc:
            raise KokubanError(f"cannot read accelerator file '{path}': {exc.strerror}") from None
        except json.JSONDecodeError as exc:
            raise KokubanError(f"accelerator file '{path}' is not valid JSON (line {exc.lineno}: {exc.msg})") from None
        entries = data.get("accelerator", []) if isinstance(data, dict) else data
    else:
        entries = _read_toml(path, "accelerator file").get("accelerator", [])
    if not entries:
        raise KokubanError(f"accelerator file '{path}' holds no [[accelerator]] entries")
    return {e.get("id", "?"): Accelerator.from_dict(e) for e in entries}


CUSTOM_KEYS = {
    "mem": "memory_bytes", "bw": "memory_bandwidth_bytes_per_s", "link": "interconnect_bytes_per_s",
    "price": "price_per_hour_usd", "bf16": "flops_bf16", "fp16": "flops_fp16", "fp8": "flops_fp8",
    "int8": "flops_int8", "fp4": "flops_fp4", "fp32": "flops_fp32",
}


def parse_custom_accelerator(text: str) -> Accelerator:
    """`custom:bf16=989e12,bw=3.35e12,mem=80e9[,fp8=…,int8=…,fp4=…,link=450e9,price=2.5]` → Accelerator."""
    entry: dict[str, Any] = {"id": "custom", "name": "custom accelerator", "sources": ("given on the command line",)}
    for part in filter(None, text.split(":", 1)[1].split(",")):
        key, _, value = part.partition("=")
        if key.strip() not in CUSTOM_KEYS:
            raise KokubanError(f"custom accelerator field '{key}' is not known; allowed: {', '.join(CUSTOM_KEYS)}")
        try:
            entry[CUSTOM_KEYS[key.strip()]] = float(value)
        except ValueError:
            raise KokubanError(f"custom accelerator field '{key}' must be a number, got '{value}'") from None
    return Accelerator.from_dict(entry)


def load_accelerator(name: str, extra_file: str | Path | None = None) -> Accelerator:
    """Resolve an accelerator id from a user file (first) or the catalog, suggesting close names;
    `custom:…` builds one from flags (see `parse_custom_accelerator`)."""
    if name.startswith("custom:"):
        return parse_custom_accelerator(name)
    known = dict(accelerator_catalog())
    if extra_file:
        known.update(read_accelerator_file(extra_file))
    key = name if name in known else name.lower()
    if key not in known:
        raise unknown_name("gpu", name, known, field="gpu")
    return known[key]
