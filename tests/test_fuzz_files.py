"""Fuzzing the file readers and the commands the first fuzz suite did not reach (issue 15, items 2 and 3).

The contract, for any file and any command line: exit 0 with finite, non-negative times and costs, or exit 2
with one line on stderr (naming the file and the field for a file) and no traceback; in Python, a value with
finite figures or a one-line `KokubanError`. `FILE_CORPUS` keeps every file that once broke a reader (found by
benchmarks/fuzz_campaign.py), `LINE_CORPUS` the command lines; the property tests draw new ones.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_fuzz_cli import check_contract

from kokuban.cli import main
from kokuban.errors import KokubanError

GOOD_PRICE = ('[[price]]\nprovider = "me"\nmodel = "m"\ninput_usd_per_m = 1.0\noutput_usd_per_m = 2.0\n'
              'source = "https://example.org"\nretrieved = "2026-01-01"\n')
GOOD_GPU = ('[[accelerator]]\nid = "lab"\nmemory_bytes = 80e9\nmemory_bandwidth_bytes_per_s = 3e12\n'
            'flops_bf16 = 1e15\n')
GOOD_CONFIG = {"model_type": "llama", "hidden_size": 512, "num_hidden_layers": 4, "num_attention_heads": 8,
               "num_key_value_heads": 4, "vocab_size": 32000, "intermediate_size": 1024,
               "max_position_embeddings": 4096}
TRACE_HEADER = "arrival_s,prompt_tokens,output_tokens\n"
AGENT_LINE = ('{"session": "a", "step": 0, "input_tokens": %s, "cached_input_tokens": 0, "output_tokens": 10, '
              '"gap_s": %s}\n')

#: The command each kind of file is given to; PATH is replaced by the file.
COMMAND = {
    "price": ["prices", "list", "--file", "PATH"],
    "price_file": ["agent", "api", "anthropic/claude-sonnet-4.5", "--preset", "swe-bench", "--price-file", "PATH"],
    "gpu": ["gpus", "--gpu-file", "PATH"],
    "eff": ["estimate", "llama-3.1-8b", "--gpu", "h100", "--efficiency-file", "PATH"],
    "trace": ["simulate", "llama-3.1-8b", "--gpu", "h100", "--trace", "PATH"],
    "agenttrace": ["agent", "api", "anthropic/claude-sonnet-4.5", "--trace", "PATH"],
    "scenario": ["agent", "api", "anthropic/claude-sonnet-4.5", "--scenario-file", "PATH"],
    "model": ["estimate", "PATH", "--gpu", "h100"],
    "vcsv": ["calibrate", "--source", "validate-csv", "--csv", "PATH"],
}

#: Files that once broke kokuban (a traceback, NaN/inf printed with exit 0, or an impossible value accepted),
#: as (kind, file name, content); a model's content is its config.json. Each must now be refused in one line.
FILE_CORPUS = [
    ("price", "nonutf8.toml", b"\xff\xfe\x00bad\x80"),                       # UnicodeDecodeError
    ("price", "list_of_text.toml", 'price = ["x", "y"]\n'),                  # AttributeError: 'str' .get
    ("price", "inf.toml", GOOD_PRICE.replace("2.0", "inf")),                 # inf printed as a price
    ("price", "fractional_window.toml", GOOD_PRICE + "context_window_tokens = 1.5\n"),  # silently int(1.5)
    ("price", "huge_window.toml", GOOD_PRICE + "context_window_tokens = 1e308\n"),
    ("price", "inf_speed.toml", GOOD_PRICE + "output_tokens_per_s = inf\n"),
    ("price", "no_such_date.toml", GOOD_PRICE.replace("2026-01-01", "2026-13-45")),
    ("price_file", "nonutf8.toml", b"\xff\xfe\x00bad\x80"),
    ("eff", "subnormal.json", '{"compute": 1e-320}'),                         # NaN times and costs
    ("eff", "huge_overhead.toml", "step_overhead_s = 1e308\n"),               # inf times
    ("eff", "bool.json", '{"compute": true}'),                                # true taken as 1.0
    ("gpu", "subnormal_bandwidth.toml", GOOD_GPU.replace("3e12", "1e-320")),  # accepted, inf times
    ("gpu", "huge_flops.toml", GOOD_GPU.replace("1e15", "1e308")),
    ("gpu", "subnormal_memory.toml", GOOD_GPU.replace("80e9", "1e-320")),
    ("trace", "nonutf8.csv", b"\xff\xfe\x00bad\x80"),                         # UnicodeDecodeError
    ("trace", "huge_prompt.csv", TRACE_HEADER + "0,1000000000000,10\n"),     # 10^12 tokens accepted
    ("trace", "bool.jsonl", '{"arrival_s": true, "prompt_tokens": true, "output_tokens": true}\n'),
    ("agenttrace", "huge_input.jsonl", AGENT_LINE % (10**12, 0)),
    ("agenttrace", "huge_gap.jsonl", AGENT_LINE % (100, 1e308)),
    ("agenttrace", "nonutf8.jsonl", b"\xff\xfe\x00bad\x80"),
    ("scenario", "nonutf8.toml", b"\xff\xfe\x00bad\x80"),
    ("model", "unknown_layer_type", json.dumps(GOOD_CONFIG | {"layer_types": ["x"] * 4})),  # accepted
    ("model", "2_to_24_layers", json.dumps(GOOD_CONFIG | {"num_hidden_layers": 2**24})),    # minutes, GBs
    ("vcsv", "setup_is_a_list.csv", "phase,batch,context,prompt_tokens,measured_s\ndecode,1,128,0,0.01\n"),
    ("vcsv", "words.csv", "phase,batch,context,prompt_tokens,measured_s\ndecode,x,y,z,w\n"),
]


def _write(tmp_path, kind: str, name: str, content: str | bytes):
    data = content.encode() if isinstance(content, str) else content
    if kind == "model":
        folder = tmp_path / name
        folder.mkdir()
        (folder / "config.json").write_bytes(data)
        return folder
    path = tmp_path / name
    path.write_bytes(data)
    if kind == "vcsv":  # the setup saved beside a validate report
        path.with_suffix(".json").write_text("[1]" if "list" in name else '{"setup": {"model": 5}}')
    return path


@pytest.mark.parametrize(("kind", "name", "content"), FILE_CORPUS, ids=[f"{k}-{n}" for k, n, _ in FILE_CORPUS])
def test_file_corpus_is_refused_in_one_line(tmp_path, capsys, kind, name, content):
    path = _write(tmp_path, kind, name, content)
    args = [str(path) if a == "PATH" else a for a in COMMAND[kind]]
    check_contract(args, capsys, expect_refusal=True)


#: Command lines that once broke kokuban, or that a newcomer types first.
VLLM_BENCH = Path(__file__).resolve().parent / "fixtures" / "vllm_bench_small.json"
LINE_CORPUS = [
    ["probe", "--out", ""],                                   # an empty output path ran the whole probe
    ["probe", "--out", "/proc/version"],                      # an existing file that refuses writing
    ["estimate", "llama-3.1-8b", "--gpu", "h100", "--compute-eff", "1e-320"],
    ["estimate", "llama-3.1-8b", "--gpu", "h100", "--price-per-hour", "1e308", "--batch", "max"],
    ["prices", "explain", "anthropic/claude-sonnet-4", "--price-per-hour", "1e300"],
    ["estimate", "meta-llama/Llama-3.1-8B", "--gpu", "h100"],
    ["estimate", "meta-llama/Nonexistent-7B", "--gpu", "h100"],
    ["estimate", "llama-3.1-8b", "--gpu", "mi300"],
    ["estimate", "llama-3.1-8b", "--gpu", "a100"],
    ["prices", "compare", "llama-3.3-70b", "--prompt", "2000", "--output", "400", "--weights", "int4-g0"],  # per row
    ["probe", "--id", "\x00"],                                # a NUL byte went into the TOML entry
    ["capacity", "llama-3.1-8b", "--gpu", "h100", "--ttft-p99", "0.5", "--ray", "nan"],  # ray's ValueError
    ["estimate", "llama-3.1-8b", "--gpu", "h100", "--weights", "fp8\nx"],  # a value's newline split the line
    ["estimate", "llama-3.1-8b", "--gpu", "h100", "--weights", ""],        # silently the default
    ["simulate", "llama-3.1-8b", "--gpu", "h100", "--rate", "5", "--requests", "20", "--output",
     "lognormal:1e308,1e308"],                                # numpy's invalid-cast warnings, then a refusal
    ["agent", "simulate", "llama-3.1-8b", "--gpu", "custom:bf16=1e-320,bw=1e-320,mem=1e308", "--preset",
     "swe-bench", "--sessions", "2"],                         # OverflowError
    ["prices", "infer", "openai/gpt-5.4-mini", "--speed", "100", "--price-per-hour", "1e-320"],  # profit ÷ cost inf
    ["prices", "infer", "openai/gpt-5.4-mini", "--speed", "100", "--kv", "int4-g99999999999"],   # never checked
    ["prices", "infer", "openai/gpt-5.4-mini", "--speed", "100", "--kv-per-token", "1e-320"],  # divide by zero
    ["context", "llama-3.1-8b", "--gpu", "h100", "--threshold", "১২"],  # 12, below the range: surcharges ×nan
    ["prices", "fleet", "deepseek/deepseek-reasoner", "--gpu", "h100", "--input-tokens", "608e9", "--output-tokens",
     "168e9", "--context", "4989", "--speed", "21", "--model", ""],  # silently the row's model
    # found by the campaign rerun over the flags that landed later
    ["agent", "api", "anthropic/claude-sonnet-4.5", "--preset", "swe-bench", "--steps", "uniform:1,2147483648"],  # OOM
    ["serving-accuracy", "--measurements-file", str(VLLM_BENCH), "--weights", "int0-g128"],  # ignored, exit 0
    ["serving-accuracy", "--measurements-file", str(VLLM_BENCH), "--model", "/nonexistent"],
    ["capacity", "llama-3.1-8b", "--gpu", "h100", "--requests", "20", "--ttft-p99", "0.5", "--candidates", "abc"],
    ["frontier", "llama-3.1-8b", "--gpu", "h100", "--counts", ",".join(["1"] * 5000)],  # swept 5,000 times
    ["lanes", "llama-3.1-8b", "--gpu", "h100", "--rate", "1e-320"],  # numpy's warning, then a refusal: two lines
]


def test_a_free_host_tier_prints_no_infinite_gap(capsys):
    """With host memory at 0 USD/GB-hour offloading is always cheaper than dropping: the break-even gap is
    infinite, printed "never" (it was "inf s"); the JSON says null."""
    args = ["agent", "self-hosted", "gpt-oss-120b", "--gpu", "h100", "--preset", "swe-bench", "--runs", "2",
            "--host-usd-per-gb-hour", "0"]
    assert main(args) == 0
    text = capsys.readouterr().out
    assert "offload = drop at never" in text and "inf" not in text


@pytest.mark.parametrize("command", [["estimate", "llama-3.1-8b", "--gpu", "h100"],
                                     ["simulate", "llama-3.1-8b", "--gpu", "h100", "--rate", "5", "--requests", "10"]])
@pytest.mark.parametrize("out_dir", ["", "/proc/version", "FILE"])
def test_an_out_dir_that_cannot_be_written_is_refused_before_the_run(tmp_path, capsys, command, out_dir):
    """--out-dir '' ran and wrote result.json into the working folder with exit 0 (found by the campaign
    after --out-dir landed); an existing file is no folder."""
    file = tmp_path / "a.csv"
    file.write_text("x")
    check_contract([*command, "--out-dir", out_dir.replace("FILE", str(file))], capsys, expect_refusal=True)


@pytest.mark.parametrize("args", [["prices", "list", "--price-file", ""],
                                  ["serving-accuracy", "--measurements-file", ""],
                                  ["frontier", "llama-3.1-8b", "--gpu", "h100", "--counts", ","]])
def test_a_list_flag_given_empty_is_refused(capsys, args):
    """A list flag given '' or ',' silently meant 'not given' (serving-accuracy then scored the bundled rows
    instead of the user's file): refused in one line."""
    check_contract(args, capsys, expect_refusal=True)


@pytest.mark.parametrize("plots", ["", "/proc/version", "FILE", "FILE/x"])
def test_a_plots_folder_that_cannot_be_written_is_refused_before_the_run(tmp_path, capsys, plots):
    """simulate --plots on an existing file was a FileExistsError after the whole run."""
    file = tmp_path / "a.csv"
    file.write_text("x")
    plots = plots.replace("FILE", str(file))
    check_contract(["simulate", "llama-3.1-8b", "--gpu", "h100", "--rate", "5", "--requests", "10", "--plots", plots],
                   capsys, expect_refusal=True)


@pytest.mark.parametrize("args", LINE_CORPUS)
def test_line_corpus_keeps_the_contract(args, capsys):
    check_contract(args, capsys)


def test_an_unknown_hugging_face_id_says_what_to_do(capsys):
    check_contract(["estimate", "meta-llama/Nonexistent-7B", "--gpu", "h100"], capsys, expect_refusal=True)
    err = capsys.readouterr().err
    del err  # check_contract read it; the wording is checked in Python below
    from kokuban.specs.catalog import load_model

    with pytest.raises(KokubanError) as info:
        load_model("meta-llama/Nonexistent-7B")
    message = str(info.value)
    assert "hf download" in message and "coarse:" in message and "folder" in message, message


# ---- property tests: the Python API of each reader ----------------------------------------------------------
ODD = st.sampled_from([0, -1, 1.5, "4096", None, True, 2**63, 10**400, float("nan"), float("inf"), 1e-320, [], {},
                       2**24, 3, "", "x"])


def _one_line(exc: KokubanError) -> None:
    assert "\n" not in str(exc) and str(exc), repr(exc)


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(changes=st.dictionaries(st.sampled_from(sorted(GOOD_CONFIG) + ["head_dim", "sliding_window",
                                                                      "num_local_experts", "tie_word_embeddings"]),
                               ODD, min_size=1, max_size=3))
def test_any_config_json_reads_or_is_refused_in_one_line(tmp_path, changes):
    from kokuban.specs.model import ModelSpec

    config = {k: v for k, v in (GOOD_CONFIG | changes).items() if v is not None}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))  # NaN and Infinity written as JSON's extensions, as Python reads them
    try:
        spec = ModelSpec.from_file(path)
    except KokubanError as exc:
        _one_line(exc)
        assert "config" in str(exc)
        return
    for value in (spec.params_total, spec.kv_bytes_per_token("bf16")):
        assert math.isfinite(value) and value >= 0
    assert spec.params_total > 0 and spec.num_layers >= 1 and spec.max_context >= 1


GPU_FIELDS = ["memory_bytes", "memory_bandwidth_bytes_per_s", "flops_bf16", "flops_fp8", "interconnect_bytes_per_s",
              "price_per_hour_usd"]


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(changes=st.dictionaries(st.sampled_from(GPU_FIELDS), ODD, min_size=1, max_size=3))
def test_any_accelerator_entry_reads_or_is_refused_in_one_line(tmp_path, changes):
    from kokuban.specs.catalog import read_accelerator_file

    entry = {"id": "lab", "memory_bytes": 80e9, "memory_bandwidth_bytes_per_s": 3e12, "flops_bf16": 1e15}
    entry = {k: v for k, v in (entry | changes).items() if v is not None}
    path = tmp_path / "lab.json"
    path.write_text(json.dumps([entry]))
    try:
        acc = read_accelerator_file(path)["lab"]
    except KokubanError as exc:
        _one_line(exc)
        assert "lab.json" in str(exc)
        return
    for name in ("memory_bytes", "memory_bandwidth_bytes_per_s", "interconnect_bytes_per_s", "price_per_hour_usd"):
        value = getattr(acc, name)
        assert isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value >= 0
    assert acc.memory_bytes >= 1e6 and acc.memory_bandwidth_bytes_per_s >= 1e6


PRICE_FIELDS = ["input_usd_per_m", "output_usd_per_m", "cached_input_usd_per_m", "context_window_tokens",
                "output_tokens_per_s", "batch_multiplier", "retrieved"]
TOML_VALUES = st.sampled_from(["0", "-1", "1.5", '"4"', "true", "nan", "inf", "-inf", "1e308", "1e-320", "[]",
                               '"2026-02-30"', '"2026-01-01"', "3", "9223372036854775807"])


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(changes=st.dictionaries(st.sampled_from(PRICE_FIELDS), TOML_VALUES, min_size=1, max_size=3))
def test_any_price_row_reads_or_is_refused_in_one_line(tmp_path, changes):
    from kokuban.prices.sheets import read_price_file

    lines = [line for line in GOOD_PRICE.splitlines() if line.split(" = ")[0] not in changes]
    path = tmp_path / "sheet.toml"
    path.write_text("\n".join(lines + [f"{k} = {v}" for k, v in changes.items()]) + "\n")
    try:
        (row,) = read_price_file(path)
    except KokubanError as exc:
        _one_line(exc)
        assert "sheet.toml" in str(exc)
        return
    for key, value in row.as_dict().items():
        if isinstance(value, float):
            assert math.isfinite(value), (key, value)
            if key.endswith("_per_m"):
                assert value >= 0, (key, value)


TRACE_CELLS = st.sampled_from(["0", "1", "-1", "1.5", "nan", "inf", "1e12", "1e308", "", "x", "100", "2147483649",
                               " 7", "1e-320"])


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(st.tuples(TRACE_CELLS, TRACE_CELLS, TRACE_CELLS), min_size=1, max_size=4))
def test_any_trace_reads_or_is_refused_in_one_line(tmp_path, rows):
    import numpy as np

    from kokuban.sim.workload.traces import read_trace

    path = tmp_path / "t.csv"
    path.write_text(TRACE_HEADER + "".join(",".join(r) + "\n" for r in rows))
    try:
        work = read_trace(path)
    except KokubanError as exc:
        _one_line(exc)
        assert "t.csv" in str(exc)
        return
    assert np.all(np.isfinite(work.arrival_s)) and np.all(work.arrival_s >= 0)
    assert np.all(work.prompt_tokens >= 1) and np.all(work.prompt_tokens <= 2**31)
    assert np.all(work.output_tokens >= 1) and np.all(work.output_tokens <= 2**31)


EFF_FIELDS = ["compute", "memory", "interconnect", "kv_memory", "overlap", "step_overhead_s", "collective_latency_s"]


@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(changes=st.dictionaries(st.sampled_from(EFF_FIELDS), ODD, min_size=1, max_size=3))
def test_any_efficiency_file_reads_or_is_refused_in_one_line(tmp_path, changes):
    from kokuban.core.roofline import decode_step
    from kokuban.specs.catalog import load_accelerator, load_model
    from kokuban.specs.deployment import Deployment
    from kokuban.specs.hardware import Efficiency

    path = tmp_path / "eff.json"
    path.write_text(json.dumps(changes))
    try:
        eff = Efficiency.from_file(str(path))
    except KokubanError as exc:
        _one_line(exc)
        assert "eff.json" in str(exc)
        return
    dep = Deployment.make(load_model("llama-3.1-8b"), load_accelerator("h100-sxm"), 1, efficiency=eff)
    step = decode_step(dep, 8, 4096)
    assert math.isfinite(float(step.step_time_s)) and float(step.step_time_s) > 0


# ---- property test: the commands the first fuzz suite does not drive, with the units people write -----------
VALUES = st.sampled_from(["0", "-1", "-0", "nan", "inf", "1e999", "1e308", "1e-320", "", " 5", "5,", "0x10", "５",
                          "2kk", "2k", "500mss", "500ms", "-1ms", "abc", str(2**63), "1.5"])
LINES = {
    "prices explain": (["anthropic/claude-sonnet-4"], ["--input-price", "--output-price", "--context", "--prompt",
                                                       "--speed", "--price-per-hour", "--gpus"]),
    "prices infer": (["openai/gpt-5.4-mini"], ["--speed", "--batch", "--prompt", "--kv-per-token",
                                               "--total-over-active", "--context"]),
    "prices compare": (["llama-3.3-70b", "--prompt", "2000", "--output", "400"],
                       ["--prompt", "--output", "--requests", "--cache-hit", "--speed"]),
    "frontier": (["llama-3.1-8b", "--gpu", "h100"], ["--counts", "--context", "--slo-tps", "--slo-ttft"]),
    "agent api": (["anthropic/claude-sonnet-4.5", "--preset", "swe-bench"],
                  ["--runs", "--system-tokens", "--output-tokens", "--gap-s", "--cache-ttl-s", "--start-utc-hour",
                   "--steps"]),
    "simulate": (["llama-3.1-8b", "--gpu", "h100", "--requests", "50"],
                 ["--rate", "--requests", "--prompt", "--output", "--ttft-slo", "--max-num-seqs", "--seed",
                  "--block-size"]),
}


@st.composite
def other_command_lines(draw):
    name = draw(st.sampled_from(sorted(LINES)))
    base, flags = LINES[name]
    args = [*name.split(), *base]
    for flag in draw(st.lists(st.sampled_from(flags), min_size=1, max_size=2, unique=True)):
        args += [flag, draw(VALUES)]
    if name == "simulate" and "--rate" not in args:
        args += ["--rate", "5"]
    return args


@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(args=other_command_lines())
def test_any_other_command_line_keeps_the_contract(args, capsys):
    check_contract(args, capsys)


def test_a_probe_file_without_a_name_is_named_by_its_id(tmp_path):
    """validate printed a KeyError for a valid accelerator file without the optional `name`."""
    from kokuban.validation.harness import read_probe_entry

    path = tmp_path / "lab.toml"
    path.write_text(GOOD_GPU)
    assert read_probe_entry(str(path))["name"] == "lab"


@pytest.mark.parametrize("content", ['accelerator = "h100"\n', GOOD_GPU.replace("3e12", "1e-320")])
def test_a_bad_probe_file_is_one_line_naming_it(tmp_path, content):
    """validate's own reader of --gpu-file took a string for a table (AttributeError) and tiny figures."""
    from kokuban.validation.harness import read_probe_entry

    path = tmp_path / "lab.toml"
    path.write_text(content)
    with pytest.raises(KokubanError, match="lab.toml") as info:
        read_probe_entry(str(path))
    _one_line(info.value)


def test_a_spreadsheet_csv_with_a_byte_order_mark_and_crlf_is_read(tmp_path):
    """Excel writes UTF-8 CSVs with a byte-order mark and CRLF line ends; the BOM made the first column unknown."""
    from kokuban.usecases.validation import read_measurements

    path = tmp_path / "mine.csv"
    path.write_bytes("\ufeffmodel,gpu,gpus,batch,prompt,output,metric,value,unit,source\r\n"
                     "llama-3.1-8b,h100-sxm,1,8,1000,100,output_tokens_per_s,1000,tokens/s,me\r\n".encode())
    (row,) = read_measurements(str(path))
    assert (row.model, row.value) == ("llama-3.1-8b", 1000.0)
