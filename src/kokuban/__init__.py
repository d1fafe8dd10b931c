"""kokuban (黒板): what running a large language model costs and how fast it goes, from first principles.

Data flows one way: specs (`ModelSpec`, `Accelerator`, `Deployment`) → physics (`roofline`, `memory`)
→ economics (`cost`, `estimate`) → presentation (`cli`, `render`).
"""

from .catalog import accelerator_catalog, load_accelerator, load_model, model_catalog
from .deployment import Deployment
from .errors import KokubanError
from .estimate import Estimate, Generation, estimate, generation
from .hardware import Accelerator, Efficiency
from .model import ModelSpec
from .roofline import Step, decode_step, decode_step_mixed, prefill

__all__ = [
    "Accelerator", "Deployment", "Efficiency", "Estimate", "Generation", "KokubanError", "ModelSpec", "Step",
    "accelerator_catalog", "decode_step", "decode_step_mixed", "estimate", "generation", "load_accelerator",
    "load_model", "model_catalog", "prefill",
]
__version__ = "0.1.0"
