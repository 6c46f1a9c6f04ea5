"""The computer side of a terminal game: a trained agent's policy or a bot, acting on the same
batched observation rows as in training (a reference engine's ``observe(p)`` row, as ``[1, K]``)."""

from __future__ import annotations

from typing import Callable

import torch

from ..games.base import sample_from_probs


class Opponent:
    """``decide(obs [1, K], mask [1, A]) -> (action, probs [A] or None)``."""

    name: str

    def decide(self, obs: torch.Tensor, mask: torch.Tensor) -> tuple[int, torch.Tensor | None]:
        raise NotImplementedError


class PolicyOpponent(Opponent):
    """Samples from a policy callable ``(obs, mask) -> probs`` (greedy: the most probable action)."""

    def __init__(self, policy: Callable[[torch.Tensor, torch.Tensor], torch.Tensor], name: str,
                 seed: int = 0, greedy: bool = False):
        self.policy = policy
        self.name = name
        self.greedy = greedy
        self.generator = torch.Generator().manual_seed(seed)

    def decide(self, obs, mask):
        with torch.no_grad():
            probs = self.policy(obs, mask).float().cpu()
        # Never play an illegal action, whatever the network says; an all-zero row plays uniformly.
        probs = probs * mask.cpu()
        probs = torch.where(probs.sum(dim=1, keepdim=True) > 0, probs, mask.cpu().float())
        probs = probs / probs.sum(dim=1, keepdim=True)
        action = probs.argmax(dim=1) if self.greedy else sample_from_probs(probs, self.generator)
        return int(action[0]), probs[0]


class BotOpponent(Opponent):
    """A batched bot acting on a batch of one. Bots give actions only, no probabilities."""

    def __init__(self, bot, seed: int = 0):
        self.bot = bot
        self.name = str(getattr(bot, "name", type(bot).__name__))
        self.generator = torch.Generator().manual_seed(seed)

    def decide(self, obs, mask):
        return int(self.bot.act(obs, mask, self.generator)[0]), None


def observation(game, ref, player: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The batched observation and legal mask rows ``[1, K]``, ``[1, A]`` of a reference engine."""
    obs = torch.tensor([ref.observe(player)], dtype=game.obs_dtype)
    mask = torch.tensor([ref.legal_mask()], dtype=torch.bool)
    return obs, mask


class SearchOpponent(Opponent):
    """A search player (deepcfr.players.SearchPlayer) on a batch of one. Its decide returns, in
    place of probabilities, the candidates it weighed (``SearchDecision.rows``: mean rollout value
    with a 95% CI, paired difference to the base move, prior, chosen), best first."""

    def __init__(self, player, action_name=str):
        self.player = player
        self.name = player.name
        self.action_name = action_name
        cfg = player.search.config
        self.thinking = (f"{self.name} is thinking ({cfg.determinizations} hidden-card samples x up to "
                         f"{cfg.candidates} moves, rolled out to the end)...")

    def decide(self, obs, mask):
        action = int(self.player.act(obs, mask)[0])
        return action, self.player.last_decision.rows(0, self.action_name)
