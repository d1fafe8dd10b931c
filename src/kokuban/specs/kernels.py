"""Kernel curves: achievable GEMM throughput by dtype and token count, collectives by message size and link.

The kernel curves are what the shipped step model (`specs.hardware.STEP_MODEL`, `Efficiency.kernel_calibrated()`)
puts in place of three scalars of the scalar profile (`Efficiency.scalar()`): curves with few parameters and a
stated form, each a small pure function below:

    GEMM fraction     e(dtype, M) = compute · r_dtype · a · s · M ÷ (M + M_half), or compute · r_dtype · a · s at
                      M ≤ M_gemv (`gemm_fraction`);  s = the shape factor of the GEMMs one GPU runs, their N and K
                      after the layout's split: N/(N + N_half)·K/(K + K_half) each, FLOP-weighted
                      (`gemm_shape_factor`, `layer_shape_factor`, `Deployment.gemm_shapes`)
    all-reduce        t = min(α₁ + (N−1)·S ÷ (f·B),  α₂ + 2(N−1)/N·S ÷ (f·B))  one-shot | two-shot (`allreduce_time_s`)
    all-to-all        t = α + [on-node bytes ÷ (f·B)] + [off-node bytes ÷ (f_net·B_net)]          (`alltoall_time_s`)
    NCCL all-reduce   t = α₀ + α₁·(N−1) + 2(N−1)/N·S ÷ (f·B)   for an engine without a custom kernel (`plain_nccl`)
    MoE layer extra   t = L_moe·(α_moe + β_moe·P)   beside the expert GEMMs, added to the step (`moe_dispatch_time_s`)
    PCIe all-reduce   t = α_p·(N−1) + 2(N−1)/N·S ÷ (f_p·B) + c_p·√S          (below; `pcie_allreduce_time_s`)
    TP barrier wait   step = body·(1 + ℓ) + overhead, a tensor-parallel group on NVLink   (`core.roofline.tp_sync_loss`)
    llama.cpp (GGUF)  MMVQ stream ≤ n_SM·(b_SM + c_SM·f_boost), MMQ FLOP/s = n_SM·f_boost·r  (`roofline.ggml_per_sm`)

a is the accelerator's attainable factor (`gemm_attainable_factor`: 1 unless its vendor measured its GEMMs),
M is the token count of the GEMM (a decode batch, a prefill chunk, or the tokens one routed expert receives),
M_gemv the largest M an engine multiplies by a dense weight with a matrix-vector kernel instead of a tiled GEMM
(`GEMV_MAX_TOKENS`: its source is there),
S a message in bytes, B the accelerator's per-direction NVLink bandwidth. A group larger than the accelerators
of one node (`Accelerator.gpus_per_node`) crosses the scale-out network: its all-reduce runs two-shot (ring) at
the scale-out bandwidth B_net with the network's latency added, and its all-to-all sends the off-node share of
its bytes over B_net (`collective_link`). The scalar profile keeps the flat scalars (compute 0.74 for every
dtype, 8 µs + 27 % of the link for every collective), for blackboard arithmetic.

CALIBRATION DATA, with attribution: aiconfigurator-core 0.12.0 (PyPI; NVIDIA; licence Apache-2.0, stated in each
table's collection_meta.yaml), files aiconfigurator_core/systems/data/<gpu>/gemm/trtllm/1.3.0rc20/gemm_perf.parquet,
.../comm/trtllm/1.3.0rc20/custom_allreduce_perf.parquet and .../comm/nccl/2.29.2/nccl_perf.parquet for h100_sxm,
h200_sxm and b200_sxm (downloaded and read 2026-12-03). `evidence/kernels/fit.py` refits every constant below
from those files; what it printed:

    GEMM t = t₀ + max(2MNK ÷ (peak·e·M/(M+M_half)·N/(N+N_half)·K/(K+K_half)), bytes ÷ (HBM·μ)), N, K ≥ 256,
    log-least-squares (rms log error bf16 0.12–0.17, fp8 0.07, against 0.12–0.17 and 0.21–0.22 for the same form
    without the N, K terms, which fp8 needs: its fraction halves at N ≈ 1,600)
      h100-sxm bf16 e 0.832 M_half 111 N_half 44 K_half 128 | fp8 e 0.767 (0.92× bf16) M_half 95 N_half 1581 K_half 192
      h200     bf16 e 0.829 M_half 82 N_half 45 K_half 92   | fp8 e 0.779 (0.94× bf16) M_half 77 N_half 1416 K_half 215
      b200     bf16 e 0.800 M_half 241 N_half 227 K_half 57 | fp8 e 0.731 (0.91× bf16) M_half 173 N_half 1899 K_half 224
      b200 nvfp4: the shape form does not fit it (μ 0.44, rms 0.22); shape-free, N, K ≥ 1024: e 0.380 (0.47× bf16's
      shape-aware e) M_half 21: fp4 keeps no shape term (`shape_halves`)
      the form without the N, K terms (N, K ≥ 1024): bf16 e 0.797 / 0.802 / 0.708, M_half 97 / 71 / 147; fp8 e 0.548 /
      0.569 / 0.518 (0.71× bf16), M_half 23 / 19 / 102 (h100-sxm / h200 / b200; `TABLE_GEMM_FRACTION_SHAPE_FREE`)
    custom all-reduce (TensorRT-LLM), N = 2, 4, 8
      h100-sxm one-shot 3.0 µs, two-shot 25.7 µs, f 0.72 | h200 3.0, 20.7, 0.73 | b200 5.0, 29.0, 0.63
    NCCL all-to-all, N = 2, 4, 8: h100-sxm 9.8 µs, f 0.57 | h200 9.3 µs, 0.58 | b200 12.7 µs, 0.44
    NCCL all-reduce, N = 2, 4, 8: h100-sxm 5.7 µs + 1.66 µs per peer, f 0.65 | h200 5.6 + 1.77, 0.66
      | b200 8.8 + 2.61, 0.55   (8 GPUs: ~18 µs for a small message, where the custom one-shot kernel takes 3)
    MoE layer (moe/trtllm/1.3.0rc20/moe_perf.parquet, cutlass kernel, balanced routing, 11,178 fp8 and 12,852 bf16
    rows per GPU), what kokuban's expert GEMMs at the constants below (the shape term included) leave out: α per MoE
    layer, β per routed pair
      h100-sxm fp8 34.9 µs, 3.0 ns | bf16 37.6, 16.3 | h200 fp8 33.6, 0.0 | bf16 39.6, 11.3
      | b200 fp8 34.0, 6.8 | bf16 34.3, 11.6   | b200 nvfp4 49.7 µs, 19.9 ns (the only fp4 table: not in the medians,
      used as it is for an fp4 compute dtype, `KernelCurves.moe_constants`). Without such terms kokuban's MoE layer
      was 2.3–5.3× faster than the tables' median row (measured with the GEMM form without its N, K terms).

The constants are the medians across the three GPUs (rounded; M_half the median of the six bf16 and fp8 fits, 103);
int8 (SmoothQuant W8A8) has no Hopper table and is ASSUMED to follow fp8. The GEMM's absolute bf16 fraction is not
taken from the tables: `Efficiency.compute` stays the whole-model fraction fitted on published serving rows, and the
tables give the ratios and the shape. A GPU with its own tables in the package (the A100) carries its own constants in
the catalog (`Accelerator.kernel_constants`, `KernelCurves.for_accelerator`; evidence/kernels/fit.py `per_gpu`).
The tables are NVIDIA's; another vendor's GEMM library reaches a different fraction of its own peak. Where the
catalog lists a vendor's measured best-case GEMM (`maf_flops_*`: AMD's "max-achievable FLOPs", hipBLASLt on
MI300X bf16 708 of 1307.4 TFLOP/s = 0.542, fp8 1273 of 2614.9 = 0.487), the curves' ceiling for that dtype is scaled
by a = (MAF ÷ peak) ÷ the tables' own fraction of the same dtype (bf16 0.829, fp8 0.767, the medians above; fp16
as bf16) at the measurement's own shape (`MAF_SHAPE`: the shape factor of N 4864 or 3648, K 32896): MI300X bf16
0.542 ÷ (0.829 · 0.988) = 0.66, fp8 0.487 ÷ (0.767 · 0.693) = 0.92. Both are best-case shapes
measured by the vendors' own tools, so a compares like with like; the serving derate (`Efficiency.compute`) is
kept for both vendors (an ASSUMPTION: no table measures hipBLASLt at serving shapes).
PCIe all-reduce (NCCL's ring; no engine runs a custom all-reduce over PCIe):
    t = α_p·(N−1) + 2(N−1)/N·S ÷ (f_p·B) + c_p·√S                                      (`pcie_allreduce_time_s`)
B the card's per-direction PCIe bandwidth; the √S term is a chunked ring's pipeline fill (the optimal pipelined time
(√(α·k) + √(S·β))² has a cross term 2√(α·k·β·S)). No table of the package measures PCIe. CALIBRATION DATA: a
published nccl-tests `all_reduce_perf` run on 4 × RTX 4090 (Ada, PCIe Gen4 x16, P2P enabled, ~50 GB/s bidirectional
among the four), quoted in evidence/collectives/nccl_allreduce_4x_rtx4090_gen4_p2p.txt (a GitHub README titled
"pptest_driver"; its repository is not named where it was found): 1 KB in 18.46 µs … 1 GB in 63,624 µs (bus
bandwidth 25.31 GB/s). `evidence/collectives/pcie_allreduce.py` fits the three constants on its 21 sizes (least
squares on the relative error): α_p 5.17 µs per peer, f_p 0.852, c_p 39.1 ns/√B, worst |error| 20.6 % (without the √S
term, the run's own latency and bandwidth plateau, 18.46 µs + S at 25.31 GB/s of bus bandwidth, fall up to 46 % short
between 128 KB and 2 MB, where NCCL changes protocol). Corroborated at
large sizes by https://github.com/tinygrad/open-gpu-kernel-modules/issues/36 (4 × 4090 with P2P: 25.95 GB/s at
1 GB). ASSUMPTIONS: an L40S (native P2P, Ada, Gen4) behaves as these 4090s; the latency grows with the peers (8 ×
4090 on one NUMA node each without P2P, https://blog.chlc.cc/p/rtx4090-gpudirect-p2p-unlocked 2025-02-07: 38.83 µs at
8 B, against 5.17 × 7 = 36 µs); a group of 8 across two sockets reaches less (that post, P2P on: 20.64 GB/s bus
bandwidth, 0.65 of the link; without P2P 15.04, 0.47) — these constants favour it.
The scale-out latency and fraction are ASSUMPTIONS (no multi-node table in the package): NCCL's inter-node
small-message all-reduce over InfiniBand adds about 10 µs (RDMA round trips and the proxy thread), and large
messages reach ~80 % of the NIC's line rate (nccl-tests bus bandwidth ≈ 40 of 50 GB/s per 400 Gb/s NIC).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace
from typing import Any

import numpy as np

from kokuban.errors import KokubanError

#: The largest M a dense layer runs as a matrix-vector kernel (no tile to fill), SOURCED from the engines' code:
#: TensorRT-LLM's weight-only plugin takes its CUDA-core GEMV "if m < SMALL_M_FAST_PATH" with SMALL_M_FAST_PATH = 5
#: (cpp/tensorrt_llm/plugins/weightOnlyQuantMatmulPlugin/weightOnlyQuantMatmulPlugin.h, NVIDIA/TensorRT-LLM, read
#: 2026-12-03), i.e. M ≤ 4; llama.cpp's CUDA back end uses its MMVQ kernels up to "#define MMVQ_MAX_BATCH_SIZE 8"
#: (ggml/src/ggml-cuda/mmvq.cuh); cuBLAS dispatches M = 1 to GEMV kernels. The smaller bound (4) is taken, and
#: ASSUMED for 16- and 8-bit weights too (there it changes nothing measurable: such a step is weight-bound either
#: way). The aiconfigurator GEMM tables that fit M_half cannot see this: at M ≤ 16 their GEMMs are memory-bound.
GEMV_MAX_TOKENS = 4.0

#: The large-M GEMM fraction of peak the NVIDIA tables reached, per dtype (module docstring: the median of
#: h100-sxm, h200 and b200; fp4 is b200's alone): what a vendor's measured best case is compared with.
TABLE_GEMM_FRACTION = {"bf16": 0.829, "fp16": 0.829, "fp8": 0.767, "fp4": 0.380}
#: The same tables' large-M fractions fitted in the form without the N, K terms (N, K ≥ 1024; module docstring: bf16
#: 0.797 / 0.802 / 0.708, fp8 0.548 / 0.569 / 0.518, medians): what curves whose shape term is switched off (halves
#: 0, `shape_halves`) compare a vendor's measurement with, so that both fractions come from the same form.
TABLE_GEMM_FRACTION_SHAPE_FREE = {"bf16": 0.797, "fp16": 0.797, "fp8": 0.548, "fp4": 0.380}

#: The shape (N, K) of the vendor GEMM measurements of the catalog (`maf_flops_*`): AMD's "max-achievable FLOPs"
#: runs, M 4096, N 4864 (fp8 3648), K 32896 (the ROCm blog quoted in each maf_note): `attainable_factor` compares
#: them with the tables' fraction AT that shape (`gemm_shape_factor`).
MAF_SHAPE = {"bf16": (4864.0, 32896.0), "fp16": (4864.0, 32896.0), "fp8": (3648.0, 32896.0)}

#: Default scale-out latency and fraction of the NIC line rate (ASSUMED: see the module docstring).
SCALEOUT_LATENCY_S = 10e-6
SCALEOUT_FRACTION = 0.8


@dataclass(frozen=True)
class KernelCurves:
    """The parameters of the kernel curves (module docstring): dtype ratios of the GEMM fraction, its
    half-point in tokens, the largest M priced as an unpadded matrix-vector kernel (`gemv_max_tokens`), and the
    collectives' latencies (seconds) and link fractions."""

    m_half_tokens: float = 103.0
    gemv_max_tokens: float = GEMV_MAX_TOKENS
    fp8_ratio: float = 0.92
    fp4_ratio: float = 0.47
    int8_ratio: float = 0.92
    n_half_bf16: float = 45.0
    k_half_bf16: float = 92.0
    n_half_fp8: float = 1581.0
    k_half_fp8: float = 215.0
    allreduce_one_shot_s: float = 3.0e-6
    allreduce_two_shot_s: float = 25.7e-6
    allreduce_fraction: float = 0.72
    alltoall_s: float = 9.8e-6
    alltoall_fraction: float = 0.57
    scaleout_fraction: float = SCALEOUT_FRACTION
    nccl_allreduce_s: float = 5.7e-6
    nccl_allreduce_per_peer_s: float = 1.77e-6
    nccl_allreduce_fraction: float = 0.65
    pcie_allreduce_per_peer_s: float = 5.2e-6
    pcie_allreduce_fraction: float = 0.85
    pcie_allreduce_sqrt_s: float = 39e-9
    moe_layer_s: float = 34.6e-6
    moe_pair_s: float = 9.1e-9
    moe_layer_fp4_s: float = 49.7e-6
    moe_pair_fp4_s: float = 19.9e-9
    gemm_ceiling_factor: float = 1.0  # an accelerator's own large-M GEMM fraction ÷ the medians' (`attainable_factor`)
    weight_memory_ratio: float = 1.0  # an accelerator's own weight stream ÷ the fitted memory fraction's
    plain_nccl: bool = False  # the engine all-reduces with NCCL (torch.distributed), not a custom kernel
    kv_per_query_head: bool = False  # the engine's decode attention loads a KV head per query head (no GQA sharing)
    per_accelerator: bool = True  # an accelerator's own measured constants replace these (`for_accelerator`)
    #: llama.cpp's quantized CUDA kernels (ggml's MMVQ and MMQ) bound per SM (`core.roofline.ggml_per_sm`,
    #: evidence/changes/ggml_mmq_rate/); 0 = no such bound. MMVQ's bytes/s per SM, a constant one: fitted (9.0e9)
    #: on six tg128 rows of the llama.cpp CUDA scoreboard and judged on 30 (5.2 % → 6.4 % median |error|: the A30, an
    #: HBM part, 42.1 % → 7.9 %, the Blackwell cards worse, RTX 5070 Ti 1.9 % → 20.2 %), NOT used: 0 (the per-cycle
    #: form below)
    ggml_sm_stream_bytes_per_s: float = 0.0
    #: MMVQ's bytes per SM per clock cycle (evidence/changes/ggml_mmvq_stream_per_cycle/): the bytes/s one SM draws are
    #: ggml_sm_stream_bytes_per_s + this × the boost clock. FITTED (5.5) on 36 scoreboard decode rows of 18 GPUs
    #: (evidence/changes/ggml_mmq_rate/fit.py), judged on XiongjieDai's llama-bench notebooks (64 decode rows of
    #: Llama 3 8B/70B Q4_K_M on nine GPUs, no fit saw them): 30.4 % → 19.8 % median |error| against no bound, HBM parts
    #: 92.5 → 14.0 %, GDDR unchanged
    ggml_sm_stream_bytes_per_cycle: float = 5.5
    #: MMQ's operations per SM per cycle: FITTED (520) on six pp512 rows of the scoreboard (RTX 5090, 3090 Ti, A100;
    #: evidence/changes/ggml_mmq_rate/fit.py), judged on 30 rows of fifteen GPUs no fit had seen: 37.3 % → 12.4 %
    #: median |error| against no bound
    ggml_mmq_ops_per_cycle: float = 520.0
    #: ℓ, the share of a step's body a tensor-parallel group on NVLink adds at its per-layer barriers (the step is
    #: body·(1 + ℓ) + overhead, `core.roofline.tp_sync_loss`; evidence/changes/tp_barrier_wait/). FITTED (0.14) on the
    #: 1,329 rows of TP groups on NVLink in the development TensorRT-LLM tables (0.13, 0.14, 0.15, 0.17, v0.20;
    #: evidence/changes/tp_barrier_wait/fit.py), judged on TensorRT-LLM 0.10's and 0.11's tables no fit had seen: on
    #: their 166 rows of such groups 23.6 % → 14.0 % median |error| against no wait, on all 318 rows 15.0 % → 11.4 %.
    #: 0 = none
    tp_sync_loss: float = 0.14

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            fraction = f.name.endswith(("_ratio", "_fraction"))
            ok = isinstance(value, (int, float)) and math.isfinite(value)
            ok = ok and (0 < value <= 1 if fraction else value >= 0)
            if not ok:
                allowed = "in (0, 1]" if fraction else "a finite non-negative number"
                raise KokubanError(f"must be {allowed}, got {value!r}", field=f.name, value=value)

    def for_accelerator(self, accelerator: Any) -> KernelCurves:
        """These curves as `accelerator` runs them: its own constants (`Accelerator.kernel_constants`, fitted on its
        measured kernel tables by evidence/kernels/fit.py: the A100's GEMM ceiling and half-point, collectives
        and MoE layer; or on serving rows: the PCIe servers' all-reduce fractions, the MI300X's weight stream ratio)
        in place of the medians, when `per_accelerator` is set; otherwise, or where the catalog lists none,
        unchanged. Only a field still at its median gives way: one set
        otherwise (a calibrated efficiency file, `Efficiency.with_kernels`) stays as set."""
        if not self.per_accelerator or not accelerator.kernel_constants:
            return self
        medians = {f.name: f.default for f in fields(self)}
        # a value someone set (an efficiency file, `with_kernels`) is theirs: only the medians give way
        own = {k: v for k, v in accelerator.kernel_constants.items() if getattr(self, k) == medians[k] != v}
        return replace(self, **own) if own else self

    def covers(self, accelerator: Any) -> bool:
        """Whether the collective curves apply to `accelerator`: its GPUs talk over NVLink (the link the
        tables measured: HGX H100/H200/B200 with NVSwitch). PCIe cards all-reduce on the PCIe curve
        (`covers_pcie`); other links (AMD's Infinity Fabric, TPU ICI) and PCIe all-to-alls keep the flat collective
        model of the scalar profile (`Efficiency.collective_latency_s` and `interconnect`): no table measures them,
        and the NVLink curves would price them far too fast."""
        return accelerator.interconnect.lower().startswith("nvlink")

    def covers_pcie(self, accelerator: Any) -> bool:
        """Whether `accelerator`'s GPUs talk over PCIe only, so that an all-reduce within its node runs on the PCIe
        curve (`pcie_allreduce_time_s`)."""
        return accelerator.interconnect.lower().startswith("pcie")

    def pcie_allreduce_time_s(self, message_bytes: Any, n: int, link_bytes_per_s: float) -> np.ndarray:
        """NCCL's ring all-reduce over PCIe: α_p·(N−1) + 2(N−1)/N·S ÷ (f_p·B) + c_p·√S, 0 on one GPU (module
        docstring: 4 × RTX 4090, Gen4 with P2P, measured 2,013 µs for 33,554,432 B; 5.2 × 3 + 1.5 × 33,554,432 ÷
        (0.85 × 32e9) + 0.039 × 5,792.6 = 15.6 + 1,850.4 + 225.9 = 2,091.9 µs)."""
        s = np.asarray(message_bytes, dtype=np.float64)
        ring = allreduce_time_s(s, n, link_bytes_per_s, math.inf, self.pcie_allreduce_per_peer_s * (n - 1),
                                self.pcie_allreduce_fraction)
        return ring + (self.pcie_allreduce_sqrt_s * np.sqrt(s) if n > 1 else 0.0)

    def shape_halves(self, dtype: str) -> tuple[float, float]:
        """(N_half, K_half) of `gemm_shape_factor` for a compute dtype: bf16's for bf16/fp16, fp8's for fp8 and int8
        (W8A8, ASSUMED to follow fp8 as its ratio does); (0, 0), no shape term, for fp4 (its one table, B200 nvfp4,
        does not fit the shape form: μ 0.44, rms log error 0.22) and fp32."""
        if dtype in ("bf16", "fp16"):
            return self.n_half_bf16, self.k_half_bf16
        if dtype in ("fp8", "int8"):
            return self.n_half_fp8, self.k_half_fp8
        return 0.0, 0.0

    def shape_factor(self, gemms: Any, dtype: str) -> float:
        """`layer_shape_factor` of `gemms` ((N, K) pairs one GPU multiplies per token) at `dtype`'s halves."""
        return layer_shape_factor(gemms, *self.shape_halves(dtype))

    def dtype_ratio(self, dtype: str) -> float:
        """The GEMM fraction of `dtype` relative to bf16's: fp8/int8/fp4 from the tables, 1 for 16/32-bit."""
        return {"fp8": self.fp8_ratio, "fp4": self.fp4_ratio, "int8": self.int8_ratio}.get(dtype, 1.0)

    def attainable_factor(self, accelerator: Any, dtype: str) -> float:
        """`gemm_attainable_factor` of `accelerator` in `dtype`: its measured best-case GEMM (`max_achievable_flops`)
        against the tables' fraction of that dtype; 1 where the catalog lists no measurement. int8 (W8A8) takes
        fp8's factor, as it takes fp8's ratio (`int8_ratio`: no int8 table; AMD's MAF table has no int8 column).
        The tables' fraction is taken at the measurement's shape (`MAF_SHAPE`, `gemm_shape_factor`): MI300X fp8
        1273 ÷ 2614.9 ÷ (0.767 · 3648/(3648 + 1581) · 32896/(32896 + 215)) = 0.916; curves without the shape term
        (halves 0) compare with the shape-free fit's fraction (`TABLE_GEMM_FRACTION_SHAPE_FREE`).
        The factor may exceed 1 (MI325X fp8: 1519 ÷ 2614.9 ÷ 0.5316 = 1.09): a vendor whose best case reaches a
        larger share of its peak than the NVIDIA tables did is priced so; the fraction stays ≤ 1 (`compute` < 1).
        Times `gemm_ceiling_factor`, an NVIDIA GPU's own table against the medians (1 unless its catalog entry sets
        it: the A100's bf16 table reaches e = 0.911 where the medians reach 0.829, 1.099; `for_accelerator`)."""
        key = "fp8" if dtype == "int8" else dtype
        halves = self.shape_halves(key)
        table = TABLE_GEMM_FRACTION if any(halves) else TABLE_GEMM_FRACTION_SHAPE_FREE
        at_shape = layer_shape_factor([MAF_SHAPE[key]], *halves) if key in MAF_SHAPE else 1.0
        return self.gemm_ceiling_factor * gemm_attainable_factor(
            accelerator.max_achievable_flops.get(key, 0.0), accelerator.flops(key), table.get(key, 0.0) * at_shape)

    def moe_constants(self, dtype: str) -> tuple[float, float]:
        """(α per MoE layer, β per routed pair) of `moe_dispatch_time_s` for a compute dtype: for fp4 the B200 nvfp4
        table's own fit (49.9 µs and 21.4 ns, against 37.2 µs and 14.8 ns for fp8 on the same GPU; the only fp4 table,
        so assumed for every fp4 accelerator), else the median of the fp8 and bf16 tables of the three GPUs (module
        docstring). Which of the layer's kernels make fp4 slower the table does not say."""
        if dtype == "fp4":
            return self.moe_layer_fp4_s, self.moe_pair_fp4_s
        return self.moe_layer_s, self.moe_pair_s

    def as_dict(self) -> dict[str, float]:
        return {f.name: v if isinstance(v := getattr(self, f.name), bool) else float(v) for f in fields(self)}

    def allreduce_latency_s(self, n: int) -> tuple[float, float]:
        """(one-shot α₁, two-shot α₂) of an all-reduce over `n` GPUs within a node: the custom kernel's, or with
        `plain_nccl` NCCL's α₀ + α₁·(N−1) for both (so the min-form is NCCL's ring, 2(N−1)/N·S)."""
        if self.plain_nccl:
            nccl = self.nccl_allreduce_s + self.nccl_allreduce_per_peer_s * (n - 1)
            return nccl, nccl
        return self.allreduce_one_shot_s, self.allreduce_two_shot_s


def gemm_fraction(peak_fraction: float, tokens: Any, m_half_tokens: float, gemv_max_tokens: float = 0.0) -> np.ndarray:
    """Fraction of peak a GEMM of `tokens` rows reaches: e·M ÷ (M + M_half), or e for M ≤ M_gemv.

    A GEMM of few rows (a decode batch) cannot fill the tensor cores' tiles and waits on launches and
    pipeline fill; the fraction rises toward `peak_fraction` as M grows and reaches half of it at
    M = M_half. Engines multiply M ≤ `gemv_max_tokens` rows by a matrix-vector kernel instead, which has no
    tile to fill: its FLOPs are priced at e, unpadded. That kernel streams the weights and its few FLOPs hide
    under the read for every format kokuban knows (Llama-2-7B int4-g32 at M = 4 on an RTX 4090: 4 · 13.2 GFLOP ÷
    (165.2e12·0.74, the scalar compute) = 0.43 ms against 3.9 GB of weights ÷ 1.008e12 B/s = 3.9 ms of read), so what
    matters is only that it is not padded to ~M_half rows, which would make int4 batch-1 decode compute-bound.
    Assumes the N and K of serving GEMMs are large (≥ 1024), as in the fitted tables. Vectorised over `tokens`;
    M < 1 is treated as 1 (a GEMM has at least one row)."""
    m = np.maximum(np.asarray(tokens, dtype=np.float64), 1.0)
    tiled = peak_fraction / (1.0 + m_half_tokens / m)  # = e·M/(M + M_half), never above e in floating point
    return np.where(m <= gemv_max_tokens, peak_fraction, tiled)


def gemm_shape_factor(n: float, k: float, n_half: float, k_half: float) -> float:
    """The share of its dtype's ceiling a GEMM of output width N and depth K reaches: N/(N + N_half)·K/(K + K_half).

    A narrow output (N: tensor parallelism splits a column-parallel weight's N by the TP degree, as the QKV and
    gate/up projections) leaves tiles of the grid idle and its epilogue uncovered; a shallow depth (K: a row-parallel
    weight's K, as the output and down projections) leaves too few steps of the main loop to hide the prologue. Fitted
    on the NVIDIA tables with the M curve (module docstring): fp8 needs a wide N (N_half ≈ 1,600) where bf16 does not
    (≈ 45). Halves of 0: no shape term (1)."""
    return (n / (n + n_half) if n_half > 0 else 1.0) * (k / (k + k_half) if k_half > 0 else 1.0)


def layer_shape_factor(gemms: Any, n_half: float, k_half: float) -> float:
    """The FLOP-weighted shape factor of several GEMMs run on the same M: Σ N·K ÷ Σ N·K/s(N, K), s =
    `gemm_shape_factor` (their times add, each FLOP at its own GEMM's rate). No GEMM (or none of positive size): 1."""
    gemms = [(float(n), float(k)) for n, k in gemms if n > 0 and k > 0]
    if not gemms:
        return 1.0
    return sum(n * k for n, k in gemms) / sum(n * k / gemm_shape_factor(n, k, n_half, k_half) for n, k in gemms)


def gemm_attainable_factor(max_achievable_flops: float, peak_flops: float, table_fraction: float) -> float:
    """How much of the NVIDIA-fitted GEMM ceiling an accelerator reaches: a = (MAF ÷ peak) ÷ f_table.

    MAF is the FLOP/s its vendor measured on a best-case GEMM of the dtype, peak the catalog's dense peak of it,
    f_table the large-M fraction the NVIDIA tables reached in that dtype (`TABLE_GEMM_FRACTION`). Assumes the two
    best cases are comparable (both are the vendor's own library at a large, tile-friendly shape) and that the
    small-M shape of the curve (M_half) carries over. MI300X fp8: (1273 ÷ 2614.9) ÷ (0.767 · 0.6931, the tables' fp8
    fraction at the measurement's shape, `KernelCurves.attainable_factor`) = 0.916. No measured
    figure (0) or no table fraction: 1 (the NVIDIA curves as they are)."""
    if max_achievable_flops <= 0 or peak_flops <= 0 or table_fraction <= 0:
        return 1.0
    return max_achievable_flops / peak_flops / table_fraction


def moe_dispatch_time_s(pairs: Any, moe_layers: int, layer_s: float, pair_s: float) -> np.ndarray:
    """Seconds a step's MoE layers spend beside their expert GEMMs: L_moe·(α + β·P).

    P is the (token, expert) pairs one GPU's experts receive in one MoE layer (tokens·top-k, ÷ the EP ranks when
    the experts are spread by expert parallelism); α is each layer's fixed cost (router top-k, the permute that
    groups tokens by expert, the finalize that scatters and weights them back: kernel launches that do not shrink
    with the batch), β the cost of moving one pair's activations in and out of the grouped GEMM. Assumes
    balanced routing and that these kernels run one after the other with the GEMMs (added, not overlapped), as
    in the measured tables (module docstring). Vectorised over `pairs`."""
    return moe_layers * (layer_s + pair_s * np.asarray(pairs, dtype=np.float64))


def allreduce_time_s(message_bytes: Any, n: int, link_bytes_per_s: float, one_shot_s: float, two_shot_s: float,
                     fraction: float) -> np.ndarray:
    """Seconds of one all-reduce of `message_bytes` over `n` GPUs on a link of `link_bytes_per_s` per direction:

        one-shot  α₁ + (N−1)·S ÷ (f·B)       every GPU reads all N−1 peers' whole buffers (latency-optimal)
        two-shot  α₂ + 2(N−1)/N·S ÷ (f·B)    reduce-scatter then all-gather (bandwidth-optimal, as a ring)
        t = min(one-shot, two-shot)          the engine picks the faster: one-shot below a size threshold

    One GPU: 0. α₂ = `inf` (a link where one-shot is not used) leaves the one-shot term and vice versa."""
    s = np.asarray(message_bytes, dtype=np.float64)
    if n <= 1:
        return np.zeros_like(s)
    rate = fraction * link_bytes_per_s
    one = one_shot_s + (n - 1) * s / rate
    two = two_shot_s + 2 * (n - 1) / n * s / rate
    return np.minimum(one, two)


def alltoall_time_s(bytes_on_node: Any, bytes_off_node: Any, latency_s: float, link_bytes_per_s: float,
                    fraction: float, net_bytes_per_s: float = 0.0, net_fraction: float = 1.0) -> np.ndarray:
    """Seconds of one all-to-all: α + on-node bytes ÷ (f·B) + off-node bytes ÷ (f_net·B_net).

    Bytes are what one GPU sends. The two parts are added rather than overlapped (an ASSUMPTION on the slow
    side: an engine may overlap them), so moving bytes off the node never makes it faster. No off-node
    bytes: the network terms are 0 (`net_bytes_per_s` may then be 0)."""
    on = np.asarray(bytes_on_node, dtype=np.float64)
    off = np.asarray(bytes_off_node, dtype=np.float64)
    t = latency_s + on / (fraction * link_bytes_per_s)
    if np.any(off > 0):
        if net_bytes_per_s <= 0:
            raise KokubanError("an all-to-all that leaves the node needs a scale-out bandwidth",
                               field="scaleout_bytes_per_s", value=net_bytes_per_s)
        t = t + off / (net_fraction * net_bytes_per_s)
    return t


@dataclass(frozen=True)
class Link:
    """The link a collective of `n` GPUs runs on: bandwidth per direction, latency added to each collective,
    the fraction of the bandwidth large messages reach on it, and whether it leaves the node."""

    bytes_per_s: float
    extra_latency_s: float
    fraction: float
    crosses_node: bool


def collective_link(n: int, gpus_per_node: int, nvlink_bytes_per_s: float, scaleout_bytes_per_s: float,
                    scaleout_latency_s: float, nvlink_fraction: float, scaleout_fraction: float) -> Link:
    """The link of a group of `n` GPUs: NVLink when n ≤ gpus_per_node (or the node size is unknown: 0),
    else the scale-out network (its per-GPU NIC bandwidth and latency), which the group's collectives then
    wait on. A catalog entry without a scale-out figure cannot run a group that crosses its node."""
    if gpus_per_node <= 0 or n <= gpus_per_node:
        return Link(nvlink_bytes_per_s, 0.0, nvlink_fraction, False)
    if scaleout_bytes_per_s <= 0:
        raise KokubanError(f"a group of {n} GPUs crosses a node of {gpus_per_node} and the accelerator lists no "
                           "scale-out bandwidth", field="scaleout_bytes_per_s", value=scaleout_bytes_per_s)
    return Link(scaleout_bytes_per_s, scaleout_latency_s, scaleout_fraction, True)
