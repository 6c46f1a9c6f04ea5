"""Batched head-to-head matches between two sides (bots or policy callables).

All games of a match advance in lockstep: at each step the games where A is to move are decided
by one call to A, those where B is to move by one call to B. Deals are paired: each deal is
played twice, once with A in seat 0 and once with A in seat 1, so that luck of the deal cancels;
the confidence interval is computed over deal pairs because the two games of a pair are
correlated.

A *side* is either a bot (an object with ``act(obs, mask, generator) -> actions``) or a policy
callable ``policy(obs, mask) -> probs [n, A]``, from which actions are sampled (wrap a policy to
make it greedy if that is wanted). A side whose ``act`` samples from known probabilities says so
with ``sampling_probabilities(obs, mask) -> probs [n, A]`` (None when it does not sample); the
arena then samples from them itself, the same draw ``act`` would make.

A side that ``sees_state`` (a research bound: a search whose worlds keep the opponent's real hand,
``search[oracle=true]``) is also given the true states of the games it decides.

With a ``value_fn`` (evaluate/variance.py), every game's outcome is also corrected for the luck it
saw (AIVAT-style): the match reports the plain and the corrected mean with their CIs, and the
variance ratio between them. Both estimate the same expectation; the corrected one needs fewer games.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, cast

import torch

from ..games.base import (
    capability,
    clone_state,
    concat_states,
    has_capability,
    index_state,
    legal_probabilities,
    sample_from_probs,
)
from .variance import LuckCorrection, ValueFn, cross_fitted, match_luck, seat_scores

Side = Any | Callable[[torch.Tensor, torch.Tensor], torch.Tensor]

RECORDED_FIGURES = ("win_rate", "mean_score_diff", "score_diff_ci95", "mean_game_length")
# the habit that farms a heuristic (stalling by drawing discards that fit none of the drawer's
# started expeditions: Lost Cities' move_diagnostics), per game of side A and of side B, read
# beside every strength figure
FARMING_FIGURES = ("useless_pile_draws_a", "useless_pile_draws_b")
# with a value function: the luck-corrected estimate beside the plain one
CORRECTED_FIGURES = ("corrected_score_diff", "corrected_ci95", "variance_ratio")


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
    # with a value function (None without): the luck-corrected mean score difference and its 95% CI
    # half-width over deal pairs, the variance ratio (plain / corrected, over deal pairs), and the
    # seconds the corrections took
    corrected_score_diff: float | None = None
    corrected_ci95: float | None = None
    variance_ratio: float | None = None
    correction_seconds: float | None = None
    correction_weights: dict | None = None  # the cross-fitted weight of each kind of correction, per half

    @property
    def best_score_diff(self) -> tuple[float, float]:
        """(mean, 95% CI half-width) of the score difference: the corrected estimate where there
        is one (the same expectation with less variance), else the plain one."""
        if self.corrected_score_diff is not None:
            return self.corrected_score_diff, cast(float, self.corrected_ci95)
        return self.mean_score_diff, self.score_diff_ci95

    def games_for_ci(self, target_ci95: float, corrected: bool = True) -> int:
        """Paired games (even) the estimate needs for a 95% CI half-width of ``target_ci95``, at
        the variance this match measured (corrected where there is one, unless ``corrected`` is False)."""
        ci = self.corrected_ci95 if corrected and self.corrected_ci95 is not None else self.score_diff_ci95
        pairs = self.games // 2 * (ci / target_ci95) ** 2
        return 2 * max(1, math.ceil(pairs))

    def figures(self) -> dict[str, float]:
        """What an evaluation records of a match (train and improve metrics): the result, the
        game length and, where the game has them, the farming diagnostics (FARMING_FIGURES)."""
        out = {k: float(getattr(self, k)) for k in RECORDED_FIGURES}
        out.update({k: float(self.diagnostics[k]) for k in FARMING_FIGURES if k in self.diagnostics})
        out.update({k: float(getattr(self, k)) for k in CORRECTED_FIGURES if getattr(self, k) is not None})
        return out

    def to_dict(self) -> dict:
        d = {k: v for k, v in asdict(self).items() if v is not None}
        diagnostics = d.pop("diagnostics")
        d.update(diagnostics)
        return d


def sampling_probabilities(side: Side, obs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor | None:
    """The probabilities ``side`` samples its moves from (``[n, A]``), or None where they are not
    known (a bot, a greedy player, a search)."""
    if not hasattr(side, "act"):
        return legal_probabilities(side(obs, mask), mask)
    known = getattr(side, "sampling_probabilities", None)
    return known(obs, mask) if known is not None else None


def needs_history(side: Side) -> bool:
    """Whether ``side`` plays from each game's public action history as well as its observation
    (``needs_history``: a search whose belief weighs the opponent's past moves): it is then asked
    ``act(obs, mask, generator, history=...)``."""
    return bool(getattr(side, "needs_history", False))


def sees_state(side: Side) -> bool:
    """Whether ``side`` reads the match's true state (``sees_state``: a research bound such as a
    search whose worlds keep the opponent's real hand): it is then asked ``act(obs, mask,
    generator, state=...)`` with the true states of the rows it decides."""
    return bool(getattr(side, "sees_state", False))


class ActionHistory:
    """Each game's actions so far in order, -1 after the last (``actions [games, max_game_length]``):
    the public action history a match keeps for a side that ``needs_history`` and for the exploiter."""

    def __init__(self, game, games: int, device: torch.device):
        self.actions = torch.full((games, int(game.max_game_length)), -1, dtype=torch.long, device=device)
        self.moves = torch.zeros(games, dtype=torch.long, device=device)

    def record(self, actions: torch.Tensor, live: torch.Tensor) -> None:
        """The step's ``actions [games]`` of the games still ``live``."""
        rows = live.nonzero().squeeze(1)
        self.actions[rows, self.moves[rows].clamp(max=self.actions.shape[1] - 1)] = actions[rows].long()
        self.moves.add_(live.long())


def decide_side(
    side: Side,
    obs: torch.Tensor,
    mask: torch.Tensor,
    generator: torch.Generator,
    history: torch.Tensor | None = None,
    state=None,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """The side's actions and, where it samples from known probabilities, those probabilities;
    ``history``: the rows' public action histories, given to a side that ``needs_history``;
    ``state``: the rows' true states, given to a side that ``sees_state``."""
    probs = sampling_probabilities(side, obs, mask)
    if probs is None:
        if sees_state(side):
            if state is None:
                raise ValueError(
                    f"{getattr(side, 'name', side)} reads the match's true state, and this match does not pass it"
                )
            extra = {"history": history} if needs_history(side) else {}
            return cast(Any, side).act(obs, mask, generator, state=state, **extra), None
        if needs_history(side):
            if history is None:
                raise ValueError(
                    f"{getattr(side, 'name', side)} plays from each game's action history, and none was kept"
                )
            return cast(Any, side).act(obs, mask, generator, history=history), None
        return cast(Any, side).act(obs, mask, generator), None
    return sample_from_probs(probs, generator), probs


def play_out(
    game,
    state,
    decide: Callable[..., torch.Tensor],
    on_step: Callable[[int, int], None] | None = None,
    luck: LuckCorrection | None = None,
    known_probs: Callable[[], tuple[torch.Tensor, torch.Tensor]] | None = None,
    with_state: bool = False,
):
    """Step a batch of games to their end in lockstep and return the final state. At each step
    ``decide(obs, mask, live, player)`` gives every row's action (rows not ``live`` are finished:
    any action; their ``player`` is 0), ``obs`` being each row's mover's observation; with
    ``with_state``, ``decide(obs, mask, live, player, state)`` with the step's true state too.
    ``on_step(step, games still running)`` is called before each step (progress lines).
    ``luck`` accumulates each step's corrections; ``known_probs()`` gives, after each ``decide``,
    the probabilities ``[n, A]`` its sampling rows drew from and those rows ``[n]``."""
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
        obs = game.observe(state, player)
        actions = decide(obs, mask, live, player, state) if with_state else decide(obs, mask, live, player)
        if luck is None:
            state = game.step(state, actions)
            continue
        probs, known = known_probs() if known_probs is not None else (None, None)
        luck.before_step(state, actions, live, probs, known)
        state = game.step(state, actions)
        luck.after_step(state)
    raise RuntimeError(f"{game.name}: games still running after max_game_length={max_steps} decisions")


@dataclass
class PairedGames:
    """What one lockstep batch of paired games leaves for the estimate: per deal pair, A's mean
    score difference, points and (with a value function) corrections by kind; per game sums."""

    pair_diff: torch.Tensor  # [p]
    pair_points: torch.Tensor  # [p]
    pair_corrections: torch.Tensor | None  # [p, 2] chance, decisions (A's frame)
    games: int
    wins: int
    draws: int
    score_a: float  # sums over the games
    score_b: float
    decisions: float
    cut_off: int
    diagnostics: dict  # per-game means
    correction_seconds: float


def play_match(
    game,
    policy_a: Side,
    policy_b: Side,
    games: int,
    seed: int = 0,
    device: str | torch.device = "cpu",
    on_step: Callable[[int, int], None] | None = None,
    value_fn: ValueFn | None = None,
    chance_samples: int | None = None,
    target_ci95: float | None = None,
    batch_games: int = 2000,
) -> MatchResult:
    """Play ``games`` games (an even number: ``games / 2`` deals, each in both seat orders) of A
    against B and return the result from A's point of view (``on_step``: see ``play_out``).
    With ``value_fn`` (evaluate/variance.py) the result carries the luck-corrected estimate too
    (``chance_samples``: the chance outcomes each correction averages over, default all).

    With ``target_ci95``, ``games`` is the most to play: batches of ``batch_games`` (new deals
    each) are played until the 95% CI half-width of the score difference (the corrected one where
    there is a value function) is at most ``target_ci95``."""
    if games < 2 or games % 2 != 0:
        raise ValueError(f"games must be a positive even number (paired deals), got {games}")
    if target_ci95 is not None and not target_ci95 > 0:
        raise ValueError(f"target_ci95 must be positive, got {target_ci95}")
    if batch_games < 2 or batch_games % 2:
        raise ValueError(f"batch_games must be a positive even number, got {batch_games}")
    device = torch.device(device)
    if target_ci95 is None:
        return _result([play_pairs(game, policy_a, policy_b, games, seed, device, on_step, value_fn, chance_samples)])
    batches: list[PairedGames] = []
    played = 0
    while played < games:
        n = min(batch_games, games - played)
        # batch k's deals come from seed + k * a large prime: batch 0 is the single-batch match's
        batches.append(
            play_pairs(
                game, policy_a, policy_b, n, seed + 1_000_003 * len(batches), device, on_step, value_fn, chance_samples
            )
        )
        played += n
        result = _result(batches)
        if result.best_score_diff[1] <= target_ci95:
            break
    return result


def paired_start(game, games: int, seed: int, device: torch.device, deals: torch.Tensor | None = None):
    """The start of ``games`` paired games (even): ``games / 2`` deals from ``seed`` (or the given
    ``deals [games / 2, ...]`` of a game with ``init_from_deal``), rows ``i`` and ``games / 2 + i``
    sharing one; (state, the seat [games] of side A: 0 then 1)."""
    pairs = games // 2
    if deals is None:
        first = game.init(pairs, generator=torch.Generator(device="cpu").manual_seed(seed), device=device)
    elif deals.shape[0] != pairs:
        raise ValueError(f"{games} paired games need {pairs} deals, got {deals.shape[0]}")
    else:
        first = game.init_from_deal(deals, device=device)
    state = concat_states([first, clone_state(first)])
    return state, torch.cat([torch.zeros(pairs, dtype=torch.long), torch.ones(pairs, dtype=torch.long)]).to(device)


def play_pairs(
    game,
    policy_a: Side,
    policy_b: Side,
    games: int,
    seed: int,
    device: torch.device,
    on_step,
    value_fn: ValueFn | None,
    chance_samples: int | None,
    deals: torch.Tensor | None = None,
) -> PairedGames:
    """One lockstep batch of ``games`` paired games (dealt from ``seed``, or the given ``deals``:
    ``paired_start``) and what each deal pair left: ``play_match`` combines batches of these into
    its estimate; a study of the estimate itself (scripts/experiments/luck_floor.py) reads the pairs."""
    pairs = games // 2
    state, seat_a = paired_start(game, games, seed, device, deals)
    action_gen = torch.Generator(device=device).manual_seed(seed + 1)
    decisions = torch.zeros(games, dtype=torch.long, device=device)
    luck = match_luck(game, value_fn, games, device, chance_samples, seed)
    step_probs = torch.zeros(games, game.num_actions, device=device)
    step_known = torch.zeros(games, dtype=torch.bool, device=device)
    move_diagnostics = capability(game, "move_diagnostics") if has_capability(game, "move_diagnostics") else None
    move_totals: dict[str, torch.Tensor] = {}  # name -> [games, 2] sums for side a, side b
    history = ActionHistory(game, games, device) if needs_history(policy_a) or needs_history(policy_b) else None
    with_state = sees_state(policy_a) or sees_state(policy_b)

    def decide(obs, mask, live, player, state=None):
        actions = torch.zeros(games, dtype=torch.long, device=device)
        step_known.zero_()
        a_moves = live & (player == seat_a)
        for side, rows in ((policy_a, a_moves), (policy_b, live & ~a_moves)):
            idx = rows.nonzero().squeeze(1)
            if idx.numel():
                chosen, probs = decide_side(
                    side,
                    obs[idx],
                    mask[idx],
                    action_gen,
                    history.actions[idx] if history is not None else None,
                    index_state(state, idx) if with_state and sees_state(side) else None,
                )
                actions[idx] = chosen.to(device)
                if probs is not None and luck is not None:
                    step_probs[idx] = probs.to(device=device, dtype=step_probs.dtype)
                    step_known.index_fill_(0, idx, True)  # not [idx] = True: a host copy on CUDA
        decisions.add_(live.long())
        if history is not None:
            history.record(actions, live)
        if move_diagnostics is not None:
            for name, value in move_diagnostics(obs, actions).items():
                totals = move_totals.setdefault(name, torch.zeros(games, 2, dtype=torch.float64, device=device))
                value = value.double() * live
                totals[:, 0] += value * a_moves
                totals[:, 1] += value * ~a_moves
        return actions

    state = play_out(game, state, decide, on_step, luck, lambda: (step_probs, step_known), with_state=with_state)

    rows = torch.arange(games, device=device)
    scores = seat_scores(game, state)
    score_a = scores[rows, seat_a]
    score_b = scores[rows, 1 - seat_a]
    diff = score_a - score_b
    points = (diff > 0).double() + 0.5 * (diff == 0).double()  # 1 win, 1/2 draw
    corrections = None
    if luck is not None:
        sign = 1.0 - 2.0 * seat_a.double()  # seat 0's frame to A's
        kinds = torch.stack([sign * luck.chance_total, sign * luck.decision_total], dim=1)
        corrections = ((kinds[:pairs] + kinds[pairs:]) / 2).cpu()
    diagnostics = (
        capability(game, "match_diagnostics")(state, seat_a) if has_capability(game, "match_diagnostics") else {}
    )
    for name, totals in move_totals.items():  # per game
        diagnostics[f"{name}_a"], diagnostics[f"{name}_b"] = totals.mean(dim=0).tolist()
    return PairedGames(
        pair_diff=((diff[:pairs] + diff[pairs:]) / 2).cpu(),
        pair_points=((points[:pairs] + points[pairs:]) / 2).cpu(),
        pair_corrections=corrections,
        games=games,
        wins=int((diff > 0).sum()),
        draws=int((diff == 0).sum()),
        score_a=score_a.sum().item(),
        score_b=score_b.sum().item(),
        decisions=decisions.double().sum().item(),
        cut_off=cut_off_games(game, state),
        diagnostics=diagnostics,
        correction_seconds=luck.seconds if luck is not None else 0.0,
    )


def _result(batches: list[PairedGames]) -> MatchResult:
    """The match result of the batches' games together (the corrections cross-fitted over all)."""
    games = sum(b.games for b in batches)
    wins, draws = sum(b.wins for b in batches), sum(b.draws for b in batches)
    pair_diff = torch.cat([b.pair_diff for b in batches])
    corrected: dict[str, Any] = {}
    if batches[0].pair_corrections is not None:
        pair_fixed, weights = cross_fitted(
            pair_diff, torch.cat([cast(torch.Tensor, b.pair_corrections) for b in batches])
        )
        corrected = dict(
            corrected_score_diff=pair_fixed.mean().item(),
            corrected_ci95=ci95_of_pairs(pair_fixed),
            variance_ratio=(pair_diff.var() / pair_fixed.var().clamp(min=1e-300)).item()
            if pair_diff.numel() > 1
            else float("nan"),
            correction_seconds=sum(b.correction_seconds for b in batches),
            correction_weights={"chance": weights[:, 0].tolist(), "decisions": weights[:, 1].tolist()},
        )
    diagnostics = {k: sum(b.diagnostics[k] * b.games for b in batches) / games for k in batches[0].diagnostics}
    return MatchResult(
        games=games,
        wins=wins,
        draws=draws,
        losses=games - wins - draws,
        win_rate=(wins + 0.5 * draws) / games,
        mean_score_diff=pair_diff.mean().item(),
        score_diff_ci95=ci95_of_pairs(pair_diff),
        mean_score_a=sum(b.score_a for b in batches) / games,
        mean_score_b=sum(b.score_b for b in batches) / games,
        mean_game_length=sum(b.decisions for b in batches) / games,
        cut_off_games=sum(b.cut_off for b in batches),
        win_rate_ci95=ci95_of_pairs(torch.cat([b.pair_points for b in batches])),
        diagnostics=diagnostics,
        **corrected,
    )


def cut_off_games(game, state) -> int:
    """How many finished games of ``state`` the ply cap ended rather than the rules (0 where the
    game has no cap)."""
    return int(game.cut_off(state).sum()) if has_capability(game, "cut_off") else 0


def ci95_of_pairs(pair_means: torch.Tensor) -> float:
    """Half-width of the 95% CI of the mean of per-deal-pair means."""
    pairs = pair_means.shape[0]
    return 1.96 * pair_means.std(unbiased=True).item() / math.sqrt(pairs) if pairs > 1 else float("nan")
