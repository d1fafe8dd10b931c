"""kokuban's error against published serving results (data/published_results.toml), and error statistics.

How each published row is predicted from the core (pure functions below, one rule each):

- Unknown lengths (0 in the data): input `UNKNOWN_INPUT_TOKENS`, output `UNKNOWN_OUTPUT_TOKENS`.
- Parallel layout (`replica_layout`): expert_parallel → one EP group over all `num_gpus`; otherwise
  tensor parallel of `tensor_parallel` GPUs, or when that is 0 (not stated) the smallest power of two
  whose TP group holds the weights and one request; `num_gpus ÷ tp` independent replicas. A row
  whose model does not fit on its `num_gpus` (a per-node figure of a larger deployment) is
  predicted on the smallest power-of-two count that fits one request, scaled by num_gpus ÷ that
  count (so `replicas` may be a fraction). The KV pool is sized by the row's engine's own memory rule
  (`row_memory`: TensorRT-LLM and vLLM as their profiles in data/engines.toml; others kokuban's).
- `tokens_per_s_per_user` = 1 ÷ decode step at the row's batch (1 if not stated) and the mean
  context of the generation, input + output/2. Prefill is left out (engines quote decode speed).
- `time_to_first_token_s` = the prefill step of the row's batch (1 if not stated) of input-token prompts
  (`roofline.prefill`, its step overhead included): the time from the request to its first token when
  nothing else runs, as a benchmark that asks for one output token measures it. Lower is better; the
  error is still |predicted − measured| ÷ measured.
- `output_tokens_per_s`: replicas × batch·output ÷ (prefill of the batch + the output−1 decode steps)
  (`estimate.generation`), batch = the stated one, or for batch 0 (engine-chosen) the largest that
  fits at input+output tokens (`memory.max_batch`), capped at `OFFLINE_BATCH_CAP`. Rows whose engine
  is a prefill/decode-disaggregated deployment are decode nodes: decode steps only. Rows of an engine that
  batches in flight (`is_inflight_batching`: TensorRT-LLM, vLLM, SGLang over a whole run) are the steady state
  of fused prefill+decode steps instead: replicas × batch ÷ `generation.inflight_step`.
- per_gpu rows: the prediction ÷ num_gpus.
- Two-batch overlap (`overlaps_communication`: the engine string names it): communication hidden under compute,
  max(roofline, comm) + overhead per step.
- Kernel profile: an engine that all-reduces with plain NCCL (`row_efficiency`: gpt-fast) pays NCCL's
  all-reduce, not the custom one-shot kernel.
- Regime: the bound of the phase that takes longest (prefill → its bound, usually 'compute';
  else the decode step at the mean context); for in-flight batching rows, the fused step's bound.
Errors are relative, |predicted − measured| ÷ measured, on the metric itself (tokens/s).

Beyond the bound regime, each row falls in any of the issue-13 workloads (`row_workloads`, overlapping):
decode batch 1 (a per-user speed at batch 1 per replica), throughput (an output_tokens_per_s row),
prefill (prefill outlasts decode when the two run apart, and every time-to-first-token row), MoE (the model has
routed experts), multi-GPU (the replica's TP/EP group has more than one GPU); and in one weights dtype and one
engine family (`engine_family`). Each group's median |error| carries a percentile-bootstrap interval
(`bootstrap_median_ci`: `BOOTSTRAP_RESAMPLES` resamples, level `BOOTSTRAP_LEVEL`, seed `BOOTSTRAP_SEED`).
"""

from __future__ import annotations

import tomllib
from collections.abc import Sequence
from dataclasses import MISSING, dataclass, field, fields, replace
from typing import Any

import numpy as np

from kokuban.errors import KokubanError
from kokuban.specs.hardware import Efficiency

UNKNOWN_INPUT_TOKENS = 512  # assumption where a source does not state its prompt length
UNKNOWN_OUTPUT_TOKENS = 256  # assumption where a source does not state its output length
OFFLINE_BATCH_CAP = 2048  # TensorRT-LLM's default max_batch_size; vLLM's max_num_seqs is lower (256–1024)
METRICS = ("output_tokens_per_s", "tokens_per_s_per_user", "time_to_first_token_s")
TIME_METRICS = ("time_to_first_token_s",)  # lower is faster: a signed error > 0 is a predicted time below the measured
PER_GPU_METRICS = ("output_tokens_per_s",)  # a deployment's rate may be quoted per GPU; a user's speed or a time not
BOOTSTRAP_RESAMPLES = 10_000  # resamples of each group's rows behind its interval of the median |error|
BOOTSTRAP_LEVEL = 0.95  # the interval's level: the 2.5th to 97.5th percentile of the resampled medians
BOOTSTRAP_SEED = 0  # numpy default_rng seed: the same rows always give the same interval
WORST_ROWS = 10  # how many of the largest |error| rows the report names, with their terms
WORKLOADS = ("decode_batch_1", "throughput", "prefill", "moe", "multi_gpu")


# ---- error statistics (shared by validate, accuracy, calibrate) -------------------------------------
def relative_error(predicted: Any, measured: Any) -> np.ndarray:
    """|predicted − measured| ÷ measured (a fraction; 0.1 = 10 %)."""
    p, m = np.asarray(predicted, dtype=np.float64), np.asarray(measured, dtype=np.float64)
    return np.abs(p - m) / m


def signed_error(predicted: Any, measured: Any, direction: Any = 1.0) -> np.ndarray:
    """direction · (predicted − measured) ÷ measured. direction +1 (the default): > 0 is too high a value; for the
    published metrics `speed_direction` (+1 for a rate, −1 for a time): > 0 is faster than measured."""
    p, m = np.asarray(predicted, dtype=np.float64), np.asarray(measured, dtype=np.float64)
    return np.asarray(direction, dtype=np.float64) * (p - m) / m


def _stats(err: np.ndarray, signed: np.ndarray) -> dict[str, Any]:
    if err.size == 0:
        return {"count": 0}
    return {"count": int(err.size), "median_abs_error": float(np.median(err)),
            "p90_abs_error": float(np.percentile(err, 90)), "max_abs_error": float(err.max()),
            "median_signed_error": float(np.median(signed))}


def error_summary(measured: Sequence[float], predicted: Sequence[float], regimes: Sequence[str] | None = None,
                  groups: Sequence[str] | None = None, direction: Any = 1.0) -> dict[str, Any]:
    """Median, 90th percentile and max of the relative error, overall and split by regime (and group).

    `median_signed_error` (`signed_error` with `direction`, one per row or one for all) > 0 means kokuban predicts
    too high a value on the median row, or with `speed_direction` per row, faster than measured.
    """
    m, p = np.asarray(measured, dtype=np.float64), np.asarray(predicted, dtype=np.float64)
    err, signed = relative_error(p, m), signed_error(p, m, direction)
    out = _stats(err, signed)
    for key, labels in (("by_regime", regimes), ("by_phase", groups)):
        if labels is not None:
            lab = np.asarray(labels)
            out[key] = {str(k): _stats(err[lab == k], signed[lab == k]) for k in sorted(set(lab.tolist()))}
    return out


def bootstrap_median_ci(errors: Sequence[float], resamples: int = BOOTSTRAP_RESAMPLES, level: float = BOOTSTRAP_LEVEL,
                        seed: int = BOOTSTRAP_SEED) -> tuple[float, float]:
    """Percentile-bootstrap interval of the median of `errors`.

    Draw `resamples` samples of n rows with replacement (`numpy.random.default_rng(seed)`), take each one's
    median, and return the (1 − level)/2 and (1 + level)/2 quantiles of those medians (linear
    interpolation). Assumes the rows are independent draws from what is being judged; with few rows the
    interval is wide and coarse (a median of n = 3 can only be one of its 3 values). Deterministic by seed.
    """
    err = np.asarray(errors, dtype=np.float64)
    if err.size == 0:
        raise KokubanError("needs at least one error to resample", field="errors", value=[])
    if not 0 < level < 1:
        raise KokubanError(f"must be between 0 and 1, got {level!r}", field="level", value=level)
    draws = np.random.default_rng(seed).integers(0, err.size, size=(int(resamples), err.size))
    medians = np.median(err[draws], axis=1)
    lo, hi = np.quantile(medians, [(1 - level) / 2, (1 + level) / 2])
    return float(lo), float(hi)


def bootstrap_settings() -> dict[str, Any]:
    """What every `median_abs_error_ci` in a summary means (the `bootstrap` key of the summary)."""
    return {"statistic": "median_abs_error", "method": "percentile", "resamples": BOOTSTRAP_RESAMPLES,
            "level": BOOTSTRAP_LEVEL, "seed": BOOTSTRAP_SEED}


def _with_ci(stats: dict[str, Any], err: np.ndarray) -> dict[str, Any]:
    if err.size:
        stats["median_abs_error_ci"] = list(bootstrap_median_ci(err))
    return stats


def add_intervals(summary: dict[str, Any], measured: Sequence[float], predicted: Sequence[float],
                  labels: dict[str, Sequence[str]], groups: dict[str, Sequence[Sequence[str]]] | None = None,
                  direction: Any = 1.0) -> dict[str, Any]:
    """`summary` (an `error_summary` of these rows, same `direction`) with a bootstrap interval of the median
    |error| added to the whole and to each group of `summary[key]` (rows labelled by `labels[key]`), plus new
    splits `groups[key]` (each row listing every group it belongs to; a row may be in several or none), and a
    `bootstrap` key."""
    m, p = np.asarray(measured, dtype=np.float64), np.asarray(predicted, dtype=np.float64)
    err, signed = relative_error(p, m), signed_error(p, m, direction)
    _with_ci(summary, err)
    for key, lab in labels.items():
        lab = np.asarray(lab)
        for name, stats in summary.get(key, {}).items():
            _with_ci(stats, err[lab == name])
    for key, member in (groups or {}).items():
        names = sorted({g for gs in member for g in gs})
        summary[key] = {}
        for name in names:
            mask = np.array([name in gs for gs in member], dtype=bool)
            summary[key][name] = _with_ci(_stats(err[mask], signed[mask]), err[mask])
    summary["bootstrap"] = bootstrap_settings()
    return summary


# ---- the dataset --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PublishedResult:
    """One row of data/published_results.toml (0 = unknown for lengths, batch, tensor_parallel)."""

    id: str
    model: str
    accelerator: str
    num_gpus: int
    tensor_parallel: int
    expert_parallel: bool
    weights_dtype: str
    kv_dtype: str
    engine: str
    metric: str
    value: float
    per_gpu: bool
    batch: int
    input_tokens: int
    output_tokens: int
    scenario: str
    source: str
    experts_dtype: str = ""  # the routed experts' dtype when the engine ran them in another than `weights_dtype`
    withdrawn: str = ""  # the later revision of the source that removed the row ("" while the source stands by it)


def load_published(path: str | None = None) -> list[PublishedResult]:
    """The bundled published results (or a file in the same schema)."""
    from kokuban.specs.catalog import DATA

    try:
        if path:
            with open(path, "rb") as fh:
                data = tomllib.load(fh)
        else:
            with (DATA / "published_results.toml").open("rb") as fh:
                data = tomllib.load(fh)
    except OSError as exc:
        raise KokubanError(f"cannot read published results '{path}': {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise KokubanError(f"published results file is not valid TOML: {exc}") from None
    keys = PublishedResult.__dataclass_fields__
    rows = [PublishedResult(**{k: r[k] for k in keys if k in r or keys[k].default is MISSING})
            for r in data.get("result", [])]
    for r in rows:
        if r.metric not in METRICS:
            raise KokubanError(f"published result '{r.id}' has metric '{r.metric}'; allowed: {', '.join(METRICS)}")
        if r.per_gpu and r.metric not in PER_GPU_METRICS:
            raise KokubanError(f"published result '{r.id}': per_gpu is for {', '.join(PER_GPU_METRICS)} only, "
                               f"not {r.metric}")
    return rows


# ---- the rules ------------------------------------------------------------------------------------------
def speed_direction(metric: str) -> int:
    """+1 for a rate (tokens/s: higher is faster), −1 for a time of `TIME_METRICS` (seconds: lower is faster), so
    that a signed error > 0 always means kokuban predicts faster than measured."""
    return -1 if metric in TIME_METRICS else 1


def assumed_lengths(row: PublishedResult) -> tuple[int, int]:
    """(input, output) tokens, unknowns (0) replaced by UNKNOWN_INPUT_TOKENS / UNKNOWN_OUTPUT_TOKENS."""
    return row.input_tokens or UNKNOWN_INPUT_TOKENS, row.output_tokens or UNKNOWN_OUTPUT_TOKENS


def _engine_name(engine: str) -> tuple[str, str]:
    """(family, version word) of an engine string: the text before the first '(' or ',' split at its last space when
    that word starts with a digit ('TensorRT-LLM 1.0 (PyTorch backend)' → ('TensorRT-LLM', '1.0')), else (text, '')."""
    name = engine.split("(")[0].split(",")[0].strip()
    head, _, last = name.rpartition(" ")
    return (head, last) if head and last[:1].isdigit() else (name, "")


def engine_family(engine: str) -> str:
    """The engine's name without version or details ('TensorRT-LLM 1.0 (PyTorch backend)' → 'TensorRT-LLM');
    '' stays ''."""
    return _engine_name(engine)[0]


def row_workloads(row: PublishedResult, batch_per_replica: int, group_gpus: int, prefill_longer: bool,
                  moe: bool) -> tuple[str, ...]:
    """The workloads of `WORKLOADS` a row belongs to (the rules in the module docstring)."""
    rules = {"decode_batch_1": row.metric == "tokens_per_s_per_user" and batch_per_replica == 1,
             "throughput": row.metric == "output_tokens_per_s", "prefill": prefill_longer, "moe": moe,
             "multi_gpu": group_gpus > 1}
    return tuple(w for w in WORKLOADS if rules[w])


def step_terms(step: Any, phase: str) -> dict[str, Any]:
    """The deciding step's time, bound and breakdown in seconds (`Step.as_dict()`), and its phase."""
    d = step.as_dict()
    return {"phase": phase, "step_time_s": d["step_time_s"], "bound": d["bound"], **d["breakdown"]}


def is_decode_only(row: PublishedResult) -> bool:
    """A decode node of a prefill/decode-disaggregated deployment (its engine string says so)."""
    return "PD disaggregation" in row.engine


TWO_BATCH_OVERLAP = "two-batch overlap"  # named in the engine string of a row that ran two micro-batches


def overlaps_communication(row: PublishedResult) -> bool:
    """The row's engine runs two micro-batches that hide each other's communication (SGLang's and DeepSeek's
    two-batch overlap, `TWO_BATCH_OVERLAP` named in the engine string): its deployment has `overlap_comm`, a step
    of max(roofline, comm) + overhead (`roofline.Step.step_time_s`)."""
    return TWO_BATCH_OVERLAP in row.engine.lower()


INFLIGHT_ENGINES = ("TensorRT-LLM", "vLLM", "SGLang")  # engine families that batch in flight, prefill fused into decode
# tools that run one static batch, prefill then decode: vLLM's latency benchmark, TensorRT-LLM's GptSession benchmark,
# and "static batch" said outright (NVIDIA's 2023 blogs: out_tps = output_seqlen·batch_size ÷ total_latency ÷ tp)
STATIC_BATCH_TOOLS = ("benchmark_latency", "gptSessionBenchmark", "static batch")


def is_inflight_batching(row: PublishedResult) -> bool:
    """A throughput row measured over a whole run of an engine that batches in flight: output tokens/s, an
    engine family of `INFLIGHT_ENGINES`, not a decode node (`is_decode_only`), not a static-batch tool
    (`STATIC_BATCH_TOOLS` named in the engine string)."""
    return (row.metric == "output_tokens_per_s" and engine_family(row.engine) in INFLIGHT_ENGINES
            and not is_decode_only(row) and not any(t in row.engine for t in STATIC_BATCH_TOOLS))


PLAIN_NCCL_ENGINES = ("gpt-fast",)  # all-reduce through torch.distributed (NCCL), no custom one-shot kernel
#: named in the engine string of a row whose engine's layers call plain NCCL all-reduce (LMDeploy 0.1's TurboMind:
#: `ftNcclAllReduceSum` in its attention and FFN layers; evidence/sources/lmdeploy01)
PLAIN_NCCL_MARK = "NCCL all-reduce"


#: engine family → the first version whose decode attention shares a KV head among its query heads. TensorRT-LLM
#: first released XQA in 0.7.0 (its 0.5/0.6.1 masked MHA launches a block per (sequence, query head), each loading its
#: KV head: `decoderMaskedMultiheadAttentionTemplate.h` at v0.6.1, `hi_kv = hi / qhead_per_kv`, grid {num_heads,
#: batch}); NVIDIA's blogs put the change at "2.4x" on Llama-70B (docs/source/blogs/XQA-kernel.md, Falcon180B-H200.md).
KV_SHARED_FROM = {"TensorRT-LLM": (0, 7)}
KV_UNSHARED_MARK = "without XQA"  # named in the engine string of a row NVIDIA ran with XQA switched off
#: engine family → (the first version assumed to share the KV head at every group size, the query heads per KV head
#: that earlier versions share it at). TensorRT-LLM 0.7–0.10 ships XQA only for 8 query heads per KV head (and 1, MHA,
#: where sharing changes nothing): the cubins at 0.9.0 (71d8d4d3, cubin/xqa_kernel_dt_*_nqpkv_{0,1,8}_*; nqpkv 0 is
#: Medusa's) and the JIT path of 2024-05-28 (f430a4b4, the same configurations); other group sizes (Mistral 7B,
#: Mixtral 8x7B: 4) decode with the masked MHA. From 0.11 every group size is assumed covered (not read; the set has no
#: row between 0.10 and 0.19). Fixed on 2026-12-04 from the source, before TensorRT-LLM 0.9's rows were predicted.
XQA_GROUPS_UNTIL = {"TensorRT-LLM": ((0, 11), (1, 8))}


def engine_version(engine: str) -> tuple[int, ...] | None:
    """The version the engine string names after its family, as numbers ('TensorRT-LLM 0.6.1 (…)' → (0, 6, 1);
    a pre-release letter is dropped: '0.7a' → (0, 7)); None when it names none."""
    parts = [p.rstrip("abcdefghijklmnopqrstuvwxyz") for p in _engine_name(engine)[1].split(".")]
    return tuple(int(p) for p in parts) if all(p.isdigit() for p in parts) else None


#: Engines that run one request's decode loop with no serving scheduler, batcher or HTTP front: their fixed time per
#: step is `Efficiency.loop_overhead_s`, not the serving engines' `step_overhead_s`.
#: llama.cpp is not one of them here: its published rows (2023-10, 2024-01) predate its CUDA graphs (ggml-org/llama.cpp
#: issue 6763 / PR 6766, 2024-04: each token's kernels were launched one by one from the host; graphs gave 10-15 %),
#: so it keeps the serving step (docs/history/validation-journal.md, "Quantized single-request engines").
LOOP_ENGINES = ("gpt-fast", "MLC LLM", "ExLlamaV2")
#: named in the engine string of a row decoded by a single-request loop replayed as a CUDA graph (llama.cpp since its
#: CUDA graphs, PR 6766, on Ampere and newer, one token at a time): it pays the loop's fixed step as `LOOP_ENGINES` do
#: (evidence/sources/lmdeploy01/inclusion_rule.md; its prompt processing, no graph, does not)
LOOP_MARK = "CUDA-graph decode loop"
#: named in the engine string of a llama.cpp row of one prompt processed at once (llama-bench's pp tests): with
#: `LOOP_MARK`, what says that a row's build has the ggml CUDA kernels `core.roofline.ggml_per_sm` prices (MMVQ with
#: four warps a block since PR 5394, 2024-02; MMQ on int8 tensor cores since PR 7676, 2024-06). The published set's
#: llama.cpp rows (2023-10, 2024-01) name neither and keep the plain roofline
#: (evidence/sources/llamacpp_sm/inclusion_rule.md)
PROMPT_MARK = "prompt processing"
#: Engines whose weight-only matmuls are PyTorch's generic ones (gpt-fast: `aten._weight_int4pack_mm` for int4, an
#: int8→bf16 cast before `F.linear` for int8), not a fused dequantising GEMV: they stream quantized weights at
#: `GENERIC_DEQUANT_MEMORY` of the plain rate, the assumed figure of the scalar set (issue 13's 0.5–0.7), while the
#: kernel profile's fitted `dequant_memory` prices the fused kernels of MLC LLM, ExLlamaV2 and the serving engines.
GENERIC_DEQUANT_ENGINES = ("gpt-fast",)
GENERIC_DEQUANT_MEMORY = Efficiency.scalar().dequant_memory  # the one assumed figure (0.6), stated in `Efficiency`


def shares_kv_head(model: str, family: str, version: tuple[int, ...] | None) -> bool:
    """Whether the engine's decode attention loads each KV head once for all its query heads (`KV_SHARED_FROM`,
    `XQA_GROUPS_UNTIL`); an engine without a stated version, or a family without a rule, is taken to share it."""
    if family not in KV_SHARED_FROM or version is None:
        return True
    if version < KV_SHARED_FROM[family]:
        return False
    if family not in XQA_GROUPS_UNTIL or version >= XQA_GROUPS_UNTIL[family][0]:
        return True
    from kokuban.specs.catalog import load_model

    m = load_model(model)
    return m.attention != "gqa" or m.num_heads // m.num_kv_heads in XQA_GROUPS_UNTIL[family][1]


def row_efficiency(row: PublishedResult, efficiency: Efficiency) -> Efficiency:
    """`efficiency` as the row's engine runs it, under the kernel profile: an engine of `PLAIN_NCCL_ENGINES`
    all-reduces with NCCL (`KernelCurves.plain_nccl`); a version before `KV_SHARED_FROM` loads a KV head once per
    query head in decode (`KernelCurves.kv_per_query_head`), as do one whose XQA lacks the model's group size
    (`shares_kv_head`) and one that says it ran `KV_UNSHARED_MARK`; one that says `PLAIN_NCCL_MARK` all-reduces as
    `PLAIN_NCCL_ENGINES` do; an engine of `LOOP_ENGINES`, or one that says `LOOP_MARK`, pays
    `Efficiency.loop_overhead` per step; one of `GENERIC_DEQUANT_ENGINES` streams
    quantized weights at `GENERIC_DEQUANT_MEMORY`; a llama.cpp row that names neither `LOOP_MARK` nor `PROMPT_MARK`
    (a build before the kernels `core.roofline.ggml_per_sm` prices) has no per-SM bound; otherwise unchanged."""
    if efficiency.kernels is None:
        return efficiency
    family, version = engine_family(row.engine), engine_version(row.engine)
    changes = {"plain_nccl": family in PLAIN_NCCL_ENGINES or PLAIN_NCCL_MARK in row.engine,
               "kv_per_query_head": KV_UNSHARED_MARK in row.engine or not shares_kv_head(row.model, family, version)}
    changes = {k: v for k, v in changes.items() if v}
    if family == "llama.cpp" and not any(mark in row.engine for mark in (LOOP_MARK, PROMPT_MARK)):
        changes |= {"ggml_sm_stream_bytes_per_s": 0.0, "ggml_sm_stream_bytes_per_cycle": 0.0,
                    "ggml_mmq_ops_per_cycle": 0.0}
    loop = family in LOOP_ENGINES or LOOP_MARK in row.engine
    scalars = ({"step_overhead_s": efficiency.loop_overhead} if loop else {}) | (
        {"dequant_memory": GENERIC_DEQUANT_MEMORY} if family in GENERIC_DEQUANT_ENGINES else {})
    efficiency = efficiency.with_kernels(**changes)
    return replace(efficiency, **scalars) if scalars else efficiency


# engine family → its data/engines.toml profile. SGLang's one row is a tuned PD-disaggregated decode node whose memory
# settings its source does not give; the profile's default fraction would be a guess about it, so it keeps kokuban's.
ENGINE_PROFILES = {"TensorRT-LLM": "trtllm", "vLLM": "vllm-v1"}


def row_memory(row: PublishedResult, memory_bytes: float, gpus: int,
               efficiency: Efficiency | None = None) -> dict[str, Any]:
    """How the row's engine sizes its KV pool, as `Deployment.make` keywords: for an engine family of
    `ENGINE_PROFILES` its profile's memory rule and default fraction (`sim.profiles.EngineProfile`: TensorRT-LLM
    0.9 of the memory free after weights, activations and 3.0e9 bytes, vLLM 0.9 of HBM less the profiled peak and
    non-torch bytes); for another engine none (kokuban's default, 0.9 of HBM less weights and activations). An
    `efficiency` that sets `engine_non_torch_bytes` replaces TensorRT-LLM's bytes outside the pool (how that value is
    fitted)."""
    name = ENGINE_PROFILES.get(engine_family(row.engine))
    if name is None:
        return {}
    from kokuban.sim.profiles import load_profile

    prof = load_profile(name)
    rule = prof.memory_rule
    reserve = efficiency.engine_non_torch_bytes if efficiency is not None else None
    if rule is not None and rule.kind == "free_fraction" and reserve is not None:
        rule = replace(rule, non_torch_bytes=reserve)
    return {"memory_rule": rule, "memory_utilization": prof.utilization(memory_bytes, None, gpus)}


def replica_layout(row: PublishedResult, efficiency: Efficiency | None = None):
    """(Deployment of one replica, number of replicas) for the row (see the module docstring)."""
    from kokuban.core.memory import GPU_COUNTS, max_batch
    from kokuban.specs.catalog import load_accelerator, load_model
    from kokuban.specs.deployment import Deployment

    model, acc = load_model(row.model), load_accelerator(row.accelerator)

    def make(n: int, layout: str) -> Deployment:
        return Deployment.make(model, acc, n, layout=layout, weights_dtype=row.weights_dtype, kv_dtype=row.kv_dtype,
                               experts_dtype=row.experts_dtype or None, efficiency=efficiency,
                               overlap_comm=overlaps_communication(row),
                               **row_memory(row, acc.memory_bytes, n, efficiency))

    inp, out = assumed_lengths(row)
    if row.expert_parallel:
        n = next(
            (
                k
                for k in (row.num_gpus, *GPU_COUNTS)
                if k >= row.num_gpus and int(max_batch(make(k, "ep"), inp + out)) >= 1
            ),
            None,
        )
        if n is None:
            raise KokubanError(
                f"published result '{row.id}': {row.model} fits on no EP group up to {GPU_COUNTS[-1]} GPUs"
            )
        return make(n, "ep"), row.num_gpus / n
    tp = row.tensor_parallel
    if not tp:
        tp = next((n for n in (1, 2, 4, 8, 16) if n <= row.num_gpus and row.num_gpus % n == 0
                   and int(max_batch(make(n, "tp"), inp + out)) >= 1), row.num_gpus)
    if row.num_gpus % tp:
        raise KokubanError(f"published result '{row.id}': {row.num_gpus} GPUs is not a multiple of TP {tp}")
    return make(tp, "tp"), row.num_gpus // tp


def offline_batch(dep: Any, row: PublishedResult) -> int:
    """The stated batch, else the largest that fits at input+output tokens, capped at OFFLINE_BATCH_CAP.

    A stated batch larger than the replica holds is split evenly across replicas upstream: see
    `predict_row` (batch per replica = stated ÷ replicas).
    """
    from kokuban.core.memory import max_batch

    inp, out = assumed_lengths(row)
    fit = int(max_batch(dep, inp + out))
    if fit < 1:
        raise KokubanError(
            f"published result '{row.id}': {row.model} does not fit on {dep.num_gpus}× {dep.accelerator.id}"
        )
    return min(fit, OFFLINE_BATCH_CAP)


@dataclass(frozen=True)
class Prediction:
    """kokuban's value for one published row and how it was obtained."""

    id: str
    metric: str
    measured: float
    predicted: float
    error: float
    regime: str
    batch_per_replica: int
    replicas: float
    tp_or_ep: str
    input_tokens: int
    output_tokens: int
    lengths_assumed: bool
    signed_error: float = 0.0  # ±(predicted − measured) ÷ measured (`speed_direction`): > 0 predicts too fast
    engine: str = ""  # the row's engine, as its source names it
    weights_dtype: str = ""
    workloads: tuple[str, ...] = ()  # `row_workloads`
    floor: float | None = None  # `floor_row`: the fastest the metric could be for the work counted (the report sets it)
    withdrawn: str = ""  # the row's `PublishedResult.withdrawn`
    phase: str = field(default="decode", repr=False)  # the step that decides: "decode", "prefill" or "inflight"
    step: Any = field(default=None, repr=False, compare=False)  # its roofline.Step or InflightStep (JSON `terms`)

    @property
    def floor_ratio(self) -> float | None:
        """How many times its floor's speed the measurement runs: measured ÷ floor for a rate, floor ÷ measured for a
        time (`speed_direction`); > 1 is beyond the floor. None without a floor."""
        if self.floor is None:
            return None
        return (self.measured / self.floor) ** speed_direction(self.metric)

    @property
    def beyond_floor(self) -> bool:
        """Measured faster than `floor`: a higher rate, or a shorter time, than the hardware allows for the work
        kokuban counts (`floor_ratio` > 1)."""
        return self.floor_ratio is not None and self.floor_ratio > 1.0

    @property
    def terms(self) -> dict[str, Any] | None:
        """`step_terms` of the step that decides the prediction (computed when asked: calibration predicts
        every row thousands of times and never reads them)."""
        return None if self.step is None else step_terms(self.step, self.phase)

    def as_dict(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in ("phase", "step")}
        return out | {"beyond_floor": self.beyond_floor, "terms": self.terms}


def predict_row(row: PublishedResult, efficiency: Efficiency | None = None) -> Prediction:
    """Predict the row's metric (rules in the module docstring)."""
    from kokuban.core.generation import generation, inflight_step
    from kokuban.core.roofline import decode_step, prefill

    dep, replicas = replica_layout(row, row_efficiency(row, efficiency or Efficiency.shipped()))
    inp, out = assumed_lengths(row)
    mid_context = inp + out / 2
    prefill_longer, phase = False, "decode"
    unstated = offline_batch(dep, row) if row.metric == "output_tokens_per_s" else 1  # batch 0: engine's, or one
    batch = max(int(row.batch // replicas), 1) if row.batch else unstated
    if row.metric == "tokens_per_s_per_user":
        step = decode_step(dep, batch, mid_context)
        value, regime = 1.0 / float(step.step_time_s), str(step.bound)
    elif row.metric == "time_to_first_token_s":
        step, phase, prefill_longer = prefill(dep, batch, inp), "prefill", True
        value, regime = float(step.step_time_s), str(step.bound)
    else:
        step = decode_step(dep, batch, mid_context)
        if is_decode_only(row):
            value, regime = replicas * batch / float(step.step_time_s), str(step.bound)
        else:
            gen = generation(dep, batch, inp, out)
            prefill_longer = gen.ttft_s > gen.decode_time_s  # the workload's label: prefill outlasts decode when apart
            if is_inflight_batching(row):
                step = inflight_step(dep, batch, inp, out)
                value, phase = replicas * batch / float(step.step_time_s), "inflight"
            else:
                value = replicas * gen.output_tokens_per_s
                step = prefill(dep, batch, inp) if prefill_longer else step  # the phase that takes longest decides
                phase = "prefill" if prefill_longer else "decode"
            regime = str(step.bound)
    if row.per_gpu:
        value /= row.num_gpus
    return Prediction(
        id=row.id,
        metric=row.metric,
        measured=row.value,
        predicted=value,
        error=float(relative_error(value, row.value)),
        regime=regime,
        batch_per_replica=int(batch),
        replicas=replicas,
        tp_or_ep=f"{dep.layout}{dep.num_gpus}",
        input_tokens=inp,
        output_tokens=out,
        lengths_assumed=not (row.input_tokens and (row.output_tokens or row.metric in TIME_METRICS)),
        signed_error=float(signed_error(value, row.value, speed_direction(row.metric))), engine=row.engine,
        weights_dtype=row.weights_dtype,
        workloads=row_workloads(row, int(batch), dep.num_gpus, prefill_longer, dep.model.num_experts > 0),
        withdrawn=row.withdrawn, phase=phase, step=step,
    )


def floor_row(row: PublishedResult) -> float | None:
    """The fastest value the row's metric could take on its hardware for the work kokuban counts (the highest rate, or
    the shortest time), or None where the batch is the engine's choice (a throughput of unstated batch, in-flight
    batching). A per-user speed or a first token of unstated batch is bounded at batch 1, the fastest.

    Each step at `roofline.floor_time_s` of the row's deployment at `Efficiency.ideal()`, the output's decode steps
    at their contexts input + 0 … input + output − 1: a decode speed output ÷ Σ decode floors; a first token the
    floor of the prefill; a static batch's throughput replicas · B · output ÷ (prefill floor + Σ decode floors).
    A measurement beyond it (`Prediction.beyond_floor`) says that the row's mapping or an assumption behind the
    counts (its dtype, GPU count, experts touched under uniform routing) is not what ran."""
    from kokuban.core.roofline import decode_step, floor_time_s, prefill

    if (row.metric == "output_tokens_per_s" and not row.batch) or is_inflight_batching(row):
        return None
    dep, replicas = replica_layout(row, Efficiency.ideal())
    inp, out = assumed_lengths(row)
    batch = max(int(row.batch // replicas), 1) if row.batch else 1
    if row.metric == "time_to_first_token_s":
        return float(floor_time_s(prefill(dep, batch, inp)))
    decode_s = float(np.sum(floor_time_s(decode_step(dep, batch, inp + np.arange(out)))))
    if row.metric == "tokens_per_s_per_user":
        return out / decode_s
    if is_decode_only(row):
        rate = replicas * batch * out / decode_s
    else:
        rate = replicas * batch * out / (float(floor_time_s(prefill(dep, batch, inp))) + decode_s)
    return rate / row.num_gpus if row.per_gpu else rate


def prediction_groups(preds: Sequence[Prediction]) -> dict[str, list[tuple[str, ...]]]:
    """The splits beyond the bound regime, per row its groups: workloads, the value type of its weights
    (`QuantFormat.family`: int4-g32 and int4-g32-zp16 are "int4", nvfp4 and MXFP4 "fp4"), engine family (rows
    whose engine is not recorded are in no engine group)."""
    from kokuban.specs.dtypes import quant_format

    return {"by_workload": [p.workloads for p in preds],
            "by_weights": [(quant_format(p.weights_dtype).family,) for p in preds],
            "by_engine": [(engine_family(p.engine),) if p.engine else () for p in preds]}


def prediction_summary(preds: Sequence[Prediction]) -> dict[str, Any]:
    """`error_summary` of the predictions by regime and metric, each signed error by `speed_direction`, with the
    bootstrap intervals and the splits of `prediction_groups` (`add_intervals`)."""
    measured, predicted = [p.measured for p in preds], [p.predicted for p in preds]
    regimes, metrics = [p.regime for p in preds], [p.metric for p in preds]
    direction = [speed_direction(m) for m in metrics]
    summary = error_summary(measured, predicted, regimes, metrics, direction)
    summary["by_metric"] = summary.pop("by_phase")
    summary = add_intervals(summary, measured, predicted, {"by_regime": regimes, "by_metric": metrics},
                            prediction_groups(preds), direction)
    standing = [p for p in preds if not p.withdrawn]
    if 0 < len(standing) < len(preds):  # beside the headline, never instead of it
        summary["without_withdrawn"] = add_intervals(
            error_summary([p.measured for p in standing], [p.predicted for p in standing],
                          direction=[speed_direction(p.metric) for p in standing]),
            [p.measured for p in standing], [p.predicted for p in standing], {},
            direction=[speed_direction(p.metric) for p in standing])
    return summary


@dataclass(frozen=True)
class Accuracy:
    """Every published row predicted, the error summary (overall, by regime, by metric) and the fractions used."""

    predictions: tuple[Prediction, ...]
    summary: dict[str, Any]
    efficiency: Efficiency
    source: str = "data/published_results.toml"  # the rows judged: the bundled set or a user's file

    @property
    def worst(self) -> tuple[Prediction, ...]:
        """The `WORST_ROWS` rows of largest |error|, largest first (ties by id)."""
        return tuple(sorted(self.predictions, key=lambda p: (-p.error, p.id))[:WORST_ROWS])

    def as_dict(self) -> dict[str, Any]:
        return {"rows": [p.as_dict() for p in self.predictions], "summary": self.summary,
                "efficiency": self.efficiency.as_dict(), "worst": [p.as_dict() for p in self.worst],
                "beyond_floor": [p.id for p in self.predictions if p.beyond_floor], "source": self.source}


def accuracy(efficiency: Efficiency | None = None, rows: Sequence[PublishedResult] | None = None,
             source: str | None = None) -> Accuracy:
    """Every published row (or `rows`, read from `source`) predicted at `efficiency` (default: the shipped
    step model `Efficiency.shipped()`, what every estimate uses), and the error summary (overall, by regime, by metric;
    by workload, weights dtype and engine family; each median |error| with its bootstrap interval)."""
    efficiency = efficiency or Efficiency.shipped()
    rows = load_published() if rows is None else rows
    preds = tuple(replace(predict_row(r, efficiency), floor=floor_row(r)) for r in rows)
    return Accuracy(predictions=preds, summary=prediction_summary(preds), efficiency=efficiency,
                    source=source or "data/published_results.toml")
