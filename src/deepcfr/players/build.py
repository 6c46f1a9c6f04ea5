"""Building the player a spec names (``load_player``), for a game.

A player has ``name``, ``game``, ``act(obs, mask, generator) -> actions [n]`` (batched, as arena
sides take them) and, where it has one, ``policy(obs, mask) -> probs [n, A]`` (networks). A
:class:`SearchPlayer` also has ``search`` (the RolloutSearch), ``last_decision`` (a
``search.SearchDecision``: for each decision of the last ``act`` call the candidates, their mean
rollout values with 95% CIs, the paired differences to the base move, the prior and the choice)
and ``stats`` (a ``search.SearchStats``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, cast

import torch

from ..games.base import legal_probabilities, sample_from_probs
from ..player_specs import CHAMPION, LEARNER, PlayerSpec, PlayerSpecError, parse_player, quote
from .shipped import champion_file, champion_search_settings


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
    """A policy (``(obs, mask) -> probs``, a checkpoint's or a bare network's): samples from it,
    or plays its most probable legal action with ``greedy``. ``policy`` gives the probabilities
    the player samples from (for a greedy player too: they are what a page shows)."""

    def __init__(self, game, policy, name: str, greedy: bool = False, kind: str = "average", agent=None):
        self.game = game
        self.name = name
        self.greedy = greedy
        self.kind = kind
        self.agent = agent
        self._policy = policy
        if hasattr(policy, "greedy_scores"):  # scores whose legal argmax is the greedy move (logits)
            self.greedy_scores = policy.greedy_scores

    @classmethod
    def of_agent(cls, agent, kind: str, greedy: bool, name: str) -> NetworkPlayer:
        """A checkpoint's policy ``kind`` (average: the strategy network; current: regret matching)."""
        return cls(agent.game, agent.policy(kind=kind, greedy=False), name, greedy, kind, agent)

    @classmethod
    def of_network(cls, game, net, name: str, greedy: bool = False) -> NetworkPlayer:
        """A bare strategy network (no checkpoint around it), as ``agent.policy('average')`` plays it."""
        from ..cfr.policies import StrategyNetPolicy

        return cls(game, StrategyNetPolicy(net, game.encode), name, greedy)

    def policy(self, obs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return self._policy(obs, mask)

    @property
    def policy_object(self):
        """The policy this player plays (a StrategyNetPolicy around one network, or regret matching
        over advantage networks): what an export inspects."""
        return self._policy

    def sampling_probabilities(self, obs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor | None:
        """What ``act`` samples from (None for a greedy player): never an illegal action, whatever
        the network says; an all-zero row plays uniformly. The arena's luck corrections use them."""
        if self.greedy:
            return None
        return legal_probabilities(self._policy(obs, mask), mask)

    def act(self, obs: torch.Tensor, mask: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
        if self.greedy:
            probs = self._policy(obs, mask).float() * mask
            return probs.masked_fill(~mask.bool(), -1.0).argmax(dim=1)
        return sample_from_probs(cast(torch.Tensor, self.sampling_probabilities(obs, mask)), generator)


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

    @property
    def needs_history(self) -> bool:
        """Whether ``act`` needs each game's public action history (a belief in a game whose
        observation does not hold it: the arena then passes ``history``)."""
        return self.search.needs_history

    @property
    def sees_state(self) -> bool:
        """Whether ``act`` reads the match's true state (``search.oracle``, a research bound): the
        arena then passes ``state``, the true states of the rows it asks about."""
        return self.search.sees_state

    def act(
        self,
        obs: torch.Tensor,
        mask: torch.Tensor,
        generator: torch.Generator | None = None,
        history: torch.Tensor | None = None,
        state=None,
    ) -> torch.Tensor:
        if self.search.sees_state:
            return self.search.decide(obs, mask, history, state=state).to(obs.device)
        return self.search.decide(obs, mask, history).to(obs.device)


def _rules_identity(game) -> dict:
    # The ply cap is a safety limit, not a rule a policy was trained for.
    return {k: v for k, v in game.config_dict().items() if k != "ply_cap"}


def same_game(a, b) -> bool:
    """Whether two games have the same rules (the ply cap aside): a checkpoint can play in the other."""
    return a.name == b.name and _rules_identity(a) == _rules_identity(b)


def describe_game(game) -> str:
    """The game in words for error messages (a rule variant by name, with what differs)."""
    from ..games.base import capability, has_capability

    return capability(game, "describe")() if has_capability(game, "describe") else game.name


def checkpoint_file(spec: PlayerSpec) -> Path:
    """The file a checkpoint spec loads (``champion``: the shipped one)."""
    if spec.is_champion:
        return champion_file()
    return Path(cast(str, spec.path))


def load_player(
    spec: str | PlayerSpec,
    game=None,
    device: str | torch.device = "cpu",
    search_settings: dict | None = None,
    networks: Mapping[str, torch.nn.Module] | None = None,
):
    """The player ``spec`` names, for ``game`` (None: the game of the spec's checkpoint).
    ``networks`` are the networks a caller names (``learner`` in improve). A checkpoint of another
    game or rule variant raises ValueError naming both."""
    if isinstance(spec, str):
        spec = parse_player(spec)
    if spec.kind == "bot":
        if game is None:
            raise ValueError(f"player {spec}: a bot needs a game (pass game=, or use --game / --variant)")
        from ..games.bots import make_bot

        return BotPlayer(make_bot(game, cast(str, spec.name)), game)
    if spec.kind == "network":
        if networks is None or spec.name not in networks:
            raise PlayerSpecError(
                f"player spec {quote(str(spec))}: {LEARNER!r} is the network that improve trains "
                "(improve.teacher, improve.eval_search); elsewhere name a checkpoint or champion"
            )
        if game is None:
            raise ValueError(f"player {spec}: a network needs a game")
        return NetworkPlayer.of_network(game, networks[cast(str, spec.name)], str(spec), spec.greedy)
    if spec.kind == "checkpoint":
        return _checkpoint_player(spec, game, device)
    base_spec = cast(PlayerSpec, spec.base)  # a search spec has a base
    base = load_player(base_spec, game, device, networks=networks)
    # over the champion, the settings its card measured strongest start (the caller's and inline win)
    shipped = champion_search_settings() if base_spec.is_champion else None
    return search_player(base, str(spec), device, shipped, search_settings, spec.settings)


def load_players(
    specs: Sequence[str | PlayerSpec],
    game=None,
    device: str | torch.device = "cpu",
    search_settings: dict | None = None,
) -> tuple[list, object]:
    """The players of ``specs`` and the game they play, the one rule for it: ``game`` when given,
    else the game of the first spec that names a checkpoint (itself, or the base of a search),
    else the flagship's default rules (``games.registry.DEFAULT_GAME``); every checkpoint must
    match it (``load_player`` raises ValueError naming both)."""
    parsed = [parse_player(s) if isinstance(s, str) else s for s in specs]
    players: list[Any] = [None] * len(parsed)
    if game is None:
        for i, spec in enumerate(parsed):
            if spec.innermost.kind == "checkpoint":
                players[i] = load_player(spec, None, device, search_settings)
                game = players[i].game
                break
    if game is None:
        from ..games.registry import DEFAULT_GAME, make_game

        game = make_game(DEFAULT_GAME)
    players = [p if p is not None else load_player(s, game, device, search_settings) for p, s in zip(players, parsed)]
    return players, game


def _checkpoint_player(spec: PlayerSpec, game, device) -> NetworkPlayer:
    from ..checkpoints import CheckpointError
    from ..train.agent import load_agent

    path = checkpoint_file(spec)
    if not path.is_file():
        raise CheckpointError(f"checkpoint not found: {quote(str(path))}")
    agent = load_agent(str(path), device=device)
    if game is not None and not same_game(agent.game, game):
        what = CHAMPION if spec.is_champion else f"checkpoint {path}"
        raise ValueError(f"{what} is for {describe_game(agent.game)}, but this match plays {describe_game(game)}")
    if spec.policy == "current" and not agent.has_current_policy:
        raise PlayerSpecError(
            f"player spec {quote(str(spec))}: this checkpoint holds a distilled network only "
            "(expert iteration), with no current policy: play PATH or PATH@greedy"
        )
    return NetworkPlayer.of_agent(agent, spec.policy, spec.greedy, str(spec))


def search_player(base, name: str, device: str | torch.device = "cpu", *settings: dict | None) -> SearchPlayer:
    """Rollout search over an already built ``base`` player (later ``settings`` dicts win); its
    ``rollout_policy`` setting is ``base`` or a spec (a bot or a checkpoint) built here, and so is
    the player its ``belief`` setting models the opponent by."""
    from ..search import OpponentModel, PlanSearch, RolloutSearch, search_config

    config = search_config(*settings)
    rollout = None
    if config.rollout_policy != "base":
        rollout = _helper_player(
            config.rollout_policy, "search.rollout_policy", "play the rollouts of", "'base'", base.game, device
        )
    leaf_value = None
    if config.rollout_plies is not None:
        leaf_value = rollout_value_function(config.value_fn, base.game, device, "search.rollout_plies")
    opponent, hand_belief = None, None
    belief = "none" if config.oracle else config.belief  # the oracle's worlds come from the match's true state
    if belief == "learned":
        hand_belief = search_hand_belief(config.hand_belief, base.game, device)
    elif belief != "none":
        modelled = (
            base
            if config.belief == "base"
            else _helper_player(
                config.belief, "search.belief", "model the opponent of", "'base' or 'none'", base.game, device
            )
        )
        opponent = OpponentModel(modelled)
    kind = PlanSearch if config.plan_depth is not None else RolloutSearch
    search = kind(
        base.game,
        base,
        config,
        rollout_policy=rollout,
        device=device,
        leaf_value=leaf_value,
        opponent=opponent,
        hand_belief=hand_belief,
    )
    return SearchPlayer(base, search, name)


def search_hand_belief(choice: str, game, device: str | torch.device):
    """The hand belief ``choice`` (a ``hand_belief`` setting) names for ``game``; an error naming
    the setting where there is none."""
    from .shipped import HAND_BELIEF_CHOICES, resolve_hand_belief

    belief = resolve_hand_belief(choice, game, device)
    if belief is None:
        raise ValueError(
            f"search.belief='learned' needs a hand belief and hand_belief={quote(choice)} gives none "
            f"for {describe_game(game)}: {HAND_BELIEF_CHOICES}"
        )
    return belief


def _helper_player(text: str, setting: str, role: str, alternatives: str, game, device):
    """The player a search setting names (a bot or a checkpoint, not a search), for ``game``; the
    error of a bad one names the setting and its other values, ``alternatives``."""
    try:
        spec = parse_player(text)
        if spec.kind == "search":
            raise PlayerSpecError(f"{quote(text)}: a search cannot {role} a search")
        return load_player(spec, game, device)
    except ValueError as e:
        raise ValueError(f"{setting}: {e} (or {alternatives})") from None


def rollout_value_function(choice: str, game, device: str | torch.device, setting: str):
    """The value function ``choice`` (a ``value_fn`` setting) names for ``game``, which values the
    rollouts a ``setting`` cuts short (the search's, the exploiter's); an error naming both where
    there is none."""
    from .shipped import VALUE_CHOICES, resolve_value_function

    value = None if choice == "none" else resolve_value_function(choice, game, device)
    if value is None:
        raise ValueError(
            f"{setting} needs a value function and value_fn={quote(choice)} gives none for "
            f"{describe_game(game)}: {VALUE_CHOICES.replace('none, ', '')}"
        )
    return value


__all__ = [
    "BotPlayer",
    "NetworkPlayer",
    "SearchPlayer",
    "load_player",
    "load_players",
    "search_player",
    "rollout_value_function",
    "same_game",
    "describe_game",
    "checkpoint_file",
]
