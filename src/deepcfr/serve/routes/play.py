"""``POST /api/games``: a game against a player, the person at the page in the other seat."""

from __future__ import annotations

from fastapi import APIRouter

from ..bodies import PlayRequest
from ..seating import make_table
from ..state import AppState

router = APIRouter()


@router.post("/api/games")
def new_game(body: PlayRequest, state: AppState):
    """A game against `opponent` (a player spec); you take `seat`. The deal and its seed stay on
    the server until the end."""
    specs = [None, body.opponent] if body.seat == 0 else [body.opponent, None]
    return make_table(state, specs, body.seed, body.variant, "play").view()
