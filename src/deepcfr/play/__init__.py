"""Terminal play: a person against any player (a spec: bot, checkpoint, champion, search), with
readable screens.

A view layer above games / evaluate / train / players: ``views`` draws a reference engine's
state, ``session.play_game`` runs one game against a seated player (``deepcfr.players.Seated``)
over any input/output streams (so it is testable without a terminal)."""

from .session import GameOutcome, play_game
from .views import make_view

__all__ = ["GameOutcome", "make_view", "play_game"]
