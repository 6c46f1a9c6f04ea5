"""A trained agent for evaluation and play: its game, config and networks, and the policies they
give. :func:`load_agent` builds one from a checkpoint; ``Trainer.agent()`` is the live one."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from deepcfr.cfr.networks import DeepCFRMLP, build_network
from deepcfr.cfr.policies import (
    ExactAveragePolicy,
    KLRegularizedPolicy,
    PerPlayerPolicy,
    RegretMatchingPolicy,
    SmoothedBotPolicy,
    StrategyNetPolicy,
    UniformPolicy,
)
from deepcfr.cfr.policies import (
    greedy as to_greedy,
)
from deepcfr.checkpoints import DEEPCFR_RUN, checkpoint_kind, load_checkpoint
from deepcfr.games.base import Policy
from deepcfr.games.bots import make_bot
from deepcfr.games.registry import make_game_from_config

from .config import SharedConfig, TrainConfig, upgrade_saved_config

POLICY_KINDS = ("average", "current", "mixture")


def deep_cfr_config(config: SharedConfig) -> TrainConfig:
    """``config`` as a Deep CFR run's (only its schema has ``init`` and ``regret_matching``)."""
    if not isinstance(config, TrainConfig):
        raise TypeError(f"a Deep CFR run's config is a TrainConfig, not a {type(config).__name__}")
    return config


@dataclass
class Agent:
    """A trained agent: its game, config, iteration and networks (in eval mode)."""

    game: Any
    config: SharedConfig  # a TrainConfig for a Deep CFR run's checkpoint
    iteration: int
    advantage_nets: list[DeepCFRMLP]
    strategy_net: DeepCFRMLP
    advantage_trained: list[bool]
    device: torch.device
    exact_average: ExactAveragePolicy | None = None
    # False for a distilled network (expert iteration, the champion): its advantage networks, if
    # any, are not its own, so it has no current policy
    has_current_policy: bool = True
    # a run with init.kl_temperature: the start network sigma_t is regularised toward, and the scale
    # its advantage targets were divided by (the temperature's units)
    start_net: DeepCFRMLP | None = None
    target_scale: float | None = None
    # or the bot it is regularised toward (by name; smoothed by init.smoothing)
    start_bot: str | None = None

    def current_policy_of(self, player: int, greedy: bool = False) -> Policy:
        """sigma_t of ``player``: regret matching on its advantage network (uniform before it
        trained); with a start network or bot, its advantages over that start (``kl_regularized``;
        the start's policy before it trained)."""
        if self.start_bot is not None:
            start = SmoothedBotPolicy(make_bot(self.game, self.start_bot), deep_cfr_config(self.config).init.smoothing)
            if not self.advantage_trained[player]:
                return (lambda obs, mask: to_greedy(start(obs, mask), mask)) if greedy else start
            return KLRegularizedPolicy(
                self.advantage_nets[player],
                None,
                self.game.encode,
                self.kl_temperature_units(),
                greedy=greedy,
                start_policy=start,
            )
        if self.start_net is not None:
            if not self.advantage_trained[player]:
                return StrategyNetPolicy(self.start_net, self.game.encode, greedy=greedy)
            return KLRegularizedPolicy(
                self.advantage_nets[player],
                self.start_net,
                self.game.encode,
                self.kl_temperature_units(),
                greedy=greedy,
            )
        if not self.advantage_trained[player]:
            return UniformPolicy()
        fallback = deep_cfr_config(self.config).regret_matching.fallback
        return RegretMatchingPolicy(self.advantage_nets[player], self.game.encode, fallback, greedy=greedy)

    def kl_temperature_units(self) -> float:
        """``init.kl_temperature`` in the advantage networks' output units (their targets are stored
        divided by ``target_scale``)."""
        return float(deep_cfr_config(self.config).init.kl_temperature) / float(self.target_scale or 1.0)

    def policy(self, kind: str = "average", greedy: bool = False) -> Policy:
        """``average`` (strategy network), ``current`` (regret matching on the advantage
        networks, dispatched per row on the observer's seat) or ``mixture`` (Kuhn/Leduc: the exact
        average of the sigma_t played). ``greedy`` plays the most probable action."""
        if kind == "average":
            return StrategyNetPolicy(self.strategy_net, self.game.encode, greedy=greedy)
        if kind == "current":
            if not self.has_current_policy:
                raise ValueError(
                    "this checkpoint holds a distilled network only (expert iteration): it has no "
                    "current policy; play its average policy (PATH, or PATH@greedy)"
                )
            return PerPlayerPolicy(self.game, [self.current_policy_of(p, greedy) for p in range(2)])
        if kind == "mixture":
            if self.exact_average is None:
                raise ValueError("policy kind 'mixture' needs a Kuhn/Leduc run trained with eval.exact_average")
            if greedy:
                table = self.exact_average
                return lambda obs, mask: to_greedy(table(obs, mask), mask)
            return self.exact_average
        raise ValueError(f"unknown policy kind {kind!r}; valid: {', '.join(POLICY_KINDS)}")


def load_agent(
    checkpoint: str | Path | Mapping[str, Any],
    device: str | torch.device = "cpu",
    config_class: type[SharedConfig] | None = None,
) -> Agent:
    """An :class:`Agent` from a checkpoint file (or an already loaded payload / trainer state dict).
    Its config is a ``config_class`` (None: a TrainConfig for a Deep CFR run, else the shared
    sections, ``SharedConfig``): sections of the saved config that class does not own are
    dropped; ``deepcfr.improve.ImproveRunConfig`` keeps an improvement run's ``improve``."""
    if isinstance(checkpoint, Mapping):
        payload = checkpoint
    else:
        payload = load_checkpoint(checkpoint, map_location="cpu")
    if "config" not in payload or "strategy_net" not in payload:
        raise ValueError("checkpoint does not hold a trainer state (no config / strategy_net)")
    deep_cfr_run = checkpoint_kind(payload) == DEEPCFR_RUN
    if config_class is None:
        config_class = TrainConfig if deep_cfr_run else SharedConfig
    config = config_class.model_validate(upgrade_saved_config(payload["config"], config_class))
    game = make_game_from_config(config)
    saved = payload.get("game", {})
    if saved.get("version") is not None and int(saved["version"]) != int(game.version):
        raise ValueError(
            f"checkpoint was trained on {game.name} version {saved['version']}, this code has version {game.version}"
        )
    device = torch.device(device)

    def net_from(sd):
        net = build_network(config.network, game.feature_size, game.num_actions)
        net.load_state_dict(sd)
        return net.to(device).eval()

    if (
        deep_cfr_run
        and deep_cfr_config(config).init.kl_temperature > 0
        and payload.get("warm_start") is not None
        and payload.get("start_net") is None
        and payload.get("start_bot") is None
    ):
        raise ValueError(
            "checkpoint: its config sets init.kl_temperature but it holds no start network or bot "
            "(its current policy is regularised toward that start)"
        )
    exact = None
    if payload.get("exact_average") is not None:
        exact = ExactAveragePolicy(game)
        exact.load_state_dict(payload["exact_average"])
    return Agent(
        game=game,
        config=config,
        iteration=int(payload.get("iteration", 0)),
        advantage_nets=[net_from(sd) for sd in payload.get("advantage_nets", [])],
        strategy_net=net_from(payload["strategy_net"]),
        advantage_trained=[bool(x) for x in payload.get("advantage_trained", [False, False])],
        device=device,
        exact_average=exact,
        has_current_policy="advantage_nets" in payload and deep_cfr_run,
        start_net=net_from(payload["start_net"]) if deep_cfr_run and payload.get("start_net") is not None else None,
        target_scale=payload.get("target_scale"),
        start_bot=payload.get("start_bot") if deep_cfr_run else None,
    )


__all__ = ["Agent", "POLICY_KINDS", "load_agent"]
