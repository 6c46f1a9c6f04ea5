"""Bots: batched fixed players, and a registry building them by name for a game.

A bot is an object with a ``name`` and ``act(obs, mask, generator=None) -> actions [n] long``.
It sees only what the player to move may know (the compact observation) and the legal mask, and
decides for the whole batch at once (no Python loop over games).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, runtime_checkable

import torch

from .base import has_capability, sample_from_probs


@runtime_checkable
class Bot(Protocol):
    name: str

    def act(self, obs: torch.Tensor, mask: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor: ...


class RandomBot:
    """Uniform over the legal actions (any game)."""

    name = "random"

    def act(self, obs: torch.Tensor, mask: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
        return sample_from_probs(mask.to(torch.float32), generator)

    def policy(self, obs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """[n, A] the probabilities ``act`` samples from."""
        legal = mask.to(torch.float32)
        return legal / legal.sum(dim=1, keepdim=True).clamp(min=1.0)


def _generic_bots(game) -> dict[str, Callable[[], Bot]]:
    return {"random": RandomBot}


def _game_bots(game) -> dict[str, Callable[[], Bot]]:
    """Bot factories for ``game`` by name: the generic ones, then the game's own (capability "bots")."""
    factories = dict(_generic_bots(game))
    if has_capability(game, "bots"):
        factories.update(game.bots())
    return factories


def evaluation_opponents(game) -> list[str]:
    """The bots a checkpoint of ``game`` is evaluated against when no opponent is named: the
    game's own list (capability "evaluation_opponents"), else ``random`` (every game has it)."""
    return list(game.evaluation_opponents) if has_capability(game, "evaluation_opponents") else [RandomBot.name]


def bot_names(game) -> list[str]:
    """The bot names ``make_bot`` accepts for ``game``."""
    return list(_game_bots(game))


def make_bot(game, name: str) -> Bot:
    """Build the bot called ``name`` for ``game``; unknown names raise ValueError listing the valid ones."""
    factories = _game_bots(game)
    if name not in factories:
        raise ValueError(
            f"unknown bot {name!r} for game {getattr(game, 'name', game)!r}; valid bots: {', '.join(factories)}"
        )
    return factories[name]()
