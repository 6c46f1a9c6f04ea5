"""Variance-reduced match estimates (AIVAT-style: Burch et al., AAAI 2018; DESIGN.md's appendix).

A value function ``value_fn(state) -> [n]`` estimates, from the full state (both hands, the
table, the deck as a set), the final score difference seat 0 minus seat 1. Each game's outcome
R becomes ``Y = R - sum of corrections``, one per step where something random happened:

- a decision of a player whose probabilities are known (it sampled its move from them):
  ``u(after) - sum_a pi(a) Q(a)``, where ``Q(a)`` is the value after move ``a``, averaged over
  chance where the move involves chance (a deck draw);
- any other decision whose move involves chance (the game's ``chance_outcomes``):
  ``u(after) - Q(a taken)``: the luck of the card drawn;
- a deterministic move of a player whose probabilities are unknown (a bot, a greedy network, a
  search): nothing.

Each correction has mean zero given everything before it, so E[Y] = E[R] whatever ``u``'s error;
only the variance changes; each kind of correction is weighted by a cross-fitted control-variate
coefficient (``cross_fitted``), so that a value function too noisy to help is shrunk away.
Terminal states are valued by their actual scores, never by ``u``.

The values after chance come from one of two places. A value function with ``chance_values(state)
-> [n, kinds]`` (seat 0's frame; for a game with the ``chance_kinds`` capability) gives, from one
evaluation of the state before chance, the value after each kind of outcome (a card drawn): the
average is over the game's probabilities of the kinds and the value "after" is that of the kind
the state will bring, so the chance correction ``Q(s, kind drawn) - sum_k p_k Q(s, k)`` has mean
zero whatever ``Q``, at one evaluation per draw. Otherwise every outcome is stepped to and valued
(``chance_outcomes``: about 44 evaluations a Lost Cities deck draw); with ``chance_samples``, that
average is itself an unbiased estimate from that many outcomes drawn without replacement. This
module knows no networks: ``value_fn`` is any callable of a batch of states.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, cast

import torch

from ..games.base import capability, has_capability, index_state

ValueFn = Callable[[object], torch.Tensor]


def cross_fitted(outcome: torch.Tensor, corrections: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``outcome [p]`` minus ``corrections [p, k]`` weighted, with weights that keep it unbiased.

    Each kind of correction (chance, decisions) has mean zero, so any weight keeps E[Y] = E[R]; a
    weight fitted on the same games would not quite. So the games are split in two halves, each
    half's weights are the least-squares fit of the outcome on its corrections in the *other*
    half (a control variate, cross-fitted), and a value function that is noisy where it matters is
    shrunk toward no correction instead of adding its noise. Returns the corrected ``[p]`` and
    the weights ``[2, k]`` of the two halves."""
    p, k = corrections.shape
    half = torch.arange(p, device=outcome.device) % 2
    out = outcome.clone()
    weights = torch.zeros(2, k, dtype=torch.float64, device=outcome.device)
    for h in (0, 1):
        fit = half != h
        if int(fit.sum()) <= k + 1:
            continue
        x = corrections[fit] - corrections[fit].mean(dim=0)
        y = outcome[fit] - outcome[fit].mean()
        gram = x.T @ x
        ridge = 1e-9 * gram.diagonal().sum().clamp(min=1e-30)
        beta = torch.linalg.solve(gram + ridge * torch.eye(k, dtype=gram.dtype, device=gram.device), x.T @ y)
        weights[h] = beta
        out[half == h] = outcome[half == h] - corrections[half == h] @ beta
    return out, weights


def seat_scores(game, state) -> torch.Tensor:
    """[n, 2] float64 each seat's score: points where the game has them, else utilities."""
    scores = game.scores(state) if has_capability(game, "scores") else game.returns(state)
    return scores.to(torch.float64)


def score_difference(game, state) -> torch.Tensor:
    """[n] float64 seat 0's score minus seat 1's."""
    scores = seat_scores(game, state)
    return scores[:, 0] - scores[:, 1]


def match_luck(
    game, value_fn: ValueFn | None, games: int, device: torch.device, chance_samples: int | None, seed: int
) -> LuckCorrection | None:
    """The luck corrections of a lockstep match of ``games`` games (None without a value
    function), drawing its chance samples from its own stream (``seed + 2``: the deals use
    ``seed``, the players' moves ``seed + 1``)."""
    if value_fn is None:
        return None
    return LuckCorrection(
        game, value_fn, games, device, chance_samples, torch.Generator(device=device).manual_seed(seed + 2)
    )


class LuckCorrection:
    """The running corrections of ``games`` games played in lockstep (seat-0 frame, per game):
    call ``before_step`` with each step's state and actions (and the probabilities of the rows
    whose movers sampled from known probabilities), then ``after_step`` with the stepped state."""

    def __init__(
        self,
        game,
        value_fn: ValueFn,
        games: int,
        device: torch.device,
        chance_samples: int | None = None,
        generator: torch.Generator | None = None,
    ):
        self.game = game
        self.value_fn = value_fn
        self.chance_samples = chance_samples
        self.generator = generator
        self.chance = capability(game, "chance_outcomes") if has_capability(game, "chance_outcomes") else None
        # the values after every kind of outcome from one evaluation, where both sides offer it
        self.kinds = (
            capability(game, "chance_kinds")
            if (
                self.chance is not None
                and getattr(value_fn, "chance_values", None) is not None
                and has_capability(game, "chance_kinds")
            )
            else None
        )
        self.chance_total = torch.zeros(games, dtype=torch.float64, device=device)
        self.decision_total = torch.zeros(games, dtype=torch.float64, device=device)
        self.seconds = 0.0
        self._pending: tuple[torch.Tensor, torch.Tensor] | None = None

    @property
    def total(self) -> torch.Tensor:
        """[games] the sum of every correction so far (seat 0's frame)."""
        return self.chance_total + self.decision_total

    def values(self, state) -> torch.Tensor:
        """[n] float64 the value of each state: its actual score difference once finished."""
        done = self.game.is_terminal(state)
        out = score_difference(self.game, state)
        live = (~done).nonzero().squeeze(1)
        if live.numel():
            out[live] = self.value_fn(index_state(state, live)).to(torch.float64).reshape(-1)
        return out

    def _chance(self, state, actions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Where the rows' actions involve chance: ``rows [m]``, the value after the action averaged
        over chance ``[m]``, and the value after the outcome the state will actually bring ``[m]``.

        From the value function's ``chance_values`` where it has one and the game has
        ``chance_kinds`` (one evaluation of the state before chance gives the value after each kind
        of outcome), else by stepping the state to each outcome and valuing each."""
        device = actions.device
        empty = torch.zeros(0, dtype=torch.float64, device=device)
        if self.chance is None or not actions.shape[0]:
            return torch.zeros(0, dtype=torch.long, device=device), empty, empty
        if self.kinds is not None:
            rows, probs, taken = self.kinds(state, actions)
            if not rows.numel():
                return rows, empty, empty
            values = cast(Any, self.value_fn).chance_values(index_state(state, rows)).to(torch.float64)
            return rows, (probs * values).sum(1), values.gather(1, taken[:, None]).squeeze(1)
        source, outcomes, weights = self.chance(state, actions, self.chance_samples, self.generator)
        if not source.numel():
            return source, empty, empty
        mean = torch.zeros(actions.shape[0], dtype=torch.float64, device=device)
        mean.index_add_(0, source, weights * self.values(outcomes))
        rows = torch.unique(source)
        taken = self.values(self.game.step(index_state(state, rows), actions[rows]))
        return rows, mean[rows], taken

    def _after_values(self, state, actions: torch.Tensor) -> torch.Tensor:
        """[n] Q of each row's action: the value after it, averaged over chance where it involves chance."""
        q = torch.zeros(actions.shape[0], dtype=torch.float64, device=actions.device)
        rows, mean, _ = self._chance(state, actions)
        q[rows] = mean
        fixed = torch.ones(actions.shape[0], dtype=torch.bool, device=actions.device).index_fill_(0, rows, False)
        fixed = fixed.nonzero().squeeze(1)
        if fixed.numel():
            q[fixed] = self.values(self.game.step(index_state(state, fixed), actions[fixed]))
        return q

    def before_step(
        self,
        state,
        actions: torch.Tensor,
        live: torch.Tensor,
        probs: torch.Tensor | None = None,
        known: torch.Tensor | None = None,
    ) -> None:
        """Note this step's corrections: ``actions [n]`` to be applied to ``state``, ``live [n]``
        the rows still playing; ``probs [n, A]`` the distributions the movers of the ``known [n]``
        rows sampled their actions from."""
        start = time.perf_counter()
        n = actions.shape[0]
        device = actions.device
        known = torch.zeros(n, dtype=torch.bool, device=device) if known is None else known & live
        chance = torch.zeros(n, dtype=torch.float64, device=device)
        decision = torch.zeros(n, dtype=torch.float64, device=device)
        # chance (finished rows meet none): the value after the outcome drawn minus its mean over chance
        rows, mean, taken = self._chance(state, actions)
        chance[rows] = taken - mean
        # decisions of known movers: Q(move taken) - sum_a pi(a) Q(a), over every legal move
        rows = known.nonzero().squeeze(1)
        if rows.numel():
            p = cast(torch.Tensor, probs)[rows].to(torch.float64)
            pair_row, pair_action = (p > 0).nonzero(as_tuple=True)
            q = self._after_values(index_state(state, rows[pair_row]), pair_action)
            taken = pair_action == actions[rows[pair_row]]
            decision.index_add_(0, rows[pair_row], -p[pair_row, pair_action] * q)
            decision.index_add_(0, rows[pair_row[taken]], q[taken])
        self._pending = (chance, decision)
        self.seconds += time.perf_counter() - start

    def after_step(self, state) -> None:
        """Add this step's corrections (``state``: the state ``before_step`` saw, stepped; every
        value was known before the step, since the full state holds what chance will bring)."""
        chance, decision = cast(tuple[torch.Tensor, torch.Tensor], self._pending)
        self._pending = None
        self.chance_total += chance
        self.decision_total += decision
