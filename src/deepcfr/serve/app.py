"""The FastAPI application: the page (static files) and its JSON API.

``create_app(ServeSettings(...))`` builds it; ``deepcfr serve`` runs it with uvicorn. Every
refused request gets a 4xx answer ``{"error": message}`` (``errors``); nothing a request sends can
change a game except a legal move by the person whose turn it is. The routes (``routes``, one
router per concern) share one ``state.ServeState``; the middleware is in ``hardening``.
"""

from __future__ import annotations

import threading

from fastapi import FastAPI

from ..players import Seated, load_player
from .errors import install_error_handlers, log
from .hardening import install_hardening
from .limits import SERVED_SEARCH_BUDGET_S, limit_search_time, offered_champions
from .routes import include_routes
from .search_process import ProcessSeated, SearchProcess
from .state import ServeSettings, build_state

__all__ = [
    "SERVED_SEARCH_BUDGET_S",
    "ServeSettings",
    "create_app",
    "offered_champions",
    "search_process",
    "warm_players",
]

_search_processes: dict[str, SearchProcess] = {}  # one per server process and device, started on first use
_search_processes_lock = threading.Lock()


def search_process(device: str) -> SearchProcess:
    """The process that runs this server's search players on ``device`` (serve.search_process)."""
    with _search_processes_lock:
        if device not in _search_processes:
            _search_processes[device] = SearchProcess(device, limit_search_time)
        return _search_processes[device]


def warm_players(app: FastAPI) -> None:
    """Build the players the page offers before anyone asks (``deepcfr serve`` runs it in a thread
    as it starts): the first game against the search does not wait for its process to start and
    the champion to load (a game started meanwhile waits for the one build)."""
    for spec in offered_champions():
        try:
            app.state.players.resolve(spec)
        except Exception as e:  # a game asking for it will get the error; the server starts all the same
            log.warning("could not build %s before the first game: %s", spec, e)


def create_app(settings: ServeSettings | None = None) -> FastAPI:
    settings = settings or ServeSettings()
    app = FastAPI(title="deepcfr serve", docs_url=None, redoc_url=None, openapi_url="/api/openapi.json")
    searches = search_process(settings.device)

    def seat(spec, game, key):
        if spec.kind == "search":  # a process of its own: its calls do not wait on the tables' threads
            return ProcessSeated(searches, spec, game, key)
        return Seated(load_player(spec, game, device=settings.device))

    state = build_state(settings, seat)
    app.state.serve = state
    # the parts the server's callers and tests reach for by name
    app.state.tables, app.state.players, app.state.report_cache = state.tables, state.players, state.report_cache
    app.state.batchers = state.batchers
    install_hardening(app, settings.allowed_hosts)
    install_error_handlers(app, state.hidden)
    include_routes(app)
    return app
