"""What a request may ask of the server's players: the player spec checked (its length, its
search settings within the caps), the served search's time budget, and the champions offered."""

from __future__ import annotations

from ..players import MAX_SPEC_LENGTH, PlayerSpec, PlayerSpecError, parse_player
from .errors import clip

MAX_SEED = 2**31 - 1
MAX_SPEC = MAX_SPEC_LENGTH  # characters of a player spec: the one limit of the parser, the CLI and the page
# What one request may ask of a search player (a decision's work grows with each of these).
SEARCH_CAPS = {
    "determinizations": 256,
    "min_determinizations": 256,
    "candidates": 8,
    "max_batch": 65536,
    "time_limit_s": 10.0,
}
# The wall-clock budget of a served search call (a batch of the tables' decisions) whose spec sets
# none: the search is anytime (search.config), so a call stops adding deals when the server is
# busy; its first round is the floor (docs/performance.md, "The served page under load": 0.25 s
# measured better than 0.15 s at the load). A spec's own time_limit_s (up to the cap) is kept.
SERVED_SEARCH_BUDGET_S = 0.25
CHAMPION_LABELS = {"champion@greedy": "champion network alone", "search:champion": "champion with search"}


def limit_search_time(config) -> None:
    """The served time limit of a search player's settings (``config``, changed in place): the
    served budget where the spec sets none, the cap where it sets more."""
    if config.time_limit_s is None:
        config.time_limit_s = SERVED_SEARCH_BUDGET_S
    elif config.time_limit_s > SEARCH_CAPS["time_limit_s"]:
        config.time_limit_s = SEARCH_CAPS["time_limit_s"]  # no call of a search (a batch of decisions) runs longer


def check_spec(text: str):
    """The parsed player spec of ``text``, with its search settings within ``SEARCH_CAPS``; raises
    ValueError (a 400) for a spec that cannot be read, whatever the parser raised."""
    if not isinstance(text, str) or len(text) > MAX_SPEC:
        raise ValueError(f"a player spec is a text of at most {MAX_SPEC} characters")
    try:
        spec = parse_player(text)
    except PlayerSpecError:
        raise
    except Exception as e:  # the parser's own failures (a name too long for a path, settings YAML cannot read)
        raise PlayerSpecError(f"player spec {clip(text, 200)!r} cannot be read ({type(e).__name__})") from None
    node: PlayerSpec | None = spec
    while node is not None and node.kind == "search":
        for key, cap in SEARCH_CAPS.items():
            value = node.settings.get(key)
            if isinstance(value, (int, float)) and not isinstance(value, bool) and not value <= cap:
                raise ValueError(
                    f"search setting {key}={clip(str(value), 40)} is over this server's cap of {cap} "
                    f"(caps: {', '.join(f'{k} <= {v}' for k, v in SEARCH_CAPS.items())})"
                )
        node = node.base
    return spec


def check_built_search(seated) -> None:
    """A built player's search (if it has one) within ``SEARCH_CAPS``, however the spec put its
    settings, and with the served time limit (``limit_search_time``)."""
    config = getattr(getattr(getattr(seated, "player", None), "search", None), "config", None)
    if config is None:
        return
    for key, cap in SEARCH_CAPS.items():
        value = getattr(config, key, None)
        if key != "time_limit_s" and value is not None and value > cap:
            raise ValueError(f"search setting {key}={value} is over this server's cap of {cap}")
    limit_search_time(config)  # where it was built (a search process has applied it already)


def offered_champions() -> list[str]:
    """The champion players the page offers (none where the champion is not shipped), the
    strongest measured first."""
    from ..players.shipped import CHAMPION_FILE, strongest_champion_spec

    if not CHAMPION_FILE.is_file():
        return []
    first = strongest_champion_spec()
    return sorted(CHAMPION_LABELS, key=lambda spec: spec != first)
