"""Players: one way to name a player (a spec string), one way to build it, everywhere.

- the spec forms (``parse_player``, ``PlayerSpec``, ``VALID_FORMS``) live below every layer, in
  ``deepcfr.player_specs``, and are re-exported here;
- ``build``: the players they name (``load_player``: bots, checkpoint policies, the champion,
  search over any of them; ``search_player`` over an already built base; ``load_players``:
  several players and the game they play, the one rule for which game a spec plays);
- ``seated``: a player at a table deciding one move at a time with what a person may see of it;
- ``cache``: loaded players by spec for a long-lived process (the web server);
- ``shipped``: what ships with the package, read from its data folder ``players/champion/``: the
  champion network, its model card, its value function and hand belief;
- ``strength``: strength tables (a player against opponents, head to head, searches);
- ``population``: the versioned benchmark population (bots of distinct styles, the reference
  network, the sampled champion, earlier champions) and a player's population score;
- ``export``: a player's network as ONNX.

Every entry point takes a spec: ``arena --a/--b``, ``eval --vs``, ``play --vs``, ``serve``,
``strength``, ``exploit --target``, ``improve`` (teacher, opponents, eval opponents,
eval_search; the gate plays the new network against the current one, no spec), the config
lists ``eval.opponents`` and ``league.anchor``, and the search's ``rollout_policy``.
"""

from ..player_specs import (
    CHAMPION,
    LEARNER,
    MAX_SPEC_LENGTH,
    VALID_FORMS,
    PlayerSpec,
    PlayerSpecError,
    parse_player,
    parse_setting_value,
    quote,
    split_specs,
)
from .build import (
    BotPlayer,
    NetworkPlayer,
    SearchPlayer,
    checkpoint_file,
    describe_game,
    load_player,
    load_players,
    same_game,
    search_player,
)
from .cache import PlayerCache
from .seated import Decision, Seated, top_probabilities

__all__ = [
    "BotPlayer",
    "NetworkPlayer",
    "SearchPlayer",
    "load_player",
    "load_players",
    "search_player",
    "same_game",
    "describe_game",
    "checkpoint_file",
    "PlayerCache",
    "Decision",
    "Seated",
    "top_probabilities",
    "PlayerSpec",
    "PlayerSpecError",
    "parse_player",
    "parse_setting_value",
    "split_specs",
    "quote",
    "VALID_FORMS",
    "CHAMPION",
    "LEARNER",
    "MAX_SPEC_LENGTH",
]
