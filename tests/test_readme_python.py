"""The README's Python section runs as it is written, and prints what it says it prints."""

import contextlib
import io
import re
from pathlib import Path

import pytest

from deepcfr.players.shipped import CHAMPION_FILE

README = Path(__file__).resolve().parent.parent / "README.md"


@pytest.mark.skipif(not CHAMPION_FILE.is_file(), reason="no champion shipped in this tree")
def test_the_readme_python_block_runs():
    section = README.read_text().split("## From Python", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README.md", "exec"), {})
    exploitability, match = out.getvalue().splitlines()
    assert float(exploitability) < 0.05
    assert float(match.split("%")[0]) > 60  # the champion beats heuristic_careful
