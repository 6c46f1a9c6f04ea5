"""The FastAPI application: the page (static files) and its JSON API.

``create_app(ServeSettings(...))`` builds it; ``deepcfr serve`` runs it with uvicorn. Every
refused request gets a 4xx answer ``{"error": message}``; nothing a request sends can change a
game except a legal move by the person whose turn it is.
"""

from __future__ import annotations

import json
import secrets
import tempfile
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from fastapi import FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse, PlainTextResponse
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException as StarletteHTTPException

from ..evaluate.replay import append_records
from ..games.lost_cities.rules import VARIANTS
from .library import ReplayLibrary, RunLibrary
from ..players import VALID_FORMS
from .players import CheckpointPolicy, PlayerCache
from .tables import Table, TableError, TableStore

SAVED_GAMES = "web_games.jsonl"  # finished games saved from the page, under the replays directory
MAX_SEED = 2**31 - 1


@dataclass
class ServeSettings:
    checkpoints: list[str] = field(default_factory=list)
    runs: str = "runs"
    replays: str | None = None  # default: the runs directory
    device: str = "cpu"
    max_games: int = 1000


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PlayRequest(_Body):
    opponent: str = Field(min_length=1, max_length=500)
    seat: int = Field(0, ge=0, le=1)
    seed: int | None = Field(None, ge=0, le=MAX_SEED)
    variant: str | None = None


class WatchRequest(_Body):
    players: list[str] = Field(min_length=2, max_length=2)
    seed: int | None = Field(None, ge=0, le=MAX_SEED)
    variant: str | None = None


class MoveRequest(_Body):
    action: int
    decision: int | None = None  # the decision number the page saw; a stale move is refused


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


def create_app(settings: ServeSettings | None = None) -> FastAPI:
    settings = settings or ServeSettings()
    app = FastAPI(title="deepcfr serve", docs_url="/api/docs", redoc_url=None, openapi_url="/api/openapi.json")
    runs_root = Path(settings.runs)
    replays_root = Path(settings.replays) if settings.replays is not None else runs_root
    players = PlayerCache(CheckpointPolicy(settings.checkpoints, runs_root), settings.device)
    tables = TableStore(settings.max_games)
    report_cache = tempfile.TemporaryDirectory(prefix="deepcfr-serve-reports-")
    replays = ReplayLibrary(replays_root)
    runs = RunLibrary(runs_root, report_cache.name)
    app.state.tables, app.state.players, app.state.report_cache = tables, players, report_cache

    # Errors ---------------------------------------------------------------------------------
    @app.exception_handler(TableError)
    async def _table_error(request: Request, e: TableError):
        return _error(e.status, e.message)

    @app.exception_handler(FileNotFoundError)
    async def _not_found(request: Request, e: FileNotFoundError):
        return _error(404, str(e))

    @app.exception_handler(ValueError)  # PlayerSpecError, PathError, ReplayError, bad variants and steps
    async def _bad_request(request: Request, e: ValueError):
        return _error(400, str(e))

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, e: RequestValidationError):
        problems = "; ".join(f"{'.'.join(str(x) for x in err.get('loc', ()))}: {err.get('msg')}" for err in e.errors())
        return _error(422, f"malformed request: {problems}")

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, e: StarletteHTTPException):
        return _error(e.status_code, str(e.detail))

    # Players and games ------------------------------------------------------------------------
    def make_table(specs: list[str | None], seed: int | None, variant: str | None, mode: str) -> Table:
        from ..games.registry import make_game

        if variant is not None and variant not in VARIANTS:
            raise ValueError(f"unknown Lost Cities variant {variant!r}; valid: {', '.join(VARIANTS)}")
        games = [g for g in (players.game_of(s) for s in specs if s is not None) if g is not None]
        if games:
            game = games[0]
            if variant is not None and game.config_dict() != make_game("lost_cities", variant=variant).config_dict():
                raise ValueError(f"the checkpoint plays other rules than variant {variant!r}; leave the variant "
                                 "empty to play the checkpoint's own rules")
        else:
            game = make_game("lost_cities", variant=variant or "classic")
        if game.name != "lost_cities":
            raise ValueError(f"the web table plays lost_cities; the checkpoint is a {game.name} agent")
        seated = [None if s is None else players.resolve(s, game) for s in specs]
        names = ["You" if s is None else s.strip() for s in specs]
        table = Table(game, seated, names, secrets.randbelow(MAX_SEED) if seed is None else seed, mode)
        table.start()
        return tables.add(table)

    @app.get("/api/info")
    def info():
        from ..games.bots import bot_names
        from ..games.registry import make_game

        listed = [{"spec": c, "label": Path(c).name} for c in settings.checkpoints]
        for run in runs.runs():
            listed += [{"spec": c, "label": c} for c in run["checkpoints"]]
        return {"bots": bot_names(make_game("lost_cities")), "checkpoints": listed, "variants": list(VARIANTS),
                "spec_forms": VALID_FORMS, "runs": str(runs_root), "replays": str(replays_root),
                "games_in_memory": len(tables)}

    @app.post("/api/games")
    def new_game(body: PlayRequest):
        specs = [None, body.opponent] if body.seat == 0 else [body.opponent, None]
        return make_table(specs, body.seed, body.variant, "play").view()

    @app.post("/api/watch")
    def new_watch(body: WatchRequest):
        return make_table(list(body.players), body.seed, body.variant, "watch").view()

    @app.get("/api/games/{game_id}")
    def get_game(game_id: str):
        return tables.get(game_id).view()

    @app.post("/api/games/{game_id}/move")
    def move(game_id: str, body: MoveRequest):
        table = tables.get(game_id)
        table.human_move(body.action, body.decision)
        return table.view()

    @app.post("/api/games/{game_id}/step")
    def step(game_id: str):
        table = tables.get(game_id)
        table.step()
        return table.view()

    @app.get("/api/games/{game_id}/record")
    def record(game_id: str):
        line = tables.get(game_id).record().to_dict()
        return PlainTextResponse(json.dumps(line) + "\n", media_type="application/x-ndjson", headers={
            "Content-Disposition": f'attachment; filename="lost_cities-{line["seed"]}.jsonl"'})

    @app.post("/api/games/{game_id}/save")
    def save(game_id: str):
        table = tables.get(game_id)
        rec = table.record()
        if not rec.result.get("finished"):
            raise TableError(409, "the game is not finished: only a finished game is saved")
        with table.lock:
            if table.saved_to is None:
                replays_root.mkdir(parents=True, exist_ok=True)
                append_records(replays_root / SAVED_GAMES, [rec])
                table.saved_to = SAVED_GAMES
        return {"saved_to": SAVED_GAMES, "replays": str(replays_root)}

    # Replays and runs ---------------------------------------------------------------------------
    @app.get("/api/replays")
    def replay_files():
        return {"files": replays.files()}

    @app.get("/api/replays/games")
    def replay_games(file: str = Query(..., max_length=1000)):
        return {"file": file, "games": replays.games(file)}

    @app.get("/api/replays/state")
    def replay_state(file: str = Query(..., max_length=1000), game: int = Query(0, ge=0), step: int = Query(0, ge=0)):
        return replays.state(file, game, step)

    @app.get("/api/runs")
    def run_list():
        return {"runs": runs.runs()}

    @app.get("/api/runs/report")
    def run_report(run: str = Query(..., max_length=1000)):
        return runs.report(run)

    @app.get("/api/runs/plot")
    def run_plot(run: str = Query(..., max_length=1000), name: str = Query(..., max_length=100)):
        return FileResponse(runs.plot(run, name), media_type="image/png", headers={"Cache-Control": "no-store"})

    # The page --------------------------------------------------------------------------------
    static = resources.files("deepcfr.serve") / "static"
    app.mount("/static", StaticFiles(directory=str(static)), name="static")

    @app.get("/")
    def index():
        return FileResponse(str(static / "index.html"), media_type="text/html")

    return app
