"""Terminal play: a person against a trained agent or a bot, with readable screens.

A view layer above games / evaluate / train: ``views`` draws a reference engine's state,
``opponents`` wraps an agent's policy or a bot, ``session.play_game`` runs one game over any
input/output streams (so it is testable without a terminal)."""

from .opponents import BotOpponent, Opponent, PolicyOpponent
from .session import GameOutcome, play_game
from .views import make_view

__all__ = ["BotOpponent", "GameOutcome", "Opponent", "PolicyOpponent", "make_view", "play_game"]
