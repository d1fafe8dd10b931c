"""Schemas of the files kokuban reads: a Hugging Face `config.json` and an accelerator entry.

Each declares the fields kokuban uses, their types and ranges, and the rules across fields (heads that divide
the hidden size, KV heads that divide the heads, a top-k no larger than the experts); every other key passes
through untouched. Integers are strict (a "4096" string or a 4096.0 float is refused: config.json files hold
integers), figures are finite. A violation is a `pydantic.ValidationError`, which `files.schema_error` words as
one line naming the file and the field.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

#: Shape integers are bounded far above any published model (hidden 16,384 and 126 layers for Llama-3.1-405B,
#: a 262k vocabulary for Gemma 3, 384 experts for Kimi K2) so that every count derived from them stays finite.
SHAPE_MAX = 2**24
PositiveInt = Annotated[int, Field(strict=True, gt=0, le=SHAPE_MAX)]
#: Layers: kokuban keeps one entry per layer (its KV window, its kind), so the count is bounded lower, at 2¹⁴
#: (130× the 126 of Llama-3.1-405B): a config claiming 2²⁴ layers would cost minutes and gigabytes to read.
LAYERS_MAX = 2**14
Count = Annotated[int, Field(strict=True, ge=0, le=SHAPE_MAX)]
#: The attention kinds a config's `layer_types` may name (transformers' configs: Gemma 3, gpt-oss, Qwen3-Next's
#: Gated DeltaNet "linear_attention", Llama 4's "chunked_attention").
LayerType = Literal["full_attention", "sliding_attention", "linear_attention", "chunked_attention"]
#: Context windows: up to 2³¹ tokens, the bound every token count of a request has (usecases/request.py).
Window = Annotated[int, Field(strict=True, gt=0, le=2**31)]
#: An accelerator's figures, bounded a million-fold beyond any part in the catalog on either side (a 1 MB memory
#: to 1 EB; 1 MB/s to 1 EB/s; 1 MFLOP/s to 1 ZFLOP/s) so that every time and cost derived from them is finite.
Bytes = Annotated[float, Field(strict=True, ge=1e6, le=1e18, allow_inf_nan=False)]
BytesPerS = Bytes  # the same bounds, per second
LinkBytesPerS = Annotated[float, Field(strict=True, ge=0, le=1e18, allow_inf_nan=False)]
Flops = Annotated[float, Field(strict=True, ge=0, le=1e21, allow_inf_nan=False)]
#: An hourly price, USD: bounded like every other price kokuban takes (usecases/request.py `NonNegative`).
HourlyUsd = Annotated[float, Field(strict=True, ge=0, le=1e12, allow_inf_nan=False)]


class QuantizationConfigSchema(BaseModel):
    """The fields of a `quantization_config` that specs/quantization.py reads (awq, gptq, fp8, compressed-tensors,
    modelopt, bitsandbytes layouts); each one present must be well formed, every other key passes through. A method
    kokuban does not know is not an error here: it is a warning when the checkpoint is read."""

    model_config = ConfigDict(extra="allow", frozen=True)

    quant_method: str | None = None
    bits: Annotated[float, Field(strict=True, gt=0, le=32, allow_inf_nan=False)] | None = None
    w_bit: Annotated[int, Field(strict=True, gt=0, le=32)] | None = None
    group_size: Annotated[int, Field(strict=True, ge=-1, le=SHAPE_MAX)] | None = None  # −1: per channel
    q_group_size: Annotated[int, Field(strict=True, ge=-1, le=SHAPE_MAX)] | None = None
    zero_point: bool | None = None
    weight_block_size: list[PositiveInt] | None = None
    config_groups: dict[str, Any] | None = None
    quant_algo: str | None = None
    load_in_4bit: bool | None = None
    load_in_8bit: bool | None = None
    bnb_4bit_use_double_quant: bool | None = None


class TextConfigSchema(BaseModel):
    """The fields of a (text) config.json that `parse_config` reads. Which ones a family requires (MLA's
    ranks, an MoE's expert counts) is checked there; here, that each one present is well formed."""

    model_config = ConfigDict(extra="allow", frozen=True)

    model_type: str
    hidden_size: PositiveInt
    num_hidden_layers: Annotated[int, Field(strict=True, gt=0, le=LAYERS_MAX)]
    num_attention_heads: PositiveInt
    vocab_size: PositiveInt
    num_key_value_heads: PositiveInt | None = None
    head_dim: PositiveInt | None = None
    intermediate_size: Count | None = None
    max_position_embeddings: Window | None = None
    sliding_window: Window | None = None
    sliding_window_pattern: PositiveInt | None = None
    use_sliding_window: bool | None = None
    layer_types: list[LayerType] | None = None
    tie_word_embeddings: bool | None = None
    attention_bias: bool | None = None
    torch_dtype: str | None = None
    quantization_config: QuantizationConfigSchema | None = None
    num_nextn_predict_layers: Count | None = None
    # mixture of experts
    num_local_experts: PositiveInt | None = None
    num_experts: PositiveInt | None = None
    n_routed_experts: PositiveInt | None = None
    num_experts_per_tok: PositiveInt | None = None
    experts_per_token: PositiveInt | None = None
    moe_intermediate_size: PositiveInt | None = None
    shared_expert_intermediate_size: Count | None = None
    n_shared_experts: Count | None = None
    decoder_sparse_step: PositiveInt | None = None
    moe_layer_freq: PositiveInt | None = None
    first_k_dense_replace: Count | None = None
    mlp_only_layers: list[Count] | None = None
    topk_method: str | None = None
    # multi-head latent attention (DeepSeek-V2/V3, Kimi K2)
    kv_lora_rank: PositiveInt | None = None
    q_lora_rank: PositiveInt | None = None
    qk_rope_head_dim: PositiveInt | None = None
    qk_nope_head_dim: PositiveInt | None = None
    v_head_dim: PositiveInt | None = None
    # Llama 4 (llama4_text): interleaved MoE, chunked local attention on the RoPE layers
    interleave_moe_layer_step: Count | None = None
    intermediate_size_mlp: Count | None = None
    moe_layers: list[Count] | None = None
    attention_chunk_size: Window | None = None
    no_rope_layers: list[Count] | None = None
    # Qwen3-Next (qwen3_next): Gated DeltaNet linear attention between full-attention layers
    full_attention_interval: PositiveInt | None = None
    linear_num_key_heads: PositiveInt | None = None
    linear_num_value_heads: PositiveInt | None = None
    linear_key_head_dim: PositiveInt | None = None
    linear_value_head_dim: PositiveInt | None = None
    linear_conv_kernel_dim: PositiveInt | None = None
    mamba_ssm_dtype: str | None = None
    # Nemotron-H (nemotron_h): one block per layer, Mamba-2 / attention / MLP by hybrid_override_pattern
    hybrid_override_pattern: str | None = None
    attention_head_dim: PositiveInt | None = None
    mamba_num_heads: PositiveInt | None = None
    mamba_head_dim: PositiveInt | None = None
    n_groups: PositiveInt | None = None
    ssm_state_size: PositiveInt | None = None
    conv_kernel: PositiveInt | None = None

    @model_validator(mode="after")
    def _shapes_agree(self) -> TextConfigSchema:
        h, d, g = self.num_attention_heads, self.hidden_size, self.num_key_value_heads
        if self.head_dim is None and self.kv_lora_rank is None and d % h:
            raise ValueError(f"hidden_size {d} is not divisible by num_attention_heads {h} (and no head_dim is given)")
        if g is not None and self.kv_lora_rank is None and h % g:
            raise ValueError(f"num_key_value_heads {g} does not divide num_attention_heads {h}")
        if self.layer_types is not None and len(self.layer_types) != self.num_hidden_layers:
            raise ValueError(f"layer_types lists {len(self.layer_types)} layers for num_hidden_layers "
                             f"{self.num_hidden_layers}")
        if self.no_rope_layers and len(self.no_rope_layers) != self.num_hidden_layers:
            raise ValueError(f"no_rope_layers lists {len(self.no_rope_layers)} layers for num_hidden_layers "
                             f"{self.num_hidden_layers}")
        pattern = self.hybrid_override_pattern
        if pattern is not None and (len(pattern) != self.num_hidden_layers or set(pattern) - set("M*-E")):
            raise ValueError(f"hybrid_override_pattern must have one of M, *, -, E for each of the "
                             f"{self.num_hidden_layers} layers, got {len(pattern)} characters")
        experts = self.num_local_experts or self.num_experts or self.n_routed_experts
        top_k = self.num_experts_per_tok or self.experts_per_token
        if experts and top_k and top_k > experts:
            raise ValueError(f"num_experts_per_tok {top_k} exceeds the {experts} experts")
        return self


class AcceleratorSchema(BaseModel):
    """One `[[accelerator]]` entry (the accelerators.toml schema): SI units, dense FLOP/s, finite figures."""

    model_config = ConfigDict(extra="allow", frozen=True)

    id: Annotated[str, Field(min_length=1)]
    name: str | None = None
    memory_bytes: Bytes
    memory_bandwidth_bytes_per_s: BytesPerS
    interconnect_bytes_per_s: LinkBytesPerS = 0.0
    gpus_per_node: Annotated[int, Field(ge=0, le=100_000)] = 0
    scaleout_bytes_per_s: LinkBytesPerS = 0.0
    scaleout_latency_s: Annotated[float, Field(strict=True, ge=0, le=1.0, allow_inf_nan=False)] = 0.0
    price_per_hour_usd: HourlyUsd = 0.0
    flops_fp32: Flops | None = None
    flops_bf16: Flops | None = None
    flops_fp16: Flops | None = None
    flops_fp8: Flops | None = None
    flops_int8: Flops | None = None
    flops_fp4: Flops | None = None
    maf_flops_fp16: Flops | None = None
    maf_flops_bf16: Flops | None = None
    maf_flops_fp8: Flops | None = None
    sources: list[str] = []

    @model_validator(mode="after")
    def _has_a_16_bit_peak(self) -> AcceleratorSchema:
        if max(self.flops_bf16 or 0, self.flops_fp16 or 0) < 1e6:
            raise ValueError("needs flops_bf16 or flops_fp16 (dense FLOP/s, at least 1e6)")
        return self
