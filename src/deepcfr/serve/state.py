"""What the app's routes share: the settings, the served files and directories, the players
built, the games in memory, the batchers, the record and run libraries. One ``ServeState`` per
app, built by ``build_state`` and kept on ``app.state.serve``; a route takes it as a dependency
(``AppState``)."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated

from fastapi import Depends, Request

from ..players import PlayerCache
from .batching import Batchers
from .library import ReplayLibrary, RunLibrary
from .players import ServedFiles
from .tables import TableStore


@dataclass
class ServeSettings:
    checkpoints: list[str] = field(default_factory=list)
    runs: str = "runs"
    replays: str | None = None  # default: the runs directory
    device: str = "cpu"
    max_games: int = 1000
    # Host headers the server answers (DNS rebinding); None: any. `deepcfr serve` always sets it.
    allowed_hosts: list[str] | None = None


@dataclass
class ServeState:
    settings: ServeSettings
    runs_root: Path
    replays_root: Path
    served: ServedFiles
    players: PlayerCache
    tables: TableStore
    batchers: Batchers  # the tables that share a player have their decisions made as one call
    report_cache: tempfile.TemporaryDirectory
    replays: ReplayLibrary
    runs: RunLibrary
    shown: dict[Path, str]  # the served directories as the page knows them
    hidden: dict[str, str]  # paths of this machine an answer shows as the page knows them


def hidden_paths(roots: tuple[Path, ...], served: ServedFiles) -> tuple[dict[Path, str], dict[str, str]]:
    """The served directories (``roots``) by the names they were given with (a directory given as
    an absolute path by its last name only: where they lie is never shown), and every path of this
    machine an answer could hold (resolved: where the libraries look) by what it is shown as,
    longest first, so that a directory inside another is replaced whole."""
    shown = {p: p.name if p.is_absolute() else str(p) for p in roots}
    hidden = {str(p.resolve()): shown[p] for p in roots}
    hidden |= {str(p): shown[p] for p in roots} | served.hidden()
    return shown, dict(sorted(hidden.items(), key=lambda kv: -len(kv[0])))


def build_state(settings: ServeSettings, seat: Callable) -> ServeState:
    """The shared state of an app serving ``settings``; ``seat(spec, game, key)`` builds a player
    (``PlayerCache``'s ``seat``)."""
    runs_root = Path(settings.runs)
    replays_root = Path(settings.replays) if settings.replays is not None else runs_root
    served = ServedFiles(settings.checkpoints, runs_root)
    report_cache = tempfile.TemporaryDirectory(prefix="deepcfr-serve-reports-")
    shown, hidden = hidden_paths((runs_root, replays_root), served)
    return ServeState(
        settings=settings,
        runs_root=runs_root,
        replays_root=replays_root,
        served=served,
        players=PlayerCache(settings.device, confine=served.confine, localize=served.localize, seat=seat),
        tables=TableStore(settings.max_games),
        batchers=Batchers(),
        report_cache=report_cache,
        replays=ReplayLibrary(replays_root),
        runs=RunLibrary(runs_root, report_cache.name),
        shown=shown,
        hidden=hidden,
    )


async def serve_state(request: Request) -> ServeState:
    """The state of the app answering ``request`` (a route's dependency)."""
    return request.app.state.serve


AppState = Annotated[ServeState, Depends(serve_state)]
