"""The Python the README and the Python guide (docs/python.md) show runs, and every import the docs show resolves
(public imports keep working)."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def _blocks(page: Path) -> list[str]:
    return BLOCK.findall(page.read_text(encoding="utf-8"))


@pytest.mark.parametrize("code", _blocks(ROOT / "README.md"))
def test_readme_python_runs(code):
    exec(compile(code, "README.md", "exec"), {})


def test_the_python_guide_has_code():
    assert len(_blocks(ROOT / "docs" / "python.md")) >= 3


@pytest.mark.parametrize("code", _blocks(ROOT / "docs" / "python.md"))
def test_python_guide_runs(code):
    exec(compile(code, "docs/python.md", "exec"), {})


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_documented_import_resolves(page):
    for code in _blocks(page):
        for node in ast.walk(ast.parse(code)):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("kokuban"):
                module = importlib.import_module(node.module)
                for alias in node.names:
                    assert hasattr(module, alias.name) or importlib.util.find_spec(f"{node.module}.{alias.name}"), (
                        f"{page.name}: from {node.module} import {alias.name}")
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.startswith("kokuban"):
                        importlib.import_module(alias.name)
