"""What the server reads from disk: recorded games (``--replays``) and run directories (``--runs``).

Every path a request names is taken relative to the served directory and confined to it
(``paths.resolve_under``). Record files are validated by ``evaluate.replay.read_records``;
run reports are drawn by the ``report`` package into the server's own cache directory (the
run directories are only read), again whenever ``metrics.jsonl`` changed, so a run that is still
going shows its latest figures.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import threading
import time
from pathlib import Path

from ..evaluate.replay import GameRecord, new_reference, read_records
from ..report import read_metrics, write_report
from ..report.plots import PLOTS
from ..report.summary import evaluation_table, find_checkpoints, read_run_config
from .paths import PathError, is_under, resolve_under
from .present import WEB_TABLE_GAME, describe_action, table_json

RECORD_SUFFIX = ".jsonl"
RUN_MARKERS = ("metrics.jsonl", "config.yaml")
MAX_DEPTH = 3  # run directories and record files are looked for this deep under the served directory
ACTIVE_SECONDS = 300  # a run on another host whose metrics changed this recently is shown as running
RUNNING_FILE = "running.json"  # train.run.RUNNING_FILE: written while the run's process has it open
RECORD_KEYS = ("format", "deal", "actions")  # a game record's first line has these (evaluate/replay.py)
FIRST_LINE_LIMIT = 1 << 20
METRICS_TAIL = 1 << 16  # bytes read from the end of metrics.jsonl for a run's last iteration


def looks_like_records(path: Path) -> bool:
    """Whether a .jsonl file is meant as game records: its first line is no JSON object, or one with
    a record's fields. Other JSON lines (a run's metrics.jsonl) are not offered as replays; a
    corrupted record file still is, so that choosing it says what is wrong."""
    try:
        with open(path, "rb") as f:
            first = f.readline(FIRST_LINE_LIMIT)
    except OSError:
        return False
    try:
        data = json.loads(first)
    except ValueError:
        return True
    return not isinstance(data, dict) or any(key in data for key in RECORD_KEYS)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True  # it exists, under another user
    return True


def run_is_running(run_dir: Path, metrics_modified: float | None, now: float) -> bool:
    """Whether a run's process still has it open: its running marker names a live process of this
    host (or, for another host's marker, its metrics changed within ACTIVE_SECONDS). A finished run
    has removed its marker; a killed one's process is gone."""
    try:
        marker = json.loads((run_dir / RUNNING_FILE).read_text())
        pid, host = int(marker["pid"]), str(marker["host"])
    except (OSError, ValueError, KeyError, TypeError):
        return False
    if host == socket.gethostname():
        return _pid_alive(pid)
    return metrics_modified is not None and now - metrics_modified < ACTIVE_SECONDS


def last_iteration(metrics: Path) -> int | None:
    """The last iteration (a round, for an improvement run) that ``metrics.jsonl`` records, read
    from its end (a long log is not read whole); None when it records none."""
    try:
        with open(metrics, "rb") as f:
            size = f.seek(0, os.SEEK_END)
            f.seek(max(0, size - METRICS_TAIL))
            lines = f.read().split(b"\n")
    except OSError:
        return None
    if size > METRICS_TAIL:
        lines = lines[1:]  # the first line read may be cut
    for line in reversed(lines):
        try:
            record = json.loads(line)
        except ValueError:
            continue  # empty, or a line being written
        value = record.get("iteration") if isinstance(record, dict) else None
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def target_iterations(config: dict) -> int | None:
    """The iterations a run's config asks for: ``run.iterations`` (deepcfr train) or
    ``improve.rounds`` (deepcfr improve); None when it names neither."""
    for section, key in (("improve", "rounds"), ("run", "iterations")):
        value = config.get(section, {}).get(key) if isinstance(config.get(section), dict) else None
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def run_status(running: bool, last: int | None, target: int | None, closed: bool = True) -> str:
    """``running``; ``finished`` once a run closed itself (``closed``: its running marker removed)
    after logging every iteration (or round) its config asks for; else ``stopped`` (killed, even
    after its last iteration, during the final fit; out of its time budget; ended early)."""
    if running:
        return "running"
    done = closed and last is not None and target is not None and last >= target
    return "finished" if done else "stopped"


def _walk(root: Path, depth: int = 0):
    """Entries under ``root`` (hidden ones skipped), never following a link out of it."""
    try:
        entries = sorted(root.iterdir())
    except OSError:
        return
    for entry in entries:
        if entry.name.startswith(".") or not is_under(root, entry):
            continue
        yield entry
        if entry.is_dir() and depth + 1 < MAX_DEPTH:
            yield from _walk(entry, depth + 1)


class ReplayLibrary:
    """Record files under ``root``; the games of a file are read (and validated) once per version."""

    def __init__(self, root: str | Path):
        # resolved once: every path found under it is resolved too, and answers name paths relative to it
        self.root = Path(root).resolve()
        self._cache: dict[tuple[str, int, int], list[GameRecord]] = {}
        self._lock = threading.Lock()

    def files(self) -> list[dict]:
        if not self.root.is_dir():
            return []
        out = []
        for path in _walk(self.root):
            if (
                path.is_file()
                and path.name.endswith(RECORD_SUFFIX)
                and is_under(self.root, path)
                and looks_like_records(path)
            ):
                stat = path.stat()
                out.append(
                    {"file": path.relative_to(self.root).as_posix(), "bytes": stat.st_size, "modified": stat.st_mtime}
                )
        return sorted(out, key=lambda f: (-f["modified"], f["file"]))  # newest first

    def records(self, file: str) -> list[GameRecord]:
        path = resolve_under(self.root, file, "record file")
        if not path.is_file() or not path.name.endswith(RECORD_SUFFIX):
            raise PathError(f"record file {file!r} is not a {RECORD_SUFFIX} file")
        stat = path.stat()
        key = (str(path), stat.st_mtime_ns, stat.st_size)
        with self._lock:
            if key not in self._cache:
                self._cache = {k: v for k, v in self._cache.items() if k[0] != key[0]}
                try:
                    self._cache[key] = read_records(path, game=WEB_TABLE_GAME.name)
                except ValueError as e:  # its messages name the file by its path on this machine
                    raise type(e)(str(e).replace(str(path), file)) from None
            return self._cache[key]

    def games(self, file: str) -> list[dict]:
        return [
            {"game": i, "players": r.players, "seed": r.seed, "decisions": len(r.actions), "result": r.result}
            for i, r in enumerate(self.records(file))
        ]

    def state(self, file: str, game: int, step: int) -> dict:
        """The table after ``step`` decisions of game number ``game`` (from 0) of the file, both hands open."""
        records = self.records(file)
        if not 0 <= game < len(records):
            raise ValueError(f"game {game} is not in {file}: it holds games 0..{len(records) - 1}")
        record = records[game]
        total = len(record.actions)
        if not 0 <= step <= total:
            raise ValueError(f"step {step} is out of range: game {game} has steps 0..{total}")
        ref = new_reference(record.game, record.game_config, record.deal)
        mover = None  # the seat that made the previous decision
        rules = ref.rules
        moves = []
        for n, action in enumerate(record.actions[:step]):
            mover = ref.current_player()
            moves.append({"n": n + 1, "seat": mover, **describe_action(rules, action)})
            ref.apply(action)
        out = {
            "file": file,
            "game": game,
            "step": step,
            "steps": total,
            "seed": record.seed,
            "players": [{"seat": s, "name": record.players[s], "human": False} for s in range(2)],
            **table_json(ref, None),
        }
        out["moves"] = moves
        out["previous_move"] = (
            {"n": step, "seat": mover, **describe_action(rules, record.actions[step - 1])} if step > 0 else None
        )
        out["next_move"] = (
            {"n": step + 1, "seat": ref.current_player(), **describe_action(rules, record.actions[step])}
            if step < total
            else None
        )
        return out


class RunLibrary:
    """Run directories under ``root``; reports drawn into ``cache`` (one folder per run)."""

    def __init__(self, root: str | Path, cache: str | Path):
        self.root = Path(root).resolve()  # as ReplayLibrary's
        self.cache = Path(cache)
        self._drawn: dict[str, int] = {}  # report folder -> metrics.jsonl mtime it was drawn from
        self._lock = threading.Lock()

    def runs(self) -> list[dict]:
        if not self.root.is_dir():
            return []
        out = []
        now = time.time()
        for path in _walk(self.root):
            if not path.is_dir() or not any((path / m).is_file() for m in RUN_MARKERS):
                continue
            metrics = path / "metrics.jsonl"
            modified = metrics.stat().st_mtime if metrics.is_file() else None
            config = read_run_config(path) or {}
            saved_game = config.get("game")
            game = saved_game if isinstance(saved_game, dict) else {}
            running = run_is_running(path, modified, now)
            last = last_iteration(metrics) if modified is not None else None
            target = target_iterations(config)
            out.append(
                {
                    "run": path.relative_to(self.root).as_posix(),
                    "game": game.get("name"),
                    "variant": game.get("variant"),
                    "modified": modified,
                    "running": running,
                    "status": run_status(running, last, target, closed=not (path / RUNNING_FILE).exists()),
                    "last_iteration": last,
                    "target_iterations": target,
                    "checkpoints": self._checkpoints(path),
                }
            )
        return out

    def _checkpoints(self, run_dir: Path) -> list[str]:
        found = sorted(find_checkpoints(run_dir).items())
        latest = run_dir / "checkpoints" / "latest.pt"
        paths = ([latest] if latest.is_file() else []) + [p for _, p in found if p != latest]
        return [p.relative_to(self.root).as_posix() for p in paths if is_under(self.root, p)]

    def _report_dir(self, run_dir: Path) -> Path:
        return self.cache / hashlib.sha256(str(run_dir).encode()).hexdigest()[:16]

    def report(self, run: str) -> dict:
        run_dir = resolve_under(self.root, run, "run")
        metrics = run_dir / "metrics.jsonl"
        if not run_dir.is_dir() or not metrics.is_file():
            raise FileNotFoundError(f"run {run!r} has no metrics.jsonl yet (not a run directory, or not started)")
        out_dir = self._report_dir(run_dir)
        with self._lock:
            stamp = metrics.stat().st_mtime_ns
            if self._drawn.get(str(out_dir)) != stamp:
                write_report(run_dir, out_dir)
                self._drawn[str(out_dir)] = stamp
        log = read_metrics(metrics)
        plots = [name for name in PLOTS if (out_dir / name).is_file()]
        summary = (out_dir / "summary.md").read_text(encoding="utf-8")
        return {
            "run": run,
            "iterations": len(log.rows),
            "last_iteration": log.iterations[-1] if log.rows else None,
            "still_writing": log.partial_last_line,
            "plots": plots,
            "evaluation": evaluation_table(log),
            "summary_markdown": summary,
            "checkpoints": self._checkpoints(run_dir),
            "drawn_from": stamp,
        }

    def plot(self, run: str, name: str) -> Path:
        if name not in PLOTS:
            raise ValueError(f"unknown plot {name!r}; valid plots: {', '.join(PLOTS)}")
        run_dir = resolve_under(self.root, run, "run")
        path = self._report_dir(run_dir) / name
        if not path.is_file():
            raise FileNotFoundError(
                f"plot {name} of run {run!r} is not drawn (open the run's report first, or the "
                "run has no such figures yet)"
            )
        return path
