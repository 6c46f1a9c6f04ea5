"""Batched head-to-head matches between two sides (bots or policy callables).

All games of a match advance in lockstep: at each step the games where A is to move are decided
by one call to A, those where B is to move by one call to B. Deals are paired: each deal is
played twice, once with A in seat 0 and once with A in seat 1, so that luck of the deal cancels;
the confidence interval is computed over deal pairs because the two games of a pair are
correlated.

A *side* is either a bot (an object with ``act(obs, mask, generator) -> actions``) or a policy
callable ``policy(obs, mask) -> probs [n, A]``, from which actions are sampled (wrap a policy to
make it greedy if that is wanted).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Union

import torch

from ..games.base import capability, clone_state, concat_states, has_capability, sample_from_probs

Side = Union[Any, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]]

RECORDED_FIGURES = ("win_rate", "mean_score_diff", "score_diff_ci95", "mean_game_length")
# the habit that farms a heuristic (stalling by drawing discards that fit none of the drawer's
# started expeditions: Lost Cities' move_diagnostics), per game of side A and of side B, read
# beside every strength figure
FARMING_FIGURES = ("useless_pile_draws_a", "useless_pile_draws_b")


@dataclass
class MatchResult:
    """Outcome of a match, from A's point of view (score differences are A minus B)."""

    games: int
    wins: int
    draws: int
    losses: int
    win_rate: float  # (wins + draws / 2) / games
    mean_score_diff: float  # points for Lost Cities, chips for poker
    score_diff_ci95: float  # half-width of the 95% CI of mean_score_diff, over deal pairs
    mean_score_a: float
    mean_score_b: float
    mean_game_length: float  # decisions per game
    cut_off_games: int  # games ended by the ply cap rather than by the rules
    win_rate_ci95: float = float("nan")  # half-width of the 95% CI of win_rate, over deal pairs
    diagnostics: dict = field(default_factory=dict)  # game-specific (Lost Cities: expeditions, pile draws)

    def figures(self) -> dict[str, float]:
        """What an evaluation records of a match (train and improve metrics): the result, the
        game length and, where the game has them, the farming diagnostics (FARMING_FIGURES)."""
        out = {k: float(getattr(self, k)) for k in RECORDED_FIGURES}
        out.update({k: float(self.diagnostics[k]) for k in FARMING_FIGURES if k in self.diagnostics})
        return out

    def to_dict(self) -> dict:
        d = asdict(self)
        diagnostics = d.pop("diagnostics")
        d.update(diagnostics)
        return d


def _decide(side: Side, obs: torch.Tensor, mask: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    if hasattr(side, "act"):
        return side.act(obs, mask, generator)
    probs = side(obs, mask)
    # A policy must never put weight on an illegal action; masking here keeps a sloppy policy
    # from breaking the game, while an all-zero legal row falls back to uniform.
    probs = probs.float() * mask
    probs = torch.where(probs.sum(dim=1, keepdim=True) > 0, probs, mask.float())
    return sample_from_probs(probs, generator)


def _scores(game, state) -> torch.Tensor:
    """Per-seat game scores ``[n, 2]``: points where the game has them, else utilities."""
    if has_capability(game, "scores"):
        return game.scores(state).to(torch.float64)
    return game.returns(state).to(torch.float64)


def play_out(game, state, decide: Callable[[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor],
             on_step: Callable[[int, int], None] | None = None):
    """Step a batch of games to their end in lockstep and return the final state. At each step
    ``decide(obs, mask, live, player)`` gives every row's action (rows not ``live`` are finished:
    any action; their ``player`` is 0), ``obs`` being each row's mover's observation.
    ``on_step(step, games still running)`` is called before each step (progress lines)."""
    max_steps = int(getattr(game, "max_game_length", 10**6))
    for step in range(max_steps + 1):
        done = game.is_terminal(state)
        if bool(done.all()):
            return state
        live = ~done
        if on_step is not None:
            on_step(step, int(live.sum()))
        # Some games report no seat (-1) for finished rows; observe them as seat 0 (unused).
        player = torch.where(live, game.current_player(state), 0)
        mask = game.legal_mask(state)
        state = game.step(state, decide(game.observe(state, player), mask, live, player))
    raise RuntimeError(f"{game.name}: games still running after max_game_length={max_steps} decisions")


def play_match(
    game,
    policy_a: Side,
    policy_b: Side,
    games: int,
    seed: int = 0,
    device: str | torch.device = "cpu",
    on_step: Callable[[int, int], None] | None = None,
) -> MatchResult:
    """Play ``games`` games (an even number: ``games / 2`` deals, each in both seat orders) of A
    against B and return the result from A's point of view (``on_step``: see ``play_out``)."""
    if games < 2 or games % 2 != 0:
        raise ValueError(f"games must be a positive even number (paired deals), got {games}")
    device = torch.device(device)
    pairs = games // 2
    deal_gen = torch.Generator(device="cpu").manual_seed(seed)
    action_gen = torch.Generator(device=device).manual_seed(seed + 1)

    first = game.init(pairs, generator=deal_gen, device=device)
    state = concat_states([first, clone_state(first)])  # rows i and pairs + i share a deal
    seat_a = torch.cat([torch.zeros(pairs, dtype=torch.long), torch.ones(pairs, dtype=torch.long)]).to(device)

    decisions = torch.zeros(games, dtype=torch.long, device=device)
    move_diagnostics = capability(game, "move_diagnostics") if has_capability(game, "move_diagnostics") else None
    move_totals: dict[str, torch.Tensor] = {}  # name -> [games, 2] sums for side a, side b

    def decide(obs, mask, live, player):
        actions = torch.zeros(games, dtype=torch.long, device=device)
        a_moves = live & (player == seat_a)
        for side, rows in ((policy_a, a_moves), (policy_b, live & ~a_moves)):
            idx = rows.nonzero().squeeze(1)
            if idx.numel():
                actions[idx] = _decide(side, obs[idx], mask[idx], action_gen).to(device)
        decisions.add_(live.long())
        if move_diagnostics is not None:
            for name, value in move_diagnostics(obs, actions).items():
                totals = move_totals.setdefault(name, torch.zeros(games, 2, dtype=torch.float64, device=device))
                value = value.double() * live
                totals[:, 0] += value * a_moves
                totals[:, 1] += value * ~a_moves
        return actions

    state = play_out(game, state, decide, on_step)

    rows = torch.arange(games, device=device)
    scores = _scores(game, state)
    score_a = scores[rows, seat_a]
    score_b = scores[rows, 1 - seat_a]
    diff = score_a - score_b
    pair_diff = (diff[:pairs] + diff[pairs:]) / 2
    ci95 = 1.96 * pair_diff.std(unbiased=True).item() / math.sqrt(pairs) if pairs > 1 else float("nan")
    points = (diff > 0).double() + 0.5 * (diff == 0).double()  # 1 win, 1/2 draw
    pair_points = (points[:pairs] + points[pairs:]) / 2
    win_ci95 = 1.96 * pair_points.std(unbiased=True).item() / math.sqrt(pairs) if pairs > 1 else float("nan")
    wins = int((diff > 0).sum())
    draws = int((diff == 0).sum())
    cut_off = int(game.cut_off(state).sum()) if has_capability(game, "cut_off") else 0

    diagnostics = capability(game, "match_diagnostics")(state, seat_a) if has_capability(game, "match_diagnostics") else {}
    for name, totals in move_totals.items():  # per game
        diagnostics[f"{name}_a"], diagnostics[f"{name}_b"] = totals.mean(dim=0).tolist()

    return MatchResult(
        games=games,
        wins=wins,
        draws=draws,
        losses=games - wins - draws,
        win_rate=(wins + 0.5 * draws) / games,
        mean_score_diff=diff.mean().item(),
        score_diff_ci95=ci95,
        mean_score_a=score_a.mean().item(),
        mean_score_b=score_b.mean().item(),
        mean_game_length=decisions.double().mean().item(),
        cut_off_games=cut_off,
        win_rate_ci95=win_ci95,
        diagnostics=diagnostics,
    )
