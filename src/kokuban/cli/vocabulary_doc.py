"""`python -m kokuban.cli.vocabulary_doc [--write docs/vocabulary.md]`: the table of every flag
(`vocabulary.markdown_table` of the whole CLI), printed, or put in place of the table in that file.

A module of its own: it needs the assembled CLI (`kokuban.cli`), which imports `vocabulary`, so the table's
entry point cannot live in `vocabulary` without an import cycle."""

from __future__ import annotations

import sys
from pathlib import Path

from kokuban.cli import cli
from kokuban.cli.vocabulary import markdown_table

HEADER = "| flag | older spellings"


def replace_table(doc: str, table: str) -> str:
    """`doc` with its flag table (the run of `|` lines from `HEADER` on) replaced by `table`."""
    start = doc.index(HEADER)
    lines = doc[start:].split("\n")
    rows = next((i for i, line in enumerate(lines) if not line.startswith("|")), len(lines))
    end = start + len("\n".join(lines[:rows])) + 1
    return doc[:start] + table + doc[end:]


if __name__ == "__main__":
    table = markdown_table(cli)
    if sys.argv[1:2] == ["--write"]:
        path = Path(sys.argv[2])
        path.write_text(replace_table(path.read_text(encoding="utf-8"), table), encoding="utf-8")
    else:
        print(table, end="")
