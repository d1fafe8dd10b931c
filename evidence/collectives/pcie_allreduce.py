"""Fit the PCIe all-reduce curve of `kokuban.specs.kernels` (`KernelCurves.pcie_allreduce_time_s`) to a measured
nccl-tests table, and print its constants:

    python -m evidence.collectives.pcie_allreduce

    t(S) = α_p·(N − 1) + 2(N − 1)/N · S ÷ (f_p·B) + c_p·√S

S the message in bytes, B the per-direction PCIe bandwidth (Gen4 x16: 32e9 B/s, the catalog's figure), N = 4. The
√S term is the pipeline fill of a chunked ring: the optimal pipelined time (√(α·k) + √(S·β))² expands into a latency
term, a bandwidth term and 2·√(α·k·β·S). The three parameters enter linearly, so the fit is a least squares on the
relative error (each row divided by its measured time) with numpy: no optimiser, one answer.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

TABLE = Path(__file__).with_name("nccl_allreduce_4x_rtx4090_gen4_p2p.txt")
GPUS = 4
LINK_BYTES_PER_S = 32e9


def read_table(path: Path = TABLE) -> tuple[np.ndarray, np.ndarray]:
    """(message bytes, out-of-place seconds) of the quoted rows."""
    rows = [line.split() for line in path.read_text().splitlines() if line.strip() and not line.startswith("#")]
    data = np.array([[float(r[0]), float(r[1]) * 1e-6] for r in rows])
    return data[:, 0], data[:, 1]


def fit(size: np.ndarray, seconds: np.ndarray, n: int = GPUS, link: float = LINK_BYTES_PER_S) -> dict[str, float]:
    """(α_p per peer in s, f_p, c_p in s/√B) minimising Σ((model − t)/t)²; also the worst relative error."""
    ring = 2 * (n - 1) / n * size / link
    design = np.column_stack([np.full_like(size, n - 1.0), ring, np.sqrt(size)]) / seconds[:, None]
    (alpha, inverse_f, c), *_ = np.linalg.lstsq(design, np.ones_like(size), rcond=None)
    model = alpha * (n - 1) + ring * inverse_f + c * np.sqrt(size)
    return {"per_peer_s": float(alpha), "fraction": float(1 / inverse_f), "sqrt_s": float(c),
            "worst_relative_error": float(np.max(np.abs(model / seconds - 1)))}


if __name__ == "__main__":
    got = fit(*read_table())
    print(f"α_p {got['per_peer_s'] * 1e6:.2f} µs per peer, f_p {got['fraction']:.3f}, "
          f"c_p {got['sqrt_s'] * 1e9:.1f} ns/√B, worst |error| {100 * got['worst_relative_error']:.1f} %")
