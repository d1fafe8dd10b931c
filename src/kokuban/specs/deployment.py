"""A deployment: a model on N accelerators, with a parallel layout, precisions and efficiencies.

The layout ("tp" or "ep") is kept as its name for JSON; `Deployment.parallel` is the `Layout` object
(specs/layout.py) that answers every layout question the physics asks.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property

from kokuban.errors import KokubanError, require_positive
from kokuban.specs.dtypes import bytes_per_element, check_dtype, dequantises, embedding_bytes_per_element
from kokuban.specs.hardware import Accelerator, Efficiency
from kokuban.specs.layout import Layout
from kokuban.specs.model import ModelSpec

#: How an engine sizes its KV pool (`MemoryRule.kind`; the formulas are `core.memory.memory_budget`'s).
MEMORY_RULES = ("utilization", "static", "free_fraction")
#: kokuban's default fraction of HBM an engine may use (vLLM's gpu_memory_utilization default).
MEMORY_UTILIZATION = 0.9


@dataclass(frozen=True)
class MemoryRule:
    """How the serving engine sizes its KV pool from each accelerator's memory (the formulas:
    `core.memory.memory_budget`), with the fraction in `Deployment.memory_utilization`:

        utilization     f·HBM − weights − activations − non-torch   (vLLM's gpu_memory_utilization; kokuban's
                        default with non_torch_bytes 0)
        static          f·HBM − weights                              (SGLang's mem_fraction_static: activations and
                        CUDA graphs live in the (1 − f)·HBM it holds back)
        free_fraction   f·(HBM − weights − activations − non-torch)  (TensorRT-LLM's free_gpu_memory_fraction)

    `non_torch_bytes`: memory per GPU the engine's allocator does not see (CUDA context, cuBLAS/NCCL workspaces)."""

    kind: str = "utilization"
    non_torch_bytes: float = 0.0

    def __post_init__(self) -> None:
        if self.kind not in MEMORY_RULES:
            raise KokubanError(f"'{self.kind}' is not a memory rule; allowed: {', '.join(MEMORY_RULES)}",
                               field="memory_rule", value=self.kind)
        if not (self.non_torch_bytes >= 0 and self.non_torch_bytes < float("inf")):
            raise KokubanError(f"must be a finite number ≥ 0 bytes, got {self.non_torch_bytes!r}",
                               field="non_torch_bytes", value=self.non_torch_bytes)


@dataclass(frozen=True)
class Deployment:
    """Model + accelerator + count + layout + precisions + efficiencies. Frozen; build with `make`."""

    model: ModelSpec
    accelerator: Accelerator
    num_gpus: int = 1
    layout: str = "tp"
    weights_dtype: str = "bf16"
    kv_dtype: str = "bf16"
    compute_dtype: str = "bf16"
    experts_dtype: str = ""  # the routed experts' stored format; "" = weights_dtype (see `expert_weights_dtype`)
    efficiency: Efficiency = field(default_factory=Efficiency.shipped)
    memory_utilization: float = MEMORY_UTILIZATION
    prefill_chunk_tokens: int = 8192
    price_per_hour_usd: float = 0.0
    overlap_comm: bool = False
    memory_rule: MemoryRule = field(default_factory=MemoryRule)

    def __post_init__(self) -> None:
        # the kernel curves as this accelerator runs them (its own measured constants: `KernelCurves.for_accelerator`)
        curves = self.efficiency.kernels
        if curves is not None and (own := curves.for_accelerator(self.accelerator)) is not curves:
            object.__setattr__(self, "efficiency", replace(self.efficiency, kernels=own))

    @classmethod
    def make(
        cls,
        model: ModelSpec,
        accelerator: Accelerator,
        num_gpus: int = 1,
        *,
        layout: str = "tp",
        weights_dtype: str | None = None,
        kv_dtype: str | None = None,
        compute_dtype: str | None = None,
        experts_dtype: str | None = None,
        efficiency: Efficiency | None = None,
        memory_utilization: float = MEMORY_UTILIZATION,
        prefill_chunk_tokens: int = 8192,
        price_per_hour_usd: float | None = None,
        overlap_comm: bool = False,
        memory_rule: MemoryRule | None = None,
    ) -> Deployment:
        """Validate and fill defaults.

        Defaults: weights in the checkpoint's stored format (`ModelSpec.native_dtype`, read from its
        quantization_config: fp8-block for DeepSeek-V3, MXFP4 for gpt-oss, else bf16/fp16; a format kokuban does not
        know needs `weights_dtype`); KV cache in bf16; compute in the dtype the accelerator runs those weights in
        (`Accelerator.compute_dtype_for`); the routed experts in `experts_dtype`, else in the checkpoint's
        expert format when the weights are the checkpoint's (`ModelSpec.native_experts_dtype`: MXFP4 experts beside
        bf16 attention for gpt-oss), else in the weights dtype; memory_utilization 0.9 as vLLM's
        `gpu_memory_utilization`; a prefill chunk of 8192 tokens (vLLM's `max_num_batched_tokens` for chunked
        prefill) sizes the activation workspace; the price per GPU-hour is the catalog's typical on-demand price;
        communication is not overlapped with compute unless `overlap_comm` (two micro-batches hiding each
        other's all-reduce/all-to-all, as in DeepSeek's and SGLang's two-batch overlap); the KV pool sized by
        `memory_rule` (default: `MemoryRule()`, memory_utilization × HBM − weights − activations).
        """
        require_positive("gpus", num_gpus, integer=True)
        Layout(layout, int(num_gpus))  # checks the name
        if layout == "ep" and not model.is_moe:
            raise KokubanError(
                f"'ep' needs a mixture-of-experts model; '{model.name}' is dense (use 'tp')",
                field="layout",
                value=layout,
            )
        if not 0 < memory_utilization <= 1:
            raise KokubanError(f"must be in (0, 1], got {memory_utilization!r}", field="memory_utilization",
                               value=memory_utilization)
        require_positive("prefill_chunk_tokens", prefill_chunk_tokens, integer=True)
        if not (weights_dtype or model.native_dtype):  # a checkpoint whose quantisation kokuban cannot price
            raise KokubanError(f"model '{model.name}': {model.quantization_warning or 'its weight format is unknown'}",
                               field="weights", value=None)
        weights = check_dtype(weights_dtype or model.native_dtype, "weights")
        if experts_dtype and not model.is_moe:
            raise KokubanError(f"an experts dtype needs a mixture-of-experts model; '{model.name}' is dense (give "
                               "the weights dtype)", field="experts", value=experts_dtype)
        experts = check_dtype(experts_dtype, "experts") if experts_dtype else (
            model.native_experts_dtype if not weights_dtype and model.native_experts_dtype else weights)
        kv = check_dtype(kv_dtype or "bf16", "kv")
        compute = check_dtype(compute_dtype, "compute") if compute_dtype else accelerator.compute_dtype_for(weights)
        price = accelerator.price_per_hour_usd if price_per_hour_usd is None else price_per_hour_usd
        if price < 0:
            raise KokubanError(f"must be ≥ 0 USD, got {price!r}", field="price_per_hour", value=price)
        return cls(
            model=model, accelerator=accelerator, num_gpus=int(num_gpus), layout=layout, weights_dtype=weights,
            kv_dtype=kv, compute_dtype=compute, experts_dtype="" if experts == weights else experts,
            efficiency=efficiency or Efficiency.shipped(),
            memory_utilization=memory_utilization, prefill_chunk_tokens=int(prefill_chunk_tokens),
            price_per_hour_usd=float(price), overlap_comm=bool(overlap_comm), memory_rule=memory_rule or MemoryRule(),
        )

    # ---- derived quantities the physics uses -------------------------------------------------------
    @cached_property
    def weight_bytes_per_param(self) -> float:
        return bytes_per_element(self.weights_dtype)

    @cached_property
    def dequantises_weights(self) -> bool:
        """Whether the weight matmuls dequantise on the fly (`dtypes.dequantises`): their weight read streams at
        `Efficiency.dequant_memory` of the plain rate (core/roofline.weight_read_s)."""
        return dequantises(self.weights_dtype, self.compute_dtype)

    @cached_property
    def expert_weights_dtype(self) -> str:
        """The routed experts' stored format: `experts_dtype`, or the weights dtype when that is empty."""
        return self.experts_dtype or self.weights_dtype

    @cached_property
    def expert_compute_dtype(self) -> str:
        """The routed experts' matmul dtype: the compute dtype when they are stored like the rest, else what the
        accelerator runs their own format in (`Accelerator.compute_dtype_for`: fp16 experts beside fp8 attention
        multiply in fp16, MXFP4 experts on an H100 in bf16)."""
        if not self.experts_dtype or self.experts_dtype == self.weights_dtype:
            return self.compute_dtype
        return self.accelerator.compute_dtype_for(self.experts_dtype)

    @cached_property
    def expert_bytes_per_param(self) -> float:
        return bytes_per_element(self.expert_weights_dtype)

    @cached_property
    def dequantises_experts(self) -> bool:
        """Whether the routed experts' matmuls dequantise their weights on the fly (`dtypes.dequantises` for the
        experts' format and compute dtype)."""
        return dequantises(self.expert_weights_dtype, self.expert_compute_dtype)

    @cached_property
    def embedding_bytes_per_param(self) -> float:
        """Embedding and LM head stay 16-bit (serving engines leave them unquantised), fp32 if all is; GGUF
        files keep their own LM-head type (`dtypes.embedding_bytes_per_element`)."""
        return embedding_bytes_per_element(self.weights_dtype)

    @cached_property
    def kv_bytes_per_element(self) -> float:
        return bytes_per_element(self.kv_dtype)

    @cached_property
    def parallel(self) -> Layout:
        """The layout object: shards, data-parallel ranks, collectives (see specs/layout.py)."""
        return Layout(self.layout, self.num_gpus)

    @cached_property
    def gemm_shapes(self) -> tuple[tuple[tuple[float, float], ...], tuple[tuple[float, float], ...]]:
        """The (N, K) of the weight matmuls one GPU runs per layer, (dense, routed experts), after the layout's split:
        for the kernel curves' shape factor (`specs.kernels.layer_shape_factor`, `core.roofline`).

        Dense: the fused QKV projection (N = (H + 2·max(KV ÷ S, 1)·S)·d_h ÷ S for S dense shards, K = d) and the output
        projection (N = d, K = H·d_h ÷ S), then the dense MLP when the model has one (gate and up fused, N = 2·I ÷ S,
        K = d; down, N = d, K = I ÷ S) or a MoE model's shared experts (their width). Experts: each routed expert's
        gate/up and down at its width I_e = params per expert ÷ 3d, split by S under TP, whole under EP.
        ASSUMPTIONS: d_h from the KV elements of a GQA/MHA layer (2·KV·d_h), d ÷ H for other attention (MLA,
        linear attention: their projections are priced as one such layer); every MLP gated (3 matrices). A coarse
        model (`ModelSpec.coarse`) has none: (), ()."""
        m, shards = self.model, self.parallel.dense_shards
        if m.family == "coarse" or m.hidden_size <= 0:
            return (), ()  # a blackboard model names no matrix: no shape term
        d, heads, kv = float(m.hidden_size), float(max(m.num_heads, 1)), float(max(m.num_kv_heads, 1))
        gqa = m.attention == "gqa" and m.kv_elements_per_token_per_layer > 0
        hd = m.kv_elements_per_token_per_layer / (2 * kv) if gqa else d / heads
        dense = [((heads / shards + 2 * max(kv / shards, 1.0)) * hd, d), (d, heads * hd / shards)]
        expert_width = m.params_per_expert / (3 * d) if m.is_moe else 0.0
        mlp = m.mlp_width - m.top_k * expert_width if m.is_moe else m.mlp_width
        if mlp > 0:
            dense += [(2 * mlp / shards, d), (d, mlp / shards)]
        if not m.is_moe:
            return tuple(dense), ()
        split = shards if self.layout == "tp" else 1
        return tuple(dense), ((2 * expert_width / split, d), (d, expert_width / split))

    @cached_property
    def kv_shards(self) -> int:
        """Ways one request's KV cache is split (`Layout.kv_shards` for this model's KV heads)."""
        return self.parallel.kv_shards(self.model.num_kv_heads, self.model.kv_shardable)

    @cached_property
    def state_shards(self) -> int:
        """Ways one request's linear-attention state is split: by its heads under TP (`Layout.kv_shards` for
        the model's state heads), like the KV cache; 1 under EP or for a model without state."""
        return self.parallel.kv_shards(self.model.state_heads, self.model.has_state)

    @cached_property
    def state_read_ways(self) -> int:
        """Ways a step's total state traffic is spread over GPUs (`Layout.kv_read_ways` for the state heads)."""
        return self.parallel.kv_read_ways(self.model.state_heads, self.model.has_state)

    @cached_property
    def kv_read_ways(self) -> int:
        """Ways a step's total KV traffic is spread over GPUs (`Layout.kv_read_ways`)."""
        return self.parallel.kv_read_ways(self.model.num_kv_heads, self.model.kv_shardable)

    @cached_property
    def dense_shards(self) -> int:
        """Ways the always-read weights are split (`Layout.dense_shards`)."""
        return self.parallel.dense_shards

    @property
    def usd_per_s(self) -> float:
        """Price of the whole deployment per second: N × price per GPU-hour ÷ 3600."""
        return self.num_gpus * self.price_per_hour_usd / 3600.0

    def with_gpus(self, num_gpus: int) -> Deployment:
        """The same deployment on another accelerator count."""
        from dataclasses import replace

        return replace(self, num_gpus=int(num_gpus))

    def describe(self) -> str:
        return (
            f"{self.model.name} on {self.num_gpus}× {self.accelerator.name} ({self.layout.upper()}), "
            f"weights {self.weights_dtype}"
            + (f", experts {self.experts_dtype} (compute {self.expert_compute_dtype})" if self.experts_dtype else "")
            + f", KV {self.kv_dtype}, compute {self.compute_dtype}"
        )
