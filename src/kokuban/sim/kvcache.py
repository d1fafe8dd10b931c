"""The paged KV cache: fixed-size blocks, the capacity the core's memory model leaves, and a prefix cache.

Capacity (blocks in the whole deployment):
    free bytes per GPU = HBM × memory_utilization − weights per GPU − activations(max_num_seqs)
                         (kokuban.memory: usable − weights − activations, the logits of max_num_seqs requests;
                         with an engine's memory rule, `memory.memory_budget`'s KV bytes)
    bytes per block per GPU = attention KV bytes of `block_size` tokens ÷ KV shards
    blocks = ⌊free ÷ bytes per block⌋ under TP;  × N under EP (each GPU holds whole requests)
This is vLLM's `num_gpu_blocks` (profiled free memory ÷ page size). A request holding c tokens uses
⌈c ÷ block_size⌉ blocks on every layer; sliding-window and chunked layers are charged as full layers
(vLLM's hybrid allocator frees out-of-window blocks; not modelled, so windowed models are conservative).
Linear-attention (Gated DeltaNet) state is constant per sequence, not per token: it is reserved up front
for every sequence slot the scheduler may run (max_num_seqs, as vLLM's mamba cache keeps one state slot
per running sequence) and taken out of the free bytes before they are cut into blocks:
    free bytes per GPU −= requests per GPU(max_num_seqs) × state bytes per request ÷ state shards
Blocks then count attention KV only (bytes of `block_size` tokens of the attention layers).

Prefix cache (vLLM `--enable-prefix-caching`, on by default in V1): a request whose prompt starts with a
shared prefix that is already cached reuses its ⌊prefix ÷ block_size⌋ full blocks and skips computing
them. A prefix becomes cached when the first request carrying it has computed it (session prefixes
grow to a turn's whole context when the turn ends). Cached blocks nobody uses stay until the
allocator needs them, then are evicted least recently used first, a whole prefix at a time
(vLLM evicts single blocks; the coarser grain is a simplification).

Host tier (`HostTier`, a CPU KV offload: vLLM's CPU offloading connector / LMCache, SGLang's HiCache): KV copied to
host memory of C bytes, kept least recently used first out. A copy of b bytes comes back in
    reload = b ÷ BW                                                      (`reload_seconds`)
The scheduler's pool puts an evicted prefix there, and a preempted request's computed KV (instead of throwing it
away to recompute it); agent sessions' offload retention keeps contexts there between calls (`sessions`).
"""

from __future__ import annotations

from collections import OrderedDict

from kokuban.core import memory
from kokuban.errors import KokubanError
from kokuban.specs.deployment import Deployment

BLOCK_SIZE = 16  # vLLM's default --block-size on CUDA (CacheConfig.block_size = 16)


def capacity_blocks(dep: Deployment, block_size: int = BLOCK_SIZE, max_num_seqs: int = 256) -> int:
    """KV blocks the deployment can hold (see module docstring); raises if the weights leave no room."""
    weights = memory.weight_bytes_per_gpu(dep)
    act = float(memory.activation_bytes_per_gpu(dep, memory.requests_per_gpu(dep, max_num_seqs)))
    usable, free = (float(x) for x in memory.memory_budget(dep, act))
    per_block = float(memory.attention_kv_bytes_per_request(dep, block_size)) / dep.kv_shards
    reserved = ""
    if dep.model.has_state:
        slots = float(memory.requests_per_gpu(dep, max_num_seqs))
        state = slots * memory.state_bytes_per_request(dep) / dep.state_shards
        free -= state
        reserved = f" + linear-attention state of {max_num_seqs} sequences {state / 1e9:.2f} GB"
    if free < per_block:
        raise KokubanError(
            f"no room for a KV cache on {dep.describe()}: weights {weights / 1e9:.2f} GB + activations "
            f"{act / 1e9:.2f} GB{reserved} exceed the usable {usable / 1e9:.2f} GB per GPU by "
            f"{(per_block - free) / 1e9:.2f} GB"
        )
    blocks = int(free // per_block)
    return blocks * dep.parallel.data_parallel_ranks


def reload_seconds(kv_bytes: float, host_bytes_per_s: float) -> float:
    """Seconds to bring KV back from the host tier: b ÷ BW."""
    return kv_bytes / host_bytes_per_s


class HostTier:
    """KV copies in host memory: key → blocks, at most ⌊capacity_bytes ÷ bytes_per_block⌋ blocks, the least
    recently used copies dropped to make room; a reload of b blocks takes `reload_seconds(b·bytes_per_block, BW)`."""

    def __init__(self, capacity_bytes: float, bytes_per_block: float, bytes_per_s: float) -> None:
        self.bytes_per_block, self.bytes_per_s = float(bytes_per_block), float(bytes_per_s)
        self.capacity = int(capacity_bytes // self.bytes_per_block)
        self.entries: OrderedDict[int, int] = OrderedDict()  # least recently used first
        self.blocks = 0

    def store(self, key: int, blocks: int) -> bool:
        """Copy `blocks` blocks under `key` (replacing its copy), dropping LRU copies; False if it cannot fit."""
        if blocks > self.capacity:
            return False
        self.blocks -= self.entries.pop(key, 0)
        while self.blocks + blocks > self.capacity:
            self.blocks -= self.entries.popitem(last=False)[1]
        self.entries[key] = int(blocks)
        self.blocks += int(blocks)
        return True

    def get(self, key: int) -> int:
        """Blocks of `key`'s copy (0 if none), marked as just used."""
        blocks = self.entries.get(key, 0)
        if blocks:
            self.entries.move_to_end(key)
        return blocks

    def pop(self, key: int) -> int:
        blocks = self.entries.pop(key, 0)
        self.blocks -= blocks
        return blocks

    def reload_s(self, blocks: int) -> float:
        """`reload_seconds` of `blocks` blocks."""
        return reload_seconds(blocks * self.bytes_per_block, self.bytes_per_s)


def blocks_for(tokens: int, block_size: int) -> int:
    """⌈tokens ÷ block_size⌉."""
    return -(-int(tokens) // block_size)


class BlockPool:
    """Free blocks plus the prefix cache. Counts only: block identities do not matter to the timing."""

    def __init__(self, total_blocks: int, block_size: int, host: HostTier | None = None) -> None:
        self.host = host  # where evicted prefixes go (None: they are dropped)
        self.total = int(total_blocks)
        self.block_size = int(block_size)
        self.free = int(total_blocks)
        self.cached: dict[int, list[int]] = {}  # key → [blocks, users]
        self.idle: OrderedDict[int, int] = OrderedDict()  # keys with no users, least recently used first
        self.idle_blocks = 0

    @property
    def available(self) -> int:
        """Blocks an allocation can get: free ones plus cached ones nobody uses (evictable)."""
        return self.free + self.idle_blocks

    @property
    def used(self) -> int:
        """Blocks holding live KV (requests' own blocks and prefixes someone is using)."""
        return self.total - self.free - self.idle_blocks

    def take(self, blocks: int) -> None:
        """Allocate `blocks` (caller checked `available`), evicting idle prefixes LRU if needed."""
        while self.free < blocks:
            key, n = self.idle.popitem(last=False)
            del self.cached[key]
            self.idle_blocks -= n
            self.free += n
            if self.host is not None:
                self.host.store(key, n)
        self.free -= blocks

    def give(self, blocks: int) -> None:
        self.free += blocks

    # ---- prefix cache -----------------------------------------------------------------------------------
    def lookup(self, key: int) -> int:
        """Cached full blocks of prefix `key` (0 if none)."""
        entry = self.cached.get(key)
        return entry[0] if entry else 0

    def acquire(self, key: int) -> None:
        """Count one more user of `key` (which must be cached)."""
        entry = self.cached[key]
        if entry[1] == 0:
            del self.idle[key]
            self.idle_blocks -= entry[0]
        entry[1] += 1

    def trim(self, key: int, blocks: int) -> int:
        """Cut prefix `key` down to its first `blocks` blocks if its only user needs no more; returns the
        blocks freed (vLLM frees unused blocks one by one; whole prefixes make this step necessary)."""
        entry = self.cached.get(key)
        if entry is None or entry[1] != 1 or entry[0] <= blocks:
            return 0
        freed = entry[0] - blocks
        entry[0] = blocks
        self.free += freed
        return freed

    def restore(self, key: int, blocks: int) -> None:
        """Put `blocks` blocks of prefix `key` (not cached now) back, as a reload from a host tier does: they
        are allocated (caller checked `available`) and held by one user, the reload, until `release`."""
        self.take(blocks)
        self.cached[key] = [int(blocks), 1]

    def release(self, key: int) -> None:
        entry = self.cached.get(key)
        if entry is None:
            return
        entry[1] -= 1
        if entry[1] == 0:
            self.idle[key] = entry[0]
            self.idle_blocks += entry[0]

    def publish(self, key: int, blocks: int, own_from: int, own_blocks: int, user: bool) -> int:
        """A request computed `blocks` full blocks of prefix `key`; its own blocks start at block
        `own_from` (the ones it shared at admission) and it holds `own_blocks` of them.

        The cache for `key` grows to `blocks` by taking the request's blocks beyond what is cached
        (duplicates are freed). Returns how many of its own blocks the request gives up. `user`:
        whether the request already counts as a user of `key`. Growing a prefix another request is
        using is not done (it would have to copy); the request keeps its blocks.
        """
        entry = self.cached.get(key)
        current = entry[0] if entry else 0
        if blocks <= current or (entry and entry[1] > (1 if user else 0)):
            return 0
        moved = min(blocks, own_from + own_blocks) - own_from  # own blocks covering [own_from, blocks)
        if moved <= 0:
            return 0
        duplicates = max(0, current - own_from)  # own blocks that duplicate cached ones
        self.free += duplicates
        if entry is None:
            self.cached[key] = [own_from + moved, 1]
        else:
            if entry[1] == 0:
                del self.idle[key]
                self.idle_blocks -= entry[0]
            entry[0] = own_from + moved
            entry[1] = 1
        return moved
