"""kokuban (黒板): what running a large language model costs and how fast it goes, from first principles.

Data flows one way: specs (`ModelSpec`, `Accelerator`, `Deployment`) → core physics (`roofline`, `memory`,
`cost`) → wings (economics, prices, sim, validation) → use cases (`estimate`, typed requests and results)
→ presentation (`present`) → faces (`cli`).

The names below are imported on first use (PEP 562), so `import kokuban` — and `kokuban --help` — do not
pay for NumPy and pydantic until a name that needs them is touched.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

#: The one source of the version: hatch reads it at build time (pyproject.toml, [tool.hatch.version]), so the
#: installed metadata, `kokuban --version` and this attribute agree.
__version__ = "0.1.0"

#: Public name → the module that defines it.
_EXPORTS = {
    "Generation": "kokuban.core.generation", "generation": "kokuban.core.generation",
    "Step": "kokuban.core.roofline", "decode_step": "kokuban.core.roofline",
    "decode_step_mixed": "kokuban.core.roofline", "prefill": "kokuban.core.roofline",
    "KokubanError": "kokuban.errors",
    "accelerator_catalog": "kokuban.specs.catalog", "load_accelerator": "kokuban.specs.catalog",
    "load_model": "kokuban.specs.catalog", "model_catalog": "kokuban.specs.catalog",
    "Deployment": "kokuban.specs.deployment",
    "Accelerator": "kokuban.specs.hardware", "Efficiency": "kokuban.specs.hardware",
    "ModelSpec": "kokuban.specs.model",
    "Estimate": "kokuban.usecases.estimate", "estimate": "kokuban.usecases.estimate",
}

__all__ = [
    "Accelerator", "Deployment", "Efficiency", "Estimate", "Generation", "KokubanError", "ModelSpec", "Step",
    "__version__", "accelerator_catalog", "decode_step", "decode_step_mixed", "estimate", "generation",
    "load_accelerator", "load_model", "model_catalog", "prefill",
]


def __getattr__(name: str) -> Any:
    """Import a public name's module the first time the name is asked for, and keep it."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'kokuban' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))


if TYPE_CHECKING:  # for type checkers and IDEs: the same names, imported eagerly
    from kokuban.core.generation import Generation, generation
    from kokuban.core.roofline import Step, decode_step, decode_step_mixed, prefill
    from kokuban.errors import KokubanError
    from kokuban.specs.catalog import accelerator_catalog, load_accelerator, load_model, model_catalog
    from kokuban.specs.deployment import Deployment
    from kokuban.specs.hardware import Accelerator, Efficiency
    from kokuban.specs.model import ModelSpec
    from kokuban.usecases.estimate import Estimate, estimate
