"""Named length distributions of public datasets (issue 12, item 5): shipped histograms with their source."""

from __future__ import annotations

import tomllib

import numpy as np
import pytest

from kokuban.errors import KokubanError
from kokuban.sim.workload import lengths, synthetic
from kokuban.sim.workload.datasets import Binned, _toml, datasets, octave_histogram
from kokuban.usecases.simulate import SimulateRequest, run_simulate


def test_quarter_octave_bins_by_hand():
    # top = 10 + 1 = 11; ⌊2^(k/4)⌉ for k = 0…14: 1 1 1 2 2 2 3 3 4 5 6 7 8 10 11 → distinct below 11, then 11
    edges, counts = octave_histogram(np.array([1, 1, 3, 10]))
    assert edges == [1, 2, 3, 4, 5, 6, 7, 8, 10, 11]
    assert counts == [2, 0, 1, 0, 0, 0, 0, 0, 1]


def test_binned_mean_and_draws():
    h = Binned((1, 3, 5), (1, 3))
    # bins [1, 3) and [3, 5): means 1.5 and 3.5, weights 1 and 3: (1.5 + 3 × 3.5) / 4 = 3.0
    assert h.mean == 3.0
    x = h.draw(200_000, np.random.default_rng(0))
    assert set(np.unique(x).tolist()) == {1, 2, 3, 4}
    assert x.mean() == pytest.approx(3.0, rel=0.01)


@pytest.mark.parametrize("name", ["azure-code", "azure-conv", "mooncake-conversation", "mooncake-synthetic"])
def test_shipped_datasets_are_whole_and_sourced(name):
    d = datasets()[name]
    assert ("AzurePublicDataset/blob/790921015d50dd6aae7f7e47f39ba0e235ad6b08/data/" in d["source"]
            or "Mooncake/blob/3cca71daccf2a7afb8fe3f0295358f70e3a69fdb/FAST25-release/traces/" in d["source"])
    for field in ("prompt", "output"):
        t = d[field]
        assert sum(t["counts"]) == d["requests"] and len(t["edges"]) == len(t["counts"]) + 1
        h = Binned(tuple(t["edges"]), tuple(t["counts"]))
        assert h.mean == pytest.approx(t["histogram_mean"], abs=0.005)
        assert abs(t["histogram_mean"] - t["mean"]) < 0.01 * t["mean"]  # the bins keep the mean within 1 %


@pytest.mark.parametrize("name, requests, prompt_mean, output_mean", [
    ("mooncake-conversation", 12_031, 12_035, 343), ("mooncake-synthetic", 3_993, 15_325, 149)])
def test_mooncake_sets_match_the_papers_table(name, requests, prompt_mean, output_mean):
    # Mooncake FAST'25 paper, Table 2 "Workload Statistics": Num Requests, Avg Input Len, Avg Output Len
    d = datasets()[name]
    assert d["requests"] == requests
    assert round(d["prompt"]["mean"]) == prompt_mean and round(d["output"]["mean"]) == output_mean


def test_dataset_spec_draws_the_fields_histogram():
    wl = synthetic(20_000, 5.0, "dataset:azure-conv", "dataset:azure-conv", seed=2)
    conv = datasets()["azure-conv"]
    assert wl.prompt_tokens.mean() == pytest.approx(conv["prompt"]["histogram_mean"], rel=0.03)
    assert wl.output_tokens.mean() == pytest.approx(conv["output"]["histogram_mean"], rel=0.03)
    assert wl.prompt_tokens.max() < conv["prompt"]["edges"][-1] and wl.output_tokens.min() >= 1
    with pytest.raises(KokubanError) as err:
        lengths("dataset:sharegpt", 5, field="prompt")
    assert err.value.field == "prompt" and "azure-code" in err.value.reason
    with pytest.raises(KokubanError):
        lengths("dataset:azure-code", 5, field="spec")


def test_the_builder_reads_a_trace(tmp_path):
    trace = tmp_path / "t.csv"
    trace.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:00:00.0,10,3\n2023-11-16 18:00:01.0,1,1\n")
    table = tomllib.loads(_toml(str(trace), "tiny"))["dataset"]["tiny"]
    assert table["requests"] == 2 and table["prompt"]["mean"] == 5.5
    assert (table["prompt"]["edges"], table["prompt"]["counts"]) == octave_histogram(np.array([10, 1]))


def test_simulate_takes_a_dataset():
    d = run_simulate(SimulateRequest(model="llama-3.1-8b", gpu="h100-sxm", rate=2, requests=30,
                                     prompt="dataset:azure-code", output="dataset:azure-code")).as_dict()
    assert d["requests"] == 30
