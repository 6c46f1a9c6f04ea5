"""``POST /api/watch``: a game between two players, stepped by the page."""

from __future__ import annotations

from fastapi import APIRouter

from ..bodies import WatchRequest
from ..seating import make_table
from ..state import AppState

router = APIRouter()


@router.post("/api/watch")
def new_watch(body: WatchRequest, state: AppState):
    """A game of two players (specs), stepped with /step; both hands open."""
    return make_table(state, list(body.players), body.seed, body.variant, "watch").view()
