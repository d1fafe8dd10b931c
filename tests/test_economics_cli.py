"""The five commands: JSON shape, CSV and plot files, one-line errors."""

from __future__ import annotations

import pandas as pd
import pytest

from kokuban.cli import main

ROW_KEYS = {"batch", "bound", "compute_s_per_token", "weights_s_per_token", "kv_s_per_token", "tokens_per_s",
            "tokens_per_s_per_user", "usd_per_m_output"}




def test_batch_json_csv_plot(cli_json, capsys, tmp_path):
    csv, png = tmp_path / "b.csv", tmp_path / "b.png"
    out = cli_json(
        ["batch", "llama-3.1-8b", "--gpu", "h100-sxm", "--context", "1024", "--csv", str(csv), "--plot", str(png)],
    )
    assert ROW_KEYS <= set(out["rows"][0])
    assert [r["batch"] for r in out["rows"]] == list(range(1, out["summary"]["max_batch_fits"] + 1))
    assert out["summary"]["crossover_batch"] is None and out["summary"]["input_output"]["output_to_input_ratio"] > 1
    assert len(pd.read_csv(csv)) == len(out["rows"])
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# the textbook fractions (Efficiency.textbook(): the scalar set's fields at 0.6 / 0.8 / 0.75 / 0 s, no kernel curves)
# that the hand-derived numbers in test_economics*.py use
TEXTBOOK = ["--efficiency-file", "scalar", "--compute-eff", "0.6", "--memory-eff", "0.8", "--link-eff", "0.75",
            "--step-overhead", "0"]


def test_batch_readable(capsys):
    assert main(["batch", "llama-3.1-70b", "--gpu", "h100-sxm", "--gpus", "4", "--context", "1024", "--batch", "64",
                 *TEXTBOOK]) == 0
    text = capsys.readouterr().out
    # c = 2·70.55e9 ÷ 4 ÷ 593.64e12 = 59.4 µs per request > its KV read 31.3 µs, so the crossover is the
    # weights-only one: w ÷ c = 221.5 × (bf16 read ÷ active ≈ 1.0) → 222
    assert "compute-bound from batch 222" in text and "An output token costs" in text


def test_io_lanes_frontier_context(cli_json, capsys, tmp_path):
    io = cli_json(["io", "llama-3.1-8b", "--gpu", "h100-sxm", "--batch", "8", "--context", "2048"])
    assert io["prefill_bound"] == "compute" and io["output_to_input_ratio"] > 1
    lanes = cli_json(
        [
            "lanes",
            "llama-3.1-8b",
            "--gpu",
            "h100-sxm",
            "--rate",
            "5",
            "--tpot",
            "0.012",
            "--ttft",
            "2",
            "--plot",
            str(tmp_path / "l.svg"),
        ],
    )
    assert ROW_KEYS <= set(lanes["rows"][0]) and lanes["summary"]["lanes"]["price_multiplier"] > 1
    assert (tmp_path / "l.svg").read_text().lstrip().startswith("<?xml")
    fr = cli_json(["frontier", "llama-3.1-8b", "--gpu", "h100-sxm", "--counts", "1,2", "--slo-tps", "100",
                           "--plot", str(tmp_path / "f.png")])
    assert fr["summary"]["cheapest_meeting_slo"]["tokens_per_s_per_user"] >= 100
    assert ROW_KEYS <= set(fr["rows"][0]) and (tmp_path / "f.png").exists()
    cx = cli_json(
        ["context", "llama-3.1-8b", "--gpu", "h100-sxm", "--points", "8", "--plot", str(tmp_path / "c.png"), *TEXTBOOK],
    )
    assert cx["summary"]["bandwidth_wall_context"] == 517 and ROW_KEYS <= set(cx["rows"][0])


def test_context_beyond_max_warns(capsys):
    assert main(["context", "llama-3.1-8b", "--gpu", "h100-sxm", "--to", "200000", "--points", "4", "--json"]) == 0
    assert "warning: context up to 200000 is beyond llama-3.1-8b's maximum of 131072" in capsys.readouterr().err


@pytest.mark.parametrize(
    "args,msg",
    [
        (
            ["batch", "llama-3.1-8b", "--gpu", "h100-sxm", "--max-batch", "5000"],
            "does not fit: the largest batch that fits",
        ),
        (
            ["batch", "llama-3.1-8b", "--gpu", "h100-sxm", "--plot", "x.jpg"],
            "--plot: plot file 'x.jpg' must end in one of .png",
        ),
        (
            ["lanes", "llama-3.1-8b", "--gpu", "h100-sxm", "--rate", "5", "--tpot", "0.001"],
            "--tpot-slo: no batch meets 0.001 s per output token",
        ),
        (
            ["frontier", "llama-3.1-8b", "--gpu", "h100-sxm", "--slo-tps", "5000"],
            "no configuration reaches 5000 tokens/s per user",
        ),
        (
            ["frontier", "llama-3.1-8b", "--gpu", "h100-sxm", "--counts", "1,x"],
            "--counts: must be a comma-separated list of positive integers, got '1,x'",
        ),
        (
            ["frontier", "llama-3.1-8b", "--gpu", "h100-sxm", "--counts", "0,2"],
            "--counts: must list positive integers, got '0,2'",
        ),
        (
            ["frontier", "llama-3.1-8b", "--gpu", "h100-sxm", "--layouts", "tp,pp"],
            "--layouts: must list tp and/or ep, got 'tp,pp'",
        ),
        (
            ["batch", "llama-3.1-8b", "--gpu", "h100-sxm", "--max-batch", "8", "--batch", "9"],
            "--batch: 9 is outside the curve's range 1–8",
        ),
        (
            ["batch", "llama-3.1-8b", "--gpu", "h100-sxm", "--min-batch", "0"],
            "--min-batch: input should be greater than 0",
        ),
        (
            ["lanes", "llama-3.1-8b", "--gpu", "h100-sxm", "--rate", "0"],
            "--rate: input should be greater than or equal to 0.000000001, got 0.0",
        ),
        (
            ["lanes", "llama-3.1-8b", "--gpu", "h100-sxm", "--rate", "5", "--output", "1"],
            "--output-tokens: must be at least 2 tokens",
        ),
        (
            ["io", "llama-3.1-8b", "--gpu", "h100-sxm", "--context", "200000"],
            "--context: 200000 exceeds llama-3.1-8b's maximum",
        ),
        (["context", "llama-3.1-8b", "--gpu", "h100-sxm", "--from", "9000", "--to", "100"], "empty context range"),
        (["io", "llama-3.1-8b", "--gpu", "h10"], "unknown gpu 'h10'"),
    ],
)
def test_errors_are_one_line(capsys, args, msg):
    assert main(args) == 2
    err = capsys.readouterr().err
    assert msg in err and err.count("\n") == 1
