"""Issue 68, item 3 ("rooms that hold one thing"): no function in ``deepcfr`` over 100 lines, no
file over 700.

A function's length is that of its ``def`` node (``end_lineno - lineno + 1``: its decorators aside,
its docstring and comments included); a file's is its number of lines. The functions still over
the limit are listed below, each with its length when it was listed as a ceiling: one may shrink
(and leaves the list once it is within the limit) but not grow, and an entry that is no longer
over the limit, or no longer exists, fails too, so the list only shrinks.
"""

from __future__ import annotations

import ast
from pathlib import Path

import deepcfr

SRC = Path(deepcfr.__file__).resolve().parent
MAX_FUNCTION_LINES = 100
MAX_FILE_LINES = 700

# Known offenders ("file::qualified name": ceiling in lines): none. Split one and delete its entry.
LONG_FUNCTIONS: dict[str, int] = {}
# Known long files ("file": ceiling in lines): none.
LONG_FILES: dict[str, int] = {}


def _sources() -> list[Path]:
    return sorted(SRC.rglob("*.py"))


def _functions(tree: ast.AST, prefix: str = ""):
    """(qualified name, length) of every function and method, nested ones included."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            name = prefix + node.name
            if not isinstance(node, ast.ClassDef):
                yield name, node.end_lineno - node.lineno + 1
            yield from _functions(node, name + ".")
        else:
            yield from _functions(node, prefix)


def _long_functions() -> dict[str, int]:
    found = {}
    for path in _sources():
        rel = path.relative_to(SRC).as_posix()
        for name, length in _functions(ast.parse(path.read_text(encoding="utf-8"))):
            if length > MAX_FUNCTION_LINES:
                found[f"{rel}::{name}"] = length
    return found


def _long_files() -> dict[str, int]:
    found = {}
    for path in _sources():
        length = len(path.read_text(encoding="utf-8").splitlines())
        if length > MAX_FILE_LINES:
            found[path.relative_to(SRC).as_posix()] = length
    return found


def test_no_function_is_over_100_lines_but_the_listed_ones_which_do_not_grow():
    found = _long_functions()
    new = {name: length for name, length in found.items() if name not in LONG_FUNCTIONS}
    assert not new, f"functions over {MAX_FUNCTION_LINES} lines (split them): {new}"
    grown = {name: (length, LONG_FUNCTIONS[name]) for name, length in found.items() if length > LONG_FUNCTIONS[name]}
    assert not grown, f"listed functions grew past their ceiling (length, ceiling): {grown}"


def test_no_file_is_over_700_lines_but_the_listed_ones_which_do_not_grow():
    found = _long_files()
    new = {name: length for name, length in found.items() if name not in LONG_FILES}
    assert not new, f"files over {MAX_FILE_LINES} lines (split them): {new}"
    grown = {name: (length, LONG_FILES[name]) for name, length in found.items() if length > LONG_FILES[name]}
    assert not grown, f"listed files grew past their ceiling (length, ceiling): {grown}"


def test_the_lists_of_offenders_have_no_stale_entries():
    stale = sorted(set(LONG_FUNCTIONS) - set(_long_functions())) + sorted(set(LONG_FILES) - set(_long_files()))
    assert not stale, f"within the limits now (or gone): delete their entries: {stale}"


def test_the_measure_counts_a_def_node_and_its_nested_functions():
    tree = ast.parse("class A:\n    def f(self):\n        def g():\n            pass\n\n        return g\n")
    assert dict(_functions(tree)) == {"A.f": 5, "A.f.g": 2}
