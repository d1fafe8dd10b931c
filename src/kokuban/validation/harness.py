"""Run a real transformer in PyTorch and put its measured step times beside kokuban's prediction.

The architecture is one config.json dict, parsed twice: by `ModelSpec.from_config` for the
prediction and by `TorchTransformer` for the measurement, so both describe the same model.
Where the catalog model is too large for the machine, `scaled_config` keeps fewer layers and/or a
smaller hidden size (heads and MLP width scaled with it, head_dim kept) and lists what it changed.

What is run (random weights, greedy sampling, no torch.compile, no CUDA graphs):
- decode: `batch` requests at `context` tokens each: one new token per request goes through every
  layer — fused QKV projection, RoPE, the new K/V written into a preallocated cache of `context`
  positions, attention over all of them (grouped-query, no K/V copies), output projection, fused
  gate/up + SiLU + down MLP — then the LM head and an argmax. The cache is filled with random
  values instead of a prefill: a decode step's cost does not depend on what the cache holds.
- prefill: `batch` prompts of `prompt` tokens through every layer with causal attention, the K/V
  written to a fresh cache, and logits for the last position only (engines sample one token per
  prompt, and kokuban's prefill counts one LM head per prompt).
Timing: `repeats` rounds over the whole grid (interleaved, so a drifting machine does not bias some
points); in each round a point gets `warmup` untimed calls and one call timed between two device
syncs; the median over the rounds is reported. Nothing is cached between calls: each call runs the
whole forward again.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from functools import partial
from typing import Any

import numpy as np

from kokuban.errors import KokubanError
from kokuban.progress import Progress, tick
from kokuban.specs.deployment import Deployment
from kokuban.specs.hardware import Accelerator, Efficiency
from kokuban.specs.model import ModelSpec
from kokuban.validation.probe import import_torch, synchronizer, time_calls

#: Families the PyTorch model implements: dense, grouped-query attention, gated SiLU MLP, RMSNorm.
TORCH_FAMILIES = ("llama", "mistral", "qwen2", "qwen3")
TORCH_DTYPES = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}


# ---- the architecture ------------------------------------------------------------------------------
def scaled_config(config: dict[str, Any], *, num_layers: int | None = None,
                  hidden_size: int | None = None) -> tuple[dict[str, Any], list[str]]:
    """A copy of `config` with fewer layers and/or a smaller hidden size, and the list of changes.

    Hidden size d → d': heads h' = max(1, d'/head_dim) (head_dim kept), KV heads g' = the largest
    divisor of h' not above g, MLP width f' = f·d'/d rounded to a multiple of 64. Sliding windows
    are dropped (the PyTorch model attends globally) and said so.
    """
    cfg = dict(config)
    model_type = str(cfg.get("model_type", ""))
    if model_type not in TORCH_FAMILIES:
        raise KokubanError(
            f"validate builds only {', '.join(TORCH_FAMILIES)} models in PyTorch; got '{model_type or '(none)'}'"
        )
    changes: list[str] = []
    layers0 = int(cfg["num_hidden_layers"])
    if num_layers is not None:
        if not 1 <= num_layers <= layers0:
            raise KokubanError(
                f"must be between 1 and {layers0}, got {num_layers}", field="num_layers", value=num_layers
            )
        if num_layers != layers0:
            cfg["num_hidden_layers"] = num_layers
            changes.append(f"{num_layers} of {layers0} layers")
            if isinstance(cfg.get("layer_types"), list):
                cfg["layer_types"] = cfg["layer_types"][:num_layers]
    d0 = int(cfg["hidden_size"])
    if hidden_size is not None and hidden_size != d0:
        h0 = int(cfg["num_attention_heads"])
        e = int(cfg.get("head_dim") or d0 // h0)
        if hidden_size < e or hidden_size > d0 or hidden_size % e:
            raise KokubanError(
                f"must be a multiple of head_dim {e} between {e} and {d0}, got {hidden_size}",
                field="hidden_size",
                value=hidden_size,
            )
        h = hidden_size // e
        g0 = int(cfg.get("num_key_value_heads") or h0)
        g = max(k for k in range(1, min(g0, h) + 1) if h % k == 0)
        f = max(64, round(int(cfg["intermediate_size"]) * hidden_size / d0 / 64) * 64)
        cfg.update(
            hidden_size=hidden_size, num_attention_heads=h, num_key_value_heads=g, head_dim=e, intermediate_size=f
        )
        changes.append(f"hidden {hidden_size} (of {d0}), {h} heads, {g} KV heads, MLP width {f}")
    if cfg.get("sliding_window") or cfg.get("layer_types"):
        cfg["sliding_window"] = None
        cfg.pop("layer_types", None)
        changes.append("sliding windows dropped (global attention)")
    return cfg, changes


@dataclass(frozen=True)
class TorchShape:
    """The tensor shapes the PyTorch model needs, read from the same config dict as the ModelSpec."""

    hidden: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    mlp_width: int
    vocab: int
    tied: bool
    qkv_bias: bool
    qk_norm: bool
    rope_theta: float

    @classmethod
    def from_config(cls, cfg: dict[str, Any]) -> TorchShape:
        model_type = str(cfg.get("model_type", ""))
        if model_type not in TORCH_FAMILIES:
            raise KokubanError(
                f"validate builds only {', '.join(TORCH_FAMILIES)} models in PyTorch; got '{model_type}'"
            )
        d, h = int(cfg["hidden_size"]), int(cfg["num_attention_heads"])
        return cls(
            hidden=d, layers=int(cfg["num_hidden_layers"]), heads=h, kv_heads=int(cfg.get("num_key_value_heads") or h),
            head_dim=int(cfg.get("head_dim") or d // h), mlp_width=int(cfg["intermediate_size"]),
            vocab=int(cfg["vocab_size"]), tied=bool(cfg.get("tie_word_embeddings", False)),
            qkv_bias=bool(cfg.get("attention_bias", model_type == "qwen2")), qk_norm=model_type == "qwen3",
            rope_theta=float(cfg.get("rope_theta", 10000.0)),
        )


LINEAR_BACKENDS = ("auto", "matmul", "onednn")


def resolve_linear(linear: str, device: str, dtype: str) -> str:
    """'auto' → 'onednn' for fp32 on a CPU with PyTorch's oneDNN backend, else 'matmul'.

    Why: PyTorch's dense fp32 matmul on CPUs goes to MKL, whose small-M GEMMs (M = decode batch
    1–64) run 2–3× below oneDNN's on AMD processors (measured here: M=16, K=2048, N=8192: MKL
    26 GFLOP/s, oneDNN 53 GFLOP/s on 2 EPYC cores). oneDNN's inner product is what PyTorch's own
    `torch.utils.mkldnn.to_mkldnn` inference path and Intel's extension use on CPUs.
    """
    if linear not in LINEAR_BACKENDS:
        raise KokubanError(f"backend '{linear}' is not known; allowed: {', '.join(LINEAR_BACKENDS)}", field="linear",
                           value=linear)
    torch = import_torch()
    onednn_ok = device == "cpu" and dtype == "fp32" and torch.backends.mkldnn.is_available()
    if linear == "onednn" and not onednn_ok:
        raise KokubanError(
            "backend 'onednn' needs fp32 on a CPU with PyTorch's oneDNN (mkldnn) backend", field="linear", value=linear
        )
    if linear == "auto":
        return "onednn" if onednn_ok else "matmul"
    return linear


class TorchTransformer:
    """A dense decoder-only transformer (Llama/Mistral/Qwen2/Qwen3 layout) with random weights.

    Weights are stored as PyTorch lays out nn.Linear ([out, in]); QKV and gate/up are fused into one
    matrix each, as serving engines do. RoPE is the plain rotary embedding (long-context scaling
    variants change no cost).
    """

    def __init__(self, cfg: dict[str, Any], *, device: str = "cpu", dtype: str = "fp32", seed: int = 0,
                 linear: str = "auto") -> None:
        torch = import_torch()
        self.torch, self.shape, self.device = torch, TorchShape.from_config(cfg), device
        self.dtype = getattr(torch, TORCH_DTYPES[dtype])
        s = self.shape
        gen = torch.Generator(device=device).manual_seed(seed)

        def w(*shape: int, std: float = 0.02) -> Any:
            return torch.empty(shape, device=device, dtype=self.dtype).normal_(0.0, std, generator=gen)

        def ones(n: int) -> Any:
            return torch.ones(n, device=device, dtype=self.dtype)

        q, kv = s.heads * s.head_dim, s.kv_heads * s.head_dim
        self.embed = w(s.vocab, s.hidden)
        self.lm_head = self.embed if s.tied else w(s.vocab, s.hidden)
        self.final_norm = ones(s.hidden)
        self.layers = []
        for _ in range(s.layers):
            layer = {
                "attn_norm": ones(s.hidden), "wqkv": w(q + 2 * kv, s.hidden), "wo": w(s.hidden, q),
                "mlp_norm": ones(s.hidden), "wgu": w(2 * s.mlp_width, s.hidden), "wdown": w(s.hidden, s.mlp_width),
            }
            if s.qkv_bias:
                layer["bqkv"] = w(q + 2 * kv)
            if s.qk_norm:
                layer["q_norm"], layer["k_norm"] = ones(s.head_dim), ones(s.head_dim)
            self.layers.append(layer)
        self.linear_backend = resolve_linear(linear, device, dtype)
        self._onednn: dict[int, Any] = {}
        if self.linear_backend == "onednn":
            from types import SimpleNamespace

            from torch.utils.mkldnn import MkldnnLinear

            for weight in [self.lm_head] + [layer[k] for layer in self.layers for k in ("wqkv", "wo", "wgu", "wdown")]:
                self._onednn[id(weight)] = MkldnnLinear(SimpleNamespace(weight=weight, bias=None), torch.float)
        half = s.head_dim // 2
        self.inv_freq = 1.0 / (s.rope_theta ** (torch.arange(half, device=device, dtype=torch.float32) / half))

    def num_parameters(self) -> int:
        """Stored parameters (the tied LM head counted once)."""
        seen, total = set(), 0
        for t in [self.embed, self.lm_head, self.final_norm] + [v for layer in self.layers for v in layer.values()]:
            if id(t) not in seen:
                seen.add(id(t))
                total += t.numel()
        return total

    # ---- building blocks ----
    def linear(self, x: Any, weight: Any) -> Any:
        """x [..., in] · weightᵀ ([out, in]): a dense matmul, or oneDNN's inner product (weights kept in
        its blocked layout) when the backend is 'onednn'."""
        if self.linear_backend == "onednn":
            y = self._onednn[id(weight)](x.reshape(-1, x.shape[-1]))
            return y.reshape(*x.shape[:-1], y.shape[-1])
        return x @ weight.T

    def _rms(self, x: Any, weight: Any, eps: float = 1e-5) -> Any:
        return x * self.torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight

    def _rope(self, x: Any, positions: Any) -> Any:
        """Rotate the two halves of the last dim of x [..., T, heads, e] by position·inv_freq."""
        ang = positions.to(self.torch.float32)[:, None] * self.inv_freq[None, :]  # [T, e/2]
        cos, sin = ang.cos().to(x.dtype)[:, None, :], ang.sin().to(x.dtype)[:, None, :]
        x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
        return self.torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)

    def _qkv(self, layer: dict[str, Any], x: Any, positions: Any) -> tuple[Any, Any, Any]:
        """x [B, T, d] → q [B, T, h, e], k, v [B, T, g, e] (RoPE applied to q and k)."""
        s = self.shape
        qkv = self.linear(x, layer["wqkv"])
        if "bqkv" in layer:
            qkv = qkv + layer["bqkv"]
        b, t = x.shape[0], x.shape[1]
        q, k, v = qkv.split([s.heads * s.head_dim, s.kv_heads * s.head_dim, s.kv_heads * s.head_dim], dim=-1)
        q, k, v = (z.view(b, t, -1, s.head_dim) for z in (q, k, v))
        if "q_norm" in layer:
            q, k = self._rms(q, layer["q_norm"]), self._rms(k, layer["k_norm"])
        return self._rope(q, positions), self._rope(k, positions), v

    def _mlp(self, layer: dict[str, Any], x: Any) -> Any:
        gate, up = self.linear(x, layer["wgu"]).chunk(2, dim=-1)
        return self.linear(self.torch.nn.functional.silu(gate) * up, layer["wdown"])

    # ---- the two passes ----
    def new_cache(self, batch: int, context: int, *, random: bool, pool: Any = None) -> list[tuple[Any, Any]]:
        """Per layer (K, V), each [batch, kv_heads, context, head_dim]; random values if `random`.

        With `pool` (a flat tensor from `cache_pool`), the caches are views into it: no allocation, and
        whatever values the pool holds."""
        s, torch = self.shape, self.torch
        shape = (batch, s.kv_heads, context, s.head_dim)
        n = math.prod(shape)
        if pool is not None:
            need = int(kv_cache_bytes(s, batch, context, 1))  # elements: 1 "byte" each
            if pool.numel() < need:
                raise KokubanError(f"internal: KV pool of {pool.numel()} elements is smaller than {need}")
            return [(pool[(2 * i) * n:(2 * i + 1) * n].view(shape), pool[(2 * i + 1) * n:(2 * i + 2) * n].view(shape))
                    for i in range(s.layers)]
        cache = []
        for _ in range(s.layers):
            k = torch.empty(shape, device=self.device, dtype=self.dtype)
            v = torch.empty_like(k)
            if random:
                k.uniform_(-1, 1)
                v.uniform_(-1, 1)
            cache.append((k, v))
        return cache

    def cache_pool(self, points: Sequence[tuple[int, int]]) -> Any:
        """One flat buffer of random values large enough for the KV cache of every (batch, context) in
        `points`, so that timed rounds reuse it instead of allocating (and page-faulting) a cache each time."""
        need = max((int(kv_cache_bytes(self.shape, b, c, 1)) for b, c in points), default=0)  # elements: 1 "byte" each
        return self.torch.empty(need, device=self.device, dtype=self.dtype).uniform_(-1, 1)

    def decode(self, tokens: Any, cache: list[tuple[Any, Any]]) -> Any:
        """One decode step (see `decode_logits`), greedy: the next token of each request [B]."""
        return self.decode_logits(tokens, cache).argmax(-1)

    def decode_logits(self, tokens: Any, cache: list[tuple[Any, Any]]) -> Any:
        """Logits [B, vocab] for tokens [B] at position context−1, their K/V written there in the cache."""
        s, torch = self.shape, self.torch
        b, ctx = tokens.shape[0], cache[0][0].shape[2]
        pos = torch.tensor([ctx - 1], device=self.device)
        x = self.embed[tokens][:, None, :]  # [B, 1, d]
        group, scale = s.heads // s.kv_heads, 1.0 / math.sqrt(s.head_dim)
        for layer, (kc, vc) in zip(self.layers, cache, strict=True):
            q, k, v = self._qkv(layer, self._rms(x, layer["attn_norm"]), pos)
            kc[:, :, ctx - 1] = k[:, 0]
            vc[:, :, ctx - 1] = v[:, 0]
            qg = q.view(b, s.kv_heads, group, s.head_dim)  # heads of one KV group side by side
            probs = torch.softmax((qg @ kc.transpose(-1, -2)) * scale, dim=-1)  # [B, g, group, ctx]
            attn = (probs @ vc).reshape(b, 1, s.heads * s.head_dim)
            x = x + self.linear(attn, layer["wo"])
            x = x + self._mlp(layer, self._rms(x, layer["mlp_norm"]))
        return self.linear(self._rms(x[:, 0], self.final_norm), self.lm_head)

    def prefill(self, tokens: Any) -> Any:
        """Prefill (see `prefill_logits`), greedy: the first generated token of each prompt [B]."""
        return self.prefill_logits(tokens)[0].argmax(-1)

    def prefill_logits(self, tokens: Any) -> tuple[Any, list[tuple[Any, Any]]]:
        """Prefill tokens [B, T]: causal attention, K/V written to a new cache; (logits of the last position
        [B, V], cache). Serving engines sample from the last position only, so only it goes through the LM head."""
        s, torch = self.shape, self.torch
        b, t = tokens.shape
        positions = torch.arange(t, device=self.device)
        cache = self.new_cache(b, t, random=False)
        x = self.embed[tokens]
        sdpa = torch.nn.functional.scaled_dot_product_attention
        for layer, (kc, vc) in zip(self.layers, cache, strict=True):
            q, k, v = self._qkv(layer, self._rms(x, layer["attn_norm"]), positions)
            kc.copy_(k.transpose(1, 2))
            vc.copy_(v.transpose(1, 2))
            group = s.heads // s.kv_heads  # K/V repeated per query head so every backend (flash too) applies
            kr, vr = (kc, vc) if group == 1 else (kc.repeat_interleave(group, 1), vc.repeat_interleave(group, 1))
            attn = sdpa(q.transpose(1, 2), kr, vr, is_causal=True)
            x = x + self.linear(attn.transpose(1, 2).reshape(b, t, -1), layer["wo"])
            x = x + self._mlp(layer, self._rms(x, layer["mlp_norm"]))
        return self.linear(self._rms(x[:, -1], self.final_norm), self.lm_head), cache


# ---- the grid, timed --------------------------------------------------------------------------------
@dataclass(frozen=True)
class Point:
    """One configuration to measure: phase 'decode' (batch at context) or 'prefill' (batch × tokens)."""

    phase: str
    batch: int
    tokens: int  # decode: context; prefill: prompt tokens


@dataclass
class Measurement:
    """A measured point: median and all repeat times, in seconds."""

    point: Point
    median_s: float
    times_s: list[float] = field(default_factory=list)


def grid(
    batches: Sequence[int], contexts: Sequence[int], prompts: Sequence[int], prefill_batch: int = 1
) -> list[Point]:
    """Decode at every (batch, context); prefill of `prefill_batch` prompts at every prompt length."""
    points = [Point("decode", b, c) for b in batches for c in contexts]
    return points + [Point("prefill", prefill_batch, p) for p in prompts]


def kv_cache_bytes(shape: TorchShape, batch: int, context: int, bytes_per_element: float) -> float:
    """Bytes of the torch model's KV cache: 2 (K, V) · layers · batch · kv_heads · context · head_dim · b."""
    return 2 * shape.layers * batch * shape.kv_heads * context * shape.head_dim * bytes_per_element


def measure(model: TorchTransformer, points: Sequence[Point], *, warmup: int = 2, repeats: int = 5,
            progress: Progress | None = None, seed: int = 0) -> list[Measurement]:
    """Time every point in `repeats` rounds; the median of its rounds is reported.

    Each round visits every point once: it runs `warmup` untimed calls, then one call timed between two
    device syncs. Decode caches are views into one buffer of random values (`cache_pool`), allocated
    once for the largest point: a step's cost does not depend on what the cache holds, and allocating
    gigabytes per round would time the operating system's page zeroing instead. Interleaving the points
    spreads a slow drift of the machine (clock speed, a neighbour's memory traffic on a shared host)
    over all of them, instead of biasing whichever points were measured while it lasted.
    `progress(calls timed, repeats · points)` after each timed call (`kokuban.progress`).
    """
    torch, sync = model.torch, synchronizer(model.device)
    gen = torch.Generator(device="cpu").manual_seed(seed)
    tokens = [
        torch.randint(model.shape.vocab, (p.batch,) if p.phase == "decode" else (p.batch, p.tokens), generator=gen).to(
            model.device
        )
        for p in points
    ]
    pool = model.cache_pool([(p.batch, p.tokens) for p in points if p.phase == "decode"])
    times: list[list[float]] = [[] for _ in points]
    total, done = repeats * len(points), 0
    with torch.inference_mode():
        for _ in range(repeats):
            for i, p in enumerate(points):
                if p.phase == "decode":
                    cache = model.new_cache(p.batch, p.tokens, random=False, pool=pool)
                    fn: Callable[[], Any] = partial(model.decode, tokens[i], cache)
                else:
                    fn = partial(model.prefill, tokens[i])
                times[i].extend(float(t) for t in time_calls(fn, warmup=warmup, repeats=1, sync=sync))
                done += 1
                tick(progress, done, total)
    del pool
    if model.device == "cuda":
        torch.cuda.empty_cache()
    return [Measurement(p, float(np.median(t)), t) for p, t in zip(points, times, strict=True)]


# ---- the prediction ---------------------------------------------------------------------------------
def validation_accelerator(entry: dict[str, Any], compute_dtype: str) -> Accelerator:
    """The probed accelerator with every FLOP/s figure set to the measured `compute_dtype` rate.

    The core times attention FLOPs at the bf16 rate (serving engines run attention in bf16); the
    validated model runs all its matmuls, attention included, in `compute_dtype`, so for it the
    rate of that dtype is the right one (it matters on CPUs, where bf16 runs ~100× slower than fp32).
    """
    acc = Accelerator.from_dict(entry)
    rate = acc.flops(compute_dtype)
    return Accelerator.from_dict({**entry, **{f"flops_{k}": rate for k in ("fp32", "bf16", "fp16")}})


def deployment_for(spec: ModelSpec, accelerator: Accelerator, dtype: str, efficiency: Efficiency) -> Deployment:
    """One device, weights, KV and compute all in `dtype` (as the PyTorch model runs), at `efficiency` (no
    default here: which fractions a validation predicts with is the request's policy, `ValidateRequest`)."""
    return Deployment.make(spec, accelerator, 1, weights_dtype=dtype, kv_dtype=dtype, compute_dtype=dtype,
                           efficiency=efficiency)


def predict(
    dep: Deployment, phases: Sequence[str], batches: Sequence[int], tokens: Sequence[int]
) -> tuple[np.ndarray, np.ndarray]:
    """Predicted seconds and bound for each (phase, batch, tokens): roofline.decode_step / prefill."""
    from kokuban.core.roofline import decode_step, prefill

    ph, b, t = np.asarray(phases), np.asarray(batches, dtype=np.float64), np.asarray(tokens, dtype=np.float64)
    seconds, bound = np.zeros(ph.size), np.empty(ph.size, dtype=object)
    for name, fn in (("decode", decode_step), ("prefill", prefill)):
        sel = ph == name
        if sel.any():
            step = fn(dep, b[sel], t[sel])
            seconds[sel] = np.asarray(step.step_time_s)
            bound[sel] = np.atleast_1d(step.bound)
    return seconds, bound.astype(str)


# ---- the whole run ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class ValidationRow:
    """One measured point beside its prediction: seconds measured (median of the rounds) and predicted, the
    predicted bound, and the relative error |predicted − measured| ÷ measured."""

    phase: str
    batch: int
    context: int  # decode: tokens attended to; 0 for a prefill
    prompt_tokens: int  # prefill: prompt length; 0 for a decode step
    regime: str
    measured_s: float
    predicted_s: float
    error: float
    repeats_s: tuple[float, ...]

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "repeats_s": list(self.repeats_s)}


@dataclass(frozen=True)
class ValidationReport:
    """What `kokuban validate` prints and writes: per-point rows, the summary and the setup."""

    rows: tuple[ValidationRow, ...]
    summary: dict[str, Any]
    setup: dict[str, Any]

    def as_dict(self) -> dict[str, Any]:
        return {"rows": [r.as_dict() for r in self.rows], "summary": self.summary, "setup": self.setup}


def default_dtype(device: str) -> str:
    """fp32 on a CPU (bf16 matmuls are emulated and ~100× slower there), bf16 on a GPU."""
    return "bf16" if device == "cuda" else "fp32"


def run_validation(
    model: str = "llama-3.2-1b", *, efficiency: Efficiency, device: str = "cpu", dtype: str | None = None,
    num_layers: int | None = 4, hidden_size: int | None = None, batches: Sequence[int] = (1, 2, 4, 8, 16, 32, 64),
    contexts: Sequence[int] = (128, 1024, 4096), prompts: Sequence[int] = (16, 64, 256), prefill_batch: int = 1,
    accelerator_entry: dict[str, Any] | None = None, warmup: int = 1,
    repeats: int = 5, max_kv_bytes: float | None = None, probe_seconds: float = 3.0, progress: Progress | None = None,
    seed: int = 0, linear: str = "auto",
) -> ValidationReport:
    """Probe (unless an accelerator entry is given), build, measure, predict; see the module docstring.

    `efficiency` has no default here: the fractions a validation predicts with are the request's policy
    (`usecases.validation.ValidateRequest`: the textbook ones), and the numbers are checked there too;
    faces call `run_validate`. Points whose KV cache would exceed `max_kv_bytes` (default: 25 % of the
    device's memory) are skipped and listed in `setup['skipped']`.
    """
    import json
    from pathlib import Path

    from kokuban.specs.catalog import DATA, load_model, model_catalog
    from kokuban.validation.accuracy import error_summary, relative_error
    from kokuban.validation.probe import probe, resolve_device

    device = resolve_device(device)
    dtype = dtype or default_dtype(device)
    if dtype not in TORCH_DTYPES:
        raise KokubanError(f"'{dtype}' is not supported by validate; allowed: {', '.join(TORCH_DTYPES)}", field="dtype",
                           value=dtype)
    if model in model_catalog():
        config = json.loads((DATA / "models" / f"{model}.json").read_text())
    else:
        if not model.endswith(".json"):
            load_model(model)  # raises the unknown-name error with suggestions
            raise KokubanError(f"validate needs a config.json model (catalog id or path), got '{model}'", field="model",
                               value=model)
        try:
            config = json.loads(Path(model).read_text())
        except (OSError, ValueError) as exc:
            raise KokubanError(f"cannot read config '{model}': {exc}", field="model", value=model) from None
    cfg, changes = scaled_config(config, num_layers=num_layers, hidden_size=hidden_size)
    spec = ModelSpec.from_config(cfg, name=f"{model} (scaled)" if changes else model, source=model)
    if accelerator_entry is None:
        accelerator_entry = probe(
            device, seconds=probe_seconds, dtypes=(dtype,) if dtype != "fp32" else ("fp32", "bf16"), progress=progress
        )
    acc = validation_accelerator(accelerator_entry, dtype)
    dep = deployment_for(spec, acc, dtype, efficiency)

    torch_model = TorchTransformer(cfg, device=device, dtype=dtype, seed=seed, linear=linear)
    if torch_model.num_parameters() != spec.params_total:
        raise KokubanError(f"internal: PyTorch model has {torch_model.num_parameters()} parameters, "
                           f"ModelSpec {spec.params_total}; the two readings of the config disagree")
    limit = max_kv_bytes if max_kv_bytes is not None else 0.25 * acc.memory_bytes
    points, skipped = [], []
    for p in grid(batches, contexts, prompts, prefill_batch):
        need = kv_cache_bytes(torch_model.shape, p.batch, p.tokens, dep.kv_bytes_per_element)
        (points if need <= limit else skipped).append(p)
    load_before = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    measured = measure(torch_model, points, warmup=warmup, repeats=repeats, progress=progress, seed=seed)
    load_after = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    predicted, bound = predict(dep, [m.point.phase for m in measured], [m.point.batch for m in measured],
                               [m.point.tokens for m in measured])
    rows = tuple(
        ValidationRow(
            phase=m.point.phase, batch=m.point.batch, context=m.point.tokens if m.point.phase == "decode" else 0,
            prompt_tokens=m.point.tokens if m.point.phase == "prefill" else 0, regime=str(reg),
            measured_s=m.median_s, predicted_s=float(pred), error=float(relative_error(pred, m.median_s)),
            repeats_s=tuple(m.times_s))
        for m, pred, reg in zip(measured, predicted, bound, strict=True))
    summary = error_summary([r.measured_s for r in rows], [r.predicted_s for r in rows],
                            [r.regime for r in rows], [r.phase for r in rows])
    setup = {
        "model": model, "scaled": changes, "config": cfg, "params_total": spec.params_total, "device": device,
        "dtype": dtype, "accelerator": accelerator_entry, "efficiency": dep.efficiency.as_dict(),
        "warmup": warmup, "repeats": repeats, "statistic": "median of interleaved rounds",
        "skipped": [asdict(p) for p in skipped], "max_kv_bytes": limit,
        "load_average_1min": {"before": load_before, "after": load_after},
        "torch": torch_model.torch.__version__, "linear_backend": torch_model.linear_backend,
        "threads": torch_model.torch.get_num_threads() if device == "cpu" else None,
    }
    return ValidationReport(rows=rows, summary=summary, setup=setup)


def read_probe_entry(path: str, entry_id: str | None = None) -> dict[str, Any]:
    """The raw accelerator entry `entry_id` (default: the first) from an accelerator file that `kokuban probe` wrote.

    Errors name the parameter at fault: `path` (unreadable, not TOML/JSON, no entries, a malformed entry)
    or `entry_id` (not in the file)."""
    from pathlib import Path

    from kokuban.specs.catalog import read_accelerator_file
    from kokuban.specs.files import read_json, read_toml

    p = Path(path)
    try:
        found = read_accelerator_file(p)  # every entry checked against the catalog schema, one line each
    except KokubanError as exc:
        raise KokubanError(exc.reason, field="path", value=path) from None
    data = read_json(p, "accelerator file") if p.suffix == ".json" else read_toml(p, "accelerator file")
    entries = data.get("accelerator", []) if isinstance(data, dict) else data
    wanted = entry_id or next(iter(found))
    entry = next((e for e in entries if e.get("id") == wanted), None)
    if entry is None:
        raise KokubanError(f"accelerator '{wanted}' is not in {p}; it holds {', '.join(found)}", field="entry_id",
                           value=wanted)
    return {"name": entry["id"]} | entry  # the schema's optional name: the id when not given


def deployment_from_setup(setup: dict[str, Any], efficiency: Efficiency) -> Deployment:
    """Rebuild the prediction's deployment from a saved report's setup (for `calibrate`)."""
    spec = ModelSpec.from_config(setup["config"], name=str(setup.get("model", "validated")))
    acc = validation_accelerator(setup["accelerator"], setup["dtype"])
    return deployment_for(spec, acc, setup["dtype"], efficiency)
