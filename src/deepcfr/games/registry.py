"""Game construction by name; unknown names list the valid ones."""

from __future__ import annotations

from typing import Any


def game_names() -> list[str]:
    return ["kuhn", "leduc", "liars_dice", "lost_cities"]


def make_game(name: str, **params: Any):
    """Build a batched game. ``params`` are game parameters (for Lost Cities: ``variant`` and any
    LostCitiesRules field)."""
    if name == "kuhn":
        from .kuhn import KuhnGame

        return KuhnGame(**params)
    if name == "leduc":
        from .leduc import LeducGame

        return LeducGame(**params)
    if name == "liars_dice":
        from .liars_dice import LiarsDiceGame

        return LiarsDiceGame(**params)
    if name == "lost_cities":
        from .lost_cities import LostCitiesGame

        return LostCitiesGame.from_params(**params)
    raise ValueError(f"unknown game {name!r}; valid games: {', '.join(game_names())}")


def make_reference(name: str, **params: Any):
    """The reference (one-game, readable) engine class's factory for a game, same params."""
    if name == "kuhn":
        from .kuhn import KuhnReference

        return KuhnReference
    if name == "leduc":
        from .leduc import LeducReference

        return LeducReference
    if name == "liars_dice":
        from .liars_dice import LiarsDiceReference

        return LiarsDiceReference
    if name == "lost_cities":
        from .lost_cities import LostCitiesReference

        return LostCitiesReference
    raise ValueError(f"unknown game {name!r}; valid games: {', '.join(game_names())}")
