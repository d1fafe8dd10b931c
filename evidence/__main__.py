"""Regenerate every report of the shipped step model — each source's rows (from its copied table) and report, the
pool (`evidence/pool.json`) and `docs/accuracy.md` — and then every generated block of the README and the guides
(`evidence.docs`), which quote them:

    python -m evidence            # write each file whose text changed, and name it
    python -m evidence --check    # change nothing; exit 1 naming each stale file (CI runs this)

Each distinct row is predicted once; the judgement records under `evidence/changes/` are frozen and not touched.
"""

from __future__ import annotations

import argparse
import sys
import time

from evidence import docs
from evidence.pages import outputs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if a file is stale")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    changed = {p: (text, "") for p, text in outputs().items()
               if not p.exists() or p.read_text(encoding="utf-8") != text}
    stale = docs.settle(changed, args.check)
    pages = docs.stale()  # after the reports are written: the blocks quote pool.json
    stale += docs.settle({p: (text, ", ".join(docs.describe(p, text))) for p, text in pages.items()}, args.check)
    print(f"{stale} of the generated files {'stale' if args.check else 'written'} "
          f"({time.perf_counter() - start:.0f} s)", file=sys.stderr)
    if args.check and stale:
        print("run `python -m evidence` and commit the result", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
