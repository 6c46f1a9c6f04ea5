"""A new table from a request: the variant and the player specs checked, the players built (or
taken from the cache), their searches capped, each seated behind its batcher."""

from __future__ import annotations

import secrets

from ..players import same_game
from . import timing
from .limits import MAX_SEED, check_built_search, check_spec
from .present import WEB_TABLE_GAME, check_web_table_game
from .state import ServeState
from .tables import Table


def table_game(state: ServeState, specs: list[str | None], variant: str | None):
    """The game the table plays: the checkpoints' rules (which must be ``variant``'s where one is
    asked for), else the variant's (by default the first)."""
    try:
        with timing.phase("players"):
            games = [g for g in (state.players.game_of(s) for s in specs if s is not None) if g is not None]
    except OSError as e:
        raise ValueError(f"cannot use this player: {e.strerror or type(e).__name__}") from None
    if not games:
        return WEB_TABLE_GAME.from_params(variant or WEB_TABLE_GAME.variants[0])
    game = games[0]
    check_web_table_game(game, "the checkpoint's game")
    if variant is not None and not same_game(game, WEB_TABLE_GAME.from_params(variant)):
        raise ValueError(
            f"the checkpoint plays other rules than variant {variant!r}; leave the variant "
            "empty to play the checkpoint's own rules"
        )
    return game


def make_table(state: ServeState, specs: list[str | None], seed: int | None, variant: str | None, mode: str) -> Table:
    """A started table of ``specs`` (None: the person at the page), kept in the state's store."""
    if variant is not None and variant not in WEB_TABLE_GAME.variants:
        raise ValueError(
            f"unknown {WEB_TABLE_GAME.name} variant {variant!r}; valid: {', '.join(WEB_TABLE_GAME.variants)}"
        )
    for s in specs:
        if s is not None:
            check_spec(s)
    game = table_game(state, specs, variant)
    try:
        with timing.phase("players"):
            built = [None if spec is None else state.players.resolve(spec, game) for spec in specs]
    except OSError as e:
        raise ValueError(f"cannot use this player: {e.strerror or type(e).__name__}") from None
    for player in built:
        check_built_search(player)
    seated = [None if player is None else state.batchers.of(player) for player in built]
    names = ["You" if s is None else s.name for s in seated]  # specs as served (no file's whereabouts)
    table = Table(game, seated, names, secrets.randbelow(MAX_SEED) if seed is None else seed, mode)
    table.start()
    return state.tables.add(table)
