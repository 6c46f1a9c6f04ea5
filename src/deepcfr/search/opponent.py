"""A model of a player: the exact probabilities with which it picks each move.

The belief (belief.py) weighs a hidden deal by the likelihood of the modelled player's past
moves; the exploiter (exploit/search.py) also lets its target play its own seat in the rollouts
exactly as it plays, and a search with a ``belief`` setting models its opponent so.
A network player gives them in closed form (sampled: its masked policy; ``@greedy``: all mass on
its most probable legal move, as it plays); the random bot is uniform over the legal moves; a
bot with a ``policy(obs, mask)`` states its own (discard_only); any other bot must be deterministic
(checked: the same move under two different random streams), so its probabilities are 0/1 and the
belief's weights are hard constraints. A search player's
probabilities are not in closed form: it is modelled by the player it searches over, played as the
search plays unless its rollouts find better (the base's top move; a bot's own move), so the
belief and the rollouts rest on that model (``modelled``); an exploiter's match is played against
the search itself, so its figure stays a real result, a lower bound on the search's exploitability.
"""

from __future__ import annotations

import torch

from ..games.base import legal_probabilities, uniform_policy
from ..games.bots import RandomBot


class OpponentModelError(ValueError):
    """A player whose move probabilities cannot be known."""


class OpponentModel:
    """``probabilities(obs, mask) -> [n, A]`` float32 of ``player`` (see the module docstring);
    ``deterministic``: whether they are all 0/1. The object is itself a policy callable, so
    exact exploitability can be computed of it."""

    def __init__(self, player):
        self.name = str(getattr(player, "name", type(player).__name__))
        # A search plays its base's top move unless its rollouts beat it by its test: model it so.
        self.modelled = getattr(player, "search", None) is not None
        if self.modelled:
            player = player.base
        self.player = player
        bot = getattr(player, "bot", player)
        self._policy = getattr(player, "policy", None) if callable(getattr(player, "policy", None)) else None
        if self._policy is None and callable(getattr(bot, "policy", None)):
            self._policy = bot.policy  # a sampling bot that states its probabilities (discard_only)
        if self._policy is None and not hasattr(player, "act") and callable(player):
            self._policy = player  # a bare policy callable
        self.greedy = (self.modelled or bool(getattr(player, "greedy", False))) and self._policy is not None
        self.uniform = self._policy is None and isinstance(bot, RandomBot)
        self.deterministic = self.greedy or (self._policy is None and not self.uniform)
        self._checked = False

    def __call__(self, obs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return self.probabilities(obs, mask)

    def probabilities(self, obs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        mask = mask.bool()
        if self.uniform:
            return uniform_policy(obs, mask)
        if self._policy is None:  # a deterministic bot: its move
            moves = self.player.act(obs, mask, torch.Generator(device=obs.device).manual_seed(1)).long()
            if not self._checked:
                again = self.player.act(obs, mask, torch.Generator(device=obs.device).manual_seed(2)).long()
                if not torch.equal(moves, again):
                    raise OpponentModelError(
                        f"{self.name}: a bot that samples its moves with probabilities it does not "
                        "state cannot be modelled by likelihood (as a target or a belief's opponent)"
                    )
                self._checked = True
            return torch.zeros(mask.shape, device=obs.device).scatter_(1, moves[:, None], 1.0)
        if self.greedy:
            return self.probabilities_and_soft(obs, mask)[0]
        return self._network_probabilities(obs, mask)

    def probabilities_and_soft(self, obs: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        """(``probabilities``, the network's sampling probabilities where the target plays it
        greedily, else None): one forward for both (the belief's soft fallback, belief.py)."""
        if not self.greedy:
            return self.probabilities(obs, mask), None
        mask = mask.bool()
        soft = self._network_probabilities(obs, mask)
        best = soft.masked_fill(~mask, -1.0).argmax(dim=1)
        return torch.zeros_like(soft).scatter_(1, best[:, None], 1.0), soft

    def ranking(self, obs: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        """(scores [n, A] ranking the moves, the target's own move first; the log of a network's
        policy probabilities [n, A], also where it plays greedily, or None for a bot): what a
        search over the target ranks its candidates by and weighs as its prior."""
        mask = mask.bool()
        if self._policy is not None:
            probs = self._network_probabilities(obs, mask)
            return probs.masked_fill(~mask, -1.0), probs.clamp(min=1e-6).log()
        scores = self.probabilities(obs, mask) * 2.0  # a bot's own move (all moves for the random bot)
        bot = getattr(self.player, "bot", None)
        if bot is not None and hasattr(bot, "action_scores"):  # then the bot's own order of the others, in [0, 1)
            own = bot.action_scores(obs).float()
            own = (own - own.masked_fill(~mask, torch.inf).amin(dim=1, keepdim=True)).masked_fill(~mask, 0)
            scores = scores + own / (1 + own.amax(dim=1, keepdim=True))
        return scores.masked_fill(~mask, -1.0), None

    def _network_probabilities(self, obs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():  # what a sampling player draws from (the arena's rule, NetworkPlayer's too)
            return legal_probabilities(self._policy(obs, mask), mask)


__all__ = ["OpponentModel", "OpponentModelError"]
