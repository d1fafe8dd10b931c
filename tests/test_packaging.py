"""Packaging as people expect: the wheel `pip wheel . --no-deps` builds holds the data files and py.typed, its
metadata carries the one version and the declared licence, and the LICENSE file is that licence's text."""

from __future__ import annotations

import email
import importlib.util
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

import kokuban

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> zipfile.ZipFile:
    if importlib.util.find_spec("hatchling") is None:
        pytest.skip("hatchling (in the `test` extra) is needed to build the wheel offline")
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "--no-build-isolation",
                    "--no-index", "-q", "-w", str(out)], check=True, capture_output=True, text=True)
    (path,) = out.glob("kokuban-*.whl")
    return zipfile.ZipFile(path)


def _metadata(wheel: zipfile.ZipFile) -> email.message.Message:
    (name,) = [n for n in wheel.namelist() if n.endswith(".dist-info/METADATA")]
    return email.message_from_bytes(wheel.read(name))


def test_wheel_holds_every_data_file_and_py_typed(wheel):
    names = set(wheel.namelist())
    data = ROOT / "src" / "kokuban" / "data"
    shipped = {f"kokuban/data/{p.relative_to(data).as_posix()}" for p in data.rglob("*") if p.is_file()}
    assert {"kokuban/data/accelerators.toml", "kokuban/data/models/catalog.toml",
            "kokuban/data/models/llama-3.1-8b.json"} <= shipped  # the walk found the catalogs
    assert shipped <= names
    assert "kokuban/py.typed" in names
    assert "kokuban/cli/__init__.py" in names


def test_wheel_metadata_has_the_one_version_the_licence_and_the_entry_point(wheel):
    meta = _metadata(wheel)
    assert meta["Version"] == kokuban.__version__
    assert meta["License-Expression"] == PYPROJECT["project"]["license"] == "Apache-2.0"
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in wheel.namelist())
    (entry_points,) = [n for n in wheel.namelist() if n.endswith(".dist-info/entry_points.txt")]
    assert "kokuban = kokuban.cli:main" in wheel.read(entry_points).decode()
    extras = set(meta.get_all("Provides-Extra"))
    assert {"plots", "fitting", "validate", "test"} <= extras
    requires = " ".join(meta.get_all("Requires-Dist"))
    assert "matplotlib" in requires and "extra == 'plots'" in requires


def test_licence_file_is_the_apache_2_text():
    text = (ROOT / "LICENSE").read_text()
    assert text.split()[:5] == ["Apache", "License", "Version", "2.0,", "January"]
    assert "END OF TERMS AND CONDITIONS" in text


def test_heavy_parts_are_extras_not_requirements():
    deps = " ".join(PYPROJECT["project"]["dependencies"])
    extras = PYPROJECT["project"]["optional-dependencies"]
    for lib, extra in (("matplotlib", "plots"), ("scipy", "fitting"), ("torch", "validate")):
        assert lib not in deps
        assert any(req.startswith(lib) for req in extras[extra])


def test_version_has_one_source():
    assert "version" in PYPROJECT["project"]["dynamic"] and "version" not in PYPROJECT["project"]
    assert PYPROJECT["tool"]["hatch"]["version"]["path"] == "src/kokuban/__init__.py"


def test_cli_version_is_the_package_version(capsys):
    from kokuban.cli import main

    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"kokuban, version {kokuban.__version__}"


def test_a_missing_extra_is_one_line_naming_the_extra(monkeypatch, capsys):
    # a command whose optional library is absent says which extra to install, exit 2, no traceback
    import kokuban.cli as cli_module
    from kokuban.cli import main

    def needs_scipy() -> None:
        raise ModuleNotFoundError("No module named 'scipy'", name="scipy")

    monkeypatch.setattr(cli_module.cli, "main", lambda **kw: needs_scipy())
    assert main(["calibrate"]) == 2
    err = capsys.readouterr().err
    assert err == "error: this needs scipy, an optional part: pip install 'kokuban[fitting]'\n"
    extras = PYPROJECT["project"]["optional-dependencies"]
    for lib, extra in cli_module.EXTRAS.items():  # each hint names an extra that installs that library
        assert any(req.startswith(lib) for req in extras[extra])


def test_classifiers_and_project_urls_are_in_the_metadata(wheel):
    """What an index page shows: the Python versions (each one the declared Requires-Python allows), typed, and
    the project's links."""
    meta = _metadata(wheel)
    classifiers = meta.get_all("Classifier")
    assert "Typing :: Typed" in classifiers and "Environment :: Console" in classifiers
    versions = [c.rsplit(" ", 1)[1] for c in classifiers if c.startswith("Programming Language :: Python :: 3.")]
    assert versions and meta["Requires-Python"] == ">=3.11"
    assert all(tuple(map(int, v.split("."))) >= (3, 11) for v in versions)
    links = {entry.split(",", 1)[0].strip() for entry in meta.get_all("Project-URL")}
    assert {"Homepage", "Documentation", "Source", "Issues"} <= links


def test_readme_test_command_pins_the_cpu_torch_itself():
    """The README's test command installs the pinned CPU build of PyTorch in the command, not in a side clause."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    (line,) = [ln for ln in readme.splitlines() if ln.startswith("python3 -m venv") and "pytest" in ln]
    pin = line.split("pip install '", 1)[1].split("'", 1)[0]
    assert pin.startswith("torch==") and pin.endswith("+cpu")
    assert "--extra-index-url https://download.pytorch.org/whl/cpu" in line
    assert line.index(pin) < line.index("pip install -e '.[test")  # first the CPU torch, then the extras
