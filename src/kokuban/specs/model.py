"""Model specs: what a transformer costs per token, derived from its Hugging Face `config.json`.

A `ModelSpec` keeps only the quantities the physics needs, each counted once here:

- parameters, split into the part every decode step reads whatever the batch (`params_dense_read`:
  attention, norms, dense MLPs, shared experts, routers, the LM head) and the routed experts
  (`moe_layers` layers × `num_experts` experts × `params_per_expert`), of which a token uses `top_k`;
- the input embedding (`params_embedding`), stored but not read as a matrix (a lookup of B rows);
- per layer, the KV-cache elements per token and the attention FLOPs per attended token, and the
  sliding window of each layer (None = global; a chunked-attention layer is held as a window of its
  chunk; 0 = a layer that holds no KV: linear attention, Mamba-2, or a Nemotron-H MLP block);
- for linear-attention (Gated DeltaNet) and Mamba-2 layers, the constant recurrent state one request
  keeps (`state_layers` × (conv + recurrent elements)), whatever its context, and its FLOPs per token.

Assumptions: gated MLPs (three matrices: SwiGLU / GeGLU) in every supported family but Nemotron-H (two:
squared ReLU); all attention layers share the same attention shape; multi-token-prediction heads (DeepSeek-V3
MTP, Qwen3-Next MTP) are not part of the model that serves tokens and are left out, as in the published 671B
count.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from kokuban.errors import KokubanError, require_positive
from kokuban.notes import note
from kokuban.specs.quantization import checkpoint_format


@dataclass(frozen=True)
class ModelSpec:
    """A model reduced to what inference cost depends on. All counts are parameters or elements."""

    name: str
    family: str
    num_layers: int
    hidden_size: int
    vocab_size: int
    max_context: int
    params_embedding: int
    params_dense_read: int
    moe_layers: int = 0
    num_experts: int = 0
    top_k: int = 0
    params_per_expert: int = 0
    mlp_width: int = 0
    num_heads: int = 1
    num_kv_heads: int = 1
    kv_shardable: bool = True
    kv_elements_per_token_per_layer: int = 0
    attn_flops_per_ctx_token_per_layer_decode: int = 0
    attn_flops_per_ctx_token_per_layer_prefill: int = 0
    layer_windows: tuple[int | None, ...] = ()
    native_dtype: str = "bf16"  # the checkpoint's stored weight format; "" when its quantisation is unknown
    native_experts_dtype: str = ""  # its routed experts' format where it differs (gpt-oss: fp4 beside bf16); else ""
    tied_embeddings: bool = False
    attention: str = "gqa"
    source: str = ""
    notes: tuple[str, ...] = field(default=())
    state_layers: int = 0
    state_conv_elements_per_layer: int = 0
    state_recurrent_elements_per_layer: int = 0
    state_recurrent_dtype: str = "bf16"
    state_heads: int = 0
    state_flops_per_token_per_layer: int = 0
    chunked_attention: bool = False
    quantization: str = ""  # how the checkpoint's quantization_config was read (specs/quantization.py)
    quantization_warning: str = ""  # set when that format is not one kokuban knows (also among `notes`)

    # ---- parameter counts ---------------------------------------------------------------------
    @property
    def params_routed(self) -> int:
        """All routed-expert parameters: moe_layers × num_experts × params_per_expert."""
        return self.moe_layers * self.num_experts * self.params_per_expert

    @property
    def params_total(self) -> int:
        """Stored parameters: embedding + always-read part + every routed expert."""
        return self.params_embedding + self.params_dense_read + self.params_routed

    @property
    def params_active(self) -> int:
        """Active parameters as most model cards count them (Mixtral, DeepSeek, Qwen3-MoE, Kimi):
        every stored parameter except the routed experts a token does not use:
        total − moe_layers·(E − k)·params_per_expert. Dense models: active = total."""
        return self.params_total - self.moe_layers * (self.num_experts - self.top_k) * self.params_per_expert

    @property
    def params_matmul(self) -> int:
        """Parameters a token is multiplied through: active minus the input embedding, which is a row
        lookup, not a matrix product (the gpt-oss model card's "active" count). With tied embeddings
        the matrix is the LM head and stays in."""
        return self.params_active - self.params_embedding

    @property
    def is_moe(self) -> bool:
        return self.moe_layers > 0 and self.num_experts > 0

    @property
    def params_lm_head(self) -> int:
        """The LM head (vocab × hidden), read every step in 16-bit (see roofline.weight_bytes)."""
        return self.vocab_size * self.hidden_size

    @property
    def flops_per_token(self) -> int:
        """Matrix FLOPs per token, context aside: 2 × params_matmul (one multiply-add each)."""
        return 2 * self.params_matmul

    @property
    def state_flops_per_token(self) -> int:
        """FLOPs of the linear-attention recurrences per token: state layers × FLOPs per token per layer
        (O(d_k·d_v) per head, whatever the context; 0 without linear-attention layers)."""
        return self.state_layers * self.state_flops_per_token_per_layer

    # ---- KV cache and attention -----------------------------------------------------------------
    @cached_property
    def window_groups(self) -> tuple[tuple[float, int], ...]:
        """(window, layer count) pairs; a global layer has window = inf."""
        counts = Counter(np.inf if w is None else float(w) for w in self.layer_windows)
        return tuple(sorted(counts.items()))

    def attended_tokens(self, context: Any) -> np.ndarray:
        """Σ over layers of min(context, window): the layer-tokens a query at `context` attends to.

        A sliding-window layer holds and reads at most `window` tokens; a global layer holds them all. A
        chunked layer is counted at its bound min(context, chunk): a query sees ((context − 1) mod chunk) + 1
        keys, a sawtooth between 1 and the chunk that averages about half of it over a long generation.
        """
        ctx = np.asarray(context, dtype=np.float64)
        total = np.zeros_like(ctx)
        for window, count in self.window_groups:
            total = total + count * np.minimum(ctx, window)
        return total

    def causal_attended_tokens(self, tokens: Any) -> np.ndarray:
        """Σ over layers of Σ_{t=1..T} min(t, window): the query-key pairs of a causal prefill of T.

        Global layer: T(T+1)/2. Window w < T: w(w+1)/2 + (T - w)·w.
        Chunked layer (`chunked_attention`, chunk c): a query sees the keys of its own chunk up to itself,
        Σ_t ((t − 1) mod c + 1) = q·c(c+1)/2 + r(r+1)/2 with q = ⌊T/c⌋, r = T − q·c (about half a window's).
        """
        t = np.asarray(tokens, dtype=np.float64)
        total = np.zeros_like(t)
        for window, count in self.window_groups:
            if self.chunked_attention and 0 < window < np.inf:
                q = np.floor(t / window)
                r = t - q * window
                total = total + count * (q * window * (window + 1) / 2 + r * (r + 1) / 2)
                continue
            w = np.minimum(t, window)
            total = total + count * (w * (w + 1) / 2 + (t - w) * w)
        return total

    def kv_elements(self, context: Any) -> np.ndarray:
        """KV-cache elements one request holds at `context` tokens (windows capped)."""
        return self.kv_elements_per_token_per_layer * self.attended_tokens(context)

    @property
    def kv_elements_per_token(self) -> int:
        """KV elements per token while every attention layer still keeps it (context ≤ smallest window);
        linear-attention layers (window 0) keep none."""
        no_kv_layers = sum(1 for w in self.layer_windows if w == 0)
        return self.kv_elements_per_token_per_layer * (self.num_layers - no_kv_layers)

    @property
    def has_state(self) -> bool:
        """Whether a request keeps a constant recurrent state (linear-attention / SSM layers)."""
        return self.state_layers > 0

    @property
    def kv_elements_per_token_global(self) -> int:
        """KV elements per extra token once every sliding window is full (global layers only)."""
        return self.kv_elements_per_token_per_layer * sum(1 for w in self.layer_windows if w is None)

    def require_context(self, tokens: int, field: str = "context") -> None:
        """The one max-context check: `tokens` must be a positive integer no longer than the model's window."""
        require_positive(field, tokens, integer=True)
        if tokens > self.max_context:
            raise KokubanError(f"{tokens} exceeds {self.name}'s maximum context of {self.max_context} tokens",
                               field=field, value=tokens)

    def kv_bytes_per_token(self, kv_dtype: str = "bf16", *, beyond_windows: bool = False) -> float:
        """KV-cache bytes per token of context in `kv_dtype`: elements per token × bytes per element; with
        `beyond_windows`, the marginal bytes once every sliding window is full (global layers only)."""
        from kokuban.specs.dtypes import bytes_per_element

        elements = self.kv_elements_per_token_global if beyond_windows else self.kv_elements_per_token
        return elements * bytes_per_element(kv_dtype)

    # ---- construction ---------------------------------------------------------------------------
    @classmethod
    def from_config(cls, config: dict[str, Any], name: str = "", source: str = "") -> ModelSpec:
        """Parse a Hugging Face config.json dict (see `parse_config`)."""
        return parse_config(config, name=name, source=source)

    @classmethod
    def from_file(cls, path: str | Path, name: str = "") -> ModelSpec:
        """Read a config.json from disk (a model folder's `config.json` is named after the folder); a file that
        cannot be read, is empty, not UTF-8, not JSON or not a JSON object is a one-line error naming it.

        A config.json without a `quantization_config` takes it from a `quantize_config.json` (AutoGPTQ, AutoAWQ) or
        `hf_quant_config.json` (ModelOpt) beside it (`quantization.sidecar_quantization`)."""
        from kokuban.specs.files import read_json
        from kokuban.specs.quantization import SIDECARS, sidecar_quantization

        path = Path(path)
        config = read_json(path, "config")
        if isinstance(config, dict) and not config.get("quantization_config"):
            for sidecar in SIDECARS:
                if (path.parent / sidecar).is_file():
                    quant = sidecar_quantization(sidecar, read_json(path.parent / sidecar, "quantization config"))
                    if quant:
                        config = config | {"quantization_config": quant}
                        break
        default = path.resolve().parent.name if path.name == "config.json" else path.stem
        return parse_config(config, name=name or default, source=str(path))

    @classmethod
    def coarse(
        cls,
        name: str,
        params_total: float,
        params_active: float,
        kv_bytes_per_token: float,
        *,
        num_experts: int = 0,
        top_k: int = 0,
        num_layers: int = 0,
        hidden_size: int = 0,
        max_context: int = 10**9,
    ) -> ModelSpec:
        """A blackboard model from three numbers: total and active parameters, KV bytes per token.

        `kv_bytes_per_token` is counted at 16-bit KV (2 bytes per element); another KV dtype scales it.
        Without `num_experts`/`top_k`, a coarse MoE is assumed to read all its weights every step (the
        large-batch limit). With them, the routed part is (total - active)·E/(E - k), spread as one
        layer of E experts. Without `num_layers`/`hidden_size`, communication is not modelled (0 s).
        """
        from kokuban.errors import require_positive

        require_positive("params_total", params_total)
        require_positive("params_active", params_active)
        require_positive("kv_bytes_per_token", kv_bytes_per_token)
        if params_active > params_total:
            raise KokubanError(f"params_active ({params_active:g}) cannot exceed params_total ({params_total:g})")
        kv_elements = round(kv_bytes_per_token / 2)
        routed = per_expert = moe_layers = 0
        if num_experts and top_k and params_active < params_total:
            if not 0 < top_k < num_experts:
                raise KokubanError(
                    f"top_k must be between 1 and num_experts-1, got top_k={top_k}, experts={num_experts}"
                )
            routed = (params_total - params_active) * num_experts / (num_experts - top_k)
            per_expert, moe_layers = round(routed / num_experts), 1
            routed = per_expert * num_experts
        return cls(
            name=name, family="coarse", num_layers=max(num_layers, 1), hidden_size=hidden_size, vocab_size=0,
            max_context=max_context, params_embedding=0, params_dense_read=round(params_total - routed),
            moe_layers=moe_layers, num_experts=num_experts if moe_layers else 0, top_k=top_k if moe_layers else 0,
            params_per_expert=per_expert, kv_elements_per_token_per_layer=kv_elements,
            attn_flops_per_ctx_token_per_layer_decode=2 * kv_elements,
            attn_flops_per_ctx_token_per_layer_prefill=2 * kv_elements,
            layer_windows=(None,), num_heads=1, num_kv_heads=1, kv_shardable=False, attention="coarse",
            source="coarse", notes=("coarse model: attention FLOPs taken as 2 per KV element read",),
        )


# ---- config.json parsing ---------------------------------------------------------------------------

SUPPORTED_TYPES = (
    "llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe", "deepseek_v2", "deepseek_v3",
    "kimi_k2", "gpt_oss", "gemma3", "gemma3_text", "phi3", "llama4", "llama4_text", "qwen3_next", "nemotron_h",
)

#: transformers' `Llama4TextConfig` default `no_rope_layer_interval` (configuration_llama4.py): when the Hub
#: config's `no_rope_layers` is empty, every 4th layer is a NoPE (global-attention) layer.
LLAMA4_NO_ROPE_LAYER_INTERVAL = 4


#: Defaults of transformers' `Gemma3TextConfig` (transformers 4.50, configuration_gemma3.py): the
#: multimodal Gemma 3 checkpoints (4b, 12b, 27b) publish only the fields that differ from them.
GEMMA3_TEXT_DEFAULTS: dict[str, Any] = {
    "vocab_size": 262208, "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256,
    "max_position_embeddings": 131072, "sliding_window": 4096, "sliding_window_pattern": 6,
    "tie_word_embeddings": True,
}


def unsupported_type_message(cfg: dict[str, Any], model_type: str, where: str) -> str:
    """What to say about a model_type kokuban does not parse: which it does, and the `coarse:` spec to use
    instead, with the KV bytes per token filled in when the config gives the shape (GQA at 16-bit:
    2 · layers · KV heads · head dim · 2 B)."""
    kv = "KV bytes per token"
    try:
        layers, heads, d = (cfg[k] for k in ("num_hidden_layers", "num_attention_heads", "hidden_size"))
        kv_heads, head_dim = cfg.get("num_key_value_heads") or heads, cfg.get("head_dim") or d // heads
        if all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in (layers, kv_heads, head_dim)):
            kv = str(2 * layers * kv_heads * head_dim * 2)
    except (KeyError, TypeError, ZeroDivisionError):
        pass
    return (f"config '{where}' has model_type '{model_type or '(none)'}', which kokuban does not parse; supported: "
            f"{', '.join(SUPPORTED_TYPES)}; describe it instead as coarse:total=<parameters>,active=<active "
            f"parameters>,kv={kv}")


def _check_schema(cfg: dict[str, Any], where: str) -> None:
    """Types, ranges and the rules across fields (specs/schemas.py), as a one-line error naming the field."""
    from pydantic import ValidationError

    from kokuban.specs.files import schema_error
    from kokuban.specs.schemas import TextConfigSchema

    try:
        TextConfigSchema.model_validate(cfg)
    except ValidationError as exc:
        raise schema_error(exc, f"config '{where}'") from None


def _get(cfg: dict[str, Any], key: str, where: str, default: Any = KeyError) -> Any:
    value = cfg.get(key, default)
    if value is KeyError or (value is None and default is KeyError):
        raise KokubanError(f"config '{where}' is missing the field '{key}'")
    return value


def _layer_windows(cfg: dict[str, Any], n_layers: int, model_type: str) -> tuple[int | None, ...]:
    """Each layer's KV window: None = global, an int = the most tokens it holds, 0 = none (linear attention).

    Llama 4: the RoPE layers use chunked local attention (transformers Llama4TextConfig: layer_types
    "chunked_attention" where no_rope_layers[i] = 1; vLLM llama4.py: `use_chunked_local_attn = not nope`);
    a query sees only its own chunk of `attention_chunk_size` tokens, so such a layer holds at most that
    many tokens of KV and is kept as a window of the chunk (its reads are bounded by it too). The NoPE
    layers (every 4th by default) attend globally.
    Qwen3-Next: `layer_types`, or a full-attention layer every `full_attention_interval` layers, the others
    Gated DeltaNet (transformers Qwen3NextConfig: "linear_attention" where (i + 1) % interval != 0).
    Nemotron-H: `hybrid_override_pattern`, one character a layer; only "*" layers keep KV.
    """
    window = cfg.get("sliding_window")
    types = cfg.get("layer_types")
    if model_type.startswith("llama4"):
        chunk = cfg.get("attention_chunk_size")
        rope = cfg.get("no_rope_layers") or [
            int((i + 1) % LLAMA4_NO_ROPE_LAYER_INTERVAL != 0) for i in range(n_layers)]
        return tuple(int(chunk) if chunk and use_rope else None for use_rope in rope)
    if model_type == "nemotron_h":  # one block per layer: M = Mamba-2, * = attention, - = MLP (E = MoE)
        return tuple(None if kind == "*" else 0 for kind in str(cfg.get("hybrid_override_pattern") or ""))
    if model_type == "qwen3_next":
        interval = int(cfg.get("full_attention_interval") or 4)
        types = types or ["linear_attention" if (i + 1) % interval else "full_attention" for i in range(n_layers)]
        return tuple(0 if t == "linear_attention" else None for t in types)
    if types:  # as many as layers (checked by the schema)
        return tuple(window if t == "sliding_attention" else None for t in types)
    if model_type.startswith("gemma3"):
        pattern = int(cfg.get("sliding_window_pattern", 6))
        return tuple(None if (i + 1) % pattern == 0 else window for i in range(n_layers))
    if window and cfg.get("use_sliding_window", True):
        return (int(window),) * n_layers
    return (None,) * n_layers


def parse_config(config: dict[str, Any], name: str = "", source: str = "") -> ModelSpec:
    """Derive a ModelSpec from a Hugging Face config.json (a nested `text_config` is used if present).

    Per layer (d = hidden, h = heads, g = KV heads, e = head dim):
      GQA attention params = d·h·e (q) + 2·d·g·e (k, v) + h·e·d (o) [+ biases, qk-norms, sinks]
      MLA attention params = q-path (d·r_q + r_q + r_q·h·(n+p), or d·h·(n+p) without q-LoRA)
                             + d·(r_kv + p) + r_kv + r_kv·h·(n + v) + h·v·d
      gated MLP params     = 3·d·f;  router = d·E
      KV elements per token = 2·g·e (GQA) or r_kv + p (MLA latent + decoupled RoPE key)
      attention FLOPs per attended token = 2·h·(e_qk + e_v); MLA decode in the absorbed form attends
        over the latent: 2·h·(2·r_kv + p); MLA prefill in the naive form: 2·h·(n + p + v).
    Llama 4 (`llama4_text`): GQA with weightless L2 qk-norms; MoE every `interleave_moe_layer_step`-th layer
      (E experts of 3·d·f, top-k, one always-on shared expert of 3·d·f, router d·E), the other layers a
      dense MLP of 3·d·f_mlp (`intermediate_size_mlp`).
    Qwen3-Next (`qwen3_next`), see `_gated_delta_net`: full-attention layers with an output gate (q_proj
      doubled: d·2·h·e) and qk-norms; Gated DeltaNet layers elsewhere; MoE as Qwen3-MoE + a gated shared expert.
    Nemotron-H (`nemotron_h`), see `_mamba2`: one block and one norm per layer, by `hybrid_override_pattern`:
      Mamba-2 (M), GQA attention (*) or a squared-ReLU MLP of 2·d·f (-).
    """
    where = source or name or "config.json"
    if not isinstance(config, dict):  # a file holding a list or a string, say
        raise KokubanError(f"config '{where}' must hold a JSON object, not a {type(config).__name__}")
    cfg = config.get("text_config") if isinstance(config.get("text_config"), dict) else config
    model_type = str(cfg.get("model_type") or config.get("model_type") or "")
    if model_type == "gemma3_text":
        cfg = GEMMA3_TEXT_DEFAULTS | cfg
    if model_type not in SUPPORTED_TYPES:
        raise KokubanError(unsupported_type_message(cfg, model_type, where))
    # the parser falls back to a few top-level keys of a multimodal config: check them with the text config
    outer = {k: config[k] for k in ("max_position_embeddings", "tie_word_embeddings", "quantization_config",
                                    "num_nextn_predict_layers") if k in config}
    given = {k: v for k, v in cfg.items() if v is not None}  # null is read as absent, as `_get` does
    _check_schema(outer | given | {"model_type": model_type}, where)

    def g(key: str, default: Any = KeyError) -> Any:
        return _get(cfg, key, where, default)
    d, n_layers, vocab = int(g("hidden_size")), int(g("num_hidden_layers")), int(g("vocab_size"))
    h = int(g("num_attention_heads"))
    kv_heads = int(g("num_key_value_heads", h) or h)
    tied = bool(cfg.get("tie_word_embeddings", config.get("tie_word_embeddings", model_type.startswith("gemma"))))
    gemma = model_type.startswith("gemma")
    notes: list[str] = []

    # ---- attention -------------------------------------------------------------------------------
    mla = model_type in ("deepseek_v2", "deepseek_v3", "kimi_k2")
    if mla:
        r_kv, rope, nope, v = (
            int(g(k)) for k in ("kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim")
        )
        r_q = cfg.get("q_lora_rank")
        q_params = d * int(r_q) + int(r_q) + int(r_q) * h * (nope + rope) if r_q else d * h * (nope + rope)
        attn_params = q_params + d * (r_kv + rope) + r_kv + r_kv * h * (nope + v) + h * v * d
        kv_elements = r_kv + rope
        flops_decode = 2 * h * (2 * r_kv + rope)
        flops_prefill = 2 * h * (nope + rope + v)
        kv_heads, kv_shardable = 1, False
        notes.append(
            f"MLA: KV cache holds the {r_kv}-dim latent + {rope}-dim RoPE key per layer, replicated across "
            "tensor-parallel ranks"
        )
    else:
        e = int(cfg.get("head_dim") or cfg.get("attention_head_dim") or d // h)
        attn_params = d * h * e + 2 * d * kv_heads * e + h * e * d
        if model_type == "qwen3_next":
            attn_params += d * h * e  # the output gate: q_proj gives 2·h·e (query and gate)
        if cfg.get("attention_bias", model_type in ("qwen2", "qwen2_moe")):
            attn_params += h * e + 2 * kv_heads * e + (d if model_type == "gpt_oss" or cfg.get("attention_bias") else 0)
        if model_type in ("qwen3", "qwen3_moe", "qwen3_next") or gemma:
            attn_params += 2 * e  # q_norm, k_norm (Llama 4's L2 qk-norm has no weights)
        if model_type == "gpt_oss":
            attn_params += h  # attention sinks
        kv_elements = 2 * kv_heads * e
        flops_decode = flops_prefill = 2 * h * (e + e)
        kv_shardable = True
    nemotron = model_type == "nemotron_h"
    norms = (4 if gemma else 1 if nemotron else 2) * d  # Nemotron-H: one block (one norm) per layer

    # ---- MLP / MoE -------------------------------------------------------------------------------
    experts = top_k = per_expert = 0
    moe_flags = [False] * n_layers
    dense_ffn = int(cfg.get("intermediate_size") or 0)
    shared_params = router_params = 0
    if model_type == "mixtral":
        experts, top_k = int(g("num_local_experts")), int(g("num_experts_per_tok"))
        per_expert = 3 * d * dense_ffn
        moe_flags = [True] * n_layers
        router_params = d * experts
    elif model_type == "gpt_oss":
        experts = int(g("num_local_experts"))
        top_k = int(cfg.get("num_experts_per_tok") or g("experts_per_token"))
        per_expert = 3 * d * dense_ffn + 2 * dense_ffn + d  # gate_up (d×2f + 2f bias) + down (f×d + d bias)
        moe_flags = [True] * n_layers
        router_params = d * experts + experts
    elif model_type.startswith("llama4"):
        experts, top_k = int(g("num_local_experts")), int(g("num_experts_per_tok"))
        per_expert = 3 * d * dense_ffn
        step = int(cfg.get("interleave_moe_layer_step", 1) or 0)
        moe_at = cfg.get("moe_layers")
        moe_at = set(moe_at) if moe_at is not None else {i for i in range(n_layers) if step and (i + 1) % step == 0}
        moe_flags = [i in moe_at for i in range(n_layers)]
        router_params = d * experts
        shared_params = per_expert  # one shared expert, as wide as a routed one, no gate
        dense_ffn = int(cfg.get("intermediate_size_mlp") or 0) if len(moe_at) < n_layers else 0
        if len(moe_at) < n_layers and not dense_ffn:
            raise KokubanError(f"config '{where}' is missing the field 'intermediate_size_mlp'")
    elif model_type in ("qwen3_moe", "qwen2_moe", "qwen3_next"):
        experts, top_k = int(g("num_experts")), int(g("num_experts_per_tok"))
        per_expert = 3 * d * int(g("moe_intermediate_size"))
        step = int(cfg.get("decoder_sparse_step", 1) or 1)
        dense_only = set(cfg.get("mlp_only_layers") or [])
        moe_flags = [(i not in dense_only) and (i + 1) % step == 0 for i in range(n_layers)]
        router_params = d * experts
        shared_ffn = int(cfg.get("shared_expert_intermediate_size") or 0)
        if shared_ffn:
            shared_params = 3 * d * shared_ffn + d  # shared expert + its sigmoid gate
    elif mla and cfg.get("n_routed_experts"):
        experts, top_k = int(g("n_routed_experts")), int(g("num_experts_per_tok"))
        moe_ffn = int(g("moe_intermediate_size"))
        per_expert = 3 * d * moe_ffn
        first_dense, freq = int(cfg.get("first_k_dense_replace", 0)), int(cfg.get("moe_layer_freq", 1) or 1)
        moe_flags = [i >= first_dense and i % freq == 0 for i in range(n_layers)]
        shared_params = 3 * d * moe_ffn * int(cfg.get("n_shared_experts") or 0)
        router_params = d * experts + (experts if cfg.get("topk_method") == "noaux_tc" else 0)
    elif not dense_ffn:
        raise KokubanError(f"config '{where}' is missing the field 'intermediate_size'")

    pattern = str(g("hybrid_override_pattern")) if nemotron else ""
    if "E" in pattern:
        raise KokubanError(f"config '{where}' has MoE layers ('E' in hybrid_override_pattern), which kokuban does "
                           "not parse for nemotron_h; describe it as coarse:total=…,active=…,kv=…")
    moe_layers = sum(moe_flags)
    dense_layers = pattern.count("-") if nemotron else n_layers - moe_layers
    mlp_matrices = 2 if nemotron else 3  # Nemotron-H's MLP is up/down with squared ReLU, not gated
    # widest MLP activation one token carries: the dense MLP, or k experts (+ shared experts)
    shared_width = shared_params // (3 * d) if shared_params else 0
    mlp_width = max(dense_ffn if dense_layers else 0, top_k * (per_expert // (3 * d)) + shared_width)
    windows = _layer_windows(cfg, n_layers, model_type)
    state = (_gated_delta_net(cfg, d, where) if model_type == "qwen3_next"
             else _mamba2(cfg, d, where) if nemotron else None)
    linear_layers = pattern.count("M") if nemotron else sum(w == 0 for w in windows)
    attention_layers = n_layers - sum(w == 0 for w in windows)
    params_dense_read = (
        n_layers * norms
        + attention_layers * attn_params
        + (linear_layers * state.params if state else 0)
        + dense_layers * mlp_matrices * d * dense_ffn
        + moe_layers * (shared_params + router_params)
        + d  # final norm
        + vocab * d  # LM head (the embedding matrix itself when tied)
    )
    params_embedding = 0 if tied else vocab * d
    if experts and not 0 < top_k <= experts:
        raise KokubanError(f"config '{where}' routes top_k={top_k} of {experts} experts")

    max_ctx = int(cfg.get("max_position_embeddings") or config.get("max_position_embeddings") or 0)
    if not max_ctx:
        raise KokubanError(f"config '{where}' is missing the field 'max_position_embeddings'")
    if any(w for w in windows):
        n_local = sum(bool(w) for w in windows)
        kind = "chunked local attention over chunks" if model_type.startswith("llama4") else "a sliding window"
        notes.append(f"{n_local} of {n_layers} layers use {kind} of {max(w for w in windows if w)} tokens")
    if state:
        kind = "Mamba-2 state-space" if nemotron else "Gated DeltaNet linear attention"
        notes.append(f"{linear_layers} of {n_layers} layers are {kind} layers: a constant state per request, "
                     "no KV cache")
    if nemotron:
        notes.append(f"{attention_layers} attention layers, {dense_layers} MLP layers (each layer one block)")
    if mla and config.get("num_nextn_predict_layers"):
        notes.append("multi-token-prediction layer(s) in the checkpoint are not counted (not used to serve)")
    stored = checkpoint_format(config)
    # attention left unquantised in a MoE checkpoint: the quantised format is the routed experts' (gpt-oss); a dense
    # model's MLPs are most of its weights, so it keeps the quantised format for all (a stated approximation)
    split = bool(stored.unconverted_dtype and moe_layers and stored.dtype)
    if stored.warning:
        notes.append(stored.warning)
        note(stored.warning, warning=True)
    return ModelSpec(
        name=name or str(config.get("_name_or_path") or model_type),
        family=model_type,
        num_layers=n_layers,
        hidden_size=d,
        vocab_size=vocab,
        max_context=max_ctx,
        params_embedding=params_embedding,
        params_dense_read=params_dense_read,
        moe_layers=moe_layers,
        num_experts=experts if moe_layers else 0,
        top_k=top_k if moe_layers else 0,
        params_per_expert=per_expert if moe_layers else 0,
        mlp_width=mlp_width,
        num_heads=h,
        num_kv_heads=kv_heads,
        kv_shardable=kv_shardable,
        kv_elements_per_token_per_layer=kv_elements,
        attn_flops_per_ctx_token_per_layer_decode=flops_decode,
        attn_flops_per_ctx_token_per_layer_prefill=flops_prefill,
        layer_windows=windows,
        native_dtype=stored.unconverted_dtype if split else stored.dtype or "",
        native_experts_dtype=stored.dtype if split else "",
        tied_embeddings=tied,
        attention="mla" if mla else "gqa",
        source=source,
        notes=tuple(notes),
        state_layers=linear_layers if state else 0,
        state_conv_elements_per_layer=state.conv_elements if state else 0,
        state_recurrent_elements_per_layer=state.recurrent_elements if state else 0,
        state_recurrent_dtype=state.recurrent_dtype if state else "bf16",
        state_heads=state.shard_heads if state else 0,
        state_flops_per_token_per_layer=state.flops_per_token if state else 0,
        chunked_attention=model_type.startswith("llama4") and any(w for w in windows),
        quantization=stored.detail,
        quantization_warning=stored.warning,
    )


@dataclass(frozen=True)
class StateLayer:
    """One layer that keeps a recurrent state instead of KV (Gated DeltaNet, Mamba-2): its parameters, the
    state a request keeps in it, and the FLOPs a token costs it. Elements and FLOPs; bytes in core/bytes.py."""

    params: int
    conv_elements: int
    recurrent_elements: int
    recurrent_dtype: str
    shard_heads: int
    flops_per_token: int


def _state_dtype(cfg: dict[str, Any]) -> str:
    """The recurrent state's dtype: the config's `mamba_ssm_dtype` if it names one, else 16-bit (vLLM's
    mamba_ssm_cache_dtype "auto" follows the model's dtype, bf16 for every supported hybrid)."""
    from kokuban.specs.dtypes import check_dtype

    ssm = str(cfg.get("mamba_ssm_dtype") or "bfloat16")
    return check_dtype({"float32": "fp32", "bfloat16": "bf16", "float16": "fp16"}.get(ssm, ssm), "mamba_ssm_dtype")


def _gated_delta_net(cfg: dict[str, Any], d: int, where: str) -> StateLayer:
    """Qwen3-Next's Gated DeltaNet layer from its config (transformers modeling_qwen3_next.py
    Qwen3NextGatedDeltaNet; vLLM mamba_utils.py MambaStateShapeCalculator.gated_delta_net_state_shape).

    With n_k key heads of d_k, n_v value heads of d_v, key dim K = n_k·d_k, value dim V = n_v·d_v, kernel c:
      params  = d·(2K + 2V) (in_proj_qkvz) + d·2·n_v (in_proj_ba) + (2K + V)·c (depthwise conv1d, no bias)
                + 2·n_v (dt_bias, A_log) + d_v (gated RMSNorm) + V·d (out_proj)
      state per request = conv (2K + V)·(c − 1)  +  recurrent n_v·d_k·d_v  elements, whatever the context
      FLOPs per token ≈ 7·n_v·d_k·d_v (the gated delta rule, recurrent form: decay the state d_k·d_v, read it
                with the key 2·d_k·d_v, the rank-1 update 2·d_k·d_v, read it with the query 2·d_k·d_v)
                + 2·(2K + V)·c (the short convolution): O(d_k·d_v) per head, not O(context).
    The conv state is kept in the activations' 16-bit type, the recurrent state in `_state_dtype`.
    Under TP the state splits by heads (vLLM divides n_v and the conv dim by the TP size; n_k bounds it).
    """
    n_k, n_v, d_k, d_v, c = (int(_get(cfg, k, where)) for k in (
        "linear_num_key_heads", "linear_num_value_heads", "linear_key_head_dim", "linear_value_head_dim",
        "linear_conv_kernel_dim"))
    key, value = n_k * d_k, n_v * d_v
    conv_dim = 2 * key + value
    return StateLayer(
        params=d * (2 * key + 2 * value) + d * 2 * n_v + conv_dim * c + 2 * n_v + d_v + value * d,
        conv_elements=conv_dim * (c - 1),
        recurrent_elements=n_v * d_k * d_v,
        recurrent_dtype=_state_dtype(cfg),
        shard_heads=n_k,
        flops_per_token=7 * n_v * d_k * d_v + 2 * conv_dim * c,
    )


def _mamba2(cfg: dict[str, Any], d: int, where: str) -> StateLayer:
    """Nemotron-H's Mamba-2 mixer from its config (transformers modeling_nemotron_h.py NemotronHMamba2Mixer;
    vLLM mamba_utils.py MambaStateShapeCalculator.mamba2_state_shape).

    With H heads of P (I = H·P), G groups, state size N, kernel c, conv dim C = I + 2·G·N:
      params  = d·(I + C + H) (in_proj: z, x·B·C, dt) [+ bias] + C·c + C (conv1d, bias when use_conv_bias)
                + 3·H (dt_bias, A_log, D) + I (gated RMSNorm) + I·d (out_proj) [+ bias]
      state per request = conv C·(c − 1)  +  recurrent H·P·N  elements, whatever the context
      FLOPs per token ≈ 5·H·P·N (the SSD recurrence: decay the state P·N, add dt·x⊗B 2·P·N, read it with
                C 2·P·N) + 2·C·c (the short convolution): O(P·N) per head, not O(context).
    The state is kept as `_gated_delta_net`'s (conv 16-bit, recurrent in `_state_dtype`); under TP it splits
    by heads.
    """
    heads, head_dim, groups, n_state, c = (int(_get(cfg, k, where)) for k in (
        "mamba_num_heads", "mamba_head_dim", "n_groups", "ssm_state_size", "conv_kernel"))
    inner = heads * head_dim
    conv_dim = inner + 2 * groups * n_state
    proj_bias = (inner + conv_dim + heads + d) if cfg.get("mamba_proj_bias") else 0
    conv_bias = conv_dim if cfg.get("use_conv_bias", True) else 0
    return StateLayer(
        params=d * (inner + conv_dim + heads) + conv_dim * c + conv_bias + 3 * heads + inner + inner * d + proj_bias,
        conv_elements=conv_dim * (c - 1),
        recurrent_elements=heads * head_dim * n_state,
        recurrent_dtype=_state_dtype(cfg),
        shard_heads=heads,
        flops_per_token=5 * heads * head_dim * n_state + 2 * conv_dim * c,
    )
