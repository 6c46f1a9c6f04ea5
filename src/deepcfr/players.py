"""One way to name a player, everywhere (arena, eval, play, serve).

Spec forms (``parse_player``):
  BOT                          a bot name: random, discard_only, heuristic_careful, ...
  PATH                         a checkpoint (a path with a '/' or ending in .pt): its average
                               policy (the strategy network), sampled, as in ``eval``
  PATH@current                 its current policy (regret matching on the advantage networks)
  PATH@greedy, PATH@current,greedy   the most probable action instead of a sample
  search:SPEC                  rollout search over a bot or checkpoint SPEC; settings from
                               ``--search-*`` options or ``--set search.key=value``
  search[key=value,...]:SPEC   the same with settings given inline (they win over the others)

A player (``load_player``) has ``name``, ``act(obs, mask, generator) -> actions [n]`` (batched,
as arena sides take them), ``game``, and where it has one ``policy(obs, mask) -> probs [n, A]``
(networks). A :class:`SearchPlayer` also has ``search`` (the RolloutSearch), ``last_decision``
(a ``search.SearchDecision``: for each decision of the last ``act`` call the candidates, their
mean rollout values with 95% CIs, the paired differences to the base move, the prior and the
choice) and ``stats`` (a ``search.SearchStats``: rollouts, rollout decisions, capped rollouts,
seconds).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from .games.base import sample_from_probs

VALID_FORMS = """valid player specs:
  BOT                          a bot name (random, discard_only, heuristic_careful, heuristic_balanced, ...)
  PATH                         a checkpoint file (a path with '/' or ending in .pt): its average policy, sampled
  PATH@current                 its current policy (regret matching); PATH@average is the default
  PATH@greedy                  play the most probable action (combine: PATH@current,greedy)
  search:SPEC                  rollout search over the bot or checkpoint SPEC (--search-* / --set search.key=value)
  search[key=value,...]:SPEC   the same with inline settings, e.g. search[determinizations=64,candidates=4]:PATH"""

CHECKPOINT_OPTIONS = ("average", "current", "greedy")
_BOT_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_\-]*$")


class PlayerSpecError(ValueError):
    """A spec that names no player; the message lists the valid forms."""

    def __init__(self, message: str):
        super().__init__(f"{message}\n{VALID_FORMS}")


@dataclass(frozen=True)
class PlayerSpec:
    kind: str  # "bot" | "checkpoint" | "search"
    name: str | None = None  # bot name
    path: str | None = None  # checkpoint path
    policy: str = "average"  # checkpoint: average | current
    greedy: bool = False  # checkpoint: argmax play
    base: "PlayerSpec | None" = None  # search: the spec searched over
    settings: dict[str, Any] = field(default_factory=dict)  # search: inline settings

    def __str__(self) -> str:
        if self.kind == "bot":
            return str(self.name)
        if self.kind == "checkpoint":
            options = ([self.policy] if self.policy != "average" else []) + (["greedy"] if self.greedy else [])
            return self.path + (f"@{','.join(options)}" if options else "")
        inline = f"[{','.join(f'{k}={v}' for k, v in self.settings.items())}]" if self.settings else ""
        return f"search{inline}:{self.base}"


def _is_checkpoint_path(text: str) -> bool:
    return "/" in text or "\\" in text or text.endswith(".pt") or Path(text).is_file()


def parse_player(spec: str) -> PlayerSpec:
    """A PlayerSpec from text (module docstring); raises PlayerSpecError listing the valid forms."""
    if not isinstance(spec, str) or not spec.strip():
        raise PlayerSpecError(f"empty player spec {spec!r}")
    text = spec.strip()
    if text.startswith("search"):
        rest = text[len("search"):]
        settings: dict[str, Any] = {}
        if rest.startswith("["):
            close = rest.find("]")
            if close < 0:
                raise PlayerSpecError(f"player spec {spec!r}: '[' of the search settings is never closed")
            settings = _parse_settings(spec, rest[1:close])
            rest = rest[close + 1:]
        if rest.startswith(":"):
            inner = rest[1:]
            if inner.startswith("search"):
                raise PlayerSpecError(f"player spec {spec!r}: search over search is not supported")
            return PlayerSpec(kind="search", base=parse_player(inner), settings=settings)
        if rest and not _is_checkpoint_path(text.partition("@")[0]):
            raise PlayerSpecError(f"player spec {spec!r}: a search spec looks like search:SPEC")
    path, _, options = text.rpartition("@") if "@" in text else (text, "", "")
    if _is_checkpoint_path(path) or (not path and options):
        if not path:
            raise PlayerSpecError(f"player spec {spec!r}: no checkpoint path before '@'")
        policy, greedy = "average", False
        for option in filter(None, (o.strip() for o in options.split(","))):
            if option not in CHECKPOINT_OPTIONS:
                raise PlayerSpecError(f"player spec {spec!r}: unknown checkpoint option {option!r} "
                                      f"(valid: {', '.join(CHECKPOINT_OPTIONS)})")
            if option == "greedy":
                greedy = True
            else:
                policy = option
        return PlayerSpec(kind="checkpoint", path=path, policy=policy, greedy=greedy)
    if not _BOT_NAME.match(text):
        raise PlayerSpecError(f"player spec {spec!r} is neither a bot name, a checkpoint path nor search:SPEC")
    return PlayerSpec(kind="bot", name=text)


def _parse_settings(spec: str, text: str) -> dict[str, Any]:
    import yaml

    settings = {}
    for item in filter(None, (x.strip() for x in text.split(","))):
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise PlayerSpecError(f"player spec {spec!r}: search setting {item!r} must look like key=value")
        settings[key.strip()] = yaml.safe_load(value) if value != "" else ""
    return settings


# Players ---------------------------------------------------------------------------------------
class BotPlayer:
    def __init__(self, bot, game):
        self.bot = bot
        self.game = game
        self.name = bot.name
        if hasattr(bot, "action_scores"):
            self.action_scores = bot.action_scores

    def act(self, obs: torch.Tensor, mask: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
        return self.bot.act(obs, mask, generator)


class NetworkPlayer:
    """A checkpoint's policy (``agent.policy(kind)``): samples from it, or its argmax with ``greedy``."""

    def __init__(self, agent, kind: str, greedy: bool, name: str):
        self.agent = agent
        self.game = agent.game
        self.kind = kind
        self.greedy = greedy
        self.name = name
        self._policy = agent.policy(kind=kind, greedy=False)

    @classmethod
    def of_network(cls, game, net, name: str, greedy: bool = False) -> "NetworkPlayer":
        """A bare strategy network's average policy, sampled (what ``agent.policy('average')``
        plays) or its argmax with ``greedy``, for a network that has no checkpoint around it
        (``agent`` is None)."""
        from .cfr.policies import StrategyNetPolicy

        player = cls.__new__(cls)
        player.agent, player.game, player.kind, player.greedy, player.name = None, game, "average", greedy, name
        player._policy = StrategyNetPolicy(net, game.encode)
        return player

    def policy(self, obs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """The policy's probabilities [n, A] (the sampled policy's, also for a greedy player)."""
        return self._policy(obs, mask)

    def act(self, obs: torch.Tensor, mask: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
        probs = self._policy(obs, mask).float() * mask
        if self.greedy:
            return probs.masked_fill(~mask.bool(), -1.0).argmax(dim=1)
        probs = torch.where(probs.sum(dim=1, keepdim=True) > 0, probs, mask.float())
        return sample_from_probs(probs, generator)


class SearchPlayer:
    """Rollout search over a base player (module docstring: ``search``, ``last_decision``, ``stats``)."""

    def __init__(self, base, search, name: str):
        self.base = base
        self.search = search
        self.game = base.game
        self.name = name

    @property
    def last_decision(self):
        return self.search.last

    @property
    def stats(self):
        return self.search.stats

    def act(self, obs: torch.Tensor, mask: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
        return self.search.decide(obs, mask).to(obs.device)


def _rules_identity(game) -> dict:
    # The ply cap is a safety limit, not a rule a policy was trained for.
    return {k: v for k, v in game.config_dict().items() if k != "ply_cap"}


def same_game(a, b) -> bool:
    """Whether two games have the same rules (the ply cap aside): a checkpoint can play in the other."""
    return a.name == b.name and _rules_identity(a) == _rules_identity(b)


def describe_game(game) -> str:
    """The game in words for error messages (a Lost Cities variant by name, with what differs)."""
    if game.name == "lost_cities":
        from .games.lost_cities.rules import VARIANTS, make_rules

        rules = _rules_identity(game)
        best = min(VARIANTS, key=lambda v: sum(make_rules(v).model_dump()[k] != x for k, x in rules.items()))
        base = make_rules(best).model_dump()
        changed = ", ".join(f"{k}={x}" for k, x in rules.items() if base[k] != x)
        return f"lost_cities (variant {best}{'; ' + changed if changed else ''})"
    return game.name


def load_player(spec: "str | PlayerSpec", game=None, device: str | torch.device = "cpu",
                search_settings: dict | None = None):
    """The player ``spec`` names, for ``game`` (None: the game of the spec's checkpoint). A
    checkpoint of another game or rule variant raises ValueError naming both."""
    if isinstance(spec, str):
        spec = parse_player(spec)
    if spec.kind == "bot":
        if game is None:
            raise ValueError(f"player {spec}: a bot needs a game (pass game=, or use --game / --variant)")
        from .games.bots import make_bot

        return BotPlayer(make_bot(game, spec.name), game)
    if spec.kind == "checkpoint":
        from .train.checkpoint import CheckpointError

        path = Path(spec.path)
        if not path.is_file():
            raise CheckpointError(f"checkpoint not found: {path}")
        agent = _load_agent(str(path), device)
        if game is not None and not same_game(agent.game, game):
            raise ValueError(f"checkpoint {path} is for {describe_game(agent.game)}, but this match plays "
                             f"{describe_game(game)}")
        return NetworkPlayer(agent, spec.policy, spec.greedy, str(spec))
    base = load_player(spec.base, game, device)
    return search_player(base, str(spec), device, search_settings, spec.settings)


def search_player(base, name: str, device: str | torch.device = "cpu", *settings: dict | None) -> "SearchPlayer":
    """Rollout search over an already built ``base`` player (later ``settings`` dicts win)."""
    from .search import RolloutSearch, search_config

    config = search_config(*settings)
    search = RolloutSearch(base.game, base, config, device=device)
    return SearchPlayer(base, search, name)


def _load_agent(path: str, device):
    from .train.agent import load_agent

    return load_agent(path, device=device)


__all__ = ["PlayerSpec", "PlayerSpecError", "parse_player", "load_player", "search_player", "same_game", "describe_game",
           "BotPlayer", "NetworkPlayer", "SearchPlayer", "VALID_FORMS"]
