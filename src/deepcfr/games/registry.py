"""Game construction by name (and from a config's game section, or a recorded ``config_dict``);
unknown names list the valid ones. The one place that maps a game's name to its classes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

DEFAULT_GAME = "lost_cities"  # the flagship: the game of a player or command that names none


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


def game_params(config: Any) -> dict[str, Any]:
    """Keyword arguments for ``make_game`` from a TrainConfig's ``game`` section (or that section
    itself, as a model or a mapping: the ``game`` entry of a saved run config). Only Lost Cities
    takes parameters (``variant`` and rule overrides)."""
    game = getattr(config, "game", config)
    get = game.get if isinstance(game, Mapping) else (lambda key, default=None: getattr(game, key, default))
    if get("name") == "lost_cities":
        return {"variant": get("variant"), **dict(get("rules") or {})}
    return {}


def make_game_from_config(config: Any):
    """The batched game of a TrainConfig (``make_game(config.game.name, **game_params(config))``)."""
    return make_game(config.game.name, **game_params(config))


def game_from_config_dict(name: str, config: Mapping[str, Any]):
    """The batched game whose ``config_dict()`` is ``config`` (what checkpoints and game records
    store); rules that this build does not know raise ValueError."""
    if name == "lost_cities":
        from .lost_cities import LostCitiesGame, LostCitiesRules

        return LostCitiesGame(LostCitiesRules(**config))
    return make_game(name)


def reference_from_deal(name: str, config: Mapping[str, Any], deal: Sequence[int]):
    """A reference engine of game ``name`` (rules ``config``, a ``config_dict()``) at the start of
    the game dealt ``deal`` (what the batched game's ``deals_of`` gives; an invalid deal raises
    ValueError)."""
    cls = make_reference(name)
    if name == "lost_cities":
        from .lost_cities import LostCitiesRules

        return cls.from_deal(LostCitiesRules(**config), list(deal))
    return cls.from_deal(list(deal))
