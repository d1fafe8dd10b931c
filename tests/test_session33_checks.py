"""Session 33's clean checks (LMDeploy 0.1's TurboMind tables, llama.cpp's CUDA scoreboard): the rows their rule makes
from the copied tables, worked by hand, and the figures docs/validation.md ("Session 33") and the README quote,
rebuilt from the committed reports and today's predictions."""

from __future__ import annotations

import importlib.util
import json
import tomllib
from pathlib import Path

import pytest
from test_session31_checks import _pct, _same, _text  # the same readers of reports and docs

from kokuban.validation.accuracy import load_published

ROOT = Path(__file__).resolve().parents[1]
CHECKS = ROOT / "validation/clean-checks"


def _module(path: Path):
    spec = importlib.util.spec_from_file_location(path.stem + path.parent.name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _rows(check: str) -> dict[str, dict]:
    return {r["id"]: r for r in tomllib.loads((CHECKS / check / "rows.toml").read_text())["result"]}


def test_the_lmdeploy_rows_are_the_table_by_its_rule():
    build = _module(CHECKS / "lmdeploy01/build_rows.py")
    cells = build.cells()
    assert len(cells) == 80  # four sections of 20 lines: batch 1, 16, 32, 64 × five lengths
    built, left = build.rows()
    assert build.TABLE.toml(built) in (CHECKS / "lmdeploy01/rows.toml").read_text()
    # three catalog models × five lengths at batch 1 (decode and first token), and 45 throughput cells less 11
    assert len(left) == 11 and len(built) == 3 * 5 * 2 + 45 - 11 == 64
    # the pool by hand: Llama-2-7B holds 1,000 blocks of 128 tokens; 2,048 + 2,048 tokens are 32 blocks a request,
    # so 16 requests (512 blocks) fit and 32 (1,024) do not; Llama-2-13B's 500 blocks do not hold 16 of them
    assert build.pool_holds("llama-2-7b", 16, 2048, 2048) and not build.pool_holds("llama-2-7b", 32, 2048, 2048)
    assert not build.pool_holds("llama-2-13b", 16, 2048, 2048) and build.pool_holds("llama-2-13b", 16, 2048, 128)
    # 1 + 128 tokens are two blocks: 64 requests hold 128 blocks
    assert build.pool_holds("llama-2-13b", 64, 1, 128) and not build.pool_holds("llama-2-13b", 64, 128, 2048)
    assert "llama2-7b batch 32 2048/2048" in left and "llama2-7b batch 16 2048/2048" not in left
    rows = _rows("lmdeploy01")
    # the table's first line: batch 1, 1 / 128 tokens, median interval 0.009 s, FTL(ave) 0.011 s
    line = "| 1     | 1   | 1             | 128           | 100.02                | 76.55   | 0.011       | 0.01"
    assert line in (CHECKS / "lmdeploy01/table.md").read_text()
    decode = rows["lmdeploy01-llama-2-7b-a100-80gb-fp16-tp1-b1-1-128-decode"]
    assert decode["value"] == pytest.approx(1 / 0.009) and decode["metric"] == "tokens_per_s_per_user"
    ftl = rows["lmdeploy01-llama-2-7b-a100-80gb-fp16-tp1-b1-1-128-ftl"]
    assert (ftl["value"], ftl["output_tokens"], ftl["metric"]) == (0.011, 1, "time_to_first_token_s")
    assert not any("internlm" in k for k in rows)
    assert {r["num_gpus"] for r in rows.values() if r["model"] == "llama-2-70b"} == {4}
    assert all("NCCL all-reduce" in r["engine"] and r["accelerator"] == "a100-80gb" for r in rows.values())


def test_the_llamacpp_rows_are_the_records_by_the_rule():
    build = _module(CHECKS / "llamacpp-cuda/build_rows.py")
    built = build.rows()
    assert build.TABLE.toml(built) in (CHECKS / "llamacpp-cuda/rows.toml").read_text()
    # three chips × two tests × flash attention off and on; no H100, RTX PRO 6000 or RTX 4090 D (the rule)
    assert len(built) == 12 and {r["accelerator"] for r in built} == {"rtx-5090", "rtx-3090-ti", "a100-80gb"}
    rows = _rows("llamacpp-cuda")
    # "pp512 14073.41 tokens/sec" on the RTX 5090 without flash attention: 512 tokens in 36.38 ms
    pp = rows["llamacpp-cuda-llama-2-7b-q4_0-rtx-5090-pp512-fa0"]
    assert '"value": 14073.41' in (CHECKS / "llamacpp-cuda/table.md").read_text()
    assert pp["value"] == pytest.approx(0.03638, abs=1e-5) and pp["input_tokens"] == 512
    assert "prompt processing" in pp["engine"] and "CUDA-graph decode loop" not in pp["engine"]
    tg = rows["llamacpp-cuda-llama-2-7b-q4_0-rtx-5090-tg128-fa0"]
    assert (tg["value"], tg["batch"], tg["input_tokens"], tg["output_tokens"]) == (290.02, 1, 1, 128)
    assert "CUDA-graph decode loop" in tg["engine"]


def test_no_row_was_merged_into_the_published_set():
    published = {r.id for r in load_published()}
    for check in ("lmdeploy01", "llamacpp-cuda"):
        assert not set(_rows(check)) & published


def test_the_reports_are_todays_predictions():
    summary = _module(CHECKS / "session33.py")
    saved = json.loads((CHECKS / "session33.json").read_text())
    from kokuban.specs.hardware import Efficiency

    for check in summary.CHECKS:
        fresh = summary.REPORT.predict(CHECKS / check / "rows.toml", Efficiency.shipped(), summary.groups_of)
        _same(saved["checks"][check], fresh["groups"])
        _same(json.loads((CHECKS / check / "report.json").read_text())["shipped"]["groups"], fresh["groups"])
    _same(saved["pooled"], summary.pooled(Efficiency.shipped()))
    # the pool: session 32's 517 TensorRT-LLM rows and this session's, each once
    assert saved["pooled"]["engine TensorRT-LLM"]["count"] == 517
    assert saved["pooled"]["all"]["count"] == 517 + sum(saved["checks"][c]["all"]["count"] for c in summary.CHECKS)
