"""Files read through schemas: a model's config.json and an accelerator file. Every fault is one KokubanError
line naming the file and the field (and the line, for a syntax error); each case writes its own file here."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kokuban.cli import main
from kokuban.errors import KokubanError
from kokuban.present.jsonout import read_result
from kokuban.specs.catalog import DATA, load_accelerator, load_model, read_accelerator_file
from kokuban.specs.model import SUPPORTED_TYPES, parse_config
from kokuban.specs.schemas import AcceleratorSchema, TextConfigSchema

TINY = {
    "model_type": "llama", "hidden_size": 512, "num_hidden_layers": 4, "num_attention_heads": 8,
    "num_key_value_heads": 2, "intermediate_size": 1024, "vocab_size": 1000, "max_position_embeddings": 2048,
}
LAB = {"id": "lab", "memory_bytes": 80e9, "memory_bandwidth_bytes_per_s": 2e12, "flops_bf16": 400e12}


def refusal(load, path) -> str:
    """The one-line message `load(path)` refuses the file with; it names the file."""
    with pytest.raises(KokubanError) as err:
        load(str(path))
    message = str(err.value)
    assert "\n" not in message and str(path) in message
    return message


def write_config(tmp_path, config, name="config.json"):
    path = tmp_path / name
    path.write_text(json.dumps(config))
    return path


# ---- config.json ------------------------------------------------------------------------------------------
def test_the_tiny_config_itself_is_fine(tmp_path):
    assert load_model(str(write_config(tmp_path, TINY))).hidden_size == 512


@pytest.mark.parametrize(("change", "expected"), [
    ({"hidden_size": None}, "is missing the field 'hidden_size'"),
    ({"num_hidden_layers": None}, "is missing the field 'num_hidden_layers'"),
    ({"hidden_size": "512"}, "field 'hidden_size' should be a valid integer, got '512'"),
    ({"hidden_size": 512.0}, "field 'hidden_size' should be a valid integer, got 512.0"),
    ({"num_hidden_layers": True}, "field 'num_hidden_layers' should be a valid integer, got True"),
    ({"num_attention_heads": 0}, "field 'num_attention_heads' should be greater than 0, got 0"),
    ({"num_key_value_heads": -2}, "field 'num_key_value_heads' should be greater than 0, got -2"),
    ({"vocab_size": [1000]}, "field 'vocab_size' should be a valid integer, got [1000]"),
    # 500 = 8 · 62.5: the heads do not divide the hidden size, and no head_dim says otherwise
    ({"hidden_size": 500}, "hidden_size 500 is not divisible by num_attention_heads 8"),
    # 8 query heads cannot share 3 KV heads evenly
    ({"num_key_value_heads": 3}, "num_key_value_heads 3 does not divide num_attention_heads 8"),
    ({"layer_types": ["full_attention"] * 3}, "layer_types lists 3 layers for num_hidden_layers 4"),
    ({"max_position_embeddings": 0}, "field 'max_position_embeddings' should be greater than 0, got 0"),
])
def test_a_bad_field_is_one_line_naming_file_and_field(tmp_path, change, expected):
    config = {k: v for k, v in (TINY | change).items() if v is not None}
    path = write_config(tmp_path, config)
    assert expected in refusal(load_model, path)


def test_head_dim_lets_heads_not_divide_hidden(tmp_path):
    # Gemma-style: 8 heads of 256 on a hidden size of 1000 (1000 / 8 is not an integer, but head_dim is given)
    spec = load_model(str(write_config(tmp_path, TINY | {"hidden_size": 1000, "head_dim": 256})))
    assert spec.kv_elements_per_token_per_layer == 2 * 2 * 256


def test_an_moe_routing_more_experts_than_it_has(tmp_path):
    moe = TINY | {"model_type": "mixtral", "num_local_experts": 4, "num_experts_per_tok": 6}
    assert "num_experts_per_tok 6 exceeds the 4 experts" in refusal(load_model, write_config(tmp_path, moe))


@pytest.mark.parametrize(("content", "expected"), [
    (b"", "is empty"),
    (b"  \n\t\n", "is empty"),
    (b'{"model_type": "llama",\n "name": "caf\xe9"}', "is not UTF-8 text (byte 0xe9 on line 2)"),
    (b'{\n  "hidden_size": 512,\n  oops\n}', "is not valid JSON: line 3, column 3"),
    (b'[1, 2, 3]', "must hold a JSON object, not a list"),
    (b'"llama"', "must hold a JSON object, not a str"),
])
def test_an_unreadable_config_file_is_one_line(tmp_path, content, expected):
    path = tmp_path / "config.json"
    path.write_bytes(content)
    assert expected in refusal(load_model, path)


def test_a_missing_config_file(tmp_path):
    assert "cannot read config" in refusal(load_model, tmp_path / "absent.json")


def test_a_utf8_byte_order_mark_is_fine(tmp_path):
    path = tmp_path / "config.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(TINY).encode())
    assert load_model(str(path)).num_layers == 4


def test_an_unknown_model_type_lists_the_known_and_the_coarse_way(tmp_path):
    falcon = TINY | {"model_type": "falcon"}
    message = refusal(load_model, write_config(tmp_path, falcon))
    assert "model_type 'falcon', which kokuban does not parse" in message
    assert all(t in message for t in SUPPORTED_TYPES)
    # KV bytes per token at 16 bits = 2 (K and V) · 4 layers · 2 KV heads · 64 head dim · 2 bytes = 2048
    assert "coarse:total=<parameters>,active=<active parameters>,kv=2048" in message


def test_config_errors_are_about_the_model_field(tmp_path):
    with pytest.raises(KokubanError) as err:
        load_model(str(write_config(tmp_path, TINY | {"num_attention_heads": 0})))
    assert err.value.field == "model"


def test_cli_bad_config_exit_2_one_line(tmp_path, capsys):
    path = write_config(tmp_path, TINY | {"num_attention_heads": 0})
    assert main(["estimate", str(path), "--gpu", "h100-sxm", "--json"]) == 2
    out, err = capsys.readouterr()
    assert err.count("\n") == 1
    assert err.startswith(f"error: MODEL: config '{path}': field 'num_attention_heads'")
    # asked for --json, the refusal is JSON on stdout too (the same message), so a script can read it
    assert read_result(out)["error"]["message"] == err.removeprefix("error: ").rstrip("\n")


# ---- accelerator files ------------------------------------------------------------------------------------
def toml_entry(entry):
    lines = ["[[accelerator]]"]
    for key, value in entry.items():
        lines.append(f"{key} = {json.dumps(value)}")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("suffix", [".toml", ".json"])
def test_a_good_file_in_either_format(tmp_path, suffix):
    path = tmp_path / f"lab{suffix}"
    path.write_text(toml_entry(LAB) if suffix == ".toml" else json.dumps([LAB]))
    assert read_accelerator_file(path)["lab"].memory_bytes == 80e9


@pytest.mark.parametrize(("change", "expected"), [
    ({"memory_bytes": None}, "entry 1 ('lab') is missing the field 'memory_bytes'"),
    ({"memory_bytes": "80e9"}, "entry 1 ('lab'): field 'memory_bytes' should be a valid number, got '80e9'"),
    ({"memory_bandwidth_bytes_per_s": 0},
     "field 'memory_bandwidth_bytes_per_s' should be greater than or equal to 1000000, got 0"),
    # a subnormal bandwidth is positive, but every time divided by it overflows: below 1 MB/s is refused
    ({"memory_bandwidth_bytes_per_s": 1e-320},
     "field 'memory_bandwidth_bytes_per_s' should be greater than or equal to 1000000, got 1e-320"),
    ({"flops_bf16": 1e308}, "field 'flops_bf16' should be less than or equal to 1e+21, got 1e+308"),
    ({"price_per_hour_usd": -1}, "field 'price_per_hour_usd' should be greater than or equal to 0, got -1"),
    ({"flops_bf16": None}, "entry 1 ('lab'): needs flops_bf16 or flops_fp16"),
    ({"id": ""}, "entry 1 (''): field 'id' string should have at least 1 character, got ''"),
    ({"sources": "a datasheet"}, "field 'sources' should be a valid list"),
])
def test_a_bad_accelerator_field_names_file_entry_and_field(tmp_path, change, expected):
    entry = {k: v for k, v in (LAB | change).items() if v is not None}
    path = tmp_path / "lab.toml"
    path.write_text(toml_entry(entry))
    assert expected in refusal(read_accelerator_file, path)


def test_a_non_finite_figure_in_json(tmp_path):
    path = tmp_path / "lab.json"
    path.write_text('[{"id": "lab", "memory_bytes": NaN, "memory_bandwidth_bytes_per_s": 2e12, "flops_bf16": 1e14}]')
    assert "field 'memory_bytes' should be a finite number, got nan" in refusal(read_accelerator_file, path)


@pytest.mark.parametrize(("name", "content", "expected"), [
    ("lab.toml", b"", "is empty"),
    ("lab.toml", b'[[accelerator]]\nid = "caf\xe9"\n', "is not UTF-8 text (byte 0xe9 on line 2)"),
    ("lab.toml", b'[[accelerator]]\nid = \n', "is not valid TOML"),
    ("lab.toml", b'[gpu]\nid = "lab"\n', "holds no [[accelerator]] entries"),
    ("lab.json", b'{"accelerator": [\n  {"id": "lab",}\n]}', "is not valid JSON: line 2"),
    ("lab.json", b'[1]', "entry 1 must be a table of fields, not a int"),
])
def test_an_unreadable_accelerator_file_is_one_line(tmp_path, name, content, expected):
    path = tmp_path / name
    path.write_bytes(content)
    message = refusal(read_accelerator_file, path)
    assert expected in message
    if "not valid TOML" in message:
        assert "line 2" in message  # tomllib gives the line of the syntax error


def test_an_id_given_twice(tmp_path):
    path = tmp_path / "lab.toml"
    path.write_text(toml_entry(LAB) + toml_entry(LAB))
    assert "entry 2 ('lab'): the id 'lab' is given twice" in refusal(read_accelerator_file, path)


def test_gpu_file_errors_are_about_the_gpu_file_field(tmp_path, capsys):
    path = tmp_path / "lab.toml"
    path.write_text(toml_entry(LAB | {"memory_bytes": "lots"}))
    with pytest.raises(KokubanError) as err:
        load_accelerator("lab", path)
    assert err.value.field == "gpu_file"
    assert main(["estimate", "llama-3.1-8b", "--gpu", "lab", "--gpu-file", str(path)]) == 2
    out, stderr = capsys.readouterr()
    assert out == "" and stderr.count("\n") == 1
    assert stderr.startswith(f"error: --gpu-file: accelerator file '{path}', entry 1 ('lab'): field 'memory_bytes'")


def test_a_custom_accelerator_goes_through_the_same_schema():
    with pytest.raises(KokubanError,
                       match="custom accelerator: field 'memory_bytes' should be greater than or equal to 1000000"):
        load_accelerator("custom:bf16=1e14,bw=1e12,mem=0")


def test_an_absurd_shape_is_refused_before_it_overflows(tmp_path):
    # 2**40 is far above the 2**24 bound (SHAPE_MAX); a hidden size that large would square past 1e24
    path = write_config(tmp_path, TINY | {"hidden_size": 2**40, "head_dim": 64})
    assert f"field 'hidden_size' should be less than or equal to {2**24}" in refusal(load_model, path)


@pytest.mark.parametrize("path", ["nul\x00byte.toml", "long" * 2000 + ".toml", "."])
def test_an_unreadable_accelerator_path_is_one_line(path):
    with pytest.raises(KokubanError, match="cannot read accelerator file") as err:
        read_accelerator_file(path)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize(("change", "expected"), [
    ({"quantization_config": "fp8"}, "field 'quantization_config' should be a valid dictionary"),
    ({"torch_dtype": 16}, "field 'torch_dtype' should be a valid string"),
    ({"text_config": TINY | {"max_position_embeddings": None}, "max_position_embeddings": "long"},
     "field 'max_position_embeddings' should be a valid integer"),
])
def test_the_keys_read_beside_the_shape_are_checked_too(tmp_path, change, expected):
    config = {k: v for k, v in (TINY | change).items() if v is not None}
    assert expected in refusal(load_model, write_config(tmp_path, config))


# ---- any config: a spec or one KokubanError, never another exception --------------------------------------
BASES = [json.loads((DATA / "models" / f"{m}.json").read_text())
         for m in ("llama-3.1-8b", "mixtral-8x7b", "deepseek-v3", "gemma-3-4b", "gpt-oss-20b", "qwen3-30b-a3b")]
KEYS = sorted(TextConfigSchema.model_fields) + ["text_config", "rope_scaling"]
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 2**70) | st.sampled_from([0, 1, 2, 3, 7, 64, 4096])
    | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=8,
)


@settings(derandomize=True, max_examples=400, deadline=None)
@given(base=st.sampled_from(BASES), changes=st.dictionaries(st.sampled_from(KEYS), JSON_VALUES, min_size=1, max_size=3))
def test_any_config_gives_a_spec_or_one_kokuban_error(base, changes):
    config = json.loads(json.dumps(base)) | changes
    if isinstance(config.get("text_config"), dict) and isinstance(base.get("text_config"), dict):
        config["text_config"] = base["text_config"] | {k: v for k, v in changes.items() if k != "text_config"}
    try:
        spec = parse_config(config, name="fuzzed")
    except KokubanError as exc:
        assert "\n" not in str(exc)
        return
    assert spec.params_total > 0 and spec.kv_elements_per_token_per_layer > 0 and spec.max_context > 0


ACC_KEYS = sorted(set(AcceleratorSchema.model_fields) | {"flops_tf32", "memory_note", "tdp_w", "interconnect"})


@settings(derandomize=True, max_examples=300, deadline=None)
@given(changes=st.dictionaries(st.sampled_from(ACC_KEYS), JSON_VALUES, min_size=1, max_size=3))
def test_any_accelerator_entry_gives_an_accelerator_or_one_kokuban_error(tmp_path_factory, changes):
    path = tmp_path_factory.mktemp("acc") / "lab.json"
    path.write_text(json.dumps([LAB | changes]))
    try:
        (acc,) = read_accelerator_file(path).values()
    except KokubanError as exc:
        assert "\n" not in str(exc)
        return
    assert acc.memory_bytes > 0 and acc.memory_bandwidth_bytes_per_s > 0 and acc.flops("bf16") > 0


def test_an_id_with_a_line_break_stays_on_one_line(tmp_path):
    path = tmp_path / "lab.json"
    path.write_text(json.dumps([LAB | {"id": "two\nlines", "memory_bytes": -1}]))
    assert "entry 1 ('two\\nlines'): field 'memory_bytes'" in refusal(read_accelerator_file, path)
