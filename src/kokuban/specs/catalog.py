"""The bundled catalogs (models as their config.json files, accelerators, with sources) and name lookups.

A model is named by
- a catalog id (`kokuban models`: `llama-3.1-8b`);
- a path to a config.json, or a model folder holding one (a local checkpoint);
- a Hugging Face id (`meta-llama/Llama-3.1-8B`, any case): the catalog entry whose source repo it is; else the
  local Hugging Face cache, offline ($HF_HUB_CACHE, $HF_HOME/hub or ~/.cache/huggingface/hub); else the
  catalog entry it is a variant of (`…-Instruct`, `Meta-Llama-…`, `-chat`, `-it`, `-Base`: a fine-tune keeps
  its base's architecture), with a note saying so. Nothing is downloaded;
- a coarse spec `coarse:total=70e9,active=70e9,kv=327680[,experts=E,topk=K,layers=L,hidden=D,max_context=N]`.

An accelerator is a catalog id (`kokuban gpus`), an id from a user file in the same TOML/JSON schema, a name
people type (`h100`, `a100`, `mi300`: the catalog's `[aliases]` take the most common variant, with a note
saying which; `NVIDIA H200`, `rtx4090`: spellings of an id), or `custom:…`.

A note is a `kokuban.notes.KokubanNote` warning: the CLI prints it as "note: …" on stderr, never into --json.
"""

from __future__ import annotations

import difflib
import os
import re
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from kokuban.errors import KokubanError, unknown_name
from kokuban.notes import note
from kokuban.specs.files import read_json, read_toml, schema_error
from kokuban.specs.hardware import Accelerator
from kokuban.specs.model import ModelSpec

DATA = resources.files("kokuban") / "data"


# ---- models --------------------------------------------------------------------------------------
@cache
def model_catalog() -> dict[str, dict[str, Any]]:
    """Catalog metadata by id: hf_repo, source, retrieved, published parameter counts and their source."""
    entries = read_toml(DATA / "models" / "catalog.toml", "model catalog").get("model", [])
    return {e["id"]: e for e in entries}


@cache
def _catalog_model(model_id: str) -> ModelSpec:
    entry = model_catalog()[model_id]
    config = read_json(DATA / "models" / f"{model_id}.json", "catalog config")
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
    ints = {
        k: int(v)
        for k, v in fields.items()
        if k in ("num_experts", "top_k", "num_layers", "hidden_size", "max_context")
    }
    return ModelSpec.coarse(
        "coarse", fields["params_total"], fields["params_active"], fields["kv_bytes_per_token"], **ints
    )


#: Words a fine-tune or a re-release adds to its base model's Hugging Face name (architecture unchanged).
_VARIANT_WORDS = re.compile(r"-(instruct|chat|hf|it|pt|base)(?=-|$)")


def _variant_key(repo_name: str) -> str:
    """A model name with the fine-tune words dropped: 'Meta-Llama-3.1-8B-Instruct' → 'llama-3.1-8b'."""
    key = repo_name.lower().removeprefix("meta-")
    return _VARIANT_WORDS.sub("", key)


@cache
def _hf_index() -> tuple[dict[str, str], dict[tuple[str, str], str]]:
    """({lower-case hf_repo: catalog id}, {(org, variant key of name or id): catalog id})."""
    exact: dict[str, str] = {}
    variants: dict[tuple[str, str], str] = {}
    for model_id, entry in model_catalog().items():
        repo = str(entry.get("hf_repo", ""))
        if "/" in repo:
            org, name = repo.lower().split("/", 1)
            exact[repo.lower()] = model_id
            variants.setdefault((org, _variant_key(name)), model_id)
            variants.setdefault(("", _variant_key(name)), model_id)
        variants.setdefault(("", _variant_key(model_id)), model_id)
    return exact, variants


def hf_cache_dirs() -> list[Path]:
    """Where the Hugging Face hub keeps downloads on this machine, as huggingface_hub decides it: $HF_HUB_CACHE
    (or its older name $HUGGINGFACE_HUB_CACHE), else $HF_HOME/hub, else ~/.cache/huggingface/hub (under
    $XDG_CACHE_HOME when set)."""
    for variable in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        if os.environ.get(variable):
            return [Path(os.environ[variable]).expanduser()]
    if os.environ.get("HF_HOME"):
        return [Path(os.environ["HF_HOME"]).expanduser() / "hub"]
    xdg = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return [xdg.expanduser() / "huggingface" / "hub"]


def hf_cached_config(repo_id: str) -> Path | None:
    """The config.json of `repo_id` in the local Hugging Face cache (the snapshot `refs/main` points to, else
    the newest), matched case-insensitively; None if it is not there. Reads only; nothing is downloaded."""
    folder_name = ("models--" + repo_id.replace("/", "--")).lower()
    for hub in hf_cache_dirs():
        try:
            folders = [f for f in hub.iterdir() if f.name.lower() == folder_name] if hub.is_dir() else []
            for folder in folders:
                ref = folder / "refs" / "main"
                pinned = folder / "snapshots" / ref.read_text().strip() / "config.json" if ref.is_file() else None
                if pinned is not None and pinned.is_file():
                    return pinned
                configs = sorted(folder.glob("snapshots/*/config.json"), key=lambda p: p.stat().st_mtime)
                if configs:
                    return configs[-1]
        except (OSError, ValueError):  # an unreadable cache is a cache without the model
            continue
    return None


def _looks_like_hf_id(name: str) -> bool:
    return re.fullmatch(r"[A-Za-z0-9][\w.-]*/[\w.-]+", name) is not None


def _from_hf_id(name: str) -> ModelSpec | None:
    """A Hugging Face id through the catalog, the local cache, or a catalog variant (see the module doc)."""
    exact, variants = _hf_index()
    if name.lower() in exact:
        return _catalog_model(exact[name.lower()])
    if "/" in name:
        cached = hf_cached_config(name)
        if cached is not None:
            note(f"model '{name}' read from the local Hugging Face cache: {cached}")
            return ModelSpec.from_file(cached, name=name)
    org, _, repo_name = name.lower().rpartition("/")
    model_id = variants.get((org, _variant_key(repo_name)))
    if model_id is None:
        return None
    base = model_catalog()[model_id].get("hf_repo", model_id)
    note(f"model '{name}' taken as the catalog's {model_id} ({base}), whose architecture a fine-tune keeps; "
         "for the variant's own config.json (its context window may differ) pass its path or folder")
    return _catalog_model(model_id)


def _from_path(path: Path) -> ModelSpec:
    """A config.json, or a model folder holding one."""
    try:
        is_dir = path.is_dir()
    except (OSError, ValueError):  # a path too long: reading it says so below
        is_dir = False
    if is_dir:
        config = path / "config.json"
        if not config.is_file():
            raise KokubanError(f"model folder '{path}' holds no config.json (a Hugging Face checkpoint folder does)")
        return ModelSpec.from_file(config, name=path.resolve().name)
    return ModelSpec.from_file(path)


def load_model(name: str) -> ModelSpec:
    """Resolve a catalog id, a config.json path or model folder, a Hugging Face id, or a coarse spec to a
    ModelSpec (see the module doc for the order); a bad name or file is a one-line error about `model`."""
    try:
        return _load_model(name)
    except KokubanError as exc:
        if exc.field is None:
            raise KokubanError(exc.reason, field="model", value=name) from None
        raise


def _load_model(name: str) -> ModelSpec:
    if name.startswith("coarse:"):
        return parse_coarse(name)
    key = name.lower()
    if key in model_catalog():
        return _catalog_model(key)
    if not name.strip():
        raise KokubanError("give a catalog id (`kokuban models`), a config.json or model folder, a Hugging Face id "
                           "or coarse:total=…,active=…,kv=…", field="model", value=name)
    path = Path(name).expanduser()
    try:
        on_disk = path.exists()
    except (OSError, ValueError):  # a name too long for a path, or with a NUL byte in it
        on_disk = False
    if on_disk or path.suffix == ".json":
        return _from_path(path)
    if not _looks_like_hf_id(name) and ("/" in name or os.sep in name or name.startswith(("~", "."))):
        raise KokubanError(f"no model file or folder at '{name}': give a config.json, a folder holding one, a catalog "
                           "id (`kokuban models`), a Hugging Face id (org/name) or coarse:total=…,active=…,kv=…",
                           field="model", value=name)
    spec = _from_hf_id(name)
    if spec is not None:
        return spec
    if _looks_like_hf_id(name):
        exact, _ = _hf_index()
        close = difflib.get_close_matches(key, list(exact), n=3, cutoff=0.6)
        hint = f"did you mean {', '.join(close)}? " if close else ""
        where = ", ".join(str(d) for d in hf_cache_dirs())
        raise KokubanError(
            f"model '{name}' is neither in the catalog nor in the local Hugging Face cache ({where}); {hint}kokuban "
            f"downloads nothing: `hf download {name} config.json` fetches its config, then pass that file, a model "
            "folder, or coarse:total=…,active=…,kv=…", field="model", value=name)
    raise unknown_name("model", name, model_catalog(), field="model")


# ---- accelerators ---------------------------------------------------------------------------------
def _checked_entry(entry: Any, label: str) -> Accelerator:
    """One entry in the catalog schema (specs/schemas.py) → Accelerator; a violation names `label` and the field."""
    from pydantic import ValidationError

    from kokuban.specs.schemas import AcceleratorSchema

    if not isinstance(entry, dict):
        raise KokubanError(f"{label} must be a table of fields, not a {type(entry).__name__}")
    try:
        AcceleratorSchema.model_validate(entry)
    except ValidationError as exc:
        raise schema_error(exc, label) from None
    return Accelerator.from_dict(entry)


def _accelerators_from(entries: Any, where: str) -> dict[str, Accelerator]:
    """Accelerators from a list of entries in the catalog schema, each checked; ids unique."""
    if not isinstance(entries, list) or not entries:
        raise KokubanError(f"{where} holds no [[accelerator]] entries (a TOML array of tables, or a JSON list)")
    found: dict[str, Accelerator] = {}
    for i, entry in enumerate(entries, 1):
        label = f"{where}, entry {i}"
        if isinstance(entry, dict) and isinstance(entry.get("id"), str):
            label += f" ({entry['id']!r})"
        acc = _checked_entry(entry, label)
        if acc.id in found:
            raise KokubanError(f"{label}: the id '{acc.id}' is given twice")
        found[acc.id] = acc
    return found


@cache
def _accelerator_data() -> dict[str, Any]:
    return read_toml(DATA / "accelerators.toml", "accelerator catalog")


@cache
def accelerator_catalog() -> dict[str, Accelerator]:
    """The bundled accelerators by id."""
    return _accelerators_from(_accelerator_data().get("accelerator", []), "accelerator catalog")


def read_accelerator_file(path: str | Path) -> dict[str, Accelerator]:
    """A user's accelerators in the catalog schema, as TOML (`[[accelerator]]` tables) or JSON (a list, or an
    object with an "accelerator" list). Each failure is one line naming the file, the entry and the field."""
    path = Path(path)
    where = f"accelerator file '{path}'"
    if path.suffix == ".json":
        data = read_json(path, "accelerator file")
        entries = data.get("accelerator", []) if isinstance(data, dict) else data
    else:
        entries = read_toml(path, "accelerator file").get("accelerator", [])
    return _accelerators_from(entries, where)


CUSTOM_KEYS = {
    "mem": "memory_bytes", "bw": "memory_bandwidth_bytes_per_s", "link": "interconnect_bytes_per_s",
    "price": "price_per_hour_usd", "bf16": "flops_bf16", "fp16": "flops_fp16", "fp8": "flops_fp8",
    "int8": "flops_int8", "fp4": "flops_fp4", "fp32": "flops_fp32",
}


def parse_custom_accelerator(text: str) -> Accelerator:
    """`custom:bf16=989e12,bw=3.35e12,mem=80e9[,fp8=…,int8=…,fp4=…,link=450e9,price=2.5]` → Accelerator."""
    entry: dict[str, Any] = {"id": "custom", "name": "custom accelerator", "sources": ["given on the command line"]}
    for part in filter(None, text.split(":", 1)[1].split(",")):
        key, _, value = part.partition("=")
        if key.strip() not in CUSTOM_KEYS:
            raise KokubanError(f"custom accelerator field '{key}' is not known; allowed: {', '.join(CUSTOM_KEYS)}")
        try:
            entry[CUSTOM_KEYS[key.strip()]] = float(value)
        except ValueError:
            raise KokubanError(f"custom accelerator field '{key}' must be a number, got '{value}'") from None
    return _checked_entry(entry, "custom accelerator")


_VENDOR_PREFIX = re.compile(r"^(nvidia|amd|intel|google|aws|instinct|cloud|geforce)-")


def _compact(name: str) -> str:
    """A name with case, spaces, dashes, underscores and vendor words dropped: 'NVIDIA H100 SXM' → 'h100sxm'."""
    key = re.sub(r"[\s_]+", "-", name.strip().lower())
    while _VENDOR_PREFIX.match(key):
        key = _VENDOR_PREFIX.sub("", key)
    return key.replace("-", "")


@cache
def accelerator_names() -> tuple[dict[str, tuple[str, str]], dict[str, str]]:
    """({compact alias: (id, why)}, {compact spelling: id}) from accelerators.toml's [aliases] and [spellings]."""
    data = _accelerator_data()
    aliases = {_compact(k): (v["id"], v["why"]) for k, v in data.get("aliases", {}).items()}
    spellings = {_compact(k): v for k, v in data.get("spellings", {}).items()}
    return aliases, spellings


def resolve_accelerator_name(name: str, known: dict[str, Accelerator]) -> str | None:
    """The id in `known` that `name` names: itself, any case or spelling of it, or an alias (with a note)."""
    if name in known:
        return name
    if name.lower() in known:
        return name.lower()
    key = _compact(name)
    by_compact = {_compact(acc_id): acc_id for acc_id in known}
    if key in by_compact:
        return by_compact[key]
    aliases, spellings = accelerator_names()
    if spellings.get(key) in known:
        return spellings[key]
    if key in aliases and aliases[key][0] in known:
        acc_id, why = aliases[key]
        note(f"gpu '{name}' taken as {acc_id} ({known[acc_id].name}) — {why}")
        return acc_id
    return None


def load_accelerator(name: str, extra_file: str | Path | None = None) -> Accelerator:
    """Resolve an accelerator from a user file (first) or the catalog, by id, spelling or alias (see the module
    doc), suggesting close names; `custom:…` builds one from flags (see `parse_custom_accelerator`)."""
    if name.startswith("custom:"):
        return parse_custom_accelerator(name)
    known = dict(accelerator_catalog())
    if extra_file:
        try:
            known.update(read_accelerator_file(extra_file))
        except KokubanError as exc:
            raise KokubanError(exc.reason, field="gpu_file", value=str(extra_file)) from None
    acc_id = resolve_accelerator_name(name, known)
    if acc_id is None:
        raise unknown_name("gpu", name, [*known, *_accelerator_data().get("aliases", {})], field="gpu")
    return known[acc_id]
