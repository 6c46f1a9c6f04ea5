"""Determinized rollout search: a policy-improvement operator over any base policy.

For each decision: the base policy's top-k legal actions are the candidates; D determinizations
of the decider's observation (the hidden cards dealt uniformly; with ``belief=learned`` the
opponent's unknown cards weighed by a network of what the decider sees; or, with a particle
``belief``, drawn from the posterior given the opponent's past moves: belief.py's particles, one
a determinization, resampled to equal weights) are shared by every candidate,
and so are the random numbers of the rollouts (common random numbers: deck luck and rollout luck
cancel between candidates); each candidate is rolled out to the end of the game by the rollout
policy playing both seats (or, with ``rollout_plies``, for that many decisions, then valued by a
value function of the full state: a determinization is one); the choice is the candidate with
the best mean utility plus ``prior_weight * log pi(a)``, among the moves allowed by the paired
test (``min_z``: a move other than the base's greedy move must beat it by ``min_z`` standard
errors of the paired difference).

With ``oracle`` the determinizations are the match's TRUE state with only the undrawn deck
reshuffled (the game's ``shuffle_deck``; the caller passes the state: ``decide(..., state=)``), a
research bound that sees the opponent's hand, never a fair player (issue 66's ceiling; plan.py's
``PlanSearch`` plans past one decision in the same worlds).

Shape: all deciding games x k x (a round of) determinizations are one lockstep batch; every
rollout step is one engine step and one forward per network over the games still running (the
finished ones are compacted away). Rounds of determinizations fit the batch into ``max_batch``
rollouts. Under ``time_limit_s`` the search is anytime: a first round of
``min_determinizations`` always runs, then rounds that double what is done while the time of the
rounds so far predicts the next one ends within the budget (a round costs at most in proportion
to its size: a rollout step's fixed cost is shared by its rows), so a call answers in about its
budget on a loaded machine too, with fewer determinizations (``SearchDecision.determinizations``,
``SearchStats.determinizations``).

A base is duck-typed (this layer knows no players): an object with ``policy(obs, mask) ->
probs`` (a network: ranking, prior and rollouts from its probabilities), or a bot with
``act(obs, mask, generator)`` (ranking: its own move first, then ``action_scores`` where the bot
has them; no prior term).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, fields

import torch

from ..devices import fast_bfloat16
from ..games.base import capability, concat_states, has_capability, index_state, sample_from_probs
from ..host_memory import keep_freed_memory
from ..host_syncs import to_host
from .belief import DealPosterior
from .config import SearchConfig

_LOG_FLOOR = 1e-6  # log pi of a candidate with (almost) no base probability


def paired_choice(
    mean: torch.Tensor,
    diff: torch.Tensor,
    diff_se: torch.Tensor,
    valid: torch.Tensor,
    log_prior: torch.Tensor,
    prior_weight: float,
    min_z: float,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The search's rule over ``[n, k]`` candidates (column 0: the base's own move): the best
    ``mean + prior_weight * log_prior`` among the base move and the moves whose mean paired
    difference to it, ``diff``, is above ``min_z`` standard errors ``diff_se``. (score [n, k],
    -inf where not allowed; the column picked [n])."""
    score = mean.float() + prior_weight * log_prior
    allowed = valid.clone()
    allowed[:, 1:] &= diff[:, 1:] > min_z * diff_se[:, 1:]
    score = score.masked_fill(~allowed, -torch.inf)
    return score, score.argmax(dim=1)


@dataclass
class SearchDecision:
    """What the search found for a batch of n decisions (k candidates each; unused candidate
    slots, where fewer than k actions are legal, hold action -1 and NaN values)."""

    candidates: torch.Tensor  # [n, k] actions, the base's ranking (column 0 = its greedy move)
    mean: torch.Tensor  # [n, k] mean rollout utility for the decider
    ci95: torch.Tensor  # [n, k] half-width of the 95% CI of the mean
    diff_vs_base: torch.Tensor  # [n, k] mean paired difference to the base move
    diff_ci95: torch.Tensor  # [n, k] half-width of its 95% CI
    prior: torch.Tensor  # [n, k] base probability (1 for a bot's own move, 0 for the others)
    score: torch.Tensor  # [n, k] the choice criterion (-inf: not allowed)
    chosen: torch.Tensor  # [n] the actions played
    determinizations: int  # per decision (fewer than configured when the time limit stopped it)
    seconds: float

    def rows(self, i: int, action_name=str) -> list[dict]:
        """The candidates of decision ``i`` as dicts, best score first (for display)."""
        out = []
        for j in range(self.candidates.shape[1]):
            a = int(self.candidates[i, j])
            if a < 0:
                continue
            out.append(
                {
                    "action": a,
                    "name": action_name(a),
                    "mean": float(self.mean[i, j]),
                    "ci95": float(self.ci95[i, j]),
                    "diff_vs_base": float(self.diff_vs_base[i, j]),
                    "diff_ci95": float(self.diff_ci95[i, j]),
                    "prior": float(self.prior[i, j]),
                    "score": float(self.score[i, j]),
                    "chosen": a == int(self.chosen[i]),
                    "base": j == 0,
                }
            )
        return sorted(out, key=lambda r: -r["score"] if math.isfinite(r["score"]) else math.inf)


@dataclass
class SearchStats:
    """Running totals over the decisions searched (reset with ``reset``)."""

    decisions: int = 0  # decisions searched
    calls: int = 0  # batches of decisions (one per act call)
    rollouts: int = 0
    rollout_decisions: int = 0  # engine decisions made inside rollouts
    capped_rollouts: int = 0  # rollouts ended by the ply cap with cards left in the deck
    valued_rollouts: int = 0  # rollouts cut at rollout_plies and valued by the value function
    overrides: int = 0  # decisions where the search played another move than the base's greedy one
    determinizations: int = 0  # summed over the decisions rolled out (fewer than configured under a time limit)
    belief_ess: float = 0.0  # the belief's effective sample size, summed over the decisions rolled out
    belief_fallbacks: int = 0  # decisions whose belief found no deal consistent with the opponent's moves
    beyond_belief_horizon: int = 0  # decisions past belief_horizon, their hidden cards dealt uniformly
    belief_seconds: float = 0.0
    rolled_out: int = 0  # decisions with more than one candidate (the forced ones have no determinizations)
    seconds: float = 0.0

    def reset(self) -> None:
        for field in fields(self):
            setattr(self, field.name, field.default)

    def to_dict(self) -> dict:
        return {
            "searched_decisions": self.decisions,
            "rollouts": self.rollouts,
            "rollout_decisions": self.rollout_decisions,
            "capped_rollouts": self.capped_rollouts,
            "valued_rollouts": self.valued_rollouts,
            "override_rate": self.overrides / self.decisions if self.decisions else float("nan"),
            "determinizations_per_decision": self.determinizations / self.rolled_out
            if self.rolled_out
            else float("nan"),
            "search_seconds": self.seconds,
            "belief_ess_mean": (
                self.belief_ess / (self.rolled_out - self.beyond_belief_horizon)
                if self.rolled_out > self.beyond_belief_horizon
                else float("nan")
            ),
            "belief_fallbacks": self.belief_fallbacks,
            "belief_seconds": self.belief_seconds,
            "decisions_beyond_belief_horizon": self.beyond_belief_horizon,
            "rollout_decisions_per_second": self.rollout_decisions / self.seconds if self.seconds else float("nan"),
            "seconds_per_move": self.seconds / self.decisions if self.decisions else float("nan"),
            "seconds_per_call": self.seconds / self.calls if self.calls else float("nan"),
        }


class _Rollout:
    """How the rollout policy picks actions for a batch of rollout rows."""

    def __init__(self, base, sampled: bool, dtype: str = "float32", generator: torch.Generator | None = None):
        self.base = base
        self.sampled = sampled
        self.generator = generator  # a player without probabilities that samples draws from it
        self.has_policy = hasattr(base, "policy")
        # greedy rollouts take the argmax of the logits where the base has them (no softmax)
        self.greedy_scores = None if sampled else getattr(base, "greedy_scores", None)
        self.bfloat16 = dtype == "bfloat16"

    def act(self, obs: torch.Tensor, mask: torch.Tensor, uniform: torch.Tensor) -> torch.Tensor:
        if not self.has_policy:
            return self.base.act(obs, mask, self.generator).long()
        # the masked softmax of the policy runs in float32 under autocast (cfr.networks)
        with torch.autocast(device_type=obs.device.type, dtype=torch.bfloat16, enabled=self.bfloat16):
            if self.greedy_scores is not None:
                return self.greedy_scores(obs).float().masked_fill(~mask, -torch.inf).argmax(dim=1)
            probs = self.base.policy(obs, mask).float() * mask
        if self.sampled:
            return sample_from_probs(probs, uniform=uniform)
        return probs.masked_fill(~mask, -1.0).argmax(dim=1)


class RolloutSearch:
    """Determinized rollout search over ``base`` (see the module docstring) for a game with a
    ``determinize`` capability (games.base; Lost Cities). ``rollout_policy`` is the object that plays
    the rollouts, built from ``config.rollout_policy`` by the caller (None: the base, where that
    setting is "base"); ``leaf_value`` values the rollouts cut at ``config.rollout_plies``
    (``states -> [n]`` seat 0 minus seat 1, e.g. fitted.value_fn.FullStateValue), built from
    ``config.value_fn`` by the caller; ``opponent`` models the opponent for ``config.belief``
    (an ``OpponentModel``, built from that setting by the caller); ``hand_belief`` weighs the
    opponent's unknown cards for ``belief=learned`` (``obs -> [n, cards]`` logits, e.g.
    fitted.hand_belief.HandBelief, built from ``config.hand_belief`` by the caller)."""

    plans = False  # the one-decision search (PlanSearch plans past it)

    def __init__(
        self,
        game,
        base,
        config: SearchConfig | None = None,
        rollout_policy=None,
        device: str | torch.device = "cpu",
        leaf_value=None,
        opponent=None,
        hand_belief=None,
    ):
        self._determinize = capability(game, "determinize")  # MissingCapability (a ValueError) names the game
        self.game = game
        self.base = base
        self.config = config or SearchConfig()
        self.device = torch.device(device)
        if rollout_policy is None and self.config.rollout_policy != "base":
            # a spec is resolved in one place, where players are built (players.search_player)
            raise ValueError(
                f"search.rollout_policy={self.config.rollout_policy!r} names a player: pass the "
                "player built from it as rollout_policy (deepcfr.players.search_player does)"
            )
        if self.config.rollout_plies is not None and leaf_value is None:
            raise ValueError(
                f"search.rollout_plies={self.config.rollout_plies} values the cut rollouts with a "
                "value function: pass the one built from search.value_fn as leaf_value "
                "(deepcfr.players.search_player does)"
            )
        self.leaf_value = leaf_value if self.config.rollout_plies is not None else None
        self.belief: DealPosterior | None = None
        self.hand_belief = None
        # issue 66's bound deals its worlds from the match's true state: no belief
        self._shuffle_deck = capability(game, "shuffle_deck") if self.config.oracle else None
        belief = "none" if self.config.oracle else self.config.belief
        if belief == "learned":
            if hand_belief is None:
                raise ValueError(
                    "search.belief='learned' weighs the hidden cards by a hand belief: pass the one "
                    "built from search.hand_belief as hand_belief (deepcfr.players.search_player does)"
                )
            self.hand_belief = hand_belief
        elif belief != "none":
            if opponent is None:
                raise ValueError(
                    f"search.belief={self.config.belief!r} models the opponent: pass the OpponentModel "
                    "built from it as opponent (deepcfr.players.search_player does)"
                )
            self.belief = DealPosterior(game, opponent, retries=0)  # a collapsed row falls back (belief.py)
        # where the observation holds the action history (the poker games) the belief reads it there
        self._history = capability(game, "action_history") if has_capability(game, "action_history") else None
        self.needs_history = self.belief is not None and self._history is None
        if self.config.plan_depth is not None and not self.plans:
            raise ValueError(
                f"search.plan_depth={self.config.plan_depth} plans past one decision: that is "
                "search.plan.PlanSearch (deepcfr.players.search_player builds it)"
            )
        if self.device.type == "cpu":
            keep_freed_memory()  # a rollout step's features alone are tens of MB, allocated every step
        dtype = self.config.rollout_dtype
        if dtype == "auto":
            dtype = "bfloat16" if fast_bfloat16(self.device) else "float32"
        self.rollout_dtype = dtype  # the one used
        self.rollout = _Rollout(
            rollout_policy if rollout_policy is not None else base, self.config.rollout == "sampled", dtype
        )
        self.opponent_rollout: _Rollout | None = None  # face(): who plays the opponent's seat in the rollouts
        # The bot's move enters the prior only when a bot plays the rollouts.
        self.bot_prior = (
            self.config.bot_prior if rollout_policy is not None and not hasattr(rollout_policy, "policy") else 0.0
        )
        self.generator = torch.Generator(device=self.device).manual_seed(self.config.seed)
        self.stats = SearchStats()
        self.last: SearchDecision | None = None
        self.clock = time.perf_counter  # what the time limit reads (a test gives a clock of its own)

    def face(self, opponent) -> None:
        """The player this search plays against, where its caller knows it (improve's self-play
        against a bot, a past network or a population member): the rollouts then play the
        opponent's seat as that player plays it (its most probable move, or sampled as
        ``rollout`` says), the decider's own seat by the rollout policy. None: the rollout policy
        plays both seats (the opponent unknown)."""
        if opponent is None:
            self.opponent_rollout = None
        else:
            sampled = self.config.rollout == "sampled"  # a bot that samples (random) draws from the search's stream
            self.opponent_rollout = _Rollout(opponent, sampled, self.rollout_dtype, self.generator)

    @property
    def sees_state(self) -> bool:
        """Whether ``decide`` reads the match's true state (``oracle``): a match then passes it."""
        return self.config.oracle

    def oracle_worlds(self, state, d: int):
        """``d`` worlds of each of the ``n`` true states (row ``i * d + j``): the state itself with
        its undrawn deck reshuffled (the game's ``shuffle_deck``), what ``oracle`` searches over."""
        if state is None:
            raise ValueError(
                "search.oracle=true reads the match's true state, and this caller passes none (the "
                "arena's matches do: deepcfr arena, eval, strength)"
            )
        if self._shuffle_deck is None:
            raise ValueError("oracle_worlds: this search was built without search.oracle=true")
        return self._shuffle_deck(state, d, self.generator)

    # Candidates ------------------------------------------------------------------------------
    def rank(self, obs: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        """(ranking scores [n, A], -inf on illegal actions; base probabilities [n, A] or None)."""
        if hasattr(self.base, "policy"):
            probs = self.base.policy(obs, mask).float() * mask
            w = self.bot_prior
            if w > 0:  # mix in the rollout bot's move
                bot_move = self.rollout.base.act(obs, mask, None).long()
                probs = (1 - w) * probs + w * torch.zeros_like(probs).scatter_(1, bot_move[:, None], 1.0)
            # Ties broken towards the lower index, as the greedy policies do.
            return probs.masked_fill(~mask, -torch.inf), probs
        chosen = self.base.act(obs, mask, None).long()
        if hasattr(self.base, "action_scores"):
            scores = self.base.action_scores(obs).float()
            scores = (scores - scores.masked_fill(~mask, torch.inf).amin(dim=1, keepdim=True)).masked_fill(~mask, 0)
        else:
            scores = torch.zeros(mask.shape, device=mask.device)
        scores = scores / (1 + scores.amax(dim=1, keepdim=True))  # in [0, 1): below the bot's own move
        scores = scores.scatter(1, chosen[:, None], 2.0)
        return scores.masked_fill(~mask, -torch.inf), None

    def root_candidates(self, obs: torch.Tensor, mask: torch.Tensor):
        """The ``candidates`` best moves of each decision by the ranking: (actions [n, k], -1 where
        fewer are legal; valid [n, k]; the base's probability of each [n, k] (a bot: 1 for its own
        move, 0 for the others); whether that is a network's prior)."""
        n = obs.shape[0]
        k = min(self.config.candidates, mask.shape[1])
        ranking, probs = self.rank(obs, mask)
        top = ranking.topk(k, dim=1)
        valid = torch.isfinite(top.values)
        candidates = torch.where(valid, top.indices, -1)
        if probs is not None:
            prior = probs.gather(1, top.indices)
        else:
            prior = torch.zeros(n, k, device=self.device)
            prior[:, 0] = 1.0
        return candidates, valid, prior, probs is not None

    # The search ------------------------------------------------------------------------------
    def decide(
        self, obs: torch.Tensor, mask: torch.Tensor, history: torch.Tensor | None = None, state=None
    ) -> torch.Tensor:
        """The searched actions ``[n]`` for decisions ``obs [n, obs_size]`` (each row the observation
        of the player to move) with legal masks ``mask [n, A]``; ``self.last`` holds the details.
        ``history [n, L]``: each game's public actions so far (-1 after the last), which a belief
        needs where the observation does not hold it (``needs_history``). ``state``: the true
        states of the n games, which the oracle deals its worlds from (``sees_state``)."""
        cfg = self.config
        start = self.clock()
        obs, mask = obs.to(self.device), mask.to(self.device).bool()
        history = self.world_inputs(obs, history, state)
        n = obs.shape[0]
        candidates, valid, prior, has_prior = self.root_candidates(obs, mask)
        k = candidates.shape[1]
        single = valid.sum(dim=1) == 1  # nothing to compare: play the only move without rollouts
        todo = (~single).nonzero().squeeze(1)

        pool = hand_logits = None
        if (cfg.oracle or self.belief is not None) and todo.numel():
            pool = self.deal_worlds(obs[todo], cfg.determinizations, *self._rows_of(todo, history, state))
        if self.hand_belief is not None and todo.numel():  # one forward for the call's decisions
            hand_logits = self.hand_belief(obs[todo])
        sums = torch.zeros(n, k, dtype=torch.float64, device=self.device)
        squares = torch.zeros_like(sums)
        diff_sums = torch.zeros_like(sums)
        diff_squares = torch.zeros_like(sums)
        done_d = 0
        if todo.numel():
            per_round = max(1, min(cfg.determinizations, cfg.max_batch // k))  # what max_batch holds
            chunk = max(1, cfg.max_batch // (k * per_round))
            d = per_round if cfg.time_limit_s is None else min(per_round, cfg.min_determinizations)
            while done_d < cfg.determinizations:
                d = min(d, cfg.determinizations - done_d)
                for c0 in range(0, todo.numel(), chunk):
                    rows = todo[c0 : c0 + chunk]
                    states = None
                    if pool is not None:  # determinizations done_d .. done_d + d of each row's belief
                        at = torch.arange(c0, c0 + rows.numel(), device=self.device)[:, None] * cfg.determinizations
                        states = index_state(pool, (at + done_d + torch.arange(d, device=self.device)).reshape(-1))
                    logits = hand_logits[c0 : c0 + chunk] if hand_logits is not None else None
                    values = self.candidate_values(
                        obs[rows], candidates[rows], valid[rows], d, states, hand_logits=logits
                    )  # [m, k, d]
                    base_v = values[:, :1]
                    sums[rows] += values.sum(dim=2)
                    squares[rows] += (values**2).sum(dim=2)
                    diff_sums[rows] += (values - base_v).sum(dim=2)
                    diff_squares[rows] += ((values - base_v) ** 2).sum(dim=2)
                done_d += d
                if cfg.time_limit_s is not None:
                    d = min(per_round, done_d)  # the next round: as many as all before it
                    spent = self.clock() - start
                    if spent + spent * d / done_d > cfg.time_limit_s:  # predicted past the budget: answer now
                        break
        return self._choose(
            n,
            candidates,
            valid,
            prior,
            has_prior,
            single,
            todo,
            done_d,
            (sums, squares, diff_sums, diff_squares),
            start,
        )

    def _choose(
        self,
        n: int,
        candidates: torch.Tensor,
        valid: torch.Tensor,
        prior: torch.Tensor,
        has_prior: bool,
        single: torch.Tensor,
        todo: torch.Tensor,
        done_d: int,
        moments,
        start: float,
    ) -> torch.Tensor:
        """The choice among the ``[n, k]`` candidates from the sums over ``done_d`` determinizations of
        each candidate's values, their squares, its differences to the base move (column 0) and
        their squares (``moments``), by ``paired_choice``; ``self.last`` and the stats recorded."""
        cfg = self.config
        sums, squares, diff_sums, diff_squares = moments
        D = max(done_d, 1)
        mean = sums / D
        var = (squares / D - mean**2).clamp(min=0) * D / max(D - 1, 1)
        ci95 = 1.96 * (var / D).sqrt()
        diff = diff_sums / D
        diff_var = (diff_squares / D - diff**2).clamp(min=0) * D / max(D - 1, 1)
        diff_se = (diff_var / D).sqrt()

        log_prior = (
            prior.clamp(min=_LOG_FLOOR).log() if has_prior else torch.zeros(n, candidates.shape[1], device=self.device)
        )
        score, pick = paired_choice(mean, diff, diff_se, valid, log_prior, cfg.prior_weight, cfg.min_z)
        pick = torch.where(single, 0, pick)
        chosen = candidates.gather(1, pick[:, None]).squeeze(1)

        nan = torch.tensor(float("nan"), dtype=torch.float64, device=self.device)
        seconds = self.clock() - start
        rolled = valid & ~single[:, None]  # NaN values: no such candidate, or a forced move (not rolled out)
        self.last = SearchDecision(
            candidates=candidates,
            mean=torch.where(rolled, mean, nan),
            ci95=torch.where(rolled, ci95, nan),
            diff_vs_base=torch.where(rolled, diff, nan),
            diff_ci95=torch.where(rolled, 1.96 * diff_se, nan),
            prior=prior,
            score=score,
            chosen=chosen,
            determinizations=done_d,
            seconds=seconds,
        )
        self.stats.decisions += n
        self.stats.overrides += int((pick != 0).sum())
        self.stats.rolled_out += int(todo.numel())
        self.stats.determinizations += done_d * int(todo.numel())
        self.stats.calls += 1
        self.stats.seconds += seconds
        return chosen

    def world_inputs(self, obs: torch.Tensor, history: torch.Tensor | None, state) -> torch.Tensor | None:
        """The public histories the belief reads (the caller's, or read from the observations where
        they hold them); a clear error where the worlds need what the caller did not pass."""
        if self.config.oracle and state is None:
            self.oracle_worlds(None, 1)  # the error: no true state
        return self._belief_history(obs, history) if self.belief is not None else history

    def _belief_history(self, obs: torch.Tensor, history: torch.Tensor | None) -> torch.Tensor:
        if history is not None:
            return history
        if self._history is None:
            raise ValueError(
                f"search.belief={self.config.belief!r} in {self.game.name} needs each game's public "
                "action history, which this caller does not pass (the arena's matches do: deepcfr "
                "arena, eval, strength and exploit)"
            )
        return self._history(obs)

    def _rows_of(self, rows: torch.Tensor, history: torch.Tensor | None, state) -> tuple:
        """(history, state) of the decisions ``rows`` (each None where the caller passed none)."""
        return (
            None if history is None else history.to(self.device)[rows],
            None if state is None else index_state(state, rows.to(state.turn.device)),
        )

    def deal_worlds(self, obs: torch.Tensor, d: int, history: torch.Tensor | None = None, state=None):
        """``d`` worlds of each of the ``n`` decisions ``obs`` (row ``i * d + j``), each consistent
        with what the decider saw: the oracle's (the true ``state``, the deck reshuffled), the
        belief's particles (``history``), or the hidden cards dealt weighed by the hand belief,
        else uniformly."""
        if self.config.oracle:
            return self.oracle_worlds(state, d)
        if self.belief is not None:
            return self.belief_states(obs, self._belief_history(obs, history).to(self.device), d)
        weighed = {"hand_logits": self.hand_belief(obs)} if self.hand_belief is not None else {}
        return self._determinize(obs, d, self.generator, **weighed)

    def belief_states(self, obs: torch.Tensor, history: torch.Tensor, d: int):
        """``d`` equally weighted determinizations of each of the ``n`` observations (row ``i * d + j``)
        with public action histories ``history [n, L]``, drawn from the belief's
        ``belief_particles`` weighted particles (belief.py, ``DealPosterior.sample``'s draws)."""
        belief = self.belief
        if belief is None:
            raise ValueError("belief_states draws from the belief of search.belief, and this search has none")
        start = self.clock()
        n, horizon = obs.shape[0], self.config.belief_horizon
        within = torch.arange(n, device=self.device)
        if horizon is not None:  # past it the hidden cards are dealt uniformly (the setting's description)
            within = ((history >= 0).sum(dim=1) < horizon).nonzero().squeeze(1)
        sample = belief.sample(obs[within], history[within], self.config.belief_particles, self.generator, draws=d)
        ess, fallbacks = to_host(torch.stack([sample.ess.sum(), sample.fallback.sum().double()]))
        self.stats.belief_ess += float(ess)
        self.stats.belief_fallbacks += int(fallbacks)
        self.stats.beyond_belief_horizon += n - within.numel()
        states = sample.states
        if within.numel() < n:
            beyond = torch.ones(n, dtype=torch.bool, device=self.device)
            beyond[within] = False
            beyond = beyond.nonzero().squeeze(1)
            uniform = self._determinize(obs[beyond], d, self.generator)
            # rows i * d + j of the n observations, from the belief's rows then the uniform ones
            source = torch.empty(n, dtype=torch.long, device=self.device)
            source[within] = torch.arange(within.numel(), device=self.device)
            source[beyond] = within.numel() + torch.arange(beyond.numel(), device=self.device)
            rows = (source[:, None] * d + torch.arange(d, device=self.device)).reshape(-1)
            states = index_state(concat_states([states, uniform]), rows)
        self.stats.belief_seconds += self.clock() - start
        return states

    def candidate_values(
        self,
        obs: torch.Tensor,
        candidates: torch.Tensor,
        valid: torch.Tensor,
        d: int,
        states=None,
        hand_logits: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Rollout utilities ``[m, k, d]`` for the decider of each of ``m`` observations: every
        candidate on the same d determinizations with the same random streams (invalid
        candidates are rolled out as the base move and get the base's values). The
        determinizations are ``states`` (``[m * d]``, row ``i * d + j``: the belief's), or, where
        None, dealt here: weighed by ``hand_logits [m, cards]`` (the hand belief's), else uniformly."""
        game = self.game
        m, k = candidates.shape
        if states is None:  # [m * d], row i * d + j (only games with hidden_hand take hand_logits)
            weighed = {"hand_logits": hand_logits} if hand_logits is not None else {}
            states = self._determinize(obs, d, self.generator, **weighed)
        # [m, k, d] layout: candidate-major inside a decision, determinizations innermost.
        order = torch.arange(m * d, device=self.device).view(m, 1, d).expand(m, k, d).reshape(-1)
        states = index_state(states, order)
        actions = torch.where(valid, candidates, candidates[:, :1]).view(m, k, 1).expand(m, k, d).reshape(-1)
        stream = torch.arange(m * d, device=self.device).view(m, 1, d).expand(m, k, d).reshape(-1)
        seat = game.obs_player(obs).view(m, 1, 1).expand(m, k, d).reshape(-1)
        states = game.step(states, actions)
        utility = self._rollout(states, stream, seat, m * d)
        return utility.view(m, k, d)

    def _rollout_act(self, seat: torch.Tensor):
        """``play_rollouts``' ``act``: the rollout policy on every seat, or on the decider's (``seat``)
        with the faced opponent on the other."""
        if self.opponent_rollout is None:
            return lambda obs, mask, player, rows, uniform: self.rollout.act(obs, mask, uniform)

        def act(obs, mask, player, rows, uniform):
            theirs = player != seat[rows]
            actions = torch.empty(rows.shape[0], dtype=torch.long, device=obs.device)
            for who, rollout in ((~theirs, self.rollout), (theirs, self.opponent_rollout)):
                idx = who.nonzero().squeeze(1)
                if idx.numel():
                    actions[idx] = rollout.act(obs[idx], mask[idx], uniform[idx]).long()
            return actions

        return act

    def _rollout(self, states, stream: torch.Tensor, seat: torch.Tensor, n_streams: int) -> torch.Tensor:
        """Play ``states`` to the end with the rollout policy, or for ``rollout_plies`` decisions
        and then value them with the leaf value; utility [M] for ``seat``. Rows sharing a
        ``stream`` get the same random numbers at each step."""
        played = play_rollouts(
            self.game,
            states,
            seat,
            stream,
            n_streams,
            self.generator,
            self._rollout_act(seat),
            self.config.rollout_plies if self.leaf_value is not None else None,
            self.leaf_value,
        )
        self.stats.rollouts += stream.shape[0]
        self.stats.capped_rollouts += played.capped
        self.stats.valued_rollouts += played.valued
        self.stats.rollout_decisions += played.decisions
        return played.utility


@dataclass
class PlayedRollouts:
    """What ``play_rollouts`` returns: each rollout's utility for its seat and the counts."""

    utility: torch.Tensor  # [M] float64
    decisions: int  # engine decisions made (one per running row and step)
    valued: int  # rollouts cut at the ply limit and valued by the leaf value
    capped: int  # rollouts ended by the game's ply cap with cards left in the deck


def play_rollouts(
    game,
    states,
    seat: torch.Tensor,
    stream: torch.Tensor,
    n_streams: int,
    generator: torch.Generator,
    act,
    plies: int | None = None,
    leaf_value=None,
) -> PlayedRollouts:
    """Play ``M`` rollouts from ``states`` on: each step the rows still running move by
    ``act(obs, mask, player, rows, uniform) -> actions`` (``rows``: their indices among the M,
    ``uniform``: one random number each, the same for rows sharing a ``stream`` of ``n_streams``:
    common random numbers); a finished row's utility is its return for ``seat``; after ``plies``
    decisions (None: none) the rows still running are valued by ``leaf_value(states) -> [r]``
    (seat 0 minus seat 1, a zero-sum full-state value), from ``seat``'s side. The search's and the
    exploiter's rollouts (exploit/search.py) both run here."""
    M = stream.shape[0]
    device = stream.device
    utility = torch.zeros(M, dtype=torch.float64, device=device)
    rows = torch.arange(M, device=device)  # original index of each row still running
    decisions, valued = 0, 0
    cut_off = getattr(game, "cut_off", None)  # games without a ply cap (the small games) have none
    capped = torch.zeros((), dtype=torch.long, device=device)
    if plies is not None and leaf_value is None:
        raise ValueError(f"rollouts cut after {plies} decisions need a leaf_value to value the rest of the game")
    for ply in range(game.max_game_length + 2):
        done = game.is_terminal(states)
        if bool(done.any()):  # compact: finished rollouts leave the batch
            finished = done.nonzero().squeeze(1)
            fin = index_state(states, finished)
            where = rows[finished]
            utility[where] = game.returns(fin).gather(1, seat[where][:, None]).squeeze(1).double()
            if cut_off is not None:
                capped += cut_off(fin).sum()
            keep = (~done).nonzero().squeeze(1)
            states, rows = index_state(states, keep), rows[keep]
            if rows.numel() == 0:
                break
        if ply == plies:  # cut: the value function values the rest of the game
            value = leaf_value(states).to(device).double()
            utility[rows] = torch.where(seat[rows] == 0, value, -value)
            valued = rows.numel()
            break
        player = game.current_player(states)
        mask = game.legal_mask(states)
        obs = game.observe(states, player)
        uniform = torch.rand(n_streams, generator=generator, device=device)[stream[rows]]
        states = game.step(states, act(obs, mask, player, rows, uniform))
        decisions += rows.numel()
    else:
        raise RuntimeError(f"{game.name}: rollouts still running after {game.max_game_length} decisions")
    return PlayedRollouts(utility, decisions, valued, int(capped))
