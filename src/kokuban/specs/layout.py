"""The parallel layout: how N accelerators split a model's work. Every layout-dependent rule lives here,
so the physics asks the layout ("how many ways is the KV split?") instead of branching on a name.

    kind   dense shards   data-parallel ranks   experts split   KV of one request   collectives per step
    "tp"   N              1                     N               min(N, KV heads)*   2 all-reduces per layer
    "ep"   1              N                     N               1 (whole, on its    a dispatch and a combine
                                                                 rank)              all-to-all per MoE layer

    * an MLA latent (`kv_shardable` False) cannot be split and is replicated: 1.

"tp" (tensor parallel): every weight matrix is split N ways; each GPU runs 1/N of every matmul for the
whole batch. "ep" (DP attention + expert parallel, for MoE; DeepSeek's and SGLang's layout for MLA
models): attention and dense layers run data-parallel — each GPU holds them whole and serves B/N of the
requests with their KV — while the routed experts are split N ways.

Room to grow: pipeline parallel (stages that each hold 1/S of the layers) and context parallel (a long
request's KV split over ranks) are further kinds of this object, each answering the same questions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from kokuban.errors import KokubanError

LAYOUTS = ("tp", "ep")


@dataclass(frozen=True)
class Layout:
    """A parallel layout of `num_gpus` accelerators (see the module docstring's table)."""

    kind: str
    num_gpus: int

    def __post_init__(self) -> None:
        if self.kind not in LAYOUTS:
            raise KokubanError(f"'{self.kind}' is not known; allowed: {', '.join(LAYOUTS)}", field="layout",
                               value=self.kind)

    @property
    def dense_shards(self) -> int:
        """Ways the always-read weights (attention, dense MLP, embedding, LM head) are split: N under TP, 1 under EP."""
        return self.num_gpus if self.kind == "tp" else 1

    @property
    def data_parallel_ranks(self) -> int:
        """Independent attention replicas, each holding whole requests and their KV: 1 under TP, N under EP."""
        return 1 if self.kind == "tp" else self.num_gpus

    @property
    def expert_shards(self) -> int:
        """Ways the routed experts are split: N under both layouts."""
        return self.num_gpus

    def kv_shards(self, kv_heads: int, shardable: bool) -> int:
        """Ways one request's KV cache is split: min(N, KV heads) under TP when heads can be split, else 1."""
        if self.kind == "tp" and shardable:
            return max(1, min(self.num_gpus, kv_heads))
        return 1

    def kv_read_ways(self, kv_heads: int, shardable: bool) -> int:
        """Ways a step's total KV traffic is spread over GPUs: N data-parallel ranks under EP (each reads its
        own requests' KV), the KV shards under TP."""
        return self.data_parallel_ranks if self.kind == "ep" else self.kv_shards(kv_heads, shardable)

    def requests_per_gpu(self, batch: Any) -> np.ndarray:
        """Requests whose state one GPU holds: every request under TP (a slice of each), ⌈B/N⌉ under EP."""
        b = np.asarray(batch, dtype=np.float64)
        return b if self.kind == "tp" else np.ceil(b / self.data_parallel_ranks)

    def prefill_chunk_per_gpu(self, chunk_tokens: int) -> float:
        """Tokens of one scheduler chunk that one GPU's activations hold: all under TP, 1/N under EP."""
        return chunk_tokens / self.data_parallel_ranks

    def collectives(self, num_layers: int, moe_layers: int) -> tuple[int, str]:
        """(collectives per step, their kind): 2 all-reduces per layer under TP; a dispatch and a combine
        all-to-all per MoE layer under EP (attention and dense layers exchange nothing)."""
        if self.num_gpus == 1:
            return 0, "none"
        return (2 * num_layers, "all-reduce") if self.kind == "tp" else (2 * moe_layers, "all-to-all")

    def describe(self) -> str:
        return f"{self.kind.upper()}{self.num_gpus}"
