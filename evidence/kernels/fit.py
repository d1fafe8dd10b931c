"""Derive kokuban's kernel-calibrated efficiency curves from aiconfigurator's measured kernel tables.

    pip download aiconfigurator-core==0.12.0 --no-deps -d /tmp/aic && unzip -q /tmp/aic/*.whl -d /tmp/aic/w
    pip install pyarrow            # to read the Parquet tables (not a kokuban dependency)
    python -m evidence.kernels.fit /tmp/aic/w/aiconfigurator_core/systems/data

Calibration data, not a lookup kokuban depends on: aiconfigurator-core 0.12.0 (PyPI, NVIDIA, licence
Apache-2.0, "SPDX-License-Identifier: Apache-2.0" in every collection_meta.yaml) ships per-kernel latency
tables measured on each GPU. This script reads five of them and fits the few parameters of the stated forms in
`kokuban.specs.kernels` (the constants there are what it printed; rerun it to check them):

- GEMM (`<gpu>/gemm/trtllm/1.3.0rc20/gemm_perf.parquet`; m, n, k, latency in ms):
      t = t₀ + max(2·M·N·K ÷ (peak[dtype]·e_dtype·M/(M + M_half)), bytes ÷ (HBM·μ))
  bytes = (M·K + M·N)·2 + N·K·w (w = bytes per weight of the dtype), fitted by log-least-squares on every
  shape with N, K ≥ 1024 per (GPU, dtype); e_dtype is then quoted relative to bf16 on the same GPU.
- All-reduce (`<gpu>/comm/trtllm/1.3.0rc20/custom_allreduce_perf.parquet`, TensorRT-LLM's custom kernel that
  serving decode uses; message_size in ELEMENTS of bf16 — the NCCL table's int8 rows take half the time of its
  half rows at the same message_size, so the size counts elements, not bytes):
      t = min(α₁ + (N−1)·S ÷ (f·B),  α₂ + 2(N−1)/N·S ÷ (f·B))   (one-shot, two-shot; S bytes, B link bytes/s)
- All-to-all (`<gpu>/comm/nccl/2.29.2/nccl_perf.parquet`, op alltoall, half): t = α + (N−1)/N·S ÷ (f·B).
- NCCL all-reduce (same file, op all_reduce, half; what an engine on plain torch.distributed, such as gpt-fast,
  calls): t = α₀ + α₁·(N−1) + 2(N−1)/N·S ÷ (f·B)   (its small-message latency grows with the ranks).
- MoE layer (`<gpu>/moe/trtllm/1.3.0rc20/moe_perf.parquet`, kernel moe_torch_flow_cutlass, balanced routing,
  fp8 and bf16 (the shipped medians), nvfp4 on B200 (shipped for fp4); num_tokens T, hidden H, inter_size I,
  topk k, num_experts E, moe_tp_size, moe_ep_size; latency in ms): what kokuban's expert GEMMs (the GEMM form above
  at kokuban's kernel-profile constants: compute 0.74 × the dtype ratio, M_half 70, memory 0.89) leave out, fitted as
      t = α + β·P + max(2·P·3·H·I' ÷ (peak·e·M/(M + M_half)), touched·3·H·I'·w ÷ (HBM·μ))
  P = T·k ÷ ep the (token, expert) pairs one rank's experts receive, I' = I ÷ moe_tp, touched = E'·(1 − (1 −
  1/E')^P) of the E' = E ÷ ep local experts, M = P ÷ touched; α (routing, permute and finalize launches) and
  β (moving each pair's activations in and out) by log-least-squares, the rest held fixed.

Peaks and link bandwidths are kokuban's catalog values (data/accelerators.toml), so the fractions are of the
figures kokuban divides by.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.optimize import least_squares

from kokuban.specs.catalog import load_accelerator

GPUS = {"h100_sxm": "h100-sxm", "h200_sxm": "h200", "b200_sxm": "b200"}
GEMM_DTYPES = {"bfloat16": ("bf16", 2.0), "fp8": ("fp8", 1.0), "nvfp4": ("fp4", 0.5625)}
#: the kernel profile's compute and memory fractions the MoE layer constants were fitted at (step-v2's, `fit_moe`)
MOE_FIT_FRACTIONS = {"compute": 0.74, "memory": 0.89}


def fit_gemm(frame: pd.DataFrame, peak: float, hbm: float, w: float, shape: bool = True,
             least: int | None = None) -> dict[str, float]:
    """e, M_half, N_half, K_half, μ, t₀ (s) and the rms log error of the GEMM form, by log-least-squares:
        t = t₀ + max(2MNK ÷ (peak·e·M/(M+M_half)·s(N, K)), bytes ÷ (hbm·μ)),  s = `kernels.gemm_shape_factor`
    With `shape` on every shape with N, K ≥ 256 (the split shapes of tensor parallelism included); without, s = 1
    (N_half = K_half = 0) on N, K ≥ 1024, the shape-free form of step-v3; `least` sets the smallest N and K
    (the shape-free form on the shape fit's rows, 256, is what the shape term's gain is quoted against)."""
    from kokuban.specs.kernels import gemm_shape_factor

    least = least or (256 if shape else 1024)
    f = frame[(frame.n >= least) & (frame.k >= least)]
    m, n, k, t = (f[c].to_numpy(np.float64) for c in ("m", "n", "k", "latency"))
    t = t * 1e-3
    flops, nbytes = 2 * m * n * k, (m * k + m * n) * 2 + n * k * w

    def unpack(z: np.ndarray) -> dict[str, float]:
        halves = (np.exp(z[4]), np.exp(z[5])) if shape else (0.0, 0.0)
        return {"e": 1 / (1 + np.exp(-z[0])), "m_half": np.exp(z[1]), "n_half": halves[0], "k_half": halves[1],
                "mu": 1 / (1 + np.exp(-z[2])), "t0": np.exp(z[3])}

    def resid(z: np.ndarray) -> np.ndarray:
        p = unpack(z)
        rate = peak * p["e"] * m / (m + p["m_half"]) * gemm_shape_factor(n, k, p["n_half"], p["k_half"])
        return np.log((p["t0"] + np.maximum(flops / rate, nbytes / (hbm * p["mu"]))) / t)

    start = [1.0, np.log(64), 1.0, np.log(5e-6)] + ([np.log(100), np.log(100)] if shape else [])
    z = least_squares(resid, start).x
    return {k: float(v) for k, v in unpack(z).items()} | {"rms": float(np.sqrt(np.mean(resid(z) ** 2)))}


def fit_allreduce(frame: pd.DataFrame, link: float) -> tuple[float, float, float]:
    """(α₁ s, α₂ s, f) of the one-shot/two-shot min-form, log-least-squares over N = 2, 4, 8."""
    n, s, t = (frame[c].to_numpy(np.float64) for c in ("num_gpus", "message_size", "latency"))
    s, t = s * 2.0, t * 1e-3

    def resid(z: np.ndarray) -> np.ndarray:
        a1, a2, fr = np.exp(z[0]), np.exp(z[1]), 1 / (1 + np.exp(-z[2]))
        pred = np.minimum(a1 + (n - 1) * s / (fr * link), a2 + 2 * (n - 1) / n * s / (fr * link))
        return np.log(pred / t)

    z = least_squares(resid, [np.log(3e-6), np.log(15e-6), 0.5]).x
    return float(np.exp(z[0])), float(np.exp(z[1])), float(1 / (1 + np.exp(-z[2])))


def fit_alltoall(frame: pd.DataFrame, link: float) -> tuple[float, float]:
    """(α s, f) of t = α + (N−1)/N·S/(f·B)."""
    n, s, t = (frame[c].to_numpy(np.float64) for c in ("num_gpus", "message_size", "latency"))
    s, t = s * 2.0, t * 1e-3

    def resid(z: np.ndarray) -> np.ndarray:
        return np.log((np.exp(z[0]) + (n - 1) / n * s / (1 / (1 + np.exp(-z[1])) * link)) / t)

    z = least_squares(resid, [np.log(10e-6), 0.5]).x
    return float(np.exp(z[0])), float(1 / (1 + np.exp(-z[1])))


def fit_nccl_allreduce(frame: pd.DataFrame, link: float) -> tuple[float, float, float]:
    """(α₀ s, α₁ s per peer, f) of t = α₀ + α₁·(N−1) + 2(N−1)/N·S/(f·B), log-least-squares over N = 2, 4, 8."""
    n, s, t = (frame[c].to_numpy(np.float64) for c in ("num_gpus", "message_size", "latency"))
    s, t = s * 2.0, t * 1e-3

    def resid(z: np.ndarray) -> np.ndarray:
        a0, a1, fr = np.exp(z[0]), np.exp(z[1]), 1 / (1 + np.exp(-z[2]))
        return np.log((a0 + a1 * (n - 1) + 2 * (n - 1) / n * s / (fr * link)) / t)

    z = least_squares(resid, [np.log(5e-6), np.log(2e-6), 0.5]).x
    return float(np.exp(z[0])), float(np.exp(z[1])), float(1 / (1 + np.exp(-z[2])))


def fit_moe(frame: pd.DataFrame, dtype: str, peak: float, hbm: float, w: float, m_half: float | None = None,
            attainable: float = 1.0) -> tuple[float, float]:
    """(α s, β s per pair) of the MoE-layer form in the module docstring, kokuban's GEMM terms held fixed at the
    fractions the shipped MoE constants were fitted at (`MOE_FIT_FRACTIONS`) and the shipped curves (dtype ratio,
    M_half and the shape factor of each expert's gate/up (N = 2·I', K = H) and down (N = H, K = I') GEMMs); `m_half`
    and `attainable`: a GPU's own GEMM half-point and ceiling factor (`per_gpu`), else the medians'."""
    from kokuban.specs.kernels import KernelCurves

    ep = frame.moe_ep_size.to_numpy(np.float64)
    pairs = frame.num_tokens.to_numpy(np.float64) * frame.topk.to_numpy(np.float64) / ep
    local = frame.num_experts.to_numpy(np.float64) / ep
    width = 3 * frame.hidden_size.to_numpy(np.float64) * frame.inter_size.to_numpy(np.float64) / frame.moe_tp_size
    touched = local * (1 - (1 - 1 / local) ** pairs)
    m = pairs / np.maximum(touched, 1.0)
    curves = KernelCurves()
    m_half = curves.m_half_tokens if m_half is None else m_half
    inter = frame.inter_size.to_numpy(np.float64) / frame.moe_tp_size.to_numpy(np.float64)
    hidden = frame.hidden_size.to_numpy(np.float64)
    shape = np.array([curves.shape_factor([(2 * i, h), (h, i)], dtype) for i, h in zip(inter, hidden, strict=True)])
    e = MOE_FIT_FRACTIONS["compute"] * curves.dtype_ratio(dtype) * attainable * shape
    gemm = np.maximum(2 * pairs * width / (peak * e * m / (m + m_half)),
                      touched * width * w / (hbm * MOE_FIT_FRACTIONS["memory"]))
    t = frame.latency.to_numpy(np.float64) * 1e-3

    def resid(z: np.ndarray) -> np.ndarray:
        return np.log((np.exp(z[0]) + np.exp(z[1]) * pairs + gemm) / t)

    z = least_squares(resid, [np.log(30e-6), np.log(1e-8)]).x
    return float(np.exp(z[0])), float(np.exp(z[1]))


def fit_medians_gpu(base: Path, gpu_dir: str, gpu_id: str) -> None:
    """The shipped medians' GPUs (`GPUS`): every fit of the module docstring."""
    acc = load_accelerator(gpu_id)
    gemm = pd.read_parquet(base / gpu_dir / "gemm/trtllm/1.3.0rc20/gemm_perf.parquet")
    bf16 = None
    for name, (dtype, w) in GEMM_DTYPES.items():
        rows = gemm[gemm.gemm_dtype == name]
        if rows.empty or not acc.peak_flops.get(dtype):
            continue
        g = fit_gemm(rows, acc.flops(dtype), acc.memory_bandwidth_bytes_per_s, w)
        bf16 = g["e"] if dtype == "bf16" else bf16
        g0 = fit_gemm(rows, acc.flops(dtype), acc.memory_bandwidth_bytes_per_s, w, shape=False)
        same = fit_gemm(rows, acc.flops(dtype), acc.memory_bandwidth_bytes_per_s, w, shape=False, least=256)
        print(f"{gpu_id} gemm {dtype}: e={g['e']:.3f} ({g['e'] / bf16:.3f}x bf16) M_half={g['m_half']:.0f} "
              f"N_half={g['n_half']:.0f} K_half={g['k_half']:.0f} mu={g['mu']:.2f} rms={g['rms']:.3f} (without the "
              f"N, K terms on the same rows: {same['rms']:.3f}) | shape-free, N, K >= 1024: e={g0['e']:.3f} "
              f"({g0['e'] / bf16:.3f}x bf16's shape-aware e) M_half={g0['m_half']:.0f} mu={g0['mu']:.2f}")
    ar = pd.read_parquet(base / gpu_dir / "comm/trtllm/1.3.0rc20/custom_allreduce_perf.parquet")
    a1, a2, fr = fit_allreduce(ar, acc.interconnect_bytes_per_s)
    print(f"{gpu_id} all-reduce: one-shot {a1 * 1e6:.1f} us, two-shot {a2 * 1e6:.1f} us, link fraction {fr:.2f}")
    nccl = pd.read_parquet(base / gpu_dir / "comm/nccl/2.29.2/nccl_perf.parquet")
    a2a = nccl[(nccl.op_name == "alltoall") & (nccl.nccl_dtype == "half")]
    a, fr = fit_alltoall(a2a, acc.interconnect_bytes_per_s)
    print(f"{gpu_id} all-to-all: {a * 1e6:.1f} us, link fraction {fr:.2f}")
    a0, a1, fr = fit_nccl_allreduce(nccl[(nccl.op_name == "all_reduce") & (nccl.nccl_dtype == "half")],
                                    acc.interconnect_bytes_per_s)
    print(f"{gpu_id} NCCL all-reduce: {a0 * 1e6:.1f} us + {a1 * 1e6:.2f} us per peer, link fraction {fr:.2f}")
    moe = pd.read_parquet(base / gpu_dir / "moe/trtllm/1.3.0rc20/moe_perf.parquet")
    moe = moe[(moe.kernel_source == "moe_torch_flow_cutlass") & (moe.distribution == "balanced")]
    for name, (dtype, w) in GEMM_DTYPES.items():
        rows = moe[moe.moe_dtype == name]
        if not rows.empty:
            a, beta = fit_moe(rows, dtype, acc.flops(dtype), acc.memory_bandwidth_bytes_per_s, w)
            note = " (shipped for fp4: KernelCurves.moe_layer_fp4_s, moe_pair_fp4_s)" if dtype == "fp4" else ""
            print(f"{gpu_id} MoE layer {dtype}: alpha {a * 1e6:.1f} us, beta {beta * 1e9:.1f} ns per pair{note}")


#: GPUs fitted on their own tables, the tables' versions as the package ships them: (catalog id, GEMM,
#: all-reduce and NCCL versions, MoE version or None, use its collectives). Only the A100's constants are in the
#: catalog (`Accelerator.kernel_constants`). The L40S's GEMM fits are printed, not used: at its constants one L40S's
#: prefill of 128-2,048 tokens is priced 12-40 % slower than NVIDIA's measured first-token times in
#: data/published_results.toml, which the medians meet within 15 % (evidence/changes/a100_kernel_tables/).
PER_GPU = {"a100_sxm": ("a100-80gb", "1.0.0", "1.0.0", "2.27.3", "1.0.0", True),
           "l40s": ("l40s", "1.3.0rc20", "1.0.0", "2.27.3", None, False)}


def per_gpu(base: Path, gpu_dir: str) -> None:
    """A GPU's own constants, printed as the catalog's `kernel_*` keys:
    - GEMM: e and M_half per dtype by `fit_gemm`; kernel_gemm_ceiling_factor = e ÷ the medians' e of that dtype
      (`TABLE_GEMM_FRACTION`), M_half the median over its dtypes (the rule of the shipped medians);
    - collectives (where the table's machine is representative: not the L40S's, whose eight GPUs reached 1.5 GB/s of
      bus bandwidth): `fit_allreduce`, `fit_nccl_allreduce`, `fit_alltoall`;
    - MoE: the A100's table has only power-law routing (moe_torch_flow): its α and β (at the A100's own GEMM
      constants) are scaled by the ratio H100's balanced ÷ power-law 1.01 fits of the same bf16 form (an ASSUMPTION:
      routing skew costs the A100 what it costs the H100)."""
    from kokuban.specs.kernels import TABLE_GEMM_FRACTION

    gpu_id, gemm_v, ar_v, nccl_v, moe_v, comm = PER_GPU[gpu_dir]
    acc = load_accelerator(gpu_id)
    gemm = pd.read_parquet(base / gpu_dir / f"gemm/trtllm/{gemm_v}/gemm_perf.parquet")
    halves, ceiling = [], {}
    for name, (dtype, w) in GEMM_DTYPES.items():
        rows = gemm[gemm.gemm_dtype == name]
        if rows.empty or not acc.peak_flops.get(dtype):
            continue
        g = fit_gemm(rows, acc.flops(dtype), acc.memory_bandwidth_bytes_per_s, w)
        halves.append(g["m_half"])
        ceiling[dtype] = g["e"]
        print(f"{gpu_id} gemm {dtype}: e={g['e']:.3f} M_half={g['m_half']:.0f} N_half={g['n_half']:.0f} "
              f"K_half={g['k_half']:.0f} mu={g['mu']:.2f} rms={g['rms']:.3f} -> ceiling factor "
              f"{g['e'] / TABLE_GEMM_FRACTION[dtype]:.3f}, kernel_n_half_{dtype} = {g['n_half']:.0f}, "
              f"kernel_k_half_{dtype} = {g['k_half']:.0f}")
    m_half = float(np.median(halves))
    print(f"{gpu_id} kernel_m_half_tokens = {m_half:.0f}")
    if comm:
        ar = pd.read_parquet(base / gpu_dir / f"comm/trtllm/{ar_v}/custom_allreduce_perf.parquet")
        a1, a2, fr = fit_allreduce(ar, acc.interconnect_bytes_per_s)
        print(f"{gpu_id} kernel_allreduce_one_shot_s = {a1:.2g}, two_shot_s = {a2:.3g}, fraction = {fr:.2f}")
        nccl = pd.read_parquet(base / gpu_dir / f"comm/nccl/{nccl_v}/nccl_perf.parquet")
        a0, a1, fr = fit_nccl_allreduce(nccl[(nccl.op_name == "all_reduce") & (nccl.nccl_dtype == "half")],
                                        acc.interconnect_bytes_per_s)
        print(f"{gpu_id} kernel_nccl_allreduce_s = {a0:.3g}, per_peer_s = {a1:.3g}, fraction = {fr:.2f}")
        a, fr = fit_alltoall(nccl[(nccl.op_name == "alltoall") & (nccl.nccl_dtype == "half")],
                             acc.interconnect_bytes_per_s)
        print(f"{gpu_id} kernel_alltoall_s = {a:.3g}, fraction = {fr:.2f}")
    if moe_v:
        h100 = load_accelerator("h100-sxm")
        ref = pd.read_parquet(base / "h100_sxm/moe/trtllm/1.3.0rc20/moe_perf.parquet")
        ref = ref[(ref.kernel_source == "moe_torch_flow_cutlass") & (ref.moe_dtype == "bfloat16")]
        bal, skew = (fit_moe(ref[ref.distribution == d], "bf16", h100.flops("bf16"), h100.memory_bandwidth_bytes_per_s,
                             2.0) for d in ("balanced", "power_law_1.01"))
        moe = pd.read_parquet(base / gpu_dir / f"moe/trtllm/{moe_v}/moe_perf.parquet")
        moe = moe[(moe.moe_dtype == "bfloat16") & (moe.distribution == "power_law_1.01")]
        a, beta = fit_moe(moe, "bf16", acc.flops("bf16"), acc.memory_bandwidth_bytes_per_s, 2.0, m_half,
                          ceiling["bf16"] / TABLE_GEMM_FRACTION["bf16"])
        print(f"{gpu_id} MoE bf16 power-law 1.01: alpha {a * 1e6:.1f} us, beta {beta * 1e9:.1f} ns; H100 balanced / "
              f"power-law: {bal[0] / skew[0]:.2f}, {bal[1] / skew[1]:.2f} -> kernel_moe_layer_s = "
              f"{a * bal[0] / skew[0]:.3g}, kernel_moe_pair_s = {beta * bal[1] / skew[1]:.3g}")


def main(root: str) -> None:
    base = Path(root)
    for gpu_dir, gpu_id in GPUS.items():
        fit_medians_gpu(base, gpu_dir, gpu_id)
    for gpu_dir in PER_GPU:
        per_gpu(base, gpu_dir)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "/tmp/aic/w/aiconfigurator_core/systems/data")
