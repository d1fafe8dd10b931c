"""Models and accelerators as users name them: family names, spellings, Hugging Face ids (catalog, local cache,
variants), local model folders; each choice made on the user's behalf is a note, never silent, never in --json."""

from __future__ import annotations

import json
import socket
import warnings

import pytest

from kokuban.cli import main
from kokuban.errors import KokubanError
from kokuban.notes import KokubanNote
from kokuban.present.jsonout import read_result
from kokuban.specs.catalog import (
    _accelerator_data,
    accelerator_catalog,
    load_accelerator,
    load_model,
    model_catalog,
)

#: A small llama config written by the tests (d 512, 8 heads of 64, 2 KV heads, 4 layers).
TINY = {
    "model_type": "llama", "hidden_size": 512, "num_hidden_layers": 4, "num_attention_heads": 8,
    "num_key_value_heads": 2, "intermediate_size": 1024, "vocab_size": 1000, "max_position_embeddings": 2048,
}


def notes_of(fn, *args):
    """(result, [note messages]) of fn(*args)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = fn(*args)
    return result, [str(w.message) for w in caught if issubclass(w.category, KokubanNote)]


@pytest.fixture
def no_network(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("kokuban tried to open a network connection")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


@pytest.fixture
def empty_hf_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    return tmp_path / "hub"


def cache_model(hub, repo_id, config, revision="0123abcd"):
    folder = hub / ("models--" + repo_id.replace("/", "--"))
    (folder / "snapshots" / revision).mkdir(parents=True)
    (folder / "snapshots" / revision / "config.json").write_text(json.dumps(config))
    (folder / "refs").mkdir()
    (folder / "refs" / "main").write_text(revision)
    return folder / "snapshots" / revision / "config.json"


# ---- accelerators ------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("typed", "expected"), [
    ("h100", "h100-sxm"), ("H100", "h100-sxm"), ("a100", "a100-80gb"), ("mi300", "mi300x"),
])
def test_family_names_take_the_common_variant_with_a_note(typed, expected):
    acc, notes = notes_of(load_accelerator, typed)
    assert acc.id == expected
    assert len(notes) == 1 and f"'{typed}' taken as {expected}" in notes[0]


@pytest.mark.parametrize(("typed", "expected"), [
    ("b200", "b200"), ("NVIDIA H200", "h200"), ("rtx4090", "rtx-4090"), ("H100 SXM", "h100-sxm"),
    ("h100_sxm5", "h100-sxm"), ("AMD Instinct MI300X", "mi300x"), ("trn2", "trainium2"), ("A100-40GB", "a100-40gb"),
])
def test_spellings_of_one_entry_resolve_silently(typed, expected):
    acc, notes = notes_of(load_accelerator, typed)
    assert acc.id == expected and notes == []


def test_every_alias_and_spelling_names_a_catalog_entry():
    data = _accelerator_data()
    ids = set(accelerator_catalog())
    assert {v["id"] for v in data["aliases"].values()} <= ids
    assert set(data["spellings"].values()) <= ids
    assert all(v["why"] for v in data["aliases"].values())  # each choice says why


def test_unknown_gpu_still_suggests_close_names():
    with pytest.raises(KokubanError, match=r"unknown gpu 'h10': did you mean h100") as err:
        load_accelerator("h10")
    assert err.value.field == "gpu"


def test_a_user_file_id_wins_over_an_alias(tmp_path):
    f = tmp_path / "lab.toml"
    f.write_text('[[accelerator]]\nid = "h100"\nmemory_bytes = 1e9\nmemory_bandwidth_bytes_per_s = 1e11\n'
                 "flops_bf16 = 1e13\n")
    acc, notes = notes_of(load_accelerator, "h100", f)
    assert acc.memory_bytes == 1e9 and notes == []


def test_cli_note_goes_to_stderr_and_json_is_unchanged(capsys):
    assert main(["estimate", "llama-3.1-8b", "--gpu", "h100", "--json"]) == 0
    aliased, err = capsys.readouterr()
    assert main(["estimate", "llama-3.1-8b", "--gpu", "h100-sxm", "--json"]) == 0
    exact, err_exact = capsys.readouterr()
    assert read_result(aliased) == read_result(exact)
    assert err.startswith("note: gpu 'h100' taken as h100-sxm (NVIDIA H100 SXM5 80GB)") and err.count("\n") == 1
    assert err_exact == ""


# ---- models: Hugging Face ids ------------------------------------------------------------------------------
def test_every_catalog_source_repo_resolves_to_its_entry(no_network, empty_hf_cache):
    for model_id, entry in model_catalog().items():
        spec, notes = notes_of(load_model, entry["hf_repo"])
        assert spec == load_model(model_id) and spec.name == model_id and notes == []
        assert load_model(entry["hf_repo"].upper()) == spec  # Hub ids are case-insensitive


@pytest.mark.parametrize(("hf_id", "expected"), [
    ("meta-llama/Meta-Llama-3.1-8B-Instruct", "llama-3.1-8b"),
    ("meta-llama/Llama-3.1-70B-Instruct", "llama-3.1-70b"),
    ("meta-llama/Llama-2-7b-chat-hf", "llama-2-7b"),
    ("mistralai/Mistral-7B-Instruct-v0.3", "mistral-7b-v0.3"),
    ("google/gemma-3-27b-it", "gemma-3-27b"),
    ("Qwen/Qwen2.5-7B-Instruct", "qwen2.5-7b"),
    ("deepseek-ai/DeepSeek-V3-Base", "deepseek-v3"),
    ("Llama-3.1-8B-Instruct", "llama-3.1-8b"),  # no organisation: the name alone
])
def test_variants_of_a_catalog_repo_take_its_entry_with_a_note(hf_id, expected, no_network, empty_hf_cache):
    spec, notes = notes_of(load_model, hf_id)
    assert spec.name == expected
    assert len(notes) == 1 and f"'{hf_id}' taken as the catalog's {expected}" in notes[0]


@pytest.mark.parametrize("hf_id", [
    "unsloth/Llama-3.1-8B-Instruct",  # another organisation's upload: not assumed to be the same model
    "microsoft/Phi-3-mini-128k-instruct",  # a different context length than the catalog's 4k model
    "nobody/no-such-model",
])
def test_an_hf_id_found_nowhere_says_what_to_do(hf_id, no_network, empty_hf_cache):
    with pytest.raises(KokubanError) as err:
        load_model(hf_id)
    message = str(err.value)
    assert err.value.field == "model" and "\n" not in message
    assert "neither in the catalog nor in the local Hugging Face cache" in message
    assert str(empty_hf_cache) in message and f"hf download {hf_id} config.json" in message


def test_local_hf_cache_is_read_offline(no_network, empty_hf_cache):
    path = cache_model(empty_hf_cache, "tiny-org/Tiny-LM", TINY)
    spec, notes = notes_of(load_model, "TINY-ORG/tiny-lm")  # matched case-insensitively, like the Hub
    assert spec.hidden_size == 512 and spec.num_layers == 4 and spec.name == "TINY-ORG/tiny-lm"
    assert spec.source == str(path)
    assert len(notes) == 1 and "local Hugging Face cache" in notes[0] and str(path) in notes[0]


def test_hf_home_is_honoured(tmp_path, monkeypatch, no_network):
    for variable in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    cache_model(tmp_path / "hub", "tiny-org/tiny-lm", TINY)
    assert load_model("tiny-org/tiny-lm").hidden_size == 512


def test_the_cached_config_of_a_variant_beats_the_catalog_guess(no_network, empty_hf_cache):
    # the Instruct variant's own config (here with an 8192-token window) is used when it is on disk
    cache_model(empty_hf_cache, "meta-llama/Llama-3.1-8B-Instruct",
                json.loads(load_config_text("llama-3.1-8b")) | {"max_position_embeddings": 8192})
    assert load_model("meta-llama/Llama-3.1-8B-Instruct").max_context == 8192
    assert load_model("llama-3.1-8b").max_context == 131072


def load_config_text(model_id):
    from kokuban.specs.catalog import DATA

    return (DATA / "models" / f"{model_id}.json").read_text()


# ---- models: local folders ---------------------------------------------------------------------------------
def test_a_local_model_folder_works(tmp_path):
    folder = tmp_path / "my-tiny-model"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(TINY))
    spec = load_model(str(folder))
    assert spec.name == "my-tiny-model" and spec.hidden_size == 512
    # the config.json path itself names the model after its folder too
    assert load_model(str(folder / "config.json")).name == "my-tiny-model"
    # KV elements per token per layer = 2 · KV heads · head dim = 2 · 2 · (512 / 8)
    assert spec.kv_elements_per_token_per_layer == 2 * 2 * 64


def test_a_folder_without_config_json_says_so(tmp_path):
    with pytest.raises(KokubanError, match="holds no config.json") as err:
        load_model(str(tmp_path))
    assert err.value.field == "model"


def test_cli_takes_an_hf_id_and_a_folder(tmp_path, capsys, no_network, empty_hf_cache):
    assert main(["estimate", "meta-llama/Llama-3.1-8B", "--gpu", "h100-sxm", "--json"]) == 0
    by_hf, err = capsys.readouterr()
    assert main(["estimate", "llama-3.1-8b", "--gpu", "h100-sxm", "--json"]) == 0
    assert read_result(by_hf) == read_result(capsys.readouterr()[0]) and err == ""
    folder = tmp_path / "tiny"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(TINY))
    assert main(["estimate", str(folder), "--gpu", "h100-sxm", "--json"]) == 0
    assert read_result(capsys.readouterr()[0])["model"]["name"] == "tiny"


def test_a_path_that_does_not_exist_says_so(tmp_path):
    with pytest.raises(KokubanError, match="no model file or folder at") as err:
        load_model(str(tmp_path / "nowhere" / "model"))
    assert err.value.field == "model"


@pytest.mark.parametrize("name", ["", "   ", "x" * 5000, "bad\x00name", "a/" + "b" * 5000 + ".json"])
def test_odd_model_names_are_one_line_errors(name, empty_hf_cache):
    with pytest.raises(KokubanError) as err:
        load_model(name)
    assert err.value.field == "model" and "\n" not in str(err.value)
