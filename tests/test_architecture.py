"""The import picture: data flows one way (specs → core → wings → use cases → presentation → faces), no
circles, only the faces import click, only presentation (and the web face) imports rich/matplotlib, and no
computing module names a command-line flag."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import kokuban

ROOT = Path(kokuban.__file__).parent
LAYER = {"errors": 0, "specs": 0, "core": 1, "economics": 2, "prices": 2, "sim": 2, "validation": 2, "agents": 2,
         "usecases": 3, "present": 4, "cli": 5, "web": 5}
FACES = {"cli", "web"}


def _modules() -> dict[str, Path]:
    out = {}
    for path in ROOT.rglob("*.py"):
        rel = path.relative_to(ROOT).with_suffix("")
        parts = [p for p in rel.parts if p != "__init__"]
        out[".".join(["kokuban", *parts])] = path
    return out


def _imports(path: Path) -> list[str]:
    """Every module `path` imports, those under `if TYPE_CHECKING:` included (an annotation is an arrow too)."""
    tree = ast.parse(path.read_text())
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names += [node.module] + [f"{node.module}.{a.name}" for a in node.names]
    return names


def _area(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def test_no_arrow_runs_back_up():
    bad = []
    for mod, path in _modules().items():
        area = _area(mod)
        if area not in LAYER:
            continue
        for name in _imports(path):
            if not name.startswith("kokuban."):
                continue
            target = _area(name)
            if target in LAYER and LAYER[target] > LAYER[area]:
                bad.append(f"{mod} → {name}")
    assert not bad, "imports that run back up:\n" + "\n".join(sorted(set(bad)))


def test_no_import_cycles_between_modules():
    mods = _modules()
    graph = {m: {n for n in _imports(p) if n in mods and n != m} for m, p in mods.items()}
    for m in list(graph):  # a package's __init__ is what `from package import x` loads
        graph[m] = {n for n in graph[m] if not m.startswith(n + ".")}
    seen: dict[str, int] = {}
    stack: list[str] = []

    def visit(m: str) -> None:
        seen[m] = 1
        stack.append(m)
        for n in graph[m]:
            if seen.get(n) == 1:
                raise AssertionError("import cycle: " + " → ".join(stack[stack.index(n):] + [n]))
            if n not in seen:
                visit(n)
        stack.pop()
        seen[m] = 2

    for m in graph:
        if m not in seen:
            visit(m)


def test_only_faces_import_click_and_only_presentation_draws():
    for mod, path in _modules().items():
        area = _area(mod)
        tops = {n.split(".")[0] for n in _imports(path)}
        if "click" in tops:
            assert area in FACES, f"{mod} imports click"
        for lib in ("rich", "matplotlib"):
            if lib in tops:
                assert area in {"present"} | FACES, f"{mod} imports {lib}"


def test_no_computing_module_names_a_flag():
    flag = re.compile(r"(?<![\w-])--[a-z][a-z0-9]+(-[a-z0-9]+)*")
    bad = []
    for mod, path in _modules().items():
        if _area(mod) in {"present"} | FACES:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            # docstrings may cite other tools' flags (vLLM's --max-num-seqs); messages may not
            is_text = isinstance(node, ast.Constant) and isinstance(node.value, str)
            if is_text and flag.search(node.value) and not _is_docstring(node, path):
                bad.append(f"{mod}: {node.value.strip()[:70]!r}")
        # and no quoted flag anywhere in the text, docstrings and comments included ("--max-batch")
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if re.search(r"[\"']--[a-z]", line):
                bad.append(f"{mod}:{number}: {line.strip()[:70]!r}")
    assert not bad, "flags named outside the faces:\n" + "\n".join(bad)


def _is_docstring(node: ast.Constant, path: Path) -> bool:
    tree = _TREES.setdefault(path, ast.parse(path.read_text()))
    for owner in ast.walk(tree):
        if isinstance(owner, (ast.Module, ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)) and owner.body:
            first = owner.body[0]
            if (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
                    and (first.value.lineno, first.value.col_offset) == (node.lineno, node.col_offset)):
                return True
    return False


_TREES: dict[Path, ast.AST] = {}
