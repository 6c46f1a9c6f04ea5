"""Policy callables built from networks: ``policy(obs, mask) -> probs [n, A]``.

They take compact observations, encode them in batch (``game.encode``), run the network once
over the batch and return float32 probabilities that are exactly zero on illegal actions. The
same callables serve traversal (one per player), evaluation (exploitability, arena) and play.

- :class:`RegretMatchingPolicy`: sigma_t of one advantage network (regret matching).
- :class:`KLRegularizedPolicy`: sigma_t of an advantage network regularised toward a start
  network or a start policy (a smoothed bot).
- :class:`StrategyNetPolicy`: the average-strategy network's masked softmax.
- :class:`PerPlayerPolicy`: dispatches each row to the policy of ``game.obs_player(obs)``, one
  call per player over that player's rows (the "current policy" of both advantage networks).
- :class:`ExactAveragePolicy`: the exact reach-weighted average of the sigma_t played (Kuhn, Leduc).
- :class:`UniformPolicy`, :class:`BotPolicy` (a bot as a deterministic policy),
  :class:`SmoothedBotPolicy` (a bot's moves mixed with the uniform policy), :func:`greedy`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import cast

import torch

from deepcfr.games.base import Policy

from .networks import masked_softmax
from .regret_matching import kl_regularized, regret_matching

Encoder = Callable[[torch.Tensor], torch.Tensor]
NetworkFn = Callable[[torch.Tensor], torch.Tensor]  # features [n, F] -> outputs [n, A]


def _network_device(fn) -> torch.device | None:
    if isinstance(fn, torch.nn.Module):
        for p in fn.parameters():
            return p.device
    return None


def greedy(probs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """One-hot of each row's highest-scoring legal action (``probs`` may be any scores, such as
    logits; ties: lowest index)."""
    best = probs.float().masked_fill(~mask.bool(), -torch.inf).argmax(dim=1, keepdim=True)
    return torch.zeros_like(probs, dtype=torch.float32).scatter_(1, best, 1.0) * mask


def uniform_probs(mask: torch.Tensor) -> torch.Tensor:
    """[n, A] float32: uniform over each row's legal actions (zero where a row has none)."""
    legal = mask.to(torch.float32)
    return legal / legal.sum(dim=1, keepdim=True).clamp(min=1.0)


def mix_uniform(probs: torch.Tensor, mask: torch.Tensor, share: float) -> torch.Tensor:
    """``(1 - share) probs + share uniform`` over the legal actions."""
    return (1.0 - share) * probs + share * uniform_probs(mask)


class _NetworkPolicy:
    def __init__(self, network: NetworkFn, encode: Encoder, device: str | torch.device | None = None):
        self.network = network
        self.encode = encode
        self.device = torch.device(device) if device is not None else _network_device(network)

    def _outputs(self, obs: torch.Tensor) -> torch.Tensor:
        features = self.encode(obs.to(self.device) if self.device is not None else obs)
        with torch.no_grad():
            return self.network(features).float().to(obs.device)


class RegretMatchingPolicy(_NetworkPolicy):
    """sigma_t from an advantage network: regret matching on its outputs (``fallback`` when no
    legal advantage is positive)."""

    def __init__(
        self,
        network: NetworkFn,
        encode: Encoder,
        fallback: str = "argmax",
        greedy: bool = False,
        device: str | torch.device | None = None,
    ):
        super().__init__(network, encode, device)
        self.fallback = fallback
        self.greedy = greedy

    def __call__(self, obs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        probs = regret_matching(self._outputs(obs), mask, self.fallback)
        return greedy(probs, mask) if self.greedy else probs


class KLRegularizedPolicy(_NetworkPolicy):
    """sigma_t regularised toward a start policy (config ``init.kl_temperature``): the start
    policy reweighted by ``exp(advantage / temperature)`` (``kl_regularized``; ``temperature`` in
    the advantage network's output units). The start is a network (its masked softmax; one
    encoding, two forwards) or, given as ``start_policy``, any policy on the observations (a
    :class:`SmoothedBotPolicy`: a bot itself, where a network fitted to it would be inexact)."""

    def __init__(
        self,
        network: NetworkFn,
        start_network: NetworkFn | None,
        encode: Encoder,
        temperature: float,
        greedy: bool = False,
        device: str | torch.device | None = None,
        start_policy: Policy | None = None,
    ):
        super().__init__(network, encode, device)
        if (start_network is None) == (start_policy is None):
            raise ValueError("KLRegularizedPolicy needs exactly one start: a start network or a start policy")
        self.start_network = start_network
        self.start_policy = start_policy
        self.temperature = float(temperature)
        self.greedy = greedy

    def __call__(self, obs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        features = self.encode(obs.to(self.device) if self.device is not None else obs)
        with torch.no_grad():
            advantages = self.network(features).float().to(obs.device)
            if self.start_policy is None:
                start_logits = cast(NetworkFn, self.start_network)(features).float().to(obs.device)
            else:  # its log-probabilities: their masked softmax is the policy again
                start_logits = self.start_policy(obs, mask).float().to(obs.device).clamp(min=1e-30).log()
        probs = kl_regularized(advantages, start_logits, mask, self.temperature)
        return greedy(probs, mask) if self.greedy else probs


class StrategyNetPolicy(_NetworkPolicy):
    """The average-strategy network: masked softmax of its logits (or the argmax with ``greedy``)."""

    def __init__(
        self, network: NetworkFn, encode: Encoder, greedy: bool = False, device: str | torch.device | None = None
    ):
        super().__init__(network, encode, device)
        self.greedy = greedy

    def __call__(self, obs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        logits = self._outputs(obs)
        if self.greedy:
            return greedy(logits, mask)
        return masked_softmax(logits, mask)

    def greedy_scores(self, obs: torch.Tensor) -> torch.Tensor:
        """Scores whose highest legal entry is the most probable action: the logits (a greedy
        caller skips the softmax, a sixth of a rollout step on a CPU)."""
        return self._outputs(obs)


class UniformPolicy:
    """Uniform over legal actions (sigma_1 before any advantage network is trained)."""

    def __call__(self, obs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return uniform_probs(mask)


class BotPolicy:
    """A bot (``act(obs, mask, generator) -> actions``) as a policy: one-hot of its choices."""

    def __init__(self, bot, generator: torch.Generator | None = None):
        self.bot = bot
        self.generator = generator
        self.name = getattr(bot, "name", type(bot).__name__)

    def __call__(self, obs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        actions = self.bot.act(obs, mask, self.generator).long()
        return torch.zeros(mask.shape, dtype=torch.float32, device=mask.device).scatter_(1, actions[:, None], 1.0)


class SmoothedBotPolicy:
    """A bot's moves mixed with ``smoothing`` of the uniform policy over the legal actions: its
    action probabilities where it has them (``bot.policy``), else the one-hot of its moves
    (``bot.act`` without a generator: a deterministic bot). A start policy sigma_t is regularised
    toward (``init.smoothing``): the smoothing keeps every legal action within the regrets' reach."""

    def __init__(self, bot, smoothing: float):
        if not 0.0 <= float(smoothing) < 1.0:
            raise ValueError(f"SmoothedBotPolicy: smoothing must be in [0, 1), got {smoothing}")
        self.bot = bot
        self.smoothing = float(smoothing)
        self.name = getattr(bot, "name", type(bot).__name__)

    def __call__(self, obs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        if hasattr(self.bot, "policy"):
            probs = self.bot.policy(obs, mask).float().to(mask.device) * mask
        else:
            actions = self.bot.act(obs, mask, None).long().to(mask.device)
            probs = torch.zeros(mask.shape, dtype=torch.float32, device=mask.device).scatter_(1, actions[:, None], 1.0)
        return mix_uniform(probs, mask, self.smoothing)


class PerPlayerPolicy:
    """Routes each row to ``policies[game.obs_player(obs)]``: one call per player over its rows."""

    def __init__(self, game, policies: Sequence[Policy]):
        if len(policies) != 2:
            raise ValueError(f"PerPlayerPolicy needs one policy per player (2), got {len(policies)}")
        self.game = game
        self.policies = list(policies)

    def __call__(self, obs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        player = self.game.obs_player(obs)
        out = torch.zeros(mask.shape, dtype=torch.float32, device=mask.device)
        for p, policy in enumerate(self.policies):
            rows = torch.nonzero(player == p).squeeze(1)
            if rows.numel():
                out[rows] = policy(obs[rows], mask[rows]).float().to(out.device)
        return out


def _table_rows(rows: torch.Tensor, table: torch.Tensor) -> torch.Tensor:
    """Index into ``table`` (unique rows) of each row of ``rows``; -1 where absent."""
    table = table.to(rows.device, rows.dtype)
    _, ids = torch.unique(torch.cat([table, rows]), dim=0, return_inverse=True)
    row_of_id = torch.full((int(ids.max()) + 1,), -1, dtype=torch.long, device=rows.device)
    row_of_id[ids[: table.shape[0]]] = torch.arange(table.shape[0], device=rows.device)
    return row_of_id[ids[table.shape[0] :]]


class ExactAveragePolicy:
    """The exact average strategy of the sigma_t played, for games whose tree can be enumerated
    (Kuhn, Leduc): at each information state I of player p,
    ``avg(I) = sum_t w_t pi_p^t(I) sigma_t(I) / sum_t w_t pi_p^t(I)`` with ``pi_p^t`` p's own
    reach under sigma_t. :meth:`accumulate` tabulates a policy over every information state in
    one call and adds it in; the object itself is the resulting policy (uniform where nothing
    was accumulated). Costs ``[M, A]`` float64, no stored networks."""

    def __init__(self, game):
        from deepcfr.games.poker.tree import game_tree

        self.game = game
        self.tree = game_tree(game)
        self.numerator = torch.zeros(self.tree.infostate_mask.shape, dtype=torch.float64)
        self.accumulated = [0, 0]  # policies added per player

    def _own_reach(self, player: int, probs: torch.Tensor) -> torch.Tensor:
        """Reach of each information state through ``player``'s own actions ``[M]``."""
        tree = self.tree
        node_probs = torch.where((tree.infostate >= 0)[:, None], probs[tree.infostate.clamp(min=0)], 0.0)
        reach = torch.ones(tree.num_nodes, dtype=torch.float64)
        for d in range(len(tree.level_start) - 2):
            s, e = tree.level_start[d], tree.level_start[d + 1]
            children = tree.children[s:e]
            step = torch.where((tree.player[s:e] == player)[:, None], node_probs[s:e], 1.0)
            has_child = children >= 0
            reach[children[has_child]] = (reach[s:e, None] * step)[has_child]
        info_reach = torch.zeros(tree.num_infostates, dtype=torch.float64)
        decision = tree.infostate >= 0
        info_reach[tree.infostate[decision]] = reach[decision]  # equal over an infostate (perfect recall)
        return info_reach

    def accumulate(self, player: int, policy: Policy, weight: float) -> None:
        tree = self.tree
        obs, mask = tree.infostate_obs, tree.infostate_mask
        probs = policy(obs, mask).detach().to("cpu", torch.float64) * mask
        probs = probs / probs.sum(dim=1, keepdim=True).clamp(min=1e-300)
        reach = self._own_reach(player, probs)
        mine = (tree.infostate_player == player).to(torch.float64)
        self.numerator += (float(weight) * reach * mine)[:, None] * probs
        self.accumulated[player] += 1

    def table(self) -> torch.Tensor:
        mask = self.tree.infostate_mask.to(torch.float64)
        total = self.numerator.sum(dim=1, keepdim=True)
        return torch.where(total > 0, self.numerator / total.clamp(min=1e-300), mask / mask.sum(dim=1, keepdim=True))

    def __call__(self, obs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        rows = _table_rows(obs.cpu(), self.tree.infostate_obs)
        if (rows < 0).any():
            bad = obs[int((rows < 0).nonzero()[0, 0])].tolist()
            raise ValueError(f"ExactAveragePolicy: observation {bad} is not an information state of {self.game.name}")
        return (self.table()[rows].to(torch.float32) * mask.cpu()).to(mask.device)

    def state_dict(self) -> dict:
        return {"numerator": self.numerator.clone(), "accumulated": list(self.accumulated)}

    def load_state_dict(self, state: dict) -> None:
        numerator = state["numerator"]
        if tuple(numerator.shape) != tuple(self.numerator.shape):
            raise ValueError(
                f"ExactAveragePolicy.load_state_dict: table shape {tuple(numerator.shape)} differs from "
                f"{tuple(self.numerator.shape)} for {self.game.name}"
            )
        self.numerator = numerator.to(torch.float64).clone()
        self.accumulated = [int(a) for a in state["accumulated"]]
