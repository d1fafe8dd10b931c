"""LMDeploy 0.1's static-inference tables on A100-80G (`table.md`, copied) as rows of the published schema, by part
A of the rule of `inclusion_rule.md`:

    python -m evidence.sources.lmdeploy01.build      # rewrites rows.toml, names the cells left out

One table per model ("### llama2-7b"), one line per (batch, tp, prompt, output) with the columns of `COLUMNS`.
"""

from __future__ import annotations

import math
from pathlib import Path

from evidence import tables

HERE = Path(__file__).parent
TITLE = "LMDeploy 0.1's TurboMind tables on A100-80G"
SOURCE = ("https://github.com/InternLM/lmdeploy/blob/3e391df4673326f79363eebe030876861a9b7090/docs/en/benchmark/"
          "a100_fp16.md (static inference benchmark)")
ENGINE = "LMDeploy 0.1.0 (TurboMind, profile_generation.py, NCCL all-reduce)"
MODELS = {"llama2-7b": "llama-2-7b", "llama2-13b": "llama-2-13b", "llama2-70b": "llama-2-70b", "internlm-20b": None}
#: the KV pool each model's benchmark script sets (`cache_max_entry_count`, in blocks of `BLOCK_TOKENS`):
#: benchmark/benchmark_7b.sh, _13b.sh, _70b.sh at 3e391df
POOL_BLOCKS = {"llama-2-7b": 1000, "llama-2-13b": 500, "llama-2-70b": 4000}
BLOCK_TOKENS = 128
COLUMNS = ("batch", "tp", "prompt_tokens", "output_tokens", "throughput(out tok/s)", "mem(GB)", "FTL(ave)(s)",
           "FTL(min)(s)", "FTL(max)(s)", "50%(s)", "75%(s)", "95%(s)", "99%(s)")


def cells(table: Path = HERE / "table.md") -> list[tuple[str, dict[str, str]]]:
    """(section as written, {column: cell}) of every data line of `table`'s static-inference sections."""
    out, section = [], ""
    for line in table.read_text().splitlines():
        if line.startswith("### "):
            section = line[4:].strip()
            continue
        parts = tables.cells(line)
        if section and line.startswith("|") and len(parts) == len(COLUMNS) and parts[0].isdigit():
            out.append((section, dict(zip(COLUMNS, parts, strict=True))))
    return out


def pool_holds(model: str, batch: int, prompt: int, output: int) -> bool:
    """Whether the script's KV pool holds `batch` requests at once: batch × ceil((prompt + output) / 128) blocks."""
    return batch * math.ceil((prompt + output) / BLOCK_TOKENS) <= POOL_BLOCKS[model]


def _row(model: str, c: dict[str, str], kind: str, metric: str, value: float, batch: int, output: int) -> dict:
    tp, prompt = int(c["tp"]), int(c["prompt_tokens"])
    return tables.row(f"lmdeploy01-{model}-a100-80gb-fp16-tp{tp}-b{batch}-{prompt}-{c['output_tokens']}-{kind}", model,
                      "a100-80gb", tp, "fp16", "fp16", ENGINE, metric, value, batch, prompt, output,
                      "single_stream" if batch == 1 else "offline", SOURCE)


def rows(table: Path = HERE / "table.md") -> tuple[list[dict], list[str]]:
    """The rule's rows (batch 1: decode from the median interval, first token from FTL(ave); batch > 1: throughput
    where the pool holds the batch) and the (section, batch, prompt, output) of each throughput cell left out."""
    out, left = [], []
    for section, c in cells(table):
        model = MODELS[section]
        if model is None:
            continue
        batch, prompt, output = int(c["batch"]), int(c["prompt_tokens"]), int(c["output_tokens"])
        if batch == 1:
            out.append(_row(model, c, "decode", "tokens_per_s_per_user", 1 / float(c["50%(s)"]), 1, output))
            out.append(_row(model, c, "ftl", "time_to_first_token_s", float(c["FTL(ave)(s)"]), 1, 1))
        elif pool_holds(model, batch, prompt, output):
            out.append(_row(model, c, "throughput", "output_tokens_per_s", float(c["throughput(out tok/s)"]), batch,
                            output))
        else:
            left.append(f"{section} batch {batch} {prompt}/{output}")
    return out, left


def files() -> dict[Path, str]:
    return {HERE / "rows.toml": tables.rows_file(f"{__package__}.build", rows()[0], SOURCE)}


if __name__ == "__main__":
    tables.write(files())
    print("throughput cells whose batch the KV pool cannot hold (left out):", "; ".join(rows()[1]))
