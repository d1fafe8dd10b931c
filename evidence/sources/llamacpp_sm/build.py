"""llama.cpp's CUDA scoreboard for fifteen GPUs (`table.md`, copied by the rule of `inclusion_rule.md`), mapped as the
scoreboard's first three GPUs are (`../llamacpp_cuda/build.py`):

    python -m evidence.sources.llamacpp_sm.build [--copy GIT_DIR]      # rewrites rows.toml

`--copy`: first copy the kept records verbatim from a git directory of smoothyy3/willitrun into `table.md` (done once,
2026-12-05, printing only their count); then `rows.toml` is built from `table.md`.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from evidence import tables
from evidence.sources.llamacpp_cuda import build as llamacpp_cuda

HERE = Path(__file__).parent
TITLE = "llama.cpp's CUDA scoreboard (Llama 2 7B Q4_0) on fifteen more GPUs"
COMMIT = "04cac64616108bedd06a710b91bdc1b4f4758ce9"
COPY = "data/normalized/llama_cpp_cuda.jsonl"
#: the scoreboard's chip strings the rule keeps → catalog ids
GPUS = {"A30": "a30", "A40": "a40", "L40": "l40", "RTX 6000 Ada": "rtx-6000-ada", "RTX A4000": "rtx-a4000",
        "RTX A4500": "rtx-a4500", "RTX A5000": "rtx-a5000", "RTX A6000": "rtx-a6000", "RTX 4060 Ti": "rtx-4060-ti",
        "RTX 4070 Ti SUPER": "rtx-4070-ti-super", "RTX 4080": "rtx-4080", "RTX 4080 SUPER": "rtx-4080-super",
        "RTX 4090 D": "rtx-4090-d", "RTX 5070 Ti": "rtx-5070-ti", "RTX 5080": "rtx-5080"}


def copy(git_dir: str) -> int:
    """Write `table.md`: the records of the copy at `COMMIT` whose notes say backend=CUDA and name a chip of `GPUS`,
    verbatim, one a line; returns how many."""
    text = subprocess.run(["git", "-C", git_dir, "show", f"{COMMIT}:{COPY}"], check=True, capture_output=True,
                          text=True).stdout
    kept = [line for line in text.splitlines() if line.strip()
            and "backend=CUDA" in (notes := json.loads(line)["notes"]) and notes.split("chip=")[-1] in GPUS]
    head = (f"<!-- smoothyy3/willitrun {COPY} at {COMMIT}: its records of ggml-org/llama.cpp discussion 15013's "
            f"scoreboard (backend=CUDA) for the chips the rule keeps ({', '.join(GPUS)}), verbatim, one JSON object a "
            "line; copied 2026-12-05 by inclusion-rule.md -->")
    (HERE / "table.md").write_text(head + "\n\n```jsonl\n" + "\n".join(kept) + "\n```\n")
    return len(kept)


def rows() -> list[dict]:
    return llamacpp_cuda.rows(HERE / "table.md", GPUS, llamacpp_cuda.SOURCE)


def files() -> dict[Path, str]:
    return {HERE / "rows.toml": tables.rows_file(f"{__package__}.build", rows(), llamacpp_cuda.SOURCE)}


if __name__ == "__main__":
    if "--copy" in sys.argv:
        print(copy(sys.argv[sys.argv.index("--copy") + 1]), "records copied")
    tables.write(files())
