"""Start-up stays light: heavy libraries are imported only by the commands that use them.

These check WHICH modules a fresh interpreter has loaded (sys.modules), not how long it took: the timings live in
benchmarks/bench_startup.py. Each case runs in a subprocess so that this test process's imports do not count.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
HEAVY = ("pandas", "matplotlib", "scipy", "torch", "tqdm")


def loaded_after(code: str) -> set[str]:
    """Top-level packages in sys.modules after a fresh interpreter runs `code` (its stdout is discarded)."""
    probe = (
        "import contextlib, io, json, sys\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        + "".join(f"    {line}\n" for line in code.splitlines())
        + "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))\n"
    )
    env = dict(os.environ, PYTHONPATH=str(SRC))
    out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True)
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


def test_import_kokuban_loads_no_numpy_or_pydantic():
    # the package's public names are imported on first use (PEP 562), so `import kokuban` is the interpreter
    loaded = loaded_after("import kokuban")
    assert not loaded & {"numpy", "pydantic", "rich", "click", *HEAVY}


def test_cli_help_loads_no_heavy_library():
    loaded = loaded_after("from kokuban.cli import main\nmain(['--help'])")
    assert "click" in loaded  # the probe does see what the CLI imports
    assert not loaded & {"numpy", "pydantic", "rich", *HEAVY}


@pytest.mark.parametrize("args", [
    ["estimate", "llama-3.1-8b", "--gpu", "h100-sxm", "--json"],
    ["estimate", "llama-3.1-8b", "--gpu", "h100-sxm"],
])
def test_estimate_loads_neither_pandas_nor_plotting_nor_fitting(args):
    loaded = loaded_after(f"from kokuban.cli import main\nassert main({args!r}) == 0")
    assert "numpy" in loaded and "pydantic" in loaded  # estimate does its work
    assert not loaded & set(HEAVY)


def test_public_names_still_importable_and_lazy():
    import kokuban

    assert set(kokuban.__all__) == set(kokuban._EXPORTS) | {"__version__"}
    for name in kokuban.__all__:
        assert getattr(kokuban, name) is not None
    with pytest.raises(AttributeError):
        kokuban.no_such_name  # noqa: B018


@pytest.mark.parametrize(("given", "expected"), [(None, "1"), ("4", "4")])
def test_cli_defaults_openblas_to_one_thread_unless_the_user_says(given, expected):
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"} | {"PYTHONPATH": str(SRC)}
    if given:
        env["OPENBLAS_NUM_THREADS"] = given
    code = ("import contextlib, io, os\nfrom kokuban.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n    main(['--help'])\n"
            "print(os.environ['OPENBLAS_NUM_THREADS'])")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert out.strip() == expected
