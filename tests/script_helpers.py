"""Shared by the tests of scripts/: a script loaded as a module (scripts/ is not a package)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"


def load_script(name: str):
    """scripts/NAME.py as a module (NAME may name a subfolder: ``experiments/luck_floor``)."""
    spec = importlib.util.spec_from_file_location(Path(name).name, SCRIPTS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
