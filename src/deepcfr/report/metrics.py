"""Reading a run's ``metrics.jsonl`` robustly, also while the run is still writing it.

Each line is one JSON object with an ``iteration`` and flat figures (``loss/...``, ``time/...``,
``eval/<opponent>/<policy>/<figure>``, ``exploitability/...``, ``memory/...``,
``traversal/...``). Several lines may carry the same iteration (for example training figures
and a later evaluation); they are merged, later values winning.

An improvement run (``deepcfr improve``) evaluates its network ``sampled`` and ``greedy``; its
older metrics files called the sampled one ``average`` (CFR's average strategy everywhere else),
which reading renames (``improve_eval_names``).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeGuard


@dataclass
class MetricsLog:
    """Merged per-iteration figures, in iteration order, plus what could not be read."""

    path: Path
    rows: list[dict]  # one merged dict per iteration, sorted by iteration
    warnings: list[str] = field(default_factory=list)
    partial_last_line: bool = False  # the last line is incomplete: the run is probably still writing

    @property
    def iterations(self) -> list[int]:
        return [r["iteration"] for r in self.rows]

    def keys(self) -> list[str]:
        seen: dict[str, None] = {}
        for r in self.rows:
            for k in r:
                if k != "iteration":
                    seen.setdefault(k, None)
        return list(seen)

    def series(self, key: str) -> tuple[list[int], list[float]]:
        """(iterations, values) of the rows where ``key`` holds a finite number."""
        xs, ys = [], []
        for r in self.rows:
            v = r.get(key)
            if _is_number(v) and math.isfinite(v):
                xs.append(r["iteration"])
                ys.append(float(v))
        return xs, ys

    def last_with(self, prefixes: tuple[str, ...]) -> dict | None:
        """The latest row holding any figure whose key starts with one of ``prefixes``."""
        for r in reversed(self.rows):
            if any(k.startswith(prefixes) for k in r):
                return r
        return None


def _is_number(v: object) -> TypeGuard[int | float]:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


IMPROVE_PREFIXES = ("selfplay/", "gate/", "improve/")  # figures only an improvement run logs


def accepted_rounds(rows: list[dict]) -> int:
    """How many rounds of an improvement run (improve's or the learned exploiter's) its gate
    accepted, read from its metrics rows (a run from a checkpoint and a fresh one alike)."""
    return sum(int(r.get("gate/accepted", 0)) for r in rows)


def improve_eval_names(rows: list[dict]) -> list[dict]:
    """The rows of an improvement run's metrics (a row holds ``selfplay/``, ``gate/`` or
    ``improve/`` figures) with the old name of its sampled network's evaluation,
    ``eval/OPP/average/FIGURE``, as today's ``eval/OPP/sampled/FIGURE``; other runs' rows as they are."""
    if not any(k.startswith(IMPROVE_PREFIXES) for r in rows for k in r):
        return rows

    def renamed(key: str) -> str:
        parts = key.split("/")
        if parts[0] == "eval" and len(parts) >= 4 and parts[-2] == "average":
            return "/".join([*parts[:-2], "sampled", parts[-1]])
        return key

    return [{renamed(k): v for k, v in r.items()} for r in rows]


def read_metrics(path: str | Path) -> MetricsLog:
    """Read ``metrics.jsonl``. An incomplete last line (a live run mid-write) is skipped quietly;
    an unreadable line elsewhere is skipped with a warning naming its line number."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"metrics file not found: {path}")
    text = path.read_text(encoding="utf-8", errors="replace")
    lines = text.split("\n")
    # With a trailing newline the last element is "", so a non-empty last element is unfinished.
    ends_cleanly = text.endswith("\n")
    by_iteration: dict[int, dict] = {}
    warnings: list[str] = []
    partial = False
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        is_last = number == len(lines)
        try:
            record = json.loads(line)
        except json.JSONDecodeError as e:
            if is_last and not ends_cleanly:
                partial = True
            else:
                warnings.append(f"{path.name} line {number}: not valid JSON ({e.msg}); skipped")
            continue
        if not isinstance(record, dict):
            warnings.append(f"{path.name} line {number}: not a JSON object; skipped")
            continue
        it = record.get("iteration")
        if not _is_number(it) or int(it) != it:
            if "iteration" in record:
                warnings.append(f"{path.name} line {number}: iteration {it!r} is not an integer; skipped")
            continue  # lines without an iteration (run events) carry no plottable figures
        by_iteration.setdefault(int(it), {}).update(record)
        by_iteration[int(it)]["iteration"] = int(it)
    rows = improve_eval_names([by_iteration[k] for k in sorted(by_iteration)])
    return MetricsLog(path=path, rows=rows, warnings=warnings, partial_last_line=partial)
