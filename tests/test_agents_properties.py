"""Property tests (derandomized): an agent run's bill is monotone in what it does."""

from __future__ import annotations

from hypothesis import given, reject, settings
from hypothesis import strategies as st

from kokuban.errors import KokubanError
from kokuban.usecases.agent import AgentRequest, run_agent

PRICES = ["anthropic/claude-sonnet-4.5", "openai/gpt-5-mini", "deepseek/deepseek-chat", "google/gemini-2.5-pro"]
shape = {
    "steps": st.integers(1, 30),
    "system": st.integers(1, 20_000),
    "out": st.integers(1, 2000),
    "tool": st.integers(0, 3000),
    "gap": st.floats(0, 4000),
    "price": st.sampled_from(PRICES),
    "retention": st.sampled_from(["none", "standard"]),
}


def fitting_run(request):
    """run_agent, rejecting the drawn shapes whose context outgrows the model's window (a one-line error, not a
    bill): the properties are about runs that exist."""
    try:
        return run_agent(request)
    except KokubanError as err:
        if err.field == "compaction" and "window" in str(err):
            reject()
        raise


def usd(steps, system, out, tool, gap, price, retention="standard"):
    return float(fitting_run(AgentRequest(steps=str(steps), system_tokens=system, output_tokens=str(out),
                                          tool_tokens=str(tool), gap_s=repr(gap), price=price,
                                          cache_retention=retention)).chosen.run_usd[0])


@settings(max_examples=40, deadline=None, derandomize=True)
@given(**shape)
def test_more_steps_never_cheaper(steps, system, out, tool, gap, price, retention):
    assert usd(steps + 1, system, out, tool, gap, price, retention) >= usd(
        steps, system, out, tool, gap, price, retention
    )


@settings(max_examples=40, deadline=None, derandomize=True)
@given(**shape, extra=st.floats(1, 4000))
def test_longer_gaps_never_cheaper(steps, system, out, tool, gap, price, retention, extra):
    assert (
        usd(steps, system, out, tool, gap + extra, price, retention)
        >= usd(steps, system, out, tool, gap, price, retention) - 1e-12
    )


@settings(max_examples=40, deadline=None, derandomize=True)
@given(**shape)
def test_read_plus_written_is_every_prompt_token_and_bigger_results_cost_more(steps, system, out, tool, gap, price,
                                                                             retention):
    res = fitting_run(AgentRequest(steps=str(steps), system_tokens=system, output_tokens=str(out),
                                   tool_tokens=str(tool), gap_s=repr(gap), price=price, cache_retention=retention))
    df = res.steps_frame()
    assert (df["input_read_tokens"] + df["input_written_tokens"] == df["prompt_tokens"]).all()
    assert usd(steps, system, out, tool + 100, gap, price, retention) >= usd(
        steps, system, out, tool, gap, price, retention
    )


@settings(max_examples=15, deadline=None, derandomize=True)
@given(steps=st.integers(1, 8), out=st.integers(1, 300), gap=st.floats(0, 600),
       survival=st.sampled_from(["keep", "offload", "drop", "best"]))
def test_self_hosted_more_steps_never_cheaper(steps, out, gap, survival):
    def run(n):
        return float(run_agent(AgentRequest(model="llama-3.1-8b", gpu="h100-sxm", steps=str(n), system_tokens=2000,
                                            output_tokens=str(out), tool_tokens="500", gap_s=repr(gap),
                                            survival=survival)).chosen.run_usd[0])
    assert run(steps + 1) >= run(steps)
