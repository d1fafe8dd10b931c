"""Every copied source's rows are its table by its inclusion rule (evidence/sources/<source>/): each `build.py` writes
its committed rows.toml exactly, and the rules' counts, exclusions and mappings hold, several rows worked by hand
from the copied text."""

from __future__ import annotations

import re
import tomllib

import numpy as np
import pytest

from evidence import tables
from evidence.sources import HERE, SOURCES, build, measurements
from kokuban.specs.catalog import load_accelerator
from kokuban.validation.accuracy import load_published


def _rows(source: str, name: str = "rows.toml") -> dict[str, dict]:
    return {r["id"]: r for r in tomllib.loads((HERE / source / name).read_text())["result"]}


@pytest.mark.parametrize("source", SOURCES)
def test_the_build_writes_the_committed_rows(source):
    files = build(source).files()
    assert files and all(path.read_text() == text for path, text in files.items())


def test_no_row_is_in_the_published_set():
    published = {r.id for r in load_published()}
    for source in SOURCES:
        assert not {r.id for r in measurements(source)} & published, source


def test_trtllm013_and_014():
    r13, r14 = build("trtllm013").rows(), build("trtllm014").rows()
    assert (len(r13), len(r14)) == (633, 604)
    assert not any("gptj" in r["id"] or r["accelerator"] == "gh200" for r in r13)  # left out by the rule
    assert all(r["input_tokens"] + r["output_tokens"] <= 4096 for r in r13
               if r["model"] in ("llama-2-7b", "llama-2-70b", "mistral-7b-v0.3"))


def test_trtllm015_by_its_own_split():
    """Every non-empty cell of 0.15's table (547), read here by splitting its lines; the rule leaves out Mistral 7B
    beyond 4,096 tokens (three lengths × six columns)."""
    nonempty = 0
    for line in (HERE / "trtllm015/table.md").read_text().splitlines():
        parts = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("| ") and len(parts) >= 3 and "," in parts[2]:
            nonempty += sum(1 for v in parts[3:] if v)
    rows = build("trtllm015").rows()
    assert nonempty == 547 and len(rows) == 529 == 547 - 3 * 6
    assert all(r["input_tokens"] + r["output_tokens"] <= 4096 for r in rows if r["model"] == "mistral-7b-v0.3")
    assert {r["engine"] for r in rows if r["accelerator"] == "gh200"} == {"TensorRT-LLM 0.15 (gptManagerBenchmark IFB)"}
    assert {(r["accelerator"], r["weights_dtype"]) for r in rows} == {
        ("h100-sxm", "fp8"), ("h100-sxm", "fp16"), ("a100-80gb", "fp16"), ("a100-pcie-80gb", "fp16"), ("l40s", "fp8"),
        ("gh200", "fp8")}


def test_trtllm017_counted_from_the_table():
    rows = build("trtllm017").rows()
    count: dict[str, int] = {}
    for r in rows:
        count[r["model"]] = count.get(r["model"], 0) + 1
    assert count == {"llama-3.1-8b": 9 * 5, "mistral-7b-v0.3": 6 * 5, "llama-3.1-405b": 9, "mixtral-8x22b": 9 * 3,
                     # TP1: H200 9, H100 7, GH200 8; TP2: H200 9, H100 9, A100 7; TP4 and TP8: four GPUs × 9
                     "llama-3.1-70b": (9 + 7 + 8) + (9 + 9 + 7) + 36 + 36,
                     # TP1 and TP2: three GPUs × 9; TP4 and TP8: four GPUs × 9
                     "mixtral-8x7b": 27 + 27 + 36 + 36}
    assert all(r["input_tokens"] + r["output_tokens"] <= 4096 for r in rows if r["model"] == "mistral-7b-v0.3")
    assert {(r["accelerator"], r["weights_dtype"]) for r in rows} == {
        ("h200", "fp8"), ("h100-sxm", "fp8"), ("gh200", "fp8"), ("l40s", "fp8"), ("a100-80gb", "fp16")}
    assert (rows[0]["id"], rows[0]["value"]) == ("trtllm017-llama-3.1-8b-h200-fp8-tp1-128-128", 29526.04)


def test_trtllm012_020_019_021():
    rows20 = build("trtllm020").rows()
    assert len(rows20) == 180 and all(r["kv_dtype"] == "fp8" and not r["expert_parallel"] for r in rows20)
    assert {r["weights_dtype"] for r in rows20 if r["accelerator"] == "b200"} == {"nvfp4"}
    rows12 = build("trtllm012").rows()
    assert len(rows12) == 217
    assert not any(r["accelerator"] == "gh200" or "gptj" in r["id"] or "falcon" in r["id"] for r in rows12)
    assert sum(r["accelerator"] == "l40s" and r["num_gpus"] > 1 for r in rows12) == 14  # the PCIe decision rows
    b19 = build("trtllm019")
    every19 = b19.every_cell()
    twins = b19.published_twins(every19)  # the 4 cells the published set holds: equal values, left out
    assert len(every19) == 184 and len(twins) == 4
    assert all(next(r["value"] for r in every19 if r["id"] == k) == v for k, (_, v) in twins.items())
    rows19, rows21 = b19.rows(), build("trtllm021").rows()
    assert (len(rows19), len(rows21)) == (180, 131)
    maverick20 = {(r["accelerator"], r["input_tokens"], r["output_tokens"], r["value"]) for r in rows20
                  if r["model"] == "llama-4-maverick"}
    maverick21 = {(r["accelerator"], r["input_tokens"], r["output_tokens"], r["value"]) for r in rows21
                  if r["model"] == "llama-4-maverick"}
    assert len(maverick21) == 11 and maverick21 <= maverick20  # v0.21 prints v0.20's Maverick cells again


def test_trtllm010_and_011():
    r10, r11 = build("trtllm010").rows(), build("trtllm011").rows()
    assert (len(r10), len(r11)) == (182, 136)
    # 0.10: six columns, the L40S twice; 0.11: the GH200 120GB left out (the catalog's GH200 is the 96 GB part)
    assert {(r["accelerator"], r["weights_dtype"]) for r in r10} == {
        ("h200", "fp8"), ("h100-sxm", "fp8"), ("h100-sxm", "fp16"), ("a100-80gb", "fp16"), ("l40s", "fp8"),
        ("l40s", "fp16")}
    assert {r["accelerator"] for r in r11} == {"h200", "h100-sxm", "a100-80gb", "l40s"}
    assert not {r["model"] for r in r10 + r11} - {"llama-2-7b", "llama-3.1-8b", "mistral-7b-v0.3", "llama-2-70b",
                                                  "llama-3.1-70b", "mixtral-8x7b"}
    assert {r["engine"] for r in r10} == {"TensorRT-LLM 0.10 (gptManagerBenchmark, IFB)"}
    # each value is its cell: the first LLaMA v2 70B line of 0.10 (TP 1), read here by its own split of the table
    line = next(x for x in (HERE / "trtllm010/table.md").read_text().splitlines()
                if re.match(r"\|\s*LLaMA v2 70B\s*\|\s*128/128\s*\|", x))
    cells = [c.strip() for c in line.strip().strip("|").split("|")]
    assert cells[2] == "1" and cells[3]  # one H200 holds the fp8 70B; 0.10's H200 column is the first
    h200 = next(r for r in r10 if r["id"] == "trtllm010-llama-2-70b-h200-fp8-tp1-128-128")
    assert h200["value"] == float(cells[3].replace(",", "")) and h200["num_gpus"] == 1


def test_the_same_hardware_runs_faster_in_017_than_in_014():
    """The median row of each GPU × TP group, 0.17's throughput over 0.14's on the same model, GPU, dtype and lengths
    (Llama 3 70B rows of 0.14 left out: 0.17 has only 3.1): −2 … +13 %."""
    def key(r):
        return r["model"], r["accelerator"], r["weights_dtype"], r["num_gpus"], r["input_tokens"], r["output_tokens"]

    new = {key(r): r["value"] for r in _rows("trtllm017").values()}
    groups: dict = {}
    for r in _rows("trtllm014").values():
        if "-v3-" not in r["id"] and key(r) in new:
            groups.setdefault((r["accelerator"], r["num_gpus"]), []).append(new[key(r)] / r["value"])
    medians = [np.median(v) for v in groups.values()]
    assert (round(100 * (min(medians) - 1)), round(100 * (max(medians) - 1))) == (-2, 13)


def test_the_405b_cells_of_013_against_014():
    """The nine Llama-3.1-405B cells both tables print: 0.13's run at 0.79 of 0.14's (the median)."""
    def rows(source):
        return {k.split("-", 1)[1]: r["value"] for k, r in _rows(source).items()}

    r13, r14 = rows("trtllm013"), rows("trtllm014")
    big = [r13[k] / r14[k] for k in r14 if k in r13 and "405b" in k]
    assert len(big) == 9 and f"{np.median(big):.2f}" == "0.79"


def test_lmdeploy_rows_by_hand():
    b = build("lmdeploy01")
    assert len(b.cells()) == 80  # four sections of 20 lines: batch 1, 16, 32, 64 × five lengths
    built, left = b.rows()
    # three catalog models × five lengths at batch 1 (decode and first token), and 45 throughput cells less 11
    assert len(left) == 11 and len(built) == 3 * 5 * 2 + 45 - 11 == 64
    # the pool by hand: Llama-2-7B holds 1,000 blocks of 128 tokens; 2,048 + 2,048 tokens are 32 blocks a request,
    # so 16 requests (512 blocks) fit and 32 (1,024) do not; Llama-2-13B's 500 blocks do not hold 16 of them
    assert b.pool_holds("llama-2-7b", 16, 2048, 2048) and not b.pool_holds("llama-2-7b", 32, 2048, 2048)
    assert not b.pool_holds("llama-2-13b", 16, 2048, 2048) and b.pool_holds("llama-2-13b", 16, 2048, 128)
    # 1 + 128 tokens are two blocks: 64 requests hold 128 blocks
    assert b.pool_holds("llama-2-13b", 64, 1, 128) and not b.pool_holds("llama-2-13b", 64, 128, 2048)
    assert "llama2-7b batch 32 2048/2048" in left and "llama2-7b batch 16 2048/2048" not in left
    rows = _rows("lmdeploy01")
    # the table's first line: batch 1, 1 / 128 tokens, median interval 0.009 s, FTL(ave) 0.011 s
    line = "| 1     | 1   | 1             | 128           | 100.02                | 76.55   | 0.011       | 0.01"
    assert line in (HERE / "lmdeploy01/table.md").read_text()
    decode = rows["lmdeploy01-llama-2-7b-a100-80gb-fp16-tp1-b1-1-128-decode"]
    assert decode["value"] == pytest.approx(1 / 0.009) and decode["metric"] == "tokens_per_s_per_user"
    ftl = rows["lmdeploy01-llama-2-7b-a100-80gb-fp16-tp1-b1-1-128-ftl"]
    assert (ftl["value"], ftl["output_tokens"], ftl["metric"]) == (0.011, 1, "time_to_first_token_s")
    assert not any("internlm" in k for k in rows)
    assert {r["num_gpus"] for r in rows.values() if r["model"] == "llama-2-70b"} == {4}
    assert all("NCCL all-reduce" in r["engine"] and r["accelerator"] == "a100-80gb" for r in rows.values())


def test_llamacpp_scoreboard_rows_by_hand():
    built = build("llamacpp_cuda").rows()
    # three chips × two tests × flash attention off and on; no H100, RTX PRO 6000 or RTX 4090 D (the rule)
    assert len(built) == 12 and {r["accelerator"] for r in built} == {"rtx-5090", "rtx-3090-ti", "a100-80gb"}
    rows = _rows("llamacpp_cuda")
    # "pp512 14073.41 tokens/sec" on the RTX 5090 without flash attention: 512 tokens in 36.38 ms
    pp = rows["llamacpp-cuda-llama-2-7b-q4_0-rtx-5090-pp512-fa0"]
    assert '"value": 14073.41' in (HERE / "llamacpp_cuda/table.md").read_text()
    assert pp["value"] == pytest.approx(0.03638, abs=1e-5) and pp["input_tokens"] == 512
    assert "prompt processing" in pp["engine"] and "CUDA-graph decode loop" not in pp["engine"]
    tg = rows["llamacpp-cuda-llama-2-7b-q4_0-rtx-5090-tg128-fa0"]
    assert (tg["value"], tg["batch"], tg["input_tokens"], tg["output_tokens"]) == (290.02, 1, 1, 128)
    assert "CUDA-graph decode loop" in tg["engine"]


def test_llamacpp_sm_rows_by_hand():
    b = build("llamacpp_sm")
    built = b.rows()
    # fifteen chips × two tests × flash attention off and on, every one a catalog GPU with its SMs and clock stated
    assert len(built) == 15 * 2 * 2 == 60 and {r["accelerator"] for r in built} == set(b.GPUS.values())
    for gpu in b.GPUS.values():
        acc = load_accelerator(gpu)
        assert acc.sm_count > 0 and acc.boost_clock_hz > 0, gpu
    records = tables.json_records(HERE / "llamacpp_sm/table.md")
    assert all("backend=CUDA" in r["notes"] and r["notes"].split("chip=")[-1] in b.GPUS for r in records)
    # none the rule leaves out: the fitted chips, the read ones of unstated variant, the ambiguous and the old
    fitted = {r["accelerator"] for r in build("llamacpp_cuda").rows()}
    assert not fitted & {r["accelerator"] for r in built}
    for chip in ("H100 80 GB", "RTX PRO 6000 Blackwell", "RTX 3060", "RTX 3080", "RTX 5070", "Tesla V100"):
        assert chip not in b.GPUS
    # "pp512 2767.1 tokens/sec" on the A30 without flash attention: 512 tokens in 185.03 ms
    rows = _rows("llamacpp_sm")
    pp = rows["llamacpp-cuda-llama-2-7b-q4_0-a30-pp512-fa0"]
    assert '"value": 2767.1' in (HERE / "llamacpp_sm/table.md").read_text()
    assert pp["value"] == pytest.approx(512 / 2767.1) and pp["engine"].endswith("prompt processing)")
    tg = rows["llamacpp-cuda-llama-2-7b-q4_0-a30-tg128-fa0"]
    assert tg["engine"].endswith("CUDA-graph decode loop)") and (tg["input_tokens"], tg["output_tokens"]) == (1, 128)


def test_llamacpp_xd_rows_by_hand():
    b = build("llamacpp_xd")
    built = b.rows()
    # nine notebooks × Llama 3 8B's four tg tests, and 70B's four on the seven 40-GB-and-up cards
    assert len(built) == 9 * 4 + 7 * 4 == 64 and {r["accelerator"] for r in built} == set(b.NOTEBOOKS.values())
    assert {r["weights_dtype"] for r in built} == {"q4_k_m"} and {r["output_tokens"] for r in built} == {
        512, 1024, 4096, 8192}
    assert all(r["engine"].endswith("CUDA-graph decode loop)") for r in built)
    table = (HERE / "llamacpp_xd/table.md").read_text()
    assert "F16" not in table and " pp" not in table
    # "tg 512 135.04 ± 0.45" of Llama 3 8B Q4_K_M on the A100-SXM4-80GB (build d11afd66, 2837)
    row = next(r for r in built if r["id"] == "llamacpp-xd-llama-3.1-8b-q4_k_m-a100-80gb-tg512")
    assert "| tg 512     |    135.04 ± 0.45 |" in table and row["value"] == 135.04
    assert row["engine"] == "llama.cpp (CUDA build d11afd66, CUDA-graph decode loop)" and row["input_tokens"] == 1


def test_amd_rows_by_hand():
    amd = build("amd_vllm")
    found = amd.tables_of()
    # 0.9.0.1's table (the check) and five older releases' tables, 32 cells each
    assert [t[2] for t in found] == ["0.9.0.1", "0.7.3", "0.7.3", "0.7.3", "0.8.5", "0.8.5"]
    assert all(len(t[3]) == 32 for t in found)
    # batch × output ÷ latency: "| Llama 3.1 70B (…) | FP8 | 8 | 1 | 128 | 2048 | 15.566 |" is 2,048 ÷ 15.566 s
    first = _rows("amd_vllm")["amdvllm-0.9.0.1-2025-06-11-llama-3.1-70b-mi300x-fp8-tp8-b1-128-2048"]
    assert "| 1 | 128 | 2048 | 15.566 |" in (HERE / "amd_vllm/table.md").read_text()
    assert first["value"] == pytest.approx(2048 / 15.566) and first["kv_dtype"] == "fp8"
    assert "benchmark_latency" in first["engine"]  # a static batch (accuracy.STATIC_BATCH_TOOLS)
    assert len(_rows("amd_vllm", "versions.toml")) == 2 * 32 + 3 * 16  # 0.7.3's 405B rows name the 70B checkpoint
    built, left = build("amd_vllm_judge").rows()
    assert len(built) == 2 * 32 + 8 * 8 - 2 and len(left) == 2  # July's two latency tables; eight throughput tables
    assert {r["kv_dtype"] for r in built if "latency" in r["id"]} == {"fp16"}  # July's command sets no KV dtype
    published = {(r.model, r.input_tokens, r.output_tokens, r.value) for r in load_published()}
    assert all("0.9.0.1" in rid for rid in left) and not any(
        (r["model"], r["input_tokens"], r["output_tokens"], r["value"]) in published for r in built)
    nov = build("amd_vllm_nov")
    readme, oracle = nov.readme_rows("source-v0.11.1rc.md"), build("oracle_mi300x").rows()
    assert (len(readme), len(oracle), len(nov.readme_rows("source-v0.10.0.md"))) == (40, 7, 40)
    # Oracle's rows at batch 2-128: the published set holds its batch 1 and 256
    assert sorted(r["batch"] for r in oracle) == [2, 4, 8, 16, 32, 64, 128]
    assert nov.rows() == readme + oracle
