"""The style floor: ``ruff check`` (the rules of ``[tool.ruff]`` in pyproject.toml) and ``ruff format
--check`` pass on src, tests and scripts. Fix a failure with ``ruff check --fix`` and ``ruff format``
(the venv's ruff, the version constraints.txt pins); skipped where ruff is not installed.

And the type check: ``mypy`` passes on ``[tool.mypy] files``, the whole package (the venv's mypy,
pinned in constraints.txt); skipped where mypy is not installed."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PATHS = ["src", "tests", "scripts"]


def tool(name: str) -> str:
    """The ``name`` (ruff, mypy) beside this interpreter (the venv's), else the one on PATH."""
    found = Path(sys.executable).with_name(name)
    if found.is_file():
        return str(found)
    on_path = shutil.which(name)
    if on_path is None:
        pytest.skip(f"{name} is not installed (it is in the dev extra: pip install -c constraints.txt -e '.[dev]')")
    return on_path


def ruff() -> str:
    return tool("ruff")


def run_ruff(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([ruff(), *args, *PATHS], cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_ruff_check_is_clean():
    proc = run_ruff("check", "--no-cache", "--output-format", "concise")
    assert proc.returncode == 0, f"ruff check found:\n{proc.stdout}{proc.stderr}"


def test_ruff_format_is_clean():
    proc = run_ruff("format", "--check", "--no-cache", "--output-format", "concise")
    assert proc.returncode == 0, f"ruff format would reformat (run ruff format):\n{proc.stdout}{proc.stderr}"


def test_mypy_is_clean():
    """No arguments: mypy checks the files of ``[tool.mypy]`` in pyproject.toml, with its settings."""
    proc = subprocess.run([tool("mypy")], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"mypy found (see [tool.mypy] in pyproject.toml):\n{proc.stdout}{proc.stderr}"
