"""Accelerators and the achievable fractions of their peaks.

An `Accelerator` holds spec-sheet figures (dense peak FLOP/s per dtype, HBM bytes and bytes/s,
interconnect bytes/s per direction) with their sources. `Efficiency` holds the fractions of those
peaks that real kernels reach, and the fixed latencies; they are explicit, documented and
overridable, never hidden in a formula.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any

from kokuban.errors import KokubanError, require_positive
from kokuban.specs.dtypes import quant_format

if TYPE_CHECKING:
    from kokuban.specs.kernels import KernelCurves

#: A PCIe Gen5 x16 host link, per direction: 32 GT/s × 16 lanes × 128/130 encoding ≈ 63 GB/s, quoted as 64 GB/s
#: (PCI-SIG, PCI Express Base Specification 5.0, 2019). What KV offloaded to host memory crosses to come back.
PCIE5_X16_BYTES_PER_S = 64e9

#: The smallest achievable fraction kokuban takes: a millionth of a peak. No real kernel is that slow, and below
#: it a time (work / (peak · fraction)) can overflow to infinity for a subnormal fraction such as 1e-320.
FRACTION_MIN = 1e-6
#: The longest fixed per-step or per-collective time kokuban takes, in seconds (an hour): far above any engine's
#: overhead (milliseconds), and small enough that the times built from it stay finite.
FIXED_TIME_MAX_S = 3600.0


def _is_number(value: Any) -> bool:
    """A real int or float (a bool is not a number here), finite (an int of any size is)."""
    return not isinstance(value, bool) and (isinstance(value, int) or isinstance(value, float) and math.isfinite(value))


def kernel_constants(entry: dict[str, Any]) -> dict[str, float]:
    """The `kernel_*` keys of a catalog entry (less `kernel_note`) as `KernelCurves` field values, checked: a name
    that is not a numeric field of `KernelCurves` or a value it refuses is an error naming the key."""
    import difflib

    from kokuban.specs.kernels import KernelCurves

    given = {k[len("kernel_"):]: v for k, v in entry.items() if k.startswith("kernel_") and k != "kernel_note"}
    if not given:
        return {}
    allowed = [f.name for f in fields(KernelCurves) if f.type in ("float", float)]
    for name, value in given.items():
        if name not in allowed:
            close = difflib.get_close_matches(name, allowed, n=1, cutoff=0.5)
            hint = f" (did you mean kernel_{close[0]}?)" if close else ""
            raise KokubanError(f"accelerator '{entry.get('id', '?')}': 'kernel_{name}' is not a kernel constant{hint}; "
                               "allowed: " + ", ".join(f"kernel_{a}" for a in allowed), field=f"kernel_{name}",
                               value=value)
        if not _is_number(value):
            raise KokubanError(f"accelerator '{entry.get('id', '?')}': kernel_{name} must be a number, got {value!r}",
                               field=f"kernel_{name}", value=value)
    constants = {k: float(v) for k, v in given.items()}
    try:
        KernelCurves(**constants)  # its own checks: fractions in (0, 1], times ≥ 0
    except KokubanError as err:
        raise KokubanError(f"accelerator '{entry.get('id', '?')}': kernel_{err.field} {err.reason}",
                           field=f"kernel_{err.field}", value=err.value) from None
    return constants


@dataclass(frozen=True)
class Accelerator:
    """One accelerator (one GPU, one TPU chip). SI units throughout."""

    id: str
    name: str
    memory_bytes: float
    memory_bandwidth_bytes_per_s: float
    peak_flops: dict[str, float]  # dense, per dtype: "bf16", "fp16", "fp8", "int8", "fp4", "fp32"
    #: FLOP/s per dtype the vendor measured on its best-case GEMM (`maf_flops_*`: AMD's "max-achievable"); {} = none
    max_achievable_flops: dict[str, float] = field(default_factory=dict)
    #: The accelerator's own kernel-curve constants (`kernel_*` keys: `specs.kernels.KernelCurves` field names), fitted
    #: on its measured kernel tables (`kernel_note`: source); under the kernel profile they replace the curves'
    #: medians for this accelerator (`KernelCurves.for_accelerator`). {} = none (the medians)
    kernel_constants: dict[str, float] = field(default_factory=dict)
    interconnect_bytes_per_s: float = 0.0
    interconnect: str = ""
    vendor: str = ""
    gpus_per_node: int = 0  # accelerators one NVLink (scale-up) domain joins; 0 = not stated (never crossed)
    scaleout_bytes_per_s: float = 0.0  # per-accelerator scale-out NIC bandwidth, per direction (0 = not stated)
    scaleout_latency_s: float = 0.0  # latency a collective adds when it crosses the node (kernel profile only)
    price_per_hour_usd: float = 0.0
    #: streaming multiprocessors (NVIDIA SMs) and their rated boost clock, Hz (`sm_note`: source); 0 = not stated. What
    #: a kernel bound per SM runs at (llama.cpp's: `core.roofline.ggml_per_sm`)
    sm_count: int = 0
    boost_clock_hz: float = 0.0
    sources: tuple[str, ...] = ()
    retrieved: str = ""
    notes: str = ""
    extra: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def flops(self, dtype: str) -> float:
        """Dense peak FLOP/s in `dtype`; falls back to bf16 (then fp16) where there is no native unit."""
        for key in (dtype, "bf16", "fp16"):
            if self.peak_flops.get(key):
                return self.peak_flops[key]
        raise KokubanError(f"accelerator '{self.id}' lists no FLOP/s for {dtype} or bf16")

    def compute_dtype_for(self, weights_dtype: str) -> str:
        """The matrix-multiply dtype a serving engine uses for weights stored in `weights_dtype`.

        fp8/int8/fp4 weights run on native tensor cores when this accelerator has them (W8A8, W4A4);
        otherwise they are de-quantised and multiplied in bf16 (e.g. fp8 on A100, MXFP4 on H100).
        """
        wanted = quant_format(weights_dtype).compute
        return wanted if self.peak_flops.get(wanted) else ("bf16" if self.peak_flops.get("bf16") else "fp16")

    @classmethod
    def from_dict(cls, entry: dict[str, Any]) -> Accelerator:
        """Build from a catalog entry (accelerators.toml schema) or a user's file or flags."""
        try:
            peak = {
                k[len("flops_") :]: float(v)
                for k, v in entry.items()
                if k.startswith("flops_") and k != "flops_note" and v
            }
            acc = cls(
                id=str(entry["id"]),
                name=str(entry.get("name", entry["id"])),
                memory_bytes=float(entry["memory_bytes"]),
                memory_bandwidth_bytes_per_s=float(entry["memory_bandwidth_bytes_per_s"]),
                peak_flops=peak,
                max_achievable_flops={k[len("maf_flops_"):]: float(v) for k, v in entry.items()
                                      if k.startswith("maf_flops_") and v},
                interconnect_bytes_per_s=float(entry.get("interconnect_bytes_per_s", 0.0)),
                interconnect=str(entry.get("interconnect", "")),
                vendor=str(entry.get("vendor", "")),
                gpus_per_node=int(entry.get("gpus_per_node", 0)),
                scaleout_bytes_per_s=float(entry.get("scaleout_bytes_per_s", 0.0)),
                scaleout_latency_s=float(entry.get("scaleout_latency_s", 0.0)),
                price_per_hour_usd=float(entry.get("price_per_hour_usd", 0.0)),
                sm_count=int(entry.get("sm_count", 0)),
                boost_clock_hz=float(entry.get("boost_clock_hz", 0.0)),
                sources=tuple(entry.get("sources", ())),
                retrieved=str(entry.get("retrieved", "")),
                notes=str(entry.get("memory_note", "")),
                extra={k: v for k, v in entry.items()
                       if k in ("price_source", "flops_note", "maf_note", "kernel_note", "sm_note", "released",
                                "tdp_w")},
            )
        except KeyError as exc:
            raise KokubanError(
                f"accelerator entry '{entry.get('id', '?')}' is missing the field {exc.args[0]!r}"
            ) from None
        except (TypeError, ValueError) as exc:
            raise KokubanError(f"accelerator entry '{entry.get('id', '?')}' has a non-numeric figure: {exc}") from None
        acc = replace(acc, kernel_constants=kernel_constants(entry))
        require_positive(f"{acc.id}.memory_bytes", acc.memory_bytes)
        require_positive(f"{acc.id}.memory_bandwidth_bytes_per_s", acc.memory_bandwidth_bytes_per_s)
        for name in ("sm_count", "boost_clock_hz"):
            if not 0 <= getattr(acc, name) < float("inf"):
                raise KokubanError(f"accelerator '{acc.id}': {name} must be a finite number ≥ 0 (0 = not stated), "
                                   f"got {getattr(acc, name)!r}", field=name, value=getattr(acc, name))
        if not any(acc.peak_flops.get(k) for k in ("bf16", "fp16")):
            raise KokubanError(f"accelerator '{acc.id}' needs flops_bf16 or flops_fp16 (dense FLOP/s)")
        return acc


@dataclass(frozen=True)
class Efficiency:
    """Achievable fractions of peak and fixed latencies: what a step of the roofline model reaches.

    Two calibrated sets ship (`PROFILES`). The step model every command uses when no efficiency is asked for is
    `STEP_MODEL` (`Efficiency.shipped()` = `kernel_calibrated()`, also named "default" and "kernel"): the fractions
    of `KERNEL_PROFILE_FRACTIONS` with the kernel curves set (`specs.kernels.KernelCurves`). The field defaults below
    are the SCALAR set (`Efficiency()` = `Efficiency.scalar()`, the profile "scalar"): one fraction per resource,
    for arithmetic done by hand on a blackboard. `textbook()` holds round uncalibrated fractions, `ideal()` the
    hardware's own limits.

    The scalar set was fitted by `kokuban calibrate --source published` (log-error least squares of compute, memory,
    interconnect and step overhead from the textbook fractions) on seed 0's training two thirds of the 43 rows an
    earlier data/published_results.toml held. On seed 0's held-out third of the 88 rows a later version held (26
    rows) it gives median |error| 27.8 %, p90 91 %, against the textbook fractions' 27.4 %, p90 116 %
    (docs/history/validation-journal.md, "Calibration on published results").

    - compute: fraction of dense peak FLOP/s a GEMM reaches. Scalar set 0.74 (cuBLAS GEMMs reach ~70-80 % of H100
      peak; whole-model prefill shows 40-60 % MFU). With the kernel curves it is the bf16 large-M ceiling that the
      curves scale by dtype, token count and shape (`specs.kernels.gemm_fraction`); step-v8 0.69.
    - memory: fraction of HBM bandwidth a streaming weight read reaches (H100 SXM: ~2.6-3.0 of 3.35 TB/s). Scalar set
      0.84, step-v8 0.90; an accelerator's own weight stream ratio scales it (`weight_memory_fraction`).
    - kv_memory None (= memory): fraction of bandwidth the attention kernels reach reading the KV cache; the
      published rows do not pin it down (fitting it made the held-out error worse), so it follows `memory`; CPU
      attention in eager PyTorch reaches far less (a `validate` report fits it).
    - interconnect 0.27: fraction of per-direction link bandwidth the decode-size all-reduces reach. Small messages
      never reach bus bandwidth (nccl-tests reach ~80 % only for messages of hundreds of MB); few published rows span
      several GPUs, so this value is the least certain. With the kernel curves it prices only links the curves do
      not cover (`KernelCurves.covers`).
    - collective_latency_s 8e-6: fixed time per collective (NCCL LL protocol on NVLink: ~5-10 µs); not fitted. With
      the kernel curves, as `interconnect`.
    - step_overhead_s: fixed time per step outside the roofline (scheduling, sampling, launches, detokenisation) as
      the published engine measurements imply. Scalar set 2.7 ms, step-v8 3.8 ms; an engine profile of
      data/engines.toml replaces it in the simulator.
    - dequant_memory: fraction of the `memory` rate at which a dequantising kernel streams quantized weights
      (weight-only int4/int8/nf4 on any GPU; fp8 or fp4 where the accelerator has no such unit:
      `dtypes.dequantises`). Scalar set 0.6, an ASSUMPTION: the middle of the 0.5–0.7 of the bf16 rate such kernels
      reach (issue 13: they unpack, scale and convert each weight before the multiply). Step-v8 fits it (0.95): fused
      4-bit GEMV kernels (MLC LLM's, ExLlamaV2's) hide the unpacking under the weight stream at batch 1. PyTorch's
      generic weight-only matmuls (gpt-fast) keep the assumed 0.6 (`validation.accuracy.GENERIC_DEQUANT_ENGINES`).
    - loop_overhead_s None (= step_overhead_s): the fixed time per step of an engine that runs one request's decode
      loop with no serving scheduler, batcher or HTTP front (gpt-fast, MLC LLM, ExLlamaV2: the published rows apply
      it to those, `validation.accuracy.LOOP_ENGINES`). Step-v8 fits it (0.98 ms); to price such an engine, pass it
      as the step overhead.
    - kv_reread 0: the fraction of a decode-attention kernel's repeated loads of a KV head that reach HBM, when the
      engine's kernel loads each KV head once per query head instead of once per step (`KernelCurves.kv_per_query_head`:
      TensorRT-LLM before XQA, `core.bytes.decode_kv_read_factor`); the rest hit the L2 cache. 0 in the scalar set
      (fitted without the rule); step-v8 fits it (0.39).
    - engine_non_torch_bytes None: the memory per GPU an engine of the "free_fraction" rule (TensorRT-LLM) holds
      outside its KV pool when a published row is priced (`validation.accuracy.row_memory`). None: the engine
      profile's `non_torch_bytes` (data/engines.toml, with its source); a number replaces it there (how that value
      is fitted: a grid of reserves, each scoring the rows). The simulator sizes pools by the engine profile alone.
    - kernels None: the scalars above price every GEMM and collective. Set (`kernel_calibrated()`,
      `specs.kernels.KernelCurves`), the GEMM fraction depends on the dtype, the token count and the shape, and
      collectives on message size and link, fitted on measured kernel tables (the module docstring of
      `specs.kernels`).
    - overlap 1: the roofline — inside a kernel the shorter of compute and memory time hides entirely. Not fitted on
      the GPU rows: letting it float lands at ~0 (times that add), which contradicts the GPU kernel measurements the
      roofline rests on, on rows that cannot separate it from compute and memory; the CPU validation fits it
      (0.0–0.4 across splits: small-batch CPU GEMMs hide little).
    """

    compute: float = 0.74
    memory: float = 0.84
    interconnect: float = 0.27
    collective_latency_s: float = 8e-6
    step_overhead_s: float = 2.7e-3
    kv_memory: float | None = None
    overlap: float = 1.0
    dequant_memory: float = 0.6
    kv_reread: float = 0.0
    loop_overhead_s: float | None = None
    engine_non_torch_bytes: float | None = None
    kernels: KernelCurves | None = None

    @property
    def weight_memory_fraction(self) -> float:
        """Fraction of the memory bandwidth a weight read reaches: `memory` × the accelerator's own weight stream ratio
        (its kernel curves' `weight_memory_ratio`, the catalog's `kernel_weight_memory_ratio`: the MI300X's, fitted on
        AMD's vLLM tables, its source in data/accelerators.toml; 1 elsewhere and without curves)."""
        return self.memory * (1.0 if self.kernels is None else self.kernels.weight_memory_ratio)

    @property
    def kv_memory_fraction(self) -> float:
        """Fraction of memory bandwidth attention kernels reach reading the KV cache: `kv_memory`, or
        `memory` when unset (decode-attention kernels such as FlashDecoding/FlashInfer stream the cache
        at about the rate a weight read reaches; a machine whose attention kernels do not is calibrated)."""
        return self.memory if self.kv_memory is None else self.kv_memory

    def with_kernels(self, **changes: Any) -> Efficiency:
        """This efficiency with fields of its kernel curves changed (`KernelCurves`: `plain_nccl=True`,
        `tp_sync_loss=0`, …); the scalar set, which has none, unchanged."""
        return self if self.kernels is None or not changes else replace(self, kernels=replace(self.kernels, **changes))

    @property
    def loop_overhead(self) -> float:
        """Fixed seconds per step of a single-request decode loop (`loop_overhead_s`, or `step_overhead_s` when
        unset: an engine with a serving scheduler and one without cost the same unless a fit tells them apart)."""
        return self.step_overhead_s if self.loop_overhead_s is None else self.loop_overhead_s

    @classmethod
    def textbook(cls) -> Efficiency:
        """The uncalibrated fractions (compute 0.6, memory 0.8, interconnect 0.75, no step overhead): round
        numbers for arithmetic done by hand on a blackboard, and the starting point of calibration."""
        return cls(
            compute=0.6,
            memory=0.8,
            interconnect=0.75,
            collective_latency_s=8e-6,
            step_overhead_s=0.0,
            kv_memory=None,
            overlap=1.0,
            dequant_memory=0.6,
        )

    @classmethod
    def ideal(cls) -> Efficiency:
        """The hardware's own limits: every fraction 1, no fixed time per step or collective, no KV re-reads, weights
        dequantised at the full rate. A step built on it and read with `roofline.floor_time_s` is the least time any
        kernel schedule could take for the work kokuban counts (never a prediction)."""
        return cls(compute=1.0, memory=1.0, interconnect=1.0, collective_latency_s=0.0, step_overhead_s=0.0,
                   kv_memory=None, overlap=1.0, dequant_memory=1.0, kv_reread=0.0, loop_overhead_s=0.0)

    @classmethod
    def scalar(cls) -> Efficiency:
        """The scalar set (the field defaults: compute 0.74, memory 0.84, interconnect 0.27, 2.7 ms per step),
        the profile named "scalar": one fraction per resource, no kernel curves, for blackboard arithmetic."""
        return cls()

    @classmethod
    def kernel_calibrated(cls, fractions: dict[str, float] | None = None,
                          curves: dict[str, Any] | None = None) -> Efficiency:
        """The kernel profile: `kernels` set (`specs.kernels`: GEMM fraction by dtype, token count and shape,
        collectives by message size and link, groups that cross a node on the scale-out network), at the global
        fractions of `KERNEL_PROFILE_FRACTIONS` (their fit and source are there), or the `fractions` given.
        With neither argument it is the shipped step model `STEP_MODEL` (`shipped()`, the profiles "default",
        "kernel" and "step-v8"). On NVLink accelerators the curves replace `interconnect` and `collective_latency_s`;
        other links keep them (`KernelCurves.covers`). `curves`: `KernelCurves` fields other than its defaults (a
        term switched off, e.g. `{"tp_sync_loss": 0.0}`, to measure what it adds)."""
        from kokuban.specs.kernels import KernelCurves

        return cls(**(KERNEL_PROFILE_FRACTIONS if fractions is None else fractions),
                   kernels=KernelCurves(**(curves or {})))

    @classmethod
    def shipped(cls, curves: bool = True) -> Efficiency:
        """THE shipped step model, `STEP_MODEL`: what every estimate, simulation (every engine profile of
        data/engines.toml that names no other) and accuracy report uses when no efficiency is asked for. It is the
        kernel profile (`kernel_calibrated()`): on seed 0's held-out third of the published rows and over five splits
        it beats the scalar set (evidence/fractions/report.md). `curves=False`: its fractions
        without the curves (what `--help` quotes: the curves' module loads numpy)."""
        return cls.kernel_calibrated() if curves else cls(**KERNEL_PROFILE_FRACTIONS)

    def __post_init__(self) -> None:
        if self.kernels is not None and not isinstance(self.kernels, _kernel_curves_type()):
            raise KokubanError("must be a KernelCurves", field="kernels", value=self.kernels)
        if not (_is_number(self.kv_reread) and 0 <= self.kv_reread <= 1):
            raise KokubanError(f"must be in [0, 1], got {self.kv_reread!r}", field="kv_reread", value=self.kv_reread)
        for name in ("compute", "memory", "interconnect", "kv_memory", "dequant_memory"):
            value = getattr(self, name)
            if name == "kv_memory" and value is None:
                continue
            if not (_is_number(value) and FRACTION_MIN <= value <= 1):
                raise KokubanError(f"an achievable fraction must be in [{FRACTION_MIN:g}, 1], got {value!r}",
                                   field=name, value=value)
        if not (_is_number(self.overlap) and 0 <= self.overlap <= 1):
            raise KokubanError(f"must be in [0, 1], got {self.overlap!r}", field="overlap", value=self.overlap)
        reserve = self.engine_non_torch_bytes
        if reserve is not None and not (_is_number(reserve) and 0 <= reserve < float("inf")):
            raise KokubanError(f"must be a finite number ≥ 0 bytes, got {reserve!r}", field="engine_non_torch_bytes",
                               value=reserve)
        for name in ("collective_latency_s", "step_overhead_s", "loop_overhead_s"):
            value = getattr(self, name)
            if name == "loop_overhead_s" and value is None:
                continue
            if not (_is_number(value) and 0 <= value <= FIXED_TIME_MAX_S):
                raise KokubanError(f"must be seconds in [0, {FIXED_TIME_MAX_S:g}], got {value!r}", field=name,
                                   value=value)

    def as_dict(self) -> dict[str, Any]:
        """Every field as a number (an unset kv_memory reads as the memory fraction it follows), for JSON; the
        kernel curves' parameters as a table under `kernels` when they are set."""
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "kernels"}
        out["kv_memory"] = self.kv_memory_fraction
        out["loop_overhead_s"] = self.loop_overhead
        if self.kernels is not None:
            out["kernels"] = self.kernels.as_dict()
        return out

    @classmethod
    def from_file(cls, path: str) -> Efficiency:
        """An efficiency set saved as JSON or TOML: its fields at the top level, or under `after` (what
        `kokuban calibrate --json` prints: the fitted set) or `efficiency` (what estimate's JSON carries).
        A name of `PROFILES` (no file) is that profile: `default` (= `kernel` = `step-v8`, the shipped step model)
        or `scalar`; a name that is neither a profile nor a file is a one-line error listing the profiles. A file is
        a set of scalars unless it has a `kernels` table (the curves' parameters, `specs.kernels.KernelCurves`, which
        switches the curves on with those values): its unset fields keep the scalar defaults (`scalar()`), so a file
        without curves means the scalar set with its changes; an unknown field (of the set or of its `kernels`) is a
        one-line error listing the allowed ones."""
        from kokuban.specs.files import read_json, read_toml

        if str(path) in PROFILES:
            return PROFILES[str(path)]()
        try:
            read = read_toml if str(path).endswith(".toml") else read_json
            data = read(path, "efficiency file")
        except KokubanError as exc:
            named = "" if os.path.exists(path) else f"; a named profile is one of: {', '.join(PROFILES)}"
            raise KokubanError(exc.reason + named, field="efficiency_file", value=str(path)) from None
        if isinstance(data, dict):
            data = data.get("after", data.get("efficiency", data))
        if not isinstance(data, dict):
            raise KokubanError(f"efficiency file '{path}' must hold a table of efficiency fields",
                               field="efficiency_file", value=str(path))
        try:
            return cls().updated(**data)
        except KokubanError as exc:
            raise KokubanError(f"efficiency file '{path}': {exc}", field="efficiency_file", value=str(path)) from None

    def updated(self, **changes: float | None) -> Efficiency:
        """A copy with the given (non-None) fields replaced."""
        known = {f.name for f in fields(self)}
        bad = set(changes) - known
        if bad:
            raise KokubanError(f"unknown efficiency field(s) {sorted(bad)}; allowed: {sorted(known)}",
                               field=min(bad))
        curves = changes.get("kernels")
        if isinstance(curves, dict):
            kernel_curves = _kernel_curves_type()
            names = {f.name for f in fields(kernel_curves)}
            if set(curves) - names:
                raise KokubanError(f"unknown kernels field(s) {sorted(set(curves) - names)}; allowed: {sorted(names)}",
                                   field="kernels")
            changes = changes | {"kernels": kernel_curves(**curves)}
        return replace(self, **{k: v for k, v in changes.items() if v is not None})


def _kernel_curves_type() -> type:
    from kokuban.specs.kernels import KernelCurves

    return KernelCurves


#: The version of the shipped step model (`Efficiency.shipped()`): the roofline step with the kernel curves of
#: `specs.kernels` (GEMM fraction by dtype, token count and shape; collectives by message size and link; an
#: accelerator's own measured constants; llama.cpp's per-SM bounds; a tensor-parallel group's barrier wait) at the
#: fractions of `KERNEL_PROFILE_FRACTIONS`. A change of a formula or of a fitted constant that moves a priced step
#: makes a new version.
STEP_MODEL = "step-v8"

#: The global fractions of the shipped step model (`Efficiency.kernel_calibrated`), FITTED by evidence/fractions's
#: procedure (`validation.calibrate.profile_procedures`, "default": `calibrate.KERNEL_PARAMS` by Huber's loss on the
#: log error, `calibrate.PUBLISHED_LOSS`) on seed 0's training two thirds of the 196 rows of
#: data/published_results.toml (137 rows): compute 0.6864, memory 0.8959, step_overhead_s 3.806 ms, kv_reread 0.3868,
#: dequant_memory 0.9495, loop_overhead_s 0.9806 ms (evidence/fractions/choice-196/step-v4-seed0/report.json),
#: shipped rounded. On seed 0's 59 held-out rows: median |error| 9.2 %, p90 34.0 % at the fit. They were fitted with
#: the curves' GEMM shape term and per-accelerator constants; the terms the curves have beside those (PCIe
#: all-reduce fractions of the PCIe servers, the MI300X's weight stream ratio, llama.cpp's per-SM bounds, the barrier
#: wait) were each fitted on their own rows with these fractions held (`specs.kernels.KernelCurves`, the catalog's
#: `kernel_note`s, data/engines.toml). With all of them (step-v8) the same 59 rows read 11.2 %, p90 33.4 % (the
#: "before" of `kokuban calibrate --source published --efficiency-file kernel`).
KERNEL_PROFILE_FRACTIONS: dict[str, float] = {"compute": 0.69, "memory": 0.90, "step_overhead_s": 3.8e-3,
                                              "kv_reread": 0.39, "dequant_memory": 0.95, "loop_overhead_s": 0.98e-3}

#: Named efficiency profiles `--efficiency-file` (and an engine profile's `efficiency`) accept instead of a path:
#: "default", "kernel" and `STEP_MODEL` are the shipped step model; "scalar" the one-fraction-per-resource set for
#: blackboard arithmetic (`Efficiency.scalar()`).
PROFILES = {"default": Efficiency.shipped, "kernel": Efficiency.kernel_calibrated,
            STEP_MODEL: Efficiency.kernel_calibrated, "scalar": Efficiency.scalar}
