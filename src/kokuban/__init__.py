"""kokuban (黒板): what running a large language model costs and how fast it goes, from first principles.

Data flows one way: specs (`ModelSpec`, `Accelerator`, `Deployment`) → core physics (`roofline`, `memory`,
`cost`) → wings (economics, prices, sim, validation) → use cases (`estimate`, typed requests and results)
→ presentation (`present`) → faces (`cli`).
"""

from kokuban.core.generation import Generation, generation
from kokuban.core.roofline import Step, decode_step, decode_step_mixed, prefill
from kokuban.errors import KokubanError
from kokuban.specs.catalog import accelerator_catalog, load_accelerator, load_model, model_catalog
from kokuban.specs.deployment import Deployment
from kokuban.specs.hardware import Accelerator, Efficiency
from kokuban.specs.model import ModelSpec
from kokuban.usecases.estimate import Estimate, estimate

__all__ = [
    "Accelerator", "Deployment", "Efficiency", "Estimate", "Generation", "KokubanError", "ModelSpec", "Step",
    "accelerator_catalog", "decode_step", "decode_step_mixed", "estimate", "generation", "load_accelerator",
    "load_model", "model_catalog", "prefill",
]
__version__ = "0.1.0"
