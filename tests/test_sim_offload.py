"""The CPU KV offload tier of the scheduler's pool (issue 12 item 4): preempted requests' KV and evicted prefixes
kept in host memory and reloaded (b ÷ BW, `kvcache.reload_seconds`, shared with agent sessions' offload retention)
instead of recomputed. Llama-3.1-8B in bf16 on one H100: 131,072 bytes of KV per token, 2,097,152 per 16-token
block."""

from __future__ import annotations

import json

import numpy as np
import pytest
from sim_helpers import h100_8b, workload

from kokuban.cli import main
from kokuban.errors import KokubanError
from kokuban.sim import SchedulerConfig, simulate
from kokuban.sim.kvcache import HostTier, reload_seconds
from kokuban.specs.catalog import load_accelerator

BLOCK = 2_097_152


def test_host_tier_by_hand():
    tier = HostTier(capacity_bytes=10 * BLOCK + 5, bytes_per_block=BLOCK, bytes_per_s=64e9)
    assert tier.capacity == 10  # ⌊(10·2,097,152 + 5) ÷ 2,097,152⌋
    assert tier.store(1, 4) and tier.store(2, 4)
    assert tier.get(1) == 4  # 1 is now the most recently used
    assert tier.store(3, 4)  # 4 + 4 + 4 > 10: the least recently used copy (2) goes
    assert (tier.get(2), tier.get(1), tier.get(3), tier.blocks) == (0, 4, 4, 8)
    assert not tier.store(4, 11)  # larger than the tier
    # 4 blocks over PCIe 5.0 x16: 4 × 2,097,152 ÷ 64e9 = 131.072 µs
    assert tier.reload_s(4) == pytest.approx(131.072e-6, rel=1e-12)
    assert reload_seconds(4 * BLOCK, 64e9) == tier.reload_s(4)


def test_preempted_request_reloads_instead_of_recomputing():
    """A pool of 19 blocks. Request 0 (prompt 160, 40 out) prefills 10 blocks; request 1 (prompt 96, 40 out) joins
    in step 2 with 6 blocks while request 0's token 161 takes its 11th (17 used). Request 1's first decode (token
    97) takes block 7 in step 3 (18); request 0's token 177 takes its 12th in step 18 (19, none free); in step 19
    request 1's token 113 needs its 8th block: it is the newest, so it is preempted with 112 computed tokens.
    Without the tier it recomputes them (112); with it they wait in host memory, ⌈112 ÷ 16⌉ = 7 blocks, and its
    resume step also waits for the reload: at 8 blocks per second (2,097,152 × 8 bytes/s), 7 ÷ 8 = 0.875 s."""
    dep, wl = h100_8b(), workload([0.0, 1e-6], [160, 96], [40, 40])
    plain = simulate(dep, wl, SchedulerConfig(prefix_caching=False, kv_blocks=19))
    assert plain.preemptions.tolist() == [0, 1] and plain.recomputed_tokens.tolist() == [0, 112]
    cfg = SchedulerConfig(prefix_caching=False, kv_blocks=19, cpu_offload_bytes=1e12, offload_bytes_per_s=BLOCK * 8.0)
    off = simulate(dep, wl, cfg)
    assert off.preemptions.tolist() == [0, 1] and off.recomputed_tokens.tolist() == [0, 0]
    assert off.generated_tokens.tolist() == [40, 40]
    long_steps = off.step_s[off.step_s > 0.5]
    assert long_steps.size == 1 and 0.875 < long_steps[0] < 0.875 + 0.02  # the reload + one ordinary step
    # a tier too small for the 7 blocks: the request recomputes, as without one
    small = simulate(dep, wl, SchedulerConfig(prefix_caching=False, kv_blocks=19, cpu_offload_bytes=6 * BLOCK))
    assert small.recomputed_tokens.tolist() == [0, 112]


def test_evicted_prefix_comes_back_from_the_host():
    """A pool of 100 blocks; requests 1 s apart (each long done before the next): prefix A (key 1), B (key 2),
    A again, each 1,024 shared tokens (64 blocks) of a 1,100-token prompt (69 blocks), 2 out. B's request needs
    69 blocks: only 36 are free, so A's idle 64 are evicted. Without a tier the third request computes everything;
    with one A was copied out when evicted and comes back (B's idle blocks evicted in turn): it reuses 1,024 tokens
    and its first step waits 64 × 2,097,152 ÷ 64e9 = 2.097152 ms for the copy (PCIe 5.0 x16, one KV shard)."""
    dep = h100_8b()
    wl = workload([0.0, 1.0, 2.0], [1100] * 3, [2] * 3, key=[1, 2, 1], prefix=[1024] * 3)
    plain = simulate(dep, wl, SchedulerConfig(kv_blocks=100))
    off = simulate(dep, wl, SchedulerConfig(kv_blocks=100, cpu_offload_bytes=64e9))
    assert plain.cached_tokens.tolist() == [0, 0, 0]
    assert off.cached_tokens.tolist() == [0, 0, 1024]
    # the third request's first step: the reload plus a 76-token prefill (1,100 − 1,024), less than the full prefill
    first = off.step_s[np.searchsorted(off.step_start_s, 2.0)]
    assert first > 64 * BLOCK / 64e9
    assert off.ttft_s[2] < plain.ttft_s[2]
    same = simulate(dep, wl, SchedulerConfig(kv_blocks=100, cpu_offload_bytes=64e9, offload_bytes_per_s=32e9))
    # half the bandwidth: the copy takes 2.097152 ms more
    assert same.ttft_s[2] - off.ttft_s[2] == pytest.approx(64 * BLOCK / 64e9, rel=1e-6)


def test_no_tier_no_change():
    dep = h100_8b()
    wl = workload([0.0, 1e-6], [160, 96], [40, 40])
    a = simulate(dep, wl, SchedulerConfig(prefix_caching=False, kv_blocks=19))
    b = simulate(dep, wl, SchedulerConfig(prefix_caching=False, kv_blocks=19, cpu_offload_bytes=None))
    assert (a.finish_s == b.finish_s).all() and (a.step_s == b.step_s).all()


@pytest.mark.parametrize(("value", "want"), [("64GB", 64e9), ("64GiB", 64 * 2**30), ("512MB", 512e6), ("2e9", 2e9)])
def test_cli_units(capsys, value, want):
    args = ["simulate", "llama-3.1-8b", "--gpu", "l4", "--rate", "5", "--requests", "20", "--cpu-offload", value,
            "--offload-bandwidth", "50GB/s", "--json"]
    assert main(args) == 0
    sched = json.loads(capsys.readouterr().out)["scheduler"]
    assert sched["cpu_offload_bytes"] == want and sched["offload_bytes_per_s"] == 50e9


@pytest.mark.parametrize("bad", ["64XB", "nan", "-1GB", "0"])
def test_cli_refuses_bad_sizes(capsys, bad):
    assert main(["simulate", "llama-3.1-8b", "--gpu", "l4", "--rate", "5", "--cpu-offload", bad]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error:") and "--cpu-offload" in err and "\n" not in err


def test_config_refuses_nonpositive():
    with pytest.raises(KokubanError, match="offload_bytes_per_s"):
        SchedulerConfig(cpu_offload_bytes=1e9, offload_bytes_per_s=0.0).resolve(load_accelerator("l4"))
