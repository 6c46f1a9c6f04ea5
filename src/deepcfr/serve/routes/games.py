"""``/api/games/{game_id}...``: one game's table: its view, a move, a step, its moves, its record,
saving it."""

from __future__ import annotations

import json

from fastapi import APIRouter
from fastapi.responses import PlainTextResponse

from ...evaluate.replay import append_records
from ..bodies import MoveRequest
from ..present import WEB_TABLE_GAME
from ..state import AppState
from ..tables import TableError

SAVED_GAMES = "web_games.jsonl"  # finished games saved from the page, under the replays directory

router = APIRouter()


@router.get("/api/games/{game_id}")
def get_game(game_id: str, state: AppState):
    """The game as its viewer sees it: the table, your legal moves, every move so far."""
    return state.tables.get(game_id).view()


@router.post("/api/games/{game_id}/move")
def move(game_id: str, body: MoveRequest, state: AppState):
    """Your move (an action the game listed as legal); the opponent replies before the answer."""
    table = state.tables.get(game_id)
    table.human_move(body.action, body.decision)
    return table.view()


@router.post("/api/games/{game_id}/step")
def step(game_id: str, state: AppState):
    """One decision of a watched game."""
    table = state.tables.get(game_id)
    table.step()
    return table.view()


@router.get("/api/games/{game_id}/moves")
def moves(game_id: str, state: AppState):
    """Every move of a finished game with the players' probabilities and search values."""
    return {"moves": state.tables.get(game_id).moves_json()}


@router.get("/api/games/{game_id}/record")
def record(game_id: str, state: AppState):
    """The game as a JSON-lines record (`deepcfr replay` reads it); a played game only once it is over."""
    line = state.tables.get(game_id).record().to_dict()
    return PlainTextResponse(
        json.dumps(line) + "\n",
        media_type="application/x-ndjson",
        headers={"Content-Disposition": f'attachment; filename="{WEB_TABLE_GAME.name}-{line["seed"]}.jsonl"'},
    )


@router.post("/api/games/{game_id}/save")
def save(game_id: str, state: AppState):
    """Append a finished game to web_games.jsonl in the replays directory (once)."""
    table = state.tables.get(game_id)
    rec = table.record()
    if not rec.result.get("finished"):
        raise TableError(409, "the game is not finished: only a finished game is saved")
    with table.lock:
        if table.saved_to is None:
            state.replays_root.mkdir(parents=True, exist_ok=True)
            append_records(state.replays_root / SAVED_GAMES, [rec])
            table.saved_to = SAVED_GAMES
    return {"saved_to": SAVED_GAMES, "replays": state.shown[state.replays_root]}
