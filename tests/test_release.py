"""What a user of a released package looks for: a licence, the version in one place, a changelog."""

import subprocess
import sys
import tomllib
from importlib.metadata import version
from pathlib import Path

from deepcfr.games.registry import game_names

ROOT = Path(__file__).resolve().parents[1]


def test_version_command_names_the_package_and_every_game():
    out = subprocess.run(
        [sys.executable, "-m", "deepcfr.cli.main", "--version"], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    assert out.returncode == 0, out.stderr
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert out.stdout.splitlines()[0] == f"deepcfr {project['version']}" == f"deepcfr {version('deepcfr')}"
    for name in game_names():
        assert f"  {name}: rules and observations version " in out.stdout
    assert "lost_cities: rules and observations version 1, encoding version " in out.stdout


def test_licence_and_changelog():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["license"] == "MIT" and project["license-files"] == ["LICENSE"]
    assert (ROOT / "LICENSE").read_text().startswith("MIT License")
    assert (ROOT / "third_party" / "onnxruntime-web" / "LICENSE").is_file()
    changelog = (ROOT / "CHANGELOG.md").read_text()
    assert f"## {project['version']}" in changelog and "## Unreleased" in changelog


def test_the_changelog_is_split_by_version_newest_first():
    import re

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    headings = re.findall(r"^## (.+)$", (ROOT / "CHANGELOG.md").read_text(), re.M)
    assert headings[0] == "Unreleased"  # what is not released yet, on top
    assert re.fullmatch(rf"{re.escape(project['version'])} \(\d{{4}}-\d\d-\d\d\)", headings[1])  # this version, dated
    versions = [tuple(int(x) for x in h.split()[0].split(".")) for h in headings[1:]]
    assert versions == sorted(versions, reverse=True) and len(set(versions)) == len(versions)
