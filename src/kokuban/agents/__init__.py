"""Agent runs: a loop of calls whose context grows, priced on an API sheet or on your own deployment.

    scenario.py    what a run is (steps, system prefix, outputs, tool results, gaps, fan-out), sampled runs,
                   traces of real steps (JSONL)
    compaction.py  turn a run into its calls (agent steps and summary calls) under a compaction policy
    api.py         the calls billed on a price sheet: cache writes vs reads, TTL expiry, long-context tier,
                   lanes, off-peak hours
    survival.py    three ways for a session's KV to survive a tool call (keep, offload, drop) and their
                   break-even gaps, in closed form
    selfhost.py    the calls timed and priced on a deployment from the core (prefill of the uncached part,
                   decode at the growing context, the survival cost of each gap)
    presets.py     scenarios built only from published statistics (data/agent_presets.toml)

The physics and the money come from the core (`core.roofline`, `core.memory`, `core.cost`); nothing here
restates a formula of theirs. A wing: it imports specs, core and the price dataset, never a face.
"""
