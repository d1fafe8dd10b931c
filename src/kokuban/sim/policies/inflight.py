"""inflight — TensorRT-LLM's in-flight batching with context chunking off (its default), under the
GUARANTEED_NO_EVICT capacity scheduler (its default).

Each iteration TensorRT-LLM's batch manager walks its active requests in order, oldest first (the C++ batch
manager open-sourced in March 2025, NVIDIA/TensorRT-LLM `cpp/tensorrt_llm/batch_manager/`):

- capacity (`capacityScheduler.cpp`, `GuaranteedNoEvictScheduler`): requests already generating are kept;
  a new (context) request is started only when the free KV blocks hold its whole sequence, prompt plus
  output ("If one requests fails to be scheduled, break"), so nobody is ever evicted;
- micro-batch (`microBatchScheduler.cpp`, `MicroBatchScheduler::operator()`): a generation request takes
  one token, a context request without chunking its whole prompt; the first whose tokens would take the
  step past `max_num_tokens` ends the step ("if (maxNumTokensRuntime && batchNumTokens + reqNumTokens >
  maxNumTokensRuntime.value()) { break; }"), as does `max_batch_size` requests.

So every running request decodes one token (they are older than any new one), then waiting requests are
admitted first come first served, each with its whole prompt in this step, while the budget left holds it;
a prompt is never split over steps. Blocks for prompt + output are taken at admission, so a running request
never needs a block it has not got and nothing is preempted. A prompt longer than the whole budget (which
TensorRT-LLM refuses at build time: max_num_tokens must cover max_input_len without chunking) runs once the engine
has drained (it holds the head of the queue, so later requests wait too), in budget-sized chunks; whole prompts may
join its last chunk.
"""

from __future__ import annotations

from kokuban.sim.policies.continuous import Continuous


class Inflight(Continuous):
    """`continuous`'s step (running requests first, then FCFS admission while the budget lasts) with TensorRT-LLM's
    admission: blocks for the whole sequence reserved up front (so `continuous`'s preemption branch never runs) and
    every prompt whole in one step."""

    name = "inflight"
    steady_fast_path = False
    reserve = "all"
    whole_prompt = True
