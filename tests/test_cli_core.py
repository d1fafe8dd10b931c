"""The CLI: readable and --json output, catalogs, and one-line errors with exit code 2."""

from __future__ import annotations

import pytest

from kokuban.cli import main
from kokuban.present.jsonout import read_result
from kokuban.specs.catalog import accelerator_catalog, load_accelerator


def run(capsys, *args):
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_estimate_json(capsys):
    code, out, _ = run(capsys, "estimate", "llama-3.1-70b", "--gpu", "h200", "--weights", "fp8", "--json")
    assert code == 0
    d = read_result(out)
    assert d["decode"]["bound"] == "weights"
    assert d["model"]["params_total"] == 70_553_706_496


def test_estimate_blackboard_text(capsys):
    code, out, _ = run(capsys, "estimate", "deepseek-v3", "--gpu", "h200", "--gpus", "8", "--batch", "32",
                       "--prompt", "1000", "--output", "200")
    assert code == 0
    for word in ("weight read", "KV read", "bound", "TTFT", "$"):
        assert word in out


def test_batch_max_cli(capsys):
    code, out, _ = run(capsys, "estimate", "llama-3.1-8b", "--gpu", "h100-sxm", "--batch", "max", "--json")
    d = read_result(out)
    assert code == 0 and d["decode"]["batch"] == d["memory"]["max_batch"]


@pytest.mark.parametrize(
    "args,needle",
    [
        (["estimate", "llama-3.1-70b", "--gpu", "h201"], "did you mean"),
        (["estimate", "lama-3.1-70b", "--gpu", "h200"], "did you mean llama-3.1-70b"),
        (["estimate", "llama-3.1-70b", "--gpu", "h200", "--batch", "abc"], "'abc' is not a positive integer or 'max'"),
        (
            ["estimate", "llama-3.1-70b", "--gpu", "h200", "--batch", "-1"],
            "--batch: input should be greater than 0 or 'max', got -1",
        ),
        (
            ["estimate", "llama-3.1-70b", "--gpu", "h200", "--context", "200000"],
            "--context: 200000 exceeds llama-3.1-70b's maximum context of 131072 tokens",
        ),
        (["estimate", "llama-3.1-405b", "--gpu", "h100-sxm"], "would fit"),
        (["estimate", "/nonexistent/config.json", "--gpu", "h200"], "cannot read config"),
        (["estimate", "llama-3.1-8b"], "Missing option '--gpu'"),
        (["estimate", "coarse:total=7e9", "--gpu", "h200"], "coarse model needs active, kv"),
        (
            ["estimate", "llama-3.1-8b", "--gpu", "custom:bf16=1e15,mem=80e9"],
            "missing the field 'memory_bandwidth_bytes_per_s'",
        ),
    ],
)
def test_errors_are_one_line_exit_2(capsys, args, needle):
    code, _, err = run(capsys, *args)
    assert code == 2
    assert needle in err
    assert err.count("\n") == 1 and err.startswith("error: ")
    assert "Traceback" not in err


def test_config_path_and_coarse(capsys, tmp_path):
    from kokuban.specs.catalog import DATA

    cfg = tmp_path / "config.json"
    cfg.write_text((DATA / "models" / "mistral-7b-v0.3.json").read_text())
    code, out, _ = run(capsys, "estimate", str(cfg), "--gpu", "l4", "--json")
    assert code == 0 and read_result(out)["model"]["family"] == "mistral"
    code, out, _ = run(capsys, "estimate", "coarse:total=70e9,active=70e9,kv=327680", "--gpu", "h200", "--gpus", "2",
                       "--memory-eff", "0.8", "--json")
    d = read_result(out)
    assert code == 0 and d["model"]["params_total"] == 70e9
    # 70e9 params × 2 B ÷ (2 GPUs × 4.8e12 B/s × 0.8)
    assert d["decode"]["breakdown"]["weights_s"] == pytest.approx(140e9 / (2 * 4.8e12 * 0.8))


def test_custom_accelerator_flags_and_file(capsys, tmp_path):
    code, out, _ = run(capsys, "estimate", "llama-3.1-8b", "--gpu", "custom:bf16=500e12,bw=2e12,mem=48e9,price=1",
                       "--memory-eff", "0.8", "--json")
    d = read_result(out)
    assert code == 0
    # every parameter but the input embedding (128256 × 4096, a lookup) is read once, 2 B each, at 2e12 × 0.8 B/s
    assert d["decode"]["breakdown"]["weights_s"] == pytest.approx((8_030_261_248 - 128256 * 4096) * 2 / (2e12 * 0.8))
    f = tmp_path / "mine.toml"
    f.write_text('[[accelerator]]\nid = "lab-gpu"\nmemory_bytes = 96e9\nmemory_bandwidth_bytes_per_s = 4e12\n'
                 'flops_bf16 = 800e12\nsources = ["lab measurement"]\n')
    code, out, _ = run(capsys, "estimate", "llama-3.1-8b", "--gpu", "lab-gpu", "--gpu-file", str(f), "--json")
    assert code == 0 and read_result(out)["hardware"]["id"] == "lab-gpu"


def test_models_and_gpus_lists(capsys):
    code, out, _ = run(capsys, "models", "--json")
    assert code == 0 and len(read_result(out, "models", command="models")) >= 20
    code, out, _ = run(capsys, "gpus", "--json")
    assert code == 0 and len(read_result(out, "gpus", command="gpus")) >= 20
    code, out, _ = run(capsys, "gpus")
    assert code == 0 and "h100-sxm" in out


def test_accelerator_catalog_sources_and_dense_flops():
    cat = accelerator_catalog()
    for required in (
        "a100-40gb",
        "a100-80gb",
        "h100-sxm",
        "h100-pcie",
        "h200",
        "h20",
        "b200",
        "gb200",
        "mi300x",
        "mi325x",
        "mi355x",
        "gaudi3",
        "tpu-v5e",
        "tpu-v5p",
        "tpu-v6e",
        "l4",
        "l40s",
        "rtx-4090",
        "rtx-5090",
    ):
        acc = cat[required]
        assert acc.sources and acc.retrieved, required
    # dense, not 2:4-sparse: H100 SXM bf16 is 989.4 TFLOP/s (the datasheet's 1,979 is with sparsity)
    assert load_accelerator("h100-sxm").peak_flops["bf16"] == pytest.approx(989.4e12)
    assert load_accelerator("mi300x").peak_flops["bf16"] == pytest.approx(1307.4e12)
    # no native fp8 on Ampere: fp8 weights compute in bf16
    assert load_accelerator("a100-80gb").compute_dtype_for("fp8") == "bf16"
    assert load_accelerator("h100-sxm").compute_dtype_for("fp8") == "fp8"
