"""XiongjieDai's single-GPU llama-bench notebooks of Llama 3 8B/70B Q4_K_M (`table.md`, copied by the rule of
`inclusion_rule.md`), decode (tg) rows, in the published schema:

    python -m evidence.sources.llamacpp_xd.build [--copy GIT_DIR]      # rewrites rows.toml

`--copy`: first copy the kept table rows verbatim from a git directory of XiongjieDai/GPU-Benchmarks-on-LLM-Inference
into `table.md` (done once, 2026-12-05, printing only their count); then `rows.toml` is built from `table.md`.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from evidence import tables

HERE = Path(__file__).parent
TITLE = "XiongjieDai's llama-bench notebooks (Llama 3 8B/70B Q4_K_M decode) on nine GPUs"
COMMIT = "aa72e0ec86c356c41f8281c9733e9a13c3675800"
SOURCE = ("https://github.com/XiongjieDai/GPU-Benchmarks-on-LLM-Inference at aa72e0ec86c356c41f8281c9733e9a13c3675800 "
          "(2024-05-12; the single-GPU notebooks of LLaMA 3/, llama-bench on RunPod machines)")
#: the notebooks the rule keeps (CUDA graphs compiled in, a catalog GPU with its SMs and clock) → catalog ids
NOTEBOOKS = {"LLaMA 3/Gaming GPUs/4090_v3.ipynb": "rtx-4090", "LLaMA 3/Gaming GPUs/4080_v3.ipynb": "rtx-4080",
             "LLaMA 3/Professional GPUs/6000_Ada_v3.ipynb": "rtx-6000-ada",
             "LLaMA 3/Professional GPUs/A6000_v3.ipynb": "rtx-a6000", "LLaMA 3/Professional GPUs/A40_v3.ipynb": "a40",
             "LLaMA 3/Professional GPUs/A100_PCIe_v3.ipynb": "a100-pcie-80gb",
             "LLaMA 3/Professional GPUs/A100_SXM_v3.ipynb": "a100-80gb",
             "LLaMA 3/Professional GPUs/H100_PCIe_v3.ipynb": "h100-pcie",
             "LLaMA 3/Professional GPUs/L40S_v3.ipynb": "l40s"}
MODELS = {"llama 8B Q4_K - Medium": "llama-3.1-8b", "llama 70B Q4_K - Medium": "llama-3.1-70b"}
GRAPHS = "-DGGML_CUDA_USE_GRAPHS"
TG = re.compile(r"^tg\s*(\d+)$")


def _notebook_lines(text: str) -> list[str]:
    """Every line of the notebook's cell outputs."""
    return [line for cell in json.loads(text)["cells"] for out in cell.get("outputs", [])
            for line in "".join(out.get("text", "")).splitlines()]


def copy(git_dir: str) -> int:
    """Write `table.md`: for each kept notebook whose build defines CUDA graphs, its build line and its table rows of a
    kept model's tg tests, verbatim, each prefixed by the notebook's path; returns how many table rows."""
    out, count = [], 0
    for path in NOTEBOOKS:
        text = subprocess.run(["git", "-C", git_dir, "show", f"{COMMIT}:{path}"], check=True, capture_output=True,
                              text=True).stdout
        if GRAPHS not in text:
            continue
        lines = _notebook_lines(text)
        build = next(line for line in lines if line.startswith("build: "))
        out.append(f"{path} || {build}")
        for line in lines:
            cells = tables.cells(line)
            if line.startswith("| llama") and cells[0] in MODELS and TG.match(cells[5]):
                out.append(f"{path} || {line}")
                count += 1
    head = (f"<!-- XiongjieDai/GPU-Benchmarks-on-LLM-Inference at {COMMIT}: the build line and the llama-bench table "
            "rows the rule keeps (Llama 3 8B/70B Q4_K_M, tg tests) of each kept single-GPU notebook, verbatim, each "
            "after its notebook's path and ' || '; copied 2026-12-05 by inclusion-rule.md -->")
    (HERE / "table.md").write_text(head + "\n\n```\n" + "\n".join(out) + "\n```\n")
    return count


def rows(table: Path = HERE / "table.md") -> list[dict]:
    """Every table row of `table`: tg N → a user's decode speed at batch 1 over N tokens from an empty cache."""
    builds, out = {}, []
    for line in table.read_text().splitlines():
        if " || " not in line or line.startswith("<!--"):
            continue
        path, rest = line.split(" || ", 1)
        if rest.startswith("build: "):
            builds[path] = rest.split()[1]
            continue
        cells = tables.cells(rest)
        model, tokens = MODELS[cells[0]], int(TG.match(cells[5]).group(1))
        gpu = NOTEBOOKS[path]
        value = float(cells[6].split("±")[0])
        out.append(tables.row(f"llamacpp-xd-{model}-q4_k_m-{gpu}-tg{tokens}", model, gpu, 1, "q4_k_m", "fp16",
                              f"llama.cpp (CUDA build {builds[path]}, CUDA-graph decode loop)", "tokens_per_s_per_user",
                              value, 1, 1, tokens, "single_stream", SOURCE))
    return out


def files() -> dict[Path, str]:
    return {HERE / "rows.toml": tables.rows_file(f"{__package__}.build", rows(), SOURCE)}


if __name__ == "__main__":
    if "--copy" in sys.argv:
        print(copy(sys.argv[sys.argv.index("--copy") + 1]), "table rows copied")
    tables.write(files())
