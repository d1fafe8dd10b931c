"""What the fits of llama.cpp's quantized CUDA kernels bound per SM (`core.roofline.ggml_per_sm`) share: the
candidate (the shipped model with one per-SM constant set; 0: that bound off) and the scoreboard rows they are
fitted on. Each change's `fit.py` (`ggml_mmq_rate/`, `ggml_mmvq_stream_per_sm/`, `ggml_mmvq_stream_per_cycle/`)
runs its grid with them."""

from __future__ import annotations

from evidence.sources import measurements
from kokuban.specs.hardware import Efficiency

#: the fitted constants, each its grid's least: MMQ's rate and MMVQ's bytes per cycle ship; the stream per SM does not
MMQ_OPS_PER_CYCLE, STREAM_BYTES_PER_S, STREAM_BYTES_PER_CYCLE = 520.0, 9.0e9, 5.5


def fit_rows(metric: str, sources: tuple[str, ...] = ("llamacpp_cuda",)) -> list:
    """The scoreboard rows of `sources` measuring `metric` (tg128: a user's speed; pp512: a first token)."""
    return [r for s in sources for r in measurements(s) if r.metric == metric]


def candidate(stream_bytes_per_s: float = 0.0, mmq_ops_per_cycle: float = 0.0,
              stream_bytes_per_cycle: float = 0.0) -> Efficiency:
    """The shipped model with llama.cpp's per-SM constants set (0: that bound off)."""
    return Efficiency.shipped().with_kernels(ggml_sm_stream_bytes_per_s=stream_bytes_per_s,
                                             ggml_mmq_ops_per_cycle=mmq_ops_per_cycle,
                                             ggml_sm_stream_bytes_per_cycle=stream_bytes_per_cycle)
