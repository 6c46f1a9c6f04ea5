"""Output helpers shared by the subcommands: one JSON object with --json, a rich table otherwise."""

from __future__ import annotations

import json
import math
from typing import Any

from rich.console import Console
from rich.table import Table

from ..games.registry import DEFAULT_GAME  # the flagship: what --game means when it is not given


def _clean(v: Any) -> Any:
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, dict):
        return {k: _clean(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_clean(x) for x in v]
    if hasattr(v, "item") and callable(v.item):
        return _clean(v.item())
    return v


def emit(result: dict, as_json: bool, title: str | None = None) -> None:
    """Print ``result`` (flat snake_case figures) as exactly one JSON object, or as a table."""
    if as_json:
        print(json.dumps(_clean(result), sort_keys=False))
        return
    table = Table(title=title, show_header=True)
    table.add_column("figure")
    table.add_column("value", justify="right")
    for k, v in result.items():
        if isinstance(v, float):
            v = f"{v:.6g}"
        table.add_row(k, str(v))
    Console().print(table)


def add_json_flag(parser) -> None:
    parser.add_argument("--json", action="store_true", help="print exactly one JSON object with the figures")


def add_options_flag(parser) -> None:
    """``--options``: list the config's options and exit (the command's run does the listing)."""
    parser.add_argument(
        "--options",
        action="store_true",
        help="list every config option (section.key) with its default and description, then exit",
    )


def add_set_option(parser, help: str) -> None:
    """``--set KEY=VALUE``, repeatable, into ``args.overrides``: a field of the config the command runs."""
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE", help=help)


# Search settings: a --search-KEY option for every SearchConfig field (its description the help).
def _option_type(annotation):
    import typing

    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    annotation = args[0] if args else annotation
    return _boolean if annotation is bool else annotation


def _boolean(text: str) -> bool:
    """A true/false option value (``bool("false")`` is True, so not ``type=bool``)."""
    import argparse

    word = text.strip().lower()
    if word in ("true", "yes", "1", "on"):
        return True
    if word in ("false", "no", "0", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def add_search_options(parser) -> None:
    """``--search-KEY VALUE`` for every field of ``deepcfr.search.SearchConfig``."""
    from ..search import SearchConfig

    group = parser.add_argument_group(
        "search settings (for search:SPEC players; defaults in deepcfr.search.SearchConfig)"
    )
    for key, info in SearchConfig.model_fields.items():
        group.add_argument(
            f"--search-{key.replace('_', '-')}",
            dest=f"search_{key}",
            type=_option_type(info.annotation),
            default=None,
            metavar=key.upper(),
            help=f"{info.description} (default {info.default})",
        )


def search_settings(args) -> dict:
    """The search settings given on the command line (validated when a search player is built)."""
    from ..search import SearchConfig

    return {
        key: getattr(args, f"search_{key}")
        for key in SearchConfig.model_fields
        if getattr(args, f"search_{key}", None) is not None
    }


def game_help(default: str, what: str = "game") -> str:
    """The help of a ``--game`` option: ``what``, every game the registry knows (so a new game
    shows in every command) and the ``default``."""
    from ..games.registry import game_names

    return f"{what} ({', '.join(game_names())}; default {default})"


def variant_params(game_name: str, variant: str | None) -> dict:
    """``make_game`` keyword arguments for ``--variant`` (none without one). A game without named
    rule variants (the ``variants`` capability) or an unknown variant is a ValueError naming the
    game and its variants."""
    from ..games.base import has_capability
    from ..games.registry import make_game

    if variant is None:
        return {}
    game = make_game(game_name)
    if not has_capability(game, "variants"):
        raise ValueError(
            f"--variant {variant}: game {game_name!r} has no named rule variants (no 'variants' capability)"
        )
    variants = game.variants
    if variant not in variants:
        raise ValueError(f"unknown {game_name} variant {variant!r}; valid: {', '.join(variants)}")
    return {"variant": variant}


def make_named_game(name: str | None, variant: str | None):
    """The game of ``--game`` / ``--variant`` (default: the flagship's default rules)."""
    from ..games.registry import game_names, make_game

    name = name or DEFAULT_GAME
    if name not in game_names():
        raise ValueError(f"unknown game {name!r}; valid games: {', '.join(game_names())}")
    return make_game(name, **variant_params(name, variant))


def players_and_game(
    specs: list[str], game_name: str | None, variant: str | None, device, settings: dict, fixed_game=None
):
    """The players of ``specs`` and the game they play: ``fixed_game``, or ``--game``/``--variant``
    when given, else ``players.load_players``' rule (the first checkpoint's game, else the default
    game). ``settings`` are the command line's search settings (inline ones win)."""
    from ..players import load_players

    game = fixed_game
    if game is None and (game_name is not None or variant is not None):
        game = make_named_game(game_name, variant)
    return load_players(specs, game, device, settings)


def step_progress(out, every_seconds: float = 10.0):
    """An ``on_step`` for ``play_match`` printing, at most every ``every_seconds``, the lockstep
    step, the games still running and the seconds so far (a search match takes minutes)."""
    import time

    start = time.perf_counter()
    last = [start]

    def report(step: int, running: int) -> None:
        now = time.perf_counter()
        if now - last[0] >= every_seconds:
            last[0] = now
            print(f"step {step}: {running} games still running ({now - start:.0f}s)", file=out, flush=True)

    return report


def search_figures(player, prefix: str) -> dict:
    """Search statistics of a search player (empty for other players), keys prefixed."""
    stats = getattr(player, "stats", None)
    if stats is None:
        return {}
    out = {f"{prefix}{k}": v for k, v in stats.to_dict().items()}
    out.update({f"{prefix}search_{k}": v for k, v in player.search.config.model_dump().items()})
    return out


def add_value_option(parser, target_ci: bool = True) -> None:
    """``--value-fn`` (and, where the command plays batches until a CI is reached, ``--target-ci``)."""
    from ..players.shipped import VALUE_CHOICES

    parser.add_argument(
        "--value-fn",
        default="auto",
        metavar="auto|none|PATH",
        help="the value function that corrects each game for its luck (a variance-reduced "
        f"estimate beside the plain one): {VALUE_CHOICES}",
    )
    if not target_ci:
        return
    parser.add_argument(
        "--target-ci",
        type=float,
        default=None,
        metavar="POINTS",
        help="play batches of new deals until the 95%% CI half-width of the score difference "
        "(the corrected one where there is a value function) is at most POINTS; --games is "
        "then the most to play",
    )


def add_chance_samples_option(parser) -> None:
    """``--chance-samples M``: beside ``--value-fn``, where a match's luck corrections are averaged."""
    parser.add_argument(
        "--chance-samples",
        type=int,
        default=None,
        metavar="M",
        help="with a value function without a chance head, average each luck correction over M "
        "chance outcomes drawn without replacement (cheaper, still unbiased; default: all of them)",
    )


def value_function(args, game):
    """The value function ``--value-fn`` names for ``game`` (None: no corrections)."""
    from ..players.shipped import resolve_value_function

    return resolve_value_function(getattr(args, "value_fn", "none"), game, getattr(args, "device", "cpu"))
