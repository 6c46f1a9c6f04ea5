"""Output helpers shared by the subcommands: one JSON object with --json, a rich table otherwise."""

from __future__ import annotations

import json
import math
from typing import Any

from rich.console import Console
from rich.table import Table


def _clean(v: Any) -> Any:
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, dict):
        return {k: _clean(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_clean(x) for x in v]
    if hasattr(v, "item") and callable(v.item):
        return _clean(v.item())
    return v


def emit(result: dict, as_json: bool, title: str | None = None) -> None:
    """Print ``result`` (flat snake_case figures) as exactly one JSON object, or as a table."""
    if as_json:
        print(json.dumps(_clean(result), sort_keys=False))
        return
    table = Table(title=title, show_header=True)
    table.add_column("figure")
    table.add_column("value", justify="right")
    for k, v in result.items():
        if isinstance(v, float):
            v = f"{v:.6g}"
        table.add_row(k, str(v))
    Console().print(table)


def add_json_flag(parser) -> None:
    parser.add_argument("--json", action="store_true", help="print exactly one JSON object with the figures")
