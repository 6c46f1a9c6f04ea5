"""``/api/replays...``: the recorded games under the replays directory."""

from __future__ import annotations

from fastapi import APIRouter, Query

from ..state import AppState

router = APIRouter()


@router.get("/api/replays")
def replay_files(state: AppState):
    """The .jsonl record files under the replays directory, newest first."""
    return {"files": state.replays.files()}


@router.get("/api/replays/games")
def replay_games(state: AppState, file: str = Query(..., max_length=1000)):
    """The games of one record file."""
    return {"file": file, "games": state.replays.games(file)}


@router.get("/api/replays/state")
def replay_state(
    state: AppState,
    file: str = Query(..., max_length=1000),
    game: int = Query(0, ge=0, le=10**9),
    step: int = Query(0, ge=0, le=10**9),
):
    """The table after `step` decisions of game `game` of a record file, both hands open."""
    return state.replays.state(file, game, step)
