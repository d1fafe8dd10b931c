"""Bytes: what a deployment stores and reads — weights (stored, per GPU, read per pass) and the KV cache
per request. Both the step times (core/roofline.py) and the capacity (core/memory.py) count bytes here.

    weights stored      = (params − embedding/LM-head − routed params)·b_w + routed params·b_e
                          + embedding/LM-head params·2                              (16-bit embeddings)
    weights per GPU     = (stored − routed)/dense shards + routed/N
    weights read (pass) = (always-read − LM head)·b_w + LM head·2 + moe_layers·E_touched(T)·params/expert·b_e
    (b_e: the routed experts' bytes per weight, b_w unless the experts are stored apart, `Deployment.experts_dtype`)
    KV per request      = attention KV(L) + constant state
                          attention KV(L) = KV elements(L) × bytes per element,
                          elements(L) = per token per layer × Σ_attention layers min(L, window)
                          (a global layer holds L, a sliding-window or chunked layer at most its window/chunk)
                          state = linear-attention layers × (conv elements·2 + recurrent elements·b_state)
    KV read (decode)    = attention KV × (1 + (q − 1)·r) when the engine loads a KV head once per query head
                          (q query heads per KV head, r of the repeats reaching HBM), else attention KV
"""

from __future__ import annotations

from typing import Any

import numpy as np

from kokuban.specs.deployment import Deployment


def expected_experts_touched(num_experts: int, top_k: int, tokens: Any) -> np.ndarray:
    """Expected distinct experts a layer's router selects for `tokens` tokens: E·(1 - (1 - k/E)^T).

    Assumes each token picks k distinct experts uniformly and independently of the others (a balanced
    router, which auxiliary-loss-free balancing and load-balancing losses aim for). A given expert is
    missed by one token with probability 1 - k/E, by all T tokens with (1 - k/E)^T. Batch 1 touches k;
    large batches touch all E, so the weight read grows with the batch while compute stays k per token.
    """
    t = np.asarray(tokens, dtype=np.float64)
    if num_experts <= 0:
        return np.zeros_like(t)
    return num_experts * (1.0 - (1.0 - top_k / num_experts) ** t)


def weight_bytes_stored(dep: Deployment) -> float:
    """All weight bytes of the model: (params − 16-bit embedding/LM-head params − routed)·b_w + routed·b_e + those·2."""
    m = dep.model
    embed_params = m.params_embedding + m.params_lm_head
    body = (m.params_total - embed_params - m.params_routed) * dep.weight_bytes_per_param
    return body + m.params_routed * dep.expert_bytes_per_param + embed_params * dep.embedding_bytes_per_param


def weight_bytes_per_gpu(dep: Deployment) -> float:
    """Weight bytes one GPU holds: always-read part ÷ dense shards + embedding ÷ dense shards + experts ÷ N."""
    m = dep.model
    routed = m.params_routed * dep.expert_bytes_per_param
    return (weight_bytes_stored(dep) - routed) / dep.dense_shards + routed / dep.parallel.expert_shards


def routed_weight_bytes_read(dep: Deployment, tokens: Any) -> np.ndarray:
    """Routed-expert bytes a forward pass over `tokens` tokens reads:
    moe_layers·E_touched(tokens)·params_per_expert·b_e (the experts' bytes per weight)."""
    m = dep.model
    touched = expected_experts_touched(m.num_experts, m.top_k, tokens)
    return m.moe_layers * touched * m.params_per_expert * dep.expert_bytes_per_param


def lm_head_bytes(dep: Deployment) -> float:
    """Bytes of the LM head, read whole by every pass: vocab·d·2 (16-bit; GGUF files keep their own type)."""
    return dep.model.params_lm_head * dep.embedding_bytes_per_param


def dense_weight_bytes_read(dep: Deployment) -> float:
    """Always-read bytes of one forward pass: (always-read params − LM head)·b_w + LM head·2 (16-bit).
    The input embedding is a lookup of `tokens` rows and is not counted."""
    m = dep.model
    return (m.params_dense_read - m.params_lm_head) * dep.weight_bytes_per_param + lm_head_bytes(dep)


def weight_bytes_read(dep: Deployment, tokens: Any) -> np.ndarray:
    """Weight bytes the whole deployment reads for one forward pass over `tokens` tokens:
    dense_weight_bytes_read + routed_weight_bytes_read(tokens)."""
    return dense_weight_bytes_read(dep) + routed_weight_bytes_read(dep, tokens)


def weight_bytes_read_per_gpu(dep: Deployment, tokens: Any) -> np.ndarray:
    """Weight bytes the busiest GPU reads: the always-read part ÷ dense shards + the routed part ÷ N.

    Under EP each GPU reads the whole always-read part for its own requests (dense shards = 1); routed
    experts, and everything under TP, are split N ways.
    """
    routed = routed_weight_bytes_read(dep, tokens)
    return dense_weight_bytes_read(dep) / dep.dense_shards + routed / dep.parallel.expert_shards


#: Bytes per element of a linear-attention layer's convolution state: the activations' 16-bit type (vLLM
#: MambaStateDtypeCalculator: mamba_cache_dtype "auto" = the model dtype, bf16 for every supported hybrid).
STATE_CONV_BYTES_PER_ELEMENT = 2.0


def attention_kv_bytes_per_request(dep: Deployment, context: Any) -> np.ndarray:
    """Attention KV-cache bytes one request holds at `context` tokens: elements(context) × bytes per element.

    elements(L) = KV elements per token per layer × Σ_layers min(L, window_layer) (linear layers: window 0).
    """
    return dep.model.kv_elements(context) * dep.kv_bytes_per_element


def decode_kv_read_factor(dep: Deployment) -> float:
    """HBM bytes a decode step's attention reads per byte of KV cache it attends: 1 + (q − 1)·r, or 1.

    A decode-attention kernel that shares a KV head among its query heads (FlashDecoding, FlashInfer, TensorRT-LLM's
    XQA from 0.7.0) loads each KV head once per step: factor 1. One that runs a thread block per (sequence, query
    head), each loading its KV head's whole cache (TensorRT-LLM 0.5/0.6.1's masked MHA,
    `KernelCurves.kv_per_query_head`), loads it q = query heads ÷ KV heads times; the first load reaches HBM, of the
    q − 1 repeats the fraction r = `Efficiency.kv_reread` does (the rest hit L2, which no table measures: r is
    fitted). Llama-2-70B (64 query heads, 8 KV heads, q = 8) at r = 0.5: 1 + 7 × 0.5 = 4.5. MHA (q = 1) and MLA's
    shared latent: 1. Prefill's context kernels share the KV head: not affected.
    """
    m, eff = dep.model, dep.efficiency
    if eff.kernels is None or not eff.kernels.kv_per_query_head or m.attention != "gqa":
        return 1.0
    return 1.0 + (m.num_heads / m.num_kv_heads - 1.0) * eff.kv_reread


def state_bytes_per_request(dep: Deployment) -> float:
    """Constant recurrent-state bytes one request keeps, whatever its context (0 without linear-attention or
    Mamba-2 layers): state layers × (conv elements × 2 B + recurrent elements × bytes of the recurrent dtype).

    Qwen3-Next (36 Gated DeltaNet layers, 16 key / 32 value heads of 128, kernel 4, 16-bit):
    36 × ((2·2048 + 4096)·3·2 + 32·128·128·2) = 36 × (49,152 + 1,048,576) = 39,518,208 B per request.
    Nemotron-H-8B (24 Mamba-2 layers, 128 heads of 64, state 128, conv dim 8192 + 2·8·128 = 10240, kernel 4):
    24 × (10240·3·2 + 128·64·128·2) = 24 × (61,440 + 2,097,152) = 51,806,208 B.
    It does not grow with context and is not in the KV dtype (engines keep it apart from the KV cache).
    """
    from kokuban.specs.dtypes import bytes_per_element

    m = dep.model
    if not m.has_state:
        return 0.0
    per_layer = (m.state_conv_elements_per_layer * STATE_CONV_BYTES_PER_ELEMENT
                 + m.state_recurrent_elements_per_layer * bytes_per_element(m.state_recurrent_dtype))
    return m.state_layers * per_layer


def kv_bytes_per_request(dep: Deployment, context: Any) -> np.ndarray:
    """Bytes of cache one request holds at `context` tokens: attention KV(context) + the constant state."""
    return attention_kv_bytes_per_request(dep, context) + state_bytes_per_request(dep)


def kv_bytes_per_request_per_gpu(dep: Deployment, context: Any) -> np.ndarray:
    """Cache bytes of one request that one GPU holds: attention KV ÷ KV shards + state ÷ state shards."""
    state = state_bytes_per_request(dep) / dep.state_shards
    return attention_kv_bytes_per_request(dep, context) / dep.kv_shards + state
