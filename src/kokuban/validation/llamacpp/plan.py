"""What to measure (`Plan`, its `Case`s, `DEFAULT_PLAN`: the committed run) and which rows are held out."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kokuban.validation.llamacpp.gguf_files import llama_config
from kokuban.validation.llamacpp.rows import Row


@dataclass(frozen=True)
class Case:
    """One model: a catalog architecture scaled to `num_layers`/`hidden_size`; `held_out` cases are never fitted."""

    name: str
    base: str
    num_layers: int | None = None
    hidden_size: int | None = None
    held_out: bool = False
    batched: bool = False  # also run llama-batched-bench on it

    def config(self) -> tuple[dict[str, Any], list[str]]:
        return llama_config(self.base, num_layers=self.num_layers, hidden_size=self.hidden_size)


@dataclass(frozen=True)
class Plan:
    """What to measure. Rows at a `held_out_depths` depth, and every row of a held-out case, are never fitted."""

    cases: tuple[Case, ...]
    types: tuple[str, ...] = ("F16", "Q8_0", "Q4_0", "Q4_K_M")
    prompts: tuple[int, ...] = (32, 128)
    gens: tuple[int, ...] = (16,)
    depths: tuple[int, ...] = (0, 256, 512)
    held_out_depths: tuple[int, ...] = (256,)
    repeats: int = 3
    batched_prompt: int = 64
    batched_gen: int = 8
    batched_batches: tuple[int, ...] = (1, 2, 4, 8)
    batched_runs: int = 2
    threads: int = 2


#: The committed run (evidence/cpu/llamacpp.*): Llama-2-7B's architecture (MHA, 32k vocabulary, untied) at three
#: sizes and Llama-3.2-1B's (GQA 32/8 heads, 128k tied vocabulary) at 4 of its 16 layers. The fit sees the smallest
#: and the largest Llama-2 shape at depths 0 and 512 (and the smallest one's batched-bench rows); the middle shape
#: (its batched-bench rows too), the Llama-3.2 shape and depth 256 are held out.
DEFAULT_PLAN = Plan(cases=(
    Case("llama2-h1024-L4", "llama-2-7b", 4, 1024, held_out=False, batched=True),
    Case("llama2-h1536-L6", "llama-2-7b", 6, 1536, held_out=True, batched=True),
    Case("llama2-h2048-L8", "llama-2-7b", 8, 2048, held_out=False),
    Case("llama3.2-1b-L4", "llama-3.2-1b", 4, None, held_out=True),
))


def plan_from_dict(d: dict[str, Any]) -> Plan:
    fields = {k: tuple(v) if isinstance(v, list) else v for k, v in d.items() if k != "cases"}
    return Plan(cases=tuple(Case(**c) for c in d["cases"]), **fields)


def is_held_out(row: Row, plan: Plan) -> bool:
    """A row is held out when its case (model size) is, or when its depth is a held-out depth: the issue's split
    (the held-out sizes and depths never reach the fit). The fitted sizes' batched-bench rows (prompts at depth
    0, generation after the 64-token prompts) train."""
    held_cases = {c.name for c in plan.cases if c.held_out}
    return row.model in held_cases or row.depth in plan.held_out_depths
