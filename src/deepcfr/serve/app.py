"""The FastAPI application: the page (static files) and its JSON API.

``create_app(ServeSettings(...))`` builds it; ``deepcfr serve`` runs it with uvicorn. Every
refused request gets a 4xx answer ``{"error": message}``; nothing a request sends can change a
game except a legal move by the person whose turn it is.
"""

from __future__ import annotations

import json
import logging
import re
import secrets
import tempfile
import threading
import time
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from fastapi import FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse, PlainTextResponse
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, ConfigDict, Field, StrictInt
from starlette.exceptions import HTTPException as StarletteHTTPException

from ..evaluate.replay import append_records
from ..players import (
    MAX_SPEC_LENGTH,
    VALID_FORMS,
    PlayerCache,
    PlayerSpecError,
    Seated,
    load_player,
    parse_player,
    same_game,
)
from . import timing
from .batching import Batchers
from .docs import docs_page
from .head import HeadAsGet
from .library import ReplayLibrary, RunLibrary
from .players import ServedFiles
from .present import WEB_TABLE_GAME, check_web_table_game
from .search_process import ProcessSeated, SearchProcess
from .tables import Table, TableError, TableStore

SAVED_GAMES = "web_games.jsonl"  # finished games saved from the page, under the replays directory
MAX_SEED = 2**31 - 1
MAX_SPEC = MAX_SPEC_LENGTH  # characters of a player spec: the one limit of the parser, the CLI and the page
# What one request may ask of a search player (a decision's work grows with each of these).
SEARCH_CAPS = {
    "determinizations": 256,
    "min_determinizations": 256,
    "candidates": 8,
    "max_batch": 65536,
    "time_limit_s": 10.0,
}
# The wall-clock budget of a served search call (a batch of the tables' decisions) whose spec sets
# none: the search is anytime (search.config), so a call stops adding deals when the server is
# busy; its first round is the floor (docs/performance.md, "The served page under load": 0.25 s
# measured better than 0.15 s at the load). A spec's own time_limit_s (up to the cap) is kept.
SERVED_SEARCH_BUDGET_S = 0.25


def limit_search_time(config) -> None:
    """The served time limit of a search player's settings (``config``, changed in place): the
    served budget where the spec sets none, the cap where it sets more."""
    if config.time_limit_s is None:
        config.time_limit_s = SERVED_SEARCH_BUDGET_S
    elif config.time_limit_s > SEARCH_CAPS["time_limit_s"]:
        config.time_limit_s = SEARCH_CAPS["time_limit_s"]  # no call of a search (a batch of decisions) runs longer


_search_processes: dict[str, SearchProcess] = {}  # one per server process and device, started on first use
_search_processes_lock = threading.Lock()


def search_process(device: str) -> SearchProcess:
    """The process that runs this server's search players on ``device`` (serve.search_process)."""
    with _search_processes_lock:
        if device not in _search_processes:
            _search_processes[device] = SearchProcess(device, limit_search_time)
        return _search_processes[device]


CHAMPION_LABELS = {"champion@greedy": "champion network alone", "search:champion": "champion with search"}
SECURITY_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Content-Security-Policy": "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; "
    "form-action 'self'; frame-ancestors 'none'",
}
log = logging.getLogger("deepcfr.serve")


@dataclass
class ServeSettings:
    checkpoints: list[str] = field(default_factory=list)
    runs: str = "runs"
    replays: str | None = None  # default: the runs directory
    device: str = "cpu"
    max_games: int = 1000
    # Host headers the server answers (DNS rebinding); None: any. `deepcfr serve` always sets it.
    allowed_hosts: list[str] | None = None


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PlayRequest(_Body):
    opponent: str  # checked by check_spec, as /api/watch's players are: one limit, one status (400)
    seat: StrictInt = Field(0, ge=0, le=1)
    seed: StrictInt | None = Field(None, ge=0, le=MAX_SEED)
    variant: str | None = Field(None, max_length=50)


class WatchRequest(_Body):
    players: list[str] = Field(min_length=2, max_length=2)
    seed: StrictInt | None = Field(None, ge=0, le=MAX_SEED)
    variant: str | None = Field(None, max_length=50)


class MoveRequest(_Body):
    action: StrictInt  # true is not action 1, nor 1.0
    decision: StrictInt | None = None  # the decision number the page saw; a stale move is refused


# The spec forms as a page names them: a web page has no command-line flags to point at.
PAGE_FORMS = VALID_FORMS.replace(" (settings: --search-*)", " (its default settings)")
_LONG_WORD = re.compile(r"\S{81,}")
MAX_MESSAGE = 1500


def clip(text: str, limit: int = MAX_MESSAGE) -> str:
    """An error message that echoes no unbounded input: long runs without spaces are cut to their
    first 60 characters, and the whole to ``limit``."""
    text = _LONG_WORD.sub(lambda m: f"{m.group(0)[:60]}...({len(m.group(0))} characters)", str(text))
    return text if len(text) <= limit else text[: limit - 20] + "... (cut)"


# An absolute path in a message (after a quote, a space, '=', ':', '[', '(' or ',' or at its start),
# or one that climbs out with '..': one the request sent is not echoed either, so that no answer
# holds a path of this machine.
_CLIMBING_PATH = re.compile(r"""[^\s'",;\[\]()=:]*\.\.[/\\][^\s'",;\])]*""")
_ABSOLUTE_PATH = re.compile(r"""(?:(?<=^)|(?<=[\s'"=:\[(,]))(?:[A-Za-z]:)?[/\\~](?!api/|static/)[^\s'",;\])]+""")


def _error(status: int, message: str, hide: dict[str, str] | None = None) -> JSONResponse:
    """The answer to a refused request; ``hide`` maps paths of this machine to what the page knows
    them as (a served directory as it was given), and any other absolute path is replaced, so that
    no answer shows where the server runs or echoes a path of this machine."""
    for path, shown in (hide or {}).items():
        message = message.replace(path, shown)
    message = message.replace(VALID_FORMS, PAGE_FORMS)
    message = _CLIMBING_PATH.sub("<path with ..>", _ABSOLUTE_PATH.sub("<absolute path>", message))
    return JSONResponse({"error": clip(message)}, status_code=status)


def check_spec(text: str):
    """The parsed player spec of ``text``, with its search settings within ``SEARCH_CAPS``; raises
    ValueError (a 400) for a spec that cannot be read, whatever the parser raised."""
    if not isinstance(text, str) or len(text) > MAX_SPEC:
        raise ValueError(f"a player spec is a text of at most {MAX_SPEC} characters")
    try:
        spec = parse_player(text)
    except PlayerSpecError:
        raise
    except Exception as e:  # the parser's own failures (a name too long for a path, settings YAML cannot read)
        raise PlayerSpecError(f"player spec {clip(text, 200)!r} cannot be read ({type(e).__name__})") from None
    node = spec
    while node is not None and node.kind == "search":
        for key, cap in SEARCH_CAPS.items():
            value = node.settings.get(key)
            if isinstance(value, (int, float)) and not isinstance(value, bool) and not value <= cap:
                raise ValueError(
                    f"search setting {key}={clip(str(value), 40)} is over this server's cap of {cap} "
                    f"(caps: {', '.join(f'{k} <= {v}' for k, v in SEARCH_CAPS.items())})"
                )
        node = node.base
    return spec


def offered_champions() -> list[str]:
    """The champion players the page offers (none where the champion is not shipped), the
    strongest measured first."""
    from ..players.champion import CHAMPION_FILE, strongest_champion_spec

    if not CHAMPION_FILE.is_file():
        return []
    first = strongest_champion_spec()
    return sorted(CHAMPION_LABELS, key=lambda spec: spec != first)


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
    runs_root = Path(settings.runs)
    replays_root = Path(settings.replays) if settings.replays is not None else runs_root
    searches = search_process(settings.device)

    def seat(spec, game, key):
        if spec.kind == "search":  # a process of its own: its calls do not wait on the tables' threads
            return ProcessSeated(searches, spec, game, key)
        return Seated(load_player(spec, game, device=settings.device))

    served = ServedFiles(settings.checkpoints, runs_root)
    players = PlayerCache(settings.device, confine=served.confine, localize=served.localize, seat=seat)
    tables = TableStore(settings.max_games)
    batchers = Batchers()  # the tables that share a player have their decisions made as one call
    report_cache = tempfile.TemporaryDirectory(prefix="deepcfr-serve-reports-")
    replays = ReplayLibrary(replays_root)
    runs = RunLibrary(runs_root, report_cache.name)
    app.state.tables, app.state.players, app.state.report_cache = tables, players, report_cache
    app.state.batchers = batchers

    # Hardening: the Host header (DNS rebinding), security headers, no Server banner ------------
    allowed = None if settings.allowed_hosts is None else {h.lower().strip("[]") for h in settings.allowed_hosts}

    @app.middleware("http")
    async def _harden(request: Request, call_next):
        started, phases = time.perf_counter(), timing.begin()  # the endpoint's thread adds to phases
        if allowed is not None:
            host = request.headers.get("host", "")
            name = (
                host[1:].partition("]")[0]
                if host.startswith("[")
                else host.rpartition(":")[0]
                if host.count(":") == 1
                else host
            )
            if name.lower() not in allowed:
                response = _error(
                    400,
                    f"host {clip(host, 100)!r} is not served here (allowed: "
                    f"{', '.join(sorted(allowed))}; add one with --allow-host)",
                )
                response.headers.update(SECURITY_HEADERS)
                return response
        response = await call_next(request)
        response.headers.update(SECURITY_HEADERS)
        response.headers["Server-Timing"] = timing.header(phases, time.perf_counter() - started)
        return response

    app.add_middleware(HeadAsGet)  # HEAD wherever GET is (uptime monitors): the GET's headers, no body

    # Errors ---------------------------------------------------------------------------------
    # the served directories (resolved: where the libraries look) by the names they were given with;
    # longest first, so a directory inside another is replaced whole
    # where they lie is never shown: a directory given as an absolute path by its last name only
    shown = {p: p.name if p.is_absolute() else str(p) for p in (runs_root, replays_root)}
    hidden = {str(p.resolve()): shown[p] for p in (runs_root, replays_root)}
    hidden |= {str(p): shown[p] for p in (runs_root, replays_root)} | served.hidden()
    hidden = dict(sorted(hidden.items(), key=lambda kv: -len(kv[0])))

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, e: Exception):
        log.error("%s %s failed", request.method, request.url.path, exc_info=e)
        response = _error(500, f"internal error ({type(e).__name__}): the server log has the details")
        response.headers.update(SECURITY_HEADERS)
        return response

    @app.exception_handler(TableError)
    async def _table_error(request: Request, e: TableError):
        return _error(e.status, e.message, hidden)

    @app.exception_handler(FileNotFoundError)
    async def _not_found(request: Request, e: FileNotFoundError):
        return _error(404, str(e), hidden)

    @app.exception_handler(ValueError)  # PlayerSpecError, PathError, ReplayError, bad variants and steps
    async def _bad_request(request: Request, e: ValueError):
        return _error(400, str(e), hidden)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, e: RequestValidationError):
        problems = "; ".join(f"{'.'.join(str(x) for x in err.get('loc', ()))}: {err.get('msg')}" for err in e.errors())
        return _error(422, f"malformed request: {problems}", hidden)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, e: StarletteHTTPException):
        return _error(e.status_code, str(e.detail), hidden)

    # Players and games ------------------------------------------------------------------------
    def make_table(specs: list[str | None], seed: int | None, variant: str | None, mode: str) -> Table:
        if variant is not None and variant not in WEB_TABLE_GAME.variants:
            raise ValueError(
                f"unknown {WEB_TABLE_GAME.name} variant {variant!r}; valid: {', '.join(WEB_TABLE_GAME.variants)}"
            )
        for s in specs:
            if s is not None:
                check_spec(s)
        try:
            with timing.phase("players"):
                games = [g for g in (players.game_of(s) for s in specs if s is not None) if g is not None]
        except OSError as e:
            raise ValueError(f"cannot use this player: {e.strerror or type(e).__name__}") from None
        if games:
            game = games[0]
            check_web_table_game(game, "the checkpoint's game")
            if variant is not None and not same_game(game, WEB_TABLE_GAME.from_params(variant)):
                raise ValueError(
                    f"the checkpoint plays other rules than variant {variant!r}; leave the variant "
                    "empty to play the checkpoint's own rules"
                )
        else:
            game = WEB_TABLE_GAME.from_params(variant or WEB_TABLE_GAME.variants[0])
        try:
            with timing.phase("players"):
                seated = [None if s is None else players.resolve(s, game) for s in specs]
        except OSError as e:
            raise ValueError(f"cannot use this player: {e.strerror or type(e).__name__}") from None
        for s in seated:
            config = getattr(getattr(getattr(s, "player", None), "search", None), "config", None)
            if config is None:
                continue
            for key, cap in SEARCH_CAPS.items():  # the built search too, however the spec put its settings
                value = getattr(config, key, None)
                if key != "time_limit_s" and value is not None and value > cap:
                    raise ValueError(f"search setting {key}={value} is over this server's cap of {cap}")
            limit_search_time(config)  # where it was built (a search process has applied it already)
        seated = [None if s is None else batchers.of(s) for s in seated]
        names = ["You" if s is None else s.name for s in seated]  # specs as served (no file's whereabouts)
        table = Table(game, seated, names, secrets.randbelow(MAX_SEED) if seed is None else seed, mode)
        table.start()
        return tables.add(table)

    @app.get("/api/info")
    def info():
        """Players (bots, served checkpoints), rule variants, the served directories, the players built
        (`players_loaded`: their specs), and what reached each shared player (`batching`: calls and
        decisions; decisions / calls is the batch size)."""
        from ..games.bots import bot_names

        listed = [{"spec": name, "label": name} for name in served.names]
        for run in runs.runs():
            listed += [{"spec": c, "label": c} for c in run["checkpoints"]]
        # the shipped champion first, its strongest measured player first: the page's default
        offered = offered_champions()
        champions = [
            {"spec": spec, "label": CHAMPION_LABELS[spec] + (" (strongest measured)" if k == 0 else "")}
            for k, spec in enumerate(offered)
        ]
        return {
            "bots": bot_names(WEB_TABLE_GAME()),
            "champions": champions,
            "checkpoints": listed,
            "variants": list(WEB_TABLE_GAME.variants),
            "spec_forms": PAGE_FORMS,
            "runs": shown[runs_root],
            "replays": shown[replays_root],
            "games_in_memory": len(tables),
            "players_loaded": players.loaded(),
            "batching": batchers.stats(),
        }

    @app.post("/api/games")
    def new_game(body: PlayRequest):
        """A game against `opponent` (a player spec); you take `seat`. The deal and its seed stay on
        the server until the end."""
        specs = [None, body.opponent] if body.seat == 0 else [body.opponent, None]
        return make_table(specs, body.seed, body.variant, "play").view()

    @app.post("/api/watch")
    def new_watch(body: WatchRequest):
        """A game of two players (specs), stepped with /step; both hands open."""
        return make_table(list(body.players), body.seed, body.variant, "watch").view()

    @app.get("/api/games/{game_id}")
    def get_game(game_id: str):
        """The game as its viewer sees it: the table, your legal moves, every move so far."""
        return tables.get(game_id).view()

    @app.post("/api/games/{game_id}/move")
    def move(game_id: str, body: MoveRequest):
        """Your move (an action the game listed as legal); the opponent replies before the answer."""
        table = tables.get(game_id)
        table.human_move(body.action, body.decision)
        return table.view()

    @app.post("/api/games/{game_id}/step")
    def step(game_id: str):
        """One decision of a watched game."""
        table = tables.get(game_id)
        table.step()
        return table.view()

    @app.get("/api/games/{game_id}/moves")
    def moves(game_id: str):
        """Every move of a finished game with the players' probabilities and search values."""
        return {"moves": tables.get(game_id).moves_json()}

    @app.get("/api/games/{game_id}/record")
    def record(game_id: str):
        """The game as a JSON-lines record (`deepcfr replay` reads it); a played game only once it is over."""
        line = tables.get(game_id).record().to_dict()
        return PlainTextResponse(
            json.dumps(line) + "\n",
            media_type="application/x-ndjson",
            headers={"Content-Disposition": f'attachment; filename="{WEB_TABLE_GAME.name}-{line["seed"]}.jsonl"'},
        )

    @app.post("/api/games/{game_id}/save")
    def save(game_id: str):
        """Append a finished game to web_games.jsonl in the replays directory (once)."""
        table = tables.get(game_id)
        rec = table.record()
        if not rec.result.get("finished"):
            raise TableError(409, "the game is not finished: only a finished game is saved")
        with table.lock:
            if table.saved_to is None:
                replays_root.mkdir(parents=True, exist_ok=True)
                append_records(replays_root / SAVED_GAMES, [rec])
                table.saved_to = SAVED_GAMES
        return {"saved_to": SAVED_GAMES, "replays": shown[replays_root]}

    # Replays and runs ---------------------------------------------------------------------------
    @app.get("/api/replays")
    def replay_files():
        """The .jsonl record files under the replays directory, newest first."""
        return {"files": replays.files()}

    @app.get("/api/replays/games")
    def replay_games(file: str = Query(..., max_length=1000)):
        """The games of one record file."""
        return {"file": file, "games": replays.games(file)}

    @app.get("/api/replays/state")
    def replay_state(
        file: str = Query(..., max_length=1000),
        game: int = Query(0, ge=0, le=10**9),
        step: int = Query(0, ge=0, le=10**9),
    ):
        """The table after `step` decisions of game `game` of a record file, both hands open."""
        return replays.state(file, game, step)

    @app.get("/api/runs")
    def run_list():
        """The run directories under the runs directory."""
        return {"runs": runs.runs()}

    @app.get("/api/runs/report")
    def run_report(run: str = Query(..., max_length=1000)):
        """A run's latest evaluation, plots and checkpoints (drawn into the server's cache)."""
        return runs.report(run)

    @app.get("/api/runs/plot")
    def run_plot(run: str = Query(..., max_length=1000), name: str = Query(..., max_length=100)):
        """One plot of a run's report (PNG)."""
        return FileResponse(runs.plot(run, name), media_type="image/png", headers={"Cache-Control": "no-store"})

    # The page --------------------------------------------------------------------------------
    static = resources.files("deepcfr.serve") / "static"
    app.mount("/static", StaticFiles(directory=str(static)), name="static")

    @app.get("/")
    def index():
        return FileResponse(str(static / "index.html"), media_type="text/html")

    @app.get("/api/docs", response_class=HTMLResponse)
    def docs():
        """The JSON API as a plain page (no scripts from elsewhere: it works offline)."""
        return HTMLResponse(docs_page(app.openapi()))

    return app
