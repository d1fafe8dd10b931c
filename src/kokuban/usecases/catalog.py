"""The catalogs as use cases: the model and accelerator lists (the rows of `kokuban models --json` and
`kokuban gpus --json`), and a model from a user's config.json content (what a web upload hands over).

A config.json given as data is bounded before it is parsed (`MAX_LAYERS` layers, `MAX_CONFIG_KEYS` keys):
the parser builds per-layer tuples, so an unbounded layer count would be unbounded work.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kokuban.errors import KokubanError
from kokuban.specs.model import ModelSpec

#: The most layers a config.json given as data may declare (the largest catalog model has 126).
MAX_LAYERS = 1024
#: The most keys (counted over the top level and `text_config`) a config.json given as data may hold.
MAX_CONFIG_KEYS = 2000


@dataclass(frozen=True)
class Rows:
    """A catalog listing: one dict per entry (SI units). `as_dict()` is the JSON list."""

    rows: tuple[dict[str, Any], ...]

    def as_dict(self) -> list[dict[str, Any]]:
        return [dict(r) for r in self.rows]


def run_models() -> Rows:
    """The bundled model catalog: the rows of `kokuban models --json`, each with its Hub repository (`hf_repo`)."""
    from kokuban.specs.catalog import load_model, model_catalog

    rows = []
    for model_id, entry in model_catalog().items():
        m = load_model(model_id)
        rows.append({
            "id": model_id, "family": m.family, "params_total": m.params_total, "params_active": m.params_active,
            "bf16_kv_bytes_per_token": m.kv_bytes_per_token("bf16"), "max_context": m.max_context,
            "attention": m.attention, "experts": m.num_experts, "top_k": m.top_k, "native_dtype": m.native_dtype,
            "native_experts_dtype": m.native_experts_dtype or m.native_dtype,
            "source": entry.get("source", ""), "retrieved": entry.get("retrieved", ""),
            "verified": bool(entry.get("verified", False)), "hf_repo": entry.get("hf_repo", ""),
        })
    return Rows(tuple(rows))


def run_gpus(gpu_file: str | None = None) -> Rows:
    """The accelerator catalog, and those of `gpu_file` (the catalog's schema) if given: the rows of
    `kokuban gpus --json` (dense peak FLOP/s by dtype; a vendor's measured GEMM ceilings and the GPU's own kernel-curve
    constants where the catalog lists them). The web face never passes a file."""
    from kokuban.specs.catalog import accelerator_catalog, read_accelerator_file

    accs = dict(accelerator_catalog())
    if gpu_file:
        accs.update(read_accelerator_file(gpu_file))
    return Rows(tuple(
        {
            "id": a.id, "name": a.name, "vendor": a.vendor, "memory_bytes": a.memory_bytes,
            "memory_bandwidth_bytes_per_s": a.memory_bandwidth_bytes_per_s, "peak_flops": a.peak_flops,
            "interconnect": a.interconnect, "interconnect_bytes_per_s": a.interconnect_bytes_per_s,
            "usd_per_gpu_hour": a.price_per_hour_usd, "sources": list(a.sources), "retrieved": a.retrieved,
            # measured GEMM ceilings and the GPU's own kernel-curve constants (its kernel tables), {} where none
            "max_achievable_flops": a.max_achievable_flops, "kernel_constants": a.kernel_constants,
        }
        for a in accs.values()
    ))


def run_agent_presets() -> Rows:
    """The bundled agent scenarios: the rows of `kokuban agent presets --json`."""
    from kokuban.agents.presets import presets

    return Rows(tuple(s.as_dict() for s in presets().values()))


def catalog_model_name(name: str) -> str:
    """A model named as a web user may: a catalog id, the catalog's Hugging Face repository of one
    (`meta-llama/Llama-3.1-8B` → `llama-3.1-8b`), or a `coarse:` spec. Never a file path: a server must not
    read files a request names. Raises KokubanError(field="model") naming the close catalog ids."""
    from kokuban.errors import unknown_name
    from kokuban.specs.catalog import model_catalog

    catalog = model_catalog()
    if name.startswith("coarse:") or name.lower() in catalog:
        return name
    by_repo = {str(e.get("hf_repo", "")).lower(): model_id for model_id, e in catalog.items()}
    if name.lower() in by_repo:
        return by_repo[name.lower()]
    raise unknown_name("model", name, catalog, field="model")


def model_from_config(config: dict[str, Any], name: str = "uploaded") -> ModelSpec:
    """A ModelSpec from a config.json's content, bounded first; any fault in it is a KokubanError(field="model")."""
    if not isinstance(config, dict):
        raise KokubanError("a config.json must be a JSON object", field="model")
    text = config.get("text_config") if isinstance(config.get("text_config"), dict) else {}
    keys = len(config) + len(text)
    if keys > MAX_CONFIG_KEYS:
        raise KokubanError(f"config.json has {keys} keys; at most {MAX_CONFIG_KEYS} are read", field="model")
    layers = text.get("num_hidden_layers", config.get("num_hidden_layers"))
    if not isinstance(layers, int) or isinstance(layers, bool) or not 0 < layers <= MAX_LAYERS:
        raise KokubanError(f"config.json num_hidden_layers must be an integer from 1 to {MAX_LAYERS}, got {layers!r}",
                           field="model", value=layers)
    try:
        return ModelSpec.from_config(config, name=name, source="uploaded config.json")
    except KokubanError as exc:
        raise KokubanError(exc.reason, field="model", value=name) from None
    except (ArithmeticError, LookupError, TypeError, ValueError, AttributeError) as exc:
        raise KokubanError(f"config.json could not be read as a model: {type(exc).__name__}: {exc}"[:300],
                           field="model", value=name) from None
