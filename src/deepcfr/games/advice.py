"""Advice features: a game whose observations carry a bot's recommended action.

``AdvisedGame(game, bot_name)`` is the same game (every method and attribute delegates to it)
except that ``observe`` appends one column, the action the bot would choose in that
information state, and ``encode`` turns it into a one-hot after the game's own features
(``obs_size`` grows by 1, ``feature_size`` by ``num_actions``). The bot sees only the
observation, so this is a function of the information state like any other feature: CFR's
guarantees are untouched, but the networks no longer have to rediscover from noisy sampled
regrets what a hand-written player already knows (in Lost Cities, which expeditions are worth
opening), and can spend their capacity on where to deviate from it. The bot runs once per
observation (2.6-4 us per state at batches of 512-4096 for the Lost Cities heuristics on one CPU
thread, scripts/bench_bots.py); stored samples keep its answer, so training batches do not run
it again.

Built by ``make_game(name, advice_bot=...)`` (config ``game.advice_bot``), so worker processes,
checkpoints and evaluation rebuild the same observations and features.
"""

from __future__ import annotations

from typing import Any

import torch


def _mask_from_obs(game) -> Any:
    if game.name == "lost_cities":
        from .lost_cities.layout import legal_mask_from_obs

        return lambda obs: legal_mask_from_obs(game.rules, obs)
    raise ValueError(f"game.advice_bot: advice features need a legal mask from observations, which "
                     f"{game.name!r} does not provide (supported: lost_cities)")


class AdvisedGame:
    def __init__(self, game, advice_bot: str):
        from .bots import make_bot

        if int(game.num_actions) > torch.iinfo(game.obs_dtype).max + 1:
            raise ValueError(f"game.advice_bot: {game.name} has too many actions for its observation dtype")
        self._game = game
        self.advice_bot = advice_bot
        self.bot = make_bot(game, advice_bot)
        self._mask_from_obs = _mask_from_obs(game)
        self._plain_obs_size = int(game.obs_size)
        self.obs_size = self._plain_obs_size + 1
        self.feature_size = int(game.feature_size) + int(game.num_actions)

    def __getattr__(self, name: str):
        if name == "_game":  # not set yet (unpickling): avoid recursing into __getattr__
            raise AttributeError(name)
        return getattr(self._game, name)

    def advice(self, plain_obs: torch.Tensor) -> torch.Tensor:
        """The bot's action ``[n]`` in each information state (observations of the plain game)."""
        return self.bot.act(plain_obs, self._mask_from_obs(plain_obs), None).long()

    def observe(self, state, player) -> torch.Tensor:
        obs = self._game.observe(state, player)
        return torch.cat([obs, self.advice(obs)[:, None].to(obs.dtype)], dim=1)

    def advice_reader(self) -> "AdviceReader":
        """The advice bot as a bot of this game: it reads its own answer from the observation."""
        return AdviceReader(self.advice_bot, self._plain_obs_size)

    def plain_obs(self, obs: torch.Tensor) -> torch.Tensor:
        return obs[:, : self._plain_obs_size]

    def encode(self, obs: torch.Tensor) -> torch.Tensor:
        base = self._game.encode(self.plain_obs(obs))
        onehot = torch.zeros(obs.shape[0], self._game.num_actions, dtype=base.dtype, device=base.device)
        onehot.scatter_(1, obs[:, self._plain_obs_size:].long(), 1.0)
        return torch.cat([base, onehot], dim=1)

    def config_dict(self) -> dict:
        return {**self._game.config_dict(), "advice_bot": self.advice_bot}

    def __repr__(self) -> str:
        return f"AdvisedGame({self._game!r}, advice_bot={self.advice_bot!r})"


class AdviceReader:
    """A bot that plays the advice column of an advised observation (``make_bot`` returns it
    for the advice bot of an ``AdvisedGame``: same choices, without running the bot again)."""

    def __init__(self, name: str, column: int):
        self.name = name
        self.column = column

    def act(self, obs: torch.Tensor, mask: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
        actions = obs[:, self.column].long()
        legal = mask.gather(1, actions[:, None]).squeeze(1) | ~mask.any(dim=1)  # rows of finished games: any
        if not bool(legal.all()):
            raise ValueError(f"{self.name}: the advice column holds an illegal action (observation not of this game?)")
        return actions
