"""A run directory: resolved config, metrics, TensorBoard events, log, checkpoints, reports.

    run_dir/
      config.yaml          resolved config (what the run actually used)
      metrics.jsonl        one JSON object per line: {"iteration": t, ...metrics}
      events.out.tfevents.*  TensorBoard scalars (every numeric metric)
      train.log            the run's log (also echoed to the console)
      running.json         while a process has the run open: its pid and host (removed on close)
      checkpoints/latest.pt       everything needed to resume (replay memories included)
      checkpoints/iter_000010.pt  every checkpoint.every iterations, for evaluation (no memories)
      reports/             evaluation reports (JSON)

A killed run resumes from ``checkpoints/latest.pt``; metrics (and TensorBoard events) logged
after that checkpoint's iteration are dropped, since that iteration is run again. A checkpoint
is put in place only after its iteration's metrics line, so no iteration's metrics are lost.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, Generic, TextIO

from deepcfr.atomic import atomic_path
from deepcfr.checkpoints import (
    CheckpointError,
    expected_meta,
    link_or_copy_checkpoint,
    load_checkpoint,
    make_meta,
    save_checkpoint,
)

from .config import ConfigError, ConfigT, dump_config, load_config

CONFIG_FILE = "config.yaml"
METRICS_FILE = "metrics.jsonl"
LOG_FILE = "train.log"
CHECKPOINT_DIR = "checkpoints"
LATEST = "latest.pt"
REPORTS_DIR = "reports"

LOGGER_NAME = "deepcfr"
# Present while a run's process has it open (its pid and host); removed when the run closes, so a
# reader (deepcfr serve) tells a finished run from a running one at once, whatever the clock says.
RUNNING_FILE = "running.json"

# Sections a resumed run may not change: the checkpoint's networks and samples depend on them.
FROZEN_ON_RESUME = ("game", "network")


class _NullProgress:
    def advance(self, k: float = 1) -> None:
        pass


class _RichProgress:
    def __init__(self, progress, task) -> None:
        self._progress, self._task = progress, task

    def advance(self, k: float = 1) -> None:
        self._progress.advance(self._task, k)


def _flatten(metrics: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in metrics.items():
        key = f"{prefix}{k}"
        if isinstance(v, Mapping):
            out.update(_flatten(v, key + "/"))
        else:
            out[key] = v
    return out


def _jsonable(v: Any) -> Any:
    if hasattr(v, "item") and callable(v.item) and getattr(v, "ndim", 0) == 0:
        v = v.item()
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, Mapping):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, (str, int, float, bool)) or v is None:
        return v
    return str(v)


class Run(Generic[ConfigT]):
    """Tracks one training run in ``run_dir``. ``resume=True`` continues an existing run (use
    ``Run.open``); otherwise ``run_dir`` must not already hold a run. Its config is a TrainConfig,
    or another run's schema (``ImproveRunConfig``...)."""

    def __init__(self, run_dir: str | Path, config: ConfigT, resume: bool = False, console: bool = True) -> None:
        self.dir = Path(run_dir)
        self.config = config
        self.resume = resume
        if not resume and (self.dir / CONFIG_FILE).exists():
            raise ValueError(f"run directory {self.dir} already holds a run; resume it with --resume {self.dir}")
        self.dir.mkdir(parents=True, exist_ok=True)
        self.checkpoint_dir.mkdir(exist_ok=True)
        for leftover in self.checkpoint_dir.glob(".*"):
            # temp/pending files of a killed process: never a complete, committed checkpoint
            if leftover.is_file() and (leftover.name.startswith(".pending_") or leftover.suffix == ".tmp"):
                leftover.unlink(missing_ok=True)
        (self.dir / CONFIG_FILE).write_text(dump_config(config))
        self._writer = None
        self._purge_step: int | None = None
        self._metrics_file: TextIO | None = None
        self._closed = False
        self._mark_running()
        # (iteration, full file, numbered file without memories, numbered?) waiting for the iteration's metrics
        self._pending: tuple[int, Path, Path | None, bool] | None = None
        self._logged_iteration: int | None = None
        # Called with each metrics record once it is written (the CLI's progress and evaluation lines).
        self.metrics_listeners: list[Callable[[dict], None]] = []
        self.logger = logging.getLogger(LOGGER_NAME)
        self._handlers = self._setup_logging(console)
        self.logger.info("%s run in %s", "resuming" if resume else "starting", self.dir)

    # ------------------------------------------------------------------ construction
    @classmethod
    def open(
        cls,
        run_dir: str | Path,
        overrides: list[str] | None = None,
        console: bool = True,
        config_class: type[ConfigT] | None = None,
    ) -> Run[ConfigT]:
        """Reopen an existing run for resuming. ``overrides`` (``section.key=value``) may change
        anything but the game and the network, which the checkpoint depends on. ``config_class``:
        the run's schema (None: TrainConfig; an improvement run's is
        ``deepcfr.improve.ImproveRunConfig``); sections of the saved config it does not own are
        dropped."""
        run_dir = Path(run_dir)
        path = run_dir / CONFIG_FILE
        if not path.is_file():
            raise ConfigError(f"cannot resume {run_dir}: no {CONFIG_FILE} there (not a run directory?)")
        original = load_config(path, saved=True, config_class=config_class)
        config = load_config(path, overrides or [], saved=True, config_class=config_class)
        for section in FROZEN_ON_RESUME:
            before = getattr(original, section).model_dump(mode="json")
            after = getattr(config, section).model_dump(mode="json")
            for key in sorted(set(before) | set(after)):
                if before.get(key) != after.get(key):
                    raise ConfigError(
                        f"cannot resume {run_dir} with {section}.{key}={after.get(key)!r}: the run was "
                        f"trained with {section}.{key}={before.get(key)!r} (start a new run instead)"
                    )
        return cls(run_dir, config, resume=True, console=console)

    def _setup_logging(self, console: bool) -> list[logging.Handler]:
        self.logger.setLevel(logging.INFO)
        self.logger.propagate = False
        fmt = logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s", "%Y-%m-%d %H:%M:%S")
        handlers: list[logging.Handler] = []
        file_handler = logging.FileHandler(self.dir / LOG_FILE, encoding="utf-8")
        file_handler.setFormatter(fmt)
        handlers.append(file_handler)
        if console:
            stream = logging.StreamHandler(sys.stderr)
            stream.setFormatter(logging.Formatter("%(asctime)s %(message)s", "%H:%M:%S"))
            handlers.append(stream)
        for h in handlers:
            self.logger.addHandler(h)
        return handlers

    # ------------------------------------------------------------------ paths
    @property
    def checkpoint_dir(self) -> Path:
        return self.dir / CHECKPOINT_DIR

    @property
    def latest_path(self) -> Path:
        return self.checkpoint_dir / LATEST

    @property
    def metrics_path(self) -> Path:
        return self.dir / METRICS_FILE

    # ------------------------------------------------------------------ logging
    def log(self, message: str, *args: Any, level: int = logging.INFO) -> None:
        self.logger.log(level, message, *args)

    @property
    def writer(self):
        """The TensorBoard SummaryWriter (created on first use; on resume, it purges events
        logged after the checkpoint's iteration)."""
        if self._writer is None:
            from torch.utils.tensorboard import SummaryWriter

            self._writer = SummaryWriter(log_dir=str(self.dir), purge_step=self._purge_step)
        return self._writer

    def log_metrics(self, iteration: int, metrics: Mapping[str, Any]) -> None:
        """Append ``{"iteration": iteration, **metrics}`` to metrics.jsonl (flushed) and every
        numeric scalar to TensorBoard. Nested dicts become ``outer/inner`` keys."""
        flat = _flatten(metrics)
        record = {"iteration": int(iteration), **{k: _jsonable(v) for k, v in flat.items()}}
        if self._metrics_file is None:
            self._metrics_file = open(self.metrics_path, "a", encoding="utf-8")
        self._metrics_file.write(json.dumps(record) + "\n")
        self._metrics_file.flush()
        writer = self.writer
        for k, v in record.items():
            if k == "iteration" or isinstance(v, bool) or not isinstance(v, (int, float)):
                continue
            writer.add_scalar(k, v, global_step=int(iteration))
        writer.flush()
        for listener in self.metrics_listeners:
            listener(record)
        self._logged_iteration = int(iteration)
        if self._pending is not None and self._pending[0] <= iteration:
            self._commit_pending()

    def read_metrics(self) -> list[dict]:
        if not self.metrics_path.exists():
            return []
        out = []
        for line in self.metrics_path.read_text(encoding="utf-8").splitlines():
            line = line.strip()
            if not line:
                continue
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                continue  # a line cut by a kill mid-write
        return out

    def truncate_metrics(self, iteration: int) -> int:
        """Keep only metrics of iterations <= ``iteration`` (and drop a torn last line); returns
        the number of lines dropped. TensorBoard events after it are purged on the next write."""
        if self._metrics_file is not None:
            self._metrics_file.close()
            self._metrics_file = None
        self._purge_step = int(iteration) + 1
        if not self.metrics_path.exists():
            return 0
        lines = self.metrics_path.read_text(encoding="utf-8").splitlines()
        kept = []
        for line in lines:
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(record, dict) and int(record.get("iteration", 0)) <= iteration:
                kept.append(json.dumps(record))
        with atomic_path(self.metrics_path) as tmp:
            tmp.write_text("".join(line + "\n" for line in kept), encoding="utf-8")
        return len(lines) - len(kept)

    def write_report(self, name: str, report: Mapping[str, Any]) -> Path:
        """Write an evaluation report as ``reports/<name>.json``."""
        path = self.dir / REPORTS_DIR / f"{name}.json"
        path.parent.mkdir(exist_ok=True)
        path.write_text(json.dumps(_jsonable(dict(report)), indent=2) + "\n", encoding="utf-8")
        return path

    @contextlib.contextmanager
    def progress(self, description: str, total: float | None) -> Iterator[Any]:
        """A live progress bar for a long phase; yields an object with ``advance(k)``. Off when
        ``config.run.progress`` is false or the console is not a terminal."""
        if not (self.config.run.progress and sys.stderr.isatty()):
            yield _NullProgress()
            return
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        with Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=Console(stderr=True),
            transient=True,
        ) as progress:
            task = progress.add_task(description, total=total)
            yield _RichProgress(progress, task)

    # ------------------------------------------------------------------ checkpoints
    def checkpoint_path(self, iteration: int) -> Path:
        return self.checkpoint_dir / f"iter_{int(iteration):06d}.pt"

    def save_checkpoint(self, payload: dict, iteration: int, game: Any | None = None) -> Path:
        """Save ``payload`` as checkpoints/latest.pt, and as iter_{iteration:06d}.pt every
        ``config.checkpoint.every`` iterations. Adds ``meta`` (from the config and ``game``) when
        the payload has none; sets ``meta.iteration``. Numbered checkpoints leave out the
        payload's ``memories`` (they serve evaluation; resuming uses latest.pt).

        Metrics and checkpoint stay consistent under a kill: when the metrics of ``iteration``
        have not been logged yet, the files are written now but put in place only once they are
        (``log_metrics(iteration, ...)``), or at ``close()``. A kill in between leaves the previous
        checkpoint, so the iteration is redone and its metrics line is dropped, never lost."""
        iteration = int(iteration)
        payload = dict(payload)
        if "meta" not in payload:
            payload["meta"] = make_meta(self.config, iteration, game)
        else:
            payload["meta"] = {**payload["meta"], "iteration": iteration}
        if self._pending is not None and self._pending[0] != iteration:
            self._commit_pending()
        every = self.config.checkpoint.every
        numbered = every > 0 and iteration % every == 0
        strip = numbered and payload.get("memories") is not None
        full = save_checkpoint(self.checkpoint_dir / f".pending_latest_{iteration:06d}.pt", payload)
        light = None
        if strip:
            light_payload = {**payload, "memories": None, "meta": {**payload["meta"], "memories": False}}
            light = save_checkpoint(self.checkpoint_dir / f".pending_iter_{iteration:06d}.pt", light_payload)
        self._pending = (iteration, full, light, numbered)
        if self._logged_iteration is not None and self._logged_iteration >= iteration:
            self._commit_pending()
        return self.latest_path

    def flush_checkpoint(self) -> None:
        """Put a checkpoint still waiting for its iteration's metrics in place now."""
        self._commit_pending()

    def _commit_pending(self) -> None:
        if self._pending is None:
            return
        iteration, full, light, numbered = self._pending
        self._pending = None
        if light is not None:
            os.replace(light, self.checkpoint_path(iteration))
        os.replace(full, self.latest_path)
        if numbered and light is None:
            link_or_copy_checkpoint(self.latest_path, self.checkpoint_path(iteration))

    def load_latest(self, expected: Mapping[str, Any] | None = None, map_location: Any = "cpu") -> dict | None:
        """The latest checkpoint's payload, or None when the run has none yet. With a resumed
        run, metrics logged after the checkpoint's iteration are dropped. ``expected`` defaults to
        this config's game and network meta."""
        if not self.latest_path.exists():
            if self.resume:
                self.truncate_metrics(0)
            return None
        if expected is None:
            expected = expected_meta(self.config)
        payload = load_checkpoint(self.latest_path, expected, map_location=map_location)
        if self.resume:
            iteration = int(payload["meta"].get("iteration", 0))
            dropped = self.truncate_metrics(iteration)
            if dropped:
                self.log("dropped %d metrics lines logged after the checkpoint of iteration %d", dropped, iteration)
        return payload

    # ------------------------------------------------------------------ lifetime
    def _mark_running(self) -> None:
        import socket
        import time

        marker = {"pid": os.getpid(), "host": socket.gethostname(), "started": time.time()}
        with atomic_path(self.dir / RUNNING_FILE) as tmp:
            Path(tmp).write_text(json.dumps(marker))

    def close(self, commit: bool = True) -> None:
        """Flush and close everything. ``commit=False`` (an exception ended the run) discards a
        checkpoint still waiting for its iteration's metrics instead of putting it in place."""
        if self._closed:
            return
        self._closed = True
        if commit:
            self._commit_pending()
        elif self._pending is not None:
            for path in self._pending[1:3]:
                if path is not None:
                    path.unlink(missing_ok=True)
            self._pending = None
        if self._metrics_file is not None:
            self._metrics_file.close()
            self._metrics_file = None
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        (self.dir / RUNNING_FILE).unlink(missing_ok=True)
        for h in self._handlers:
            self.logger.removeHandler(h)
            h.close()

    def __enter__(self) -> Run[ConfigT]:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self.close(commit=exc_type is None)


__all__ = ["Run", "CheckpointError", "ConfigError"]
