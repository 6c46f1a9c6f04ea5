"""A belief over the target's hidden cards: the posterior given the public action history.

Proposal: the game's ``history_deals`` (below): the prior. Each proposed deal is replayed from
the start through the public action history with the engine; at every one of the target's past decisions
the target's observation gives the probability it gave the move it made. The weight of a
proposal is prior x likelihood / proposal = the product of those probabilities. So the weighted
proposals are draws from the exact Bayesian posterior (importance sampling); a deterministic
target (a bot, ``@greedy``) makes the weights 0 or 1: hard constraints.

Collapse: a row whose proposals all have zero weight (possible only when the target's moves
are near-deterministic) gets up to ``retries`` fresh rounds of proposals; if every round fails
the row falls back and counts as a fallback. The fallback weights are the posterior under the
target's sampling policy where it plays a network greedily (its moves told as softly as the
network ranks them), else the prior's. The effective sample size ``(sum w)^2 / sum w^2`` of
every row is reported.

Particles (a deterministic target, a bot or ``@greedy``, in a game with ``carry_deals`` and
``swap_deals``: Lost Cities): fresh proposals collapse there (in classic Lost Cities 86-89% of
decisions found no proposal among 48 that reproduces every move of the target), so the belief
is carried through the game instead. Each game's particles from its previous decision (the
exploiter's; found by the public history) are carried through what happened since (the target's
unseen deck draws drawn from the prior inside each particle), weighed by the target's moves,
resampled, moved by a Metropolis swap of two cards the target never played (accepted where the
swapped deal is as consistent), and their undrawn decks reshuffled (so that copies do not share
one future). Fresh proposals only where a game has no particles yet, or none of them even
replays. The weights use a robust likelihood: a contradicted move counts ``exp(-20)``, not 0, so
where every particle contradicts some move the least contradicted ones are kept (approximate, and
reported as a fallback) instead of collapsing to the prior; where some particle is consistent the
others weigh nothing beside it, so the particles of a row that does not fall back reproduce every
move of the target.

A stochastic target (a sampling network, the random bot) in such a game gets a sequential
importance resampling filter: the fresh proposals' importance weights collapse over a game's
40-odd moves of the target (in classic Lost Cities against the sampled champion the mean
effective sample size was 2.1 of 16). Each game's weighted particles from its previous decision
are carried (the target's new deck draws from the prior given its carried cards), reweighted by
the target's probabilities of its moves since then only (one batched replay that asks the target
nothing about the earlier moves; their likelihood is in the carried weights) and by the
likelihood of the cards the observer drew since (``carry_deals``' weights), resampled
(systematic) where the effective sample size falls below ``RESAMPLE_BELOW`` of the particles (or
some particle is ruled out), and moved: first an independence Metropolis-Hastings step to a
fresh proposal (accepted with probability ``min(1, w(fresh) L(fresh) / (w(deal) L(deal)))``,
``w`` the proposal's importance weight, ``deal_log_weights``: without it a target's play of a
card most particles lacked leaves a few ancestors, and on the mini rules the filter's hands were
worse than fresh proposals'), then ``MOVES`` Metropolis swaps, each accepted with probability
``min(1, L(swapped) / L(deal))``; ``L`` is the target's likelihood of all its past moves under
each deal (the swap is symmetric and the deal prior uniform over kind sequences, so both moves
leave the posterior invariant, and a weighted particle keeps its weight); their undrawn decks
are reshuffled. Fresh importance-weighted proposals where a game has no particles yet, and where
every carried particle is ruled out (the target played a card none of them held): that row is a
fallback.

Proposals come from the game's ``history_deals`` (deals consistent with the observation and the
public history, drawn uniformly): in the poker games the hidden cards, in Lost Cities also which
deck draw brought each card (games/lost_cities/deals.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from ..games.base import capability, concat_states, has_capability, index_state
from ..host_syncs import to_host


@dataclass
class BeliefSample:
    """``d`` weighted hidden states for each of ``n`` observations (row ``i * d + j`` of ``states``
    is sample ``j`` of observation ``i``)."""

    states: object  # n * d engine states at the current decision
    weights: torch.Tensor  # [n, d] float64, each row summing to 1
    ess: torch.Tensor  # [n] effective sample size of each row's weights
    fallback: torch.Tensor  # [n] bool: no proposal was consistent, the weights are the fallback's (particles
    # of a deterministic target: every particle contradicts some move of the target, the least contradicted are
    # kept; of a stochastic one: every carried particle was ruled out, fresh proposals replaced them)
    retried: torch.Tensor  # [n] long: extra rounds of proposals each row took
    carried: torch.Tensor  # [n] bool: the states are particles carried from the game's last decision


# The particle filter's robust likelihood of a deterministic target: a move the particle's deal
# contradicts counts as probability exp(-20) (about 2e-9) rather than 0, so that a row whose every
# particle contradicts a move keeps the least contradicted ones (approximate) instead of collapsing
# to the prior; wherever some particle is consistent, the inconsistent ones weigh nothing next to it.
MISS_LOG_LIKELIHOOD = -20.0
IMPOSSIBLE = 1 << 20  # the misses of a deal that is not even consistent with the observation
MOVES = 1  # Metropolis swap moves per particle and decision
FRESH_MOVE = True  # a stochastic target's particles each try an independence move to a fresh proposal
RESAMPLE_BELOW = 0.5  # a stochastic target's particles are resampled where their ESS falls below this share
# a game's stored particles are dropped after this many stores unused: in a lockstep match its
# observer's next decision comes within three calls, so only ended games lose theirs, unless more
# games than this interleave between two decisions of one (a busy server)
KEEP_CALLS = 64


def effective_sample_size(weights: torch.Tensor) -> torch.Tensor:
    """``(sum w)^2 / sum w^2`` per row of ``weights [n, d]`` (0 for an all-zero row)."""
    total = weights.sum(dim=1)
    squares = (weights**2).sum(dim=1)
    return torch.where(squares > 0, total**2 / squares.clamp(min=1e-300), 0.0)


class DealPosterior:
    """The posterior over deals (module docstring) for ``game`` given ``target`` (a
    ``OpponentModel``: ``probabilities(obs, mask)``): importance-weighted fresh proposals, or, in a
    game with the particle moves, particles carried from decision to decision (a deterministic
    target: consistent deals; a stochastic one: a weighted particle filter)."""

    def __init__(self, game, target, retries: int = 3):
        self.history_deals = capability(game, "history_deals")
        self.game = game
        self.target = target
        self.retries = retries
        self.deterministic = bool(getattr(target, "deterministic", False))
        self.particles: Particles | None = None
        if has_capability(game, "carry_deals"):
            self.particles = Particles(
                game,
                capability(game, "carry_deals"),
                capability(game, "swap_deals"),
                capability(game, "deal_log_weights"),
            )

    @property
    def _carried(self) -> Particles:
        """The particles carried from decision to decision (games with ``carry_deals``)."""
        if self.particles is None:
            raise ValueError(f"{self.game.name} has no carry_deals: its belief draws fresh proposals only")
        return self.particles

    def sample(
        self,
        obs: torch.Tensor,
        history: torch.Tensor,
        d: int,
        generator: torch.Generator | None = None,
        draws: int | None = None,
    ) -> BeliefSample:
        """``d`` weighted states per row of ``obs [n, K]`` (the observer's observations: the
        exploiter's, a search's) with the public ``history [n, L]`` of each game (its actions in
        order, -1 after the last). With ``draws``: that many equally weighted states per row instead,
        drawn from the ``d`` weighted ones (systematic resampling; where the game has particles,
        each draw with its own order of the undrawn deck, so that copies do not share one future)."""
        n = obs.shape[0]
        if self.particles is not None and n:
            if self.deterministic:
                return self.carried(obs, history, d, generator, draws)
            return self.filtered(obs, history, d, generator, draws)
        states, log_w, log_fallback, _ = self.propose(obs, history, d, generator)
        retried = torch.zeros(n, dtype=torch.long, device=obs.device)
        for _ in range(self.retries):
            empty = (~torch.isfinite(log_w).any(dim=1)).nonzero().squeeze(1)
            if empty.numel() == 0:
                break
            new_states, log_w[empty], log_fallback[empty], _ = self.propose(obs[empty], history[empty], d, generator)
            states = _replace_rows(states, empty, new_states, n, d)
            retried[empty] += 1
        fallback = ~torch.isfinite(log_w).any(dim=1)
        log_w[fallback] = log_fallback[fallback]  # the soft posterior, or the prior's weights
        weights = torch.softmax(log_w, dim=1)
        ess = effective_sample_size(weights)
        if draws is not None:
            states = index_state(states, resampled_rows(weights, draws, generator))
            weights = torch.full((n, draws), 1.0 / draws, dtype=torch.float64, device=obs.device)
        return BeliefSample(
            states=states,
            weights=weights,
            ess=ess,
            fallback=fallback,
            retried=retried,
            carried=torch.zeros(n, dtype=torch.bool, device=obs.device),
        )

    def carried(
        self, obs: torch.Tensor, history: torch.Tensor, d: int, generator=None, draws: int | None = None
    ) -> BeliefSample:
        """The particle filter (module docstring): each row's particles carried from its game's
        previous decision through what happened since (the game's ``carry_deals``: the target's new
        deck draws drawn from the prior; fresh proposals where none are stored or they no longer
        fit), weighed by the target's moves with the robust likelihood (``MISS_LOG_LIKELIHOOD`` a
        contradicted move), resampled (systematic) and moved by ``MOVES`` Metropolis swaps each
        (``swap_deals``: the swapped deal replaces the particle where it contradicts no more of the
        target's moves). The returned states are equally weighted; the effective sample size is
        that of the weights before resampling; ``fallback`` marks rows whose every particle
        contradicts at least one of the target's moves."""
        particles, device = self._carried, obs.device
        n = obs.shape[0]
        fresh, log_prior = self.history_deals(obs, history, d, generator)
        previous, length, found, _, _ = particles.lookup(obs, history, d)
        carried_deals, carry_log_w = particles.carry(obs, history, fresh, previous, length, generator)
        kept = found.repeat_interleave(d) & torch.isfinite(carry_log_w)
        deals = torch.where(kept[:, None], carried_deals, fresh)
        start_log = torch.where(kept, 0.0, log_prior)
        _, _, _, misses = self.replay(obs, history, deals, start_log, d, ~kept)
        lost = (misses >= IMPOSSIBLE).all(dim=1).nonzero().squeeze(1)
        if lost.numel():  # no carried particle even replays (the target played a card none held): fresh ones
            sub = _rows_of(lost, d)
            deals[sub], start_log[sub] = fresh[sub], log_prior[sub]
            _, _, _, misses[lost] = self.replay(
                obs[lost],
                history[lost],
                fresh[sub],
                log_prior[sub],
                d,
                torch.ones(sub.numel(), dtype=torch.bool, device=device),
            )
            found = found.clone()
            found[lost] = False
        robust = start_log.view(n, d) + MISS_LOG_LIKELIHOOD * misses
        ess = effective_sample_size(torch.softmax(robust, dim=1))
        rows = (
            torch.arange(n, device=device)[:, None] * d
            + systematic_resample(torch.softmax(robust, dim=1), d, generator)
        ).reshape(-1)
        deals, misses = deals[rows], misses.reshape(-1)[rows]
        for _ in range(MOVES):  # the states come from the last replay, below
            moved = particles.swap(obs, history, deals, generator)
            _, _, _, moved_misses = self.replay(
                obs,
                history,
                moved,
                torch.zeros(n * d, dtype=torch.float64, device=device),
                d,
                torch.zeros(n * d, dtype=torch.bool, device=device),
            )
            moved_misses = moved_misses.reshape(-1)
            accept = moved_misses <= misses
            deals, misses = torch.where(accept[:, None], moved, deals), torch.where(accept, moved_misses, misses)
        # a move may have found particles contradicting fewer moves than the rest: keep those
        rows = (
            torch.arange(n, device=device)[:, None] * d
            + systematic_resample(torch.softmax(MISS_LOG_LIKELIHOOD * misses.view(n, d).double(), dim=1), d, generator)
        ).reshape(-1)
        deals, misses = deals[rows], misses[rows]
        # The undrawn deck's order is uniform given everything else (nothing seen depends on it):
        # redraw it per particle (carry_deals to the current decision: the target's cards kept), so
        # that resampled copies do not share one future in the rollouts.
        weights = torch.full((n, d), 1.0 / d, dtype=torch.float64, device=device)
        particles.store(obs, history, deals, d)
        states, weights = self._drawn(obs, history, fresh, deals, weights, generator, draws)
        return BeliefSample(
            states=states,
            weights=weights,
            ess=ess,
            fallback=(misses.view(n, d) > 0).all(dim=1),
            retried=torch.zeros(n, dtype=torch.long, device=device),
            carried=found,
        )

    def filtered(
        self, obs: torch.Tensor, history: torch.Tensor, d: int, generator=None, draws: int | None = None
    ) -> BeliefSample:
        """The particle filter of a stochastic target (module docstring): each row's weighted
        particles carried from its game's previous decision, reweighted by the target's moves since
        then and the observer's deck draws since then, resampled (systematic) where the effective
        sample size is below ``RESAMPLE_BELOW`` of ``d`` or some particle is ruled out, then moved:
        an independence Metropolis-Hastings step to the row's fresh proposal of the same index
        (``FRESH_MOVE``; against the impoverishment of resampling) and ``MOVES`` Metropolis swaps;
        the undrawn decks reshuffled. Rows with no stored particles, or none left (``fallback``), take the fresh
        importance-weighted proposals. The effective sample size is that of the weights before
        resampling."""
        particles, device = self._carried, obs.device
        n, N = obs.shape[0], obs.shape[0] * d
        zeros = torch.zeros(N, dtype=torch.float64, device=device)
        fresh, log_prior = self.history_deals(obs, history, d, generator)
        # The target's likelihood of all its moves under each fresh proposal: the weights where no
        # particles are carried, and the proposals of the independence move.
        _, fresh_like, _, _ = self.replay(obs, history, fresh, zeros, d, torch.ones(N, dtype=torch.bool, device=device))
        fresh_like = fresh_like.reshape(-1)
        log_w, log_like, deals = log_prior + fresh_like, fresh_like.clone(), fresh.clone()
        previous, length, found, stored_log_w, stored_log_like = particles.lookup(obs, history, d)
        gone = found.clone()  # rows whose every carried particle is ruled out keep the fresh proposals
        rows_found = found.nonzero().squeeze(1)
        if rows_found.numel():  # carried particles, weighed by what happened since they were stored
            sub = _rows_of(rows_found, d)
            carried_deals, carry_log_w = particles.carry(
                obs[rows_found], history[rows_found], fresh[sub], previous[sub], length[rows_found], generator
            )
            _, recent, _, _ = self.replay(
                obs[rows_found],
                history[rows_found],
                carried_deals,
                zeros[sub],
                d,
                torch.zeros(sub.numel(), dtype=torch.bool, device=device),
                since=length[rows_found].repeat_interleave(d),
            )
            carried_log_w = stored_log_w[sub] + carry_log_w + recent.reshape(-1)
            alive = torch.isfinite(carried_log_w).view(-1, d).any(dim=1)
            gone[rows_found[alive]] = False
            kept, into = _rows_of(alive.nonzero().squeeze(1), d), _rows_of(rows_found[alive], d)
            deals[into] = carried_deals[kept]
            log_w[into] = carried_log_w[kept]
            log_like[into] = (stored_log_like[sub] + recent.reshape(-1))[kept]
        found = found & ~gone
        log_w = log_w.view(n, d)
        impossible = ~torch.isfinite(log_w).any(dim=1)  # a move the target gives probability 0 in every deal
        log_w[impossible] = log_prior.view(n, d)[impossible]
        weights = torch.softmax(log_w, dim=1)
        ess = effective_sample_size(weights)
        resample = ((ess < RESAMPLE_BELOW * d) | (weights == 0).any(dim=1)).nonzero().squeeze(1)  # or dead ones
        if resample.numel():
            picks = resample[:, None] * d + systematic_resample(weights[resample], d, generator)
            rows = torch.arange(N, device=device)
            rows.view(n, d)[resample] = picks
            deals, log_like = deals[rows], log_like[rows]
            weights[resample] = 1.0 / d
        # Independence Metropolis-Hastings: particle j proposes the row's fresh deal j, accepted with
        # probability min(1, prior L / proposal of the fresh deal over that of the particle).
        if FRESH_MOVE:
            uniform = torch.rand(N, generator=generator, device=device, dtype=torch.float64)
            leave = log_like + particles.weights(obs, history, deals)
            accept = torch.isfinite(fresh_like) & (uniform.log() < log_prior + fresh_like - leave)
            deals = torch.where(accept[:, None], fresh, deals)
            log_like = torch.where(accept, fresh_like, log_like)
        for _ in range(MOVES):
            moved = particles.swap(obs, history, deals, generator)
            _, moved_like, _, _ = self.replay(
                obs, history, moved, zeros, d, torch.zeros(N, dtype=torch.bool, device=device)
            )
            moved_like = moved_like.reshape(-1)
            uniform = torch.rand(N, generator=generator, device=device, dtype=torch.float64)
            accept = torch.isfinite(moved_like) & (uniform.log() < moved_like - log_like)
            deals = torch.where(accept[:, None], moved, deals)
            log_like = torch.where(accept, moved_like, log_like)
        particles.store(obs, history, deals, d, weights.log().reshape(-1), log_like)
        states, weights = self._drawn(obs, history, fresh, deals, weights, generator, draws)
        return BeliefSample(
            states=states,
            weights=weights,
            ess=ess,
            fallback=gone | impossible,
            retried=torch.zeros(n, dtype=torch.long, device=device),
            carried=found,
        )

    def _drawn(self, obs, history, fresh, deals, weights: torch.Tensor, generator, draws: int | None):
        """(states, weights): the particles ``deals [n * d, D]`` of weights ``[n, d]`` at the current
        decision, each with its undrawn deck reshuffled; with ``draws``, that many equally weighted
        draws from them per row (systematic), each reshuffled on its own."""
        n, d = weights.shape
        if draws is None:
            return self._reshuffled(obs, history, fresh, deals, d, generator)[1], weights
        rows = resampled_rows(weights, draws, generator)
        _, states = self._reshuffled(obs, history, fresh[rows], deals[rows], draws, generator)
        return states, torch.full((n, draws), 1.0 / draws, dtype=torch.float64, device=weights.device)

    def _reshuffled(self, obs, history, fresh, deals, d: int, generator):
        """(deals, states at the current decision): each deal's undrawn deck redrawn in a random
        order (carry_deals to the current decision: the target's cards kept). Nothing seen depends
        on that order, so it is uniform given everything else; redrawing it per particle keeps
        resampled copies from sharing one future in the rollouts."""
        now = (history >= 0).sum(dim=1)
        deals, _ = self._carried.carry(obs, history, fresh, deals, now, generator)
        N = deals.shape[0]
        never = torch.full((N,), history.shape[1] + 1, dtype=torch.long, device=obs.device)  # ask the target nothing
        states, _, _, _ = self.replay(
            obs,
            history,
            deals,
            torch.zeros(N, dtype=torch.float64, device=obs.device),
            d,
            torch.ones(N, dtype=torch.bool, device=obs.device),
            since=never,
        )
        return deals, states

    def propose(self, obs: torch.Tensor, history: torch.Tensor, d: int, generator=None):
        """(states ``[n * d]`` at the current decision, log weights ``[n, d]`` float64: the deal's
        prior weight times the likelihood of the target's past moves, -inf where it gave one of
        them probability 0; the fallback's log weights ``[n, d]``: the prior's times the
        likelihood under the target's sampling policy where it has one, else the prior's)."""
        n = obs.shape[0]
        if n == 0:
            empty = torch.zeros(0, d, dtype=torch.float64, device=obs.device)
            return self.game.init(0, device=obs.device), empty, empty.clone(), empty.long()
        deals, log_prior = self.history_deals(obs, history, d, generator)
        strict = torch.ones(n * d, dtype=torch.bool, device=obs.device)
        return self.replay(obs, history, deals, log_prior, d, strict)

    def replay(
        self,
        obs: torch.Tensor,
        history: torch.Tensor,
        deals: torch.Tensor,
        log_prior: torch.Tensor,
        d: int,
        strict: torch.Tensor,
        since: torch.Tensor | None = None,
    ):
        """``deals [n * d, D]`` replayed through ``history [n, L]``: (states, log weights [n, d]: the
        prior's times the target's likelihood, the fallback's [n, d], as ``propose``; the number of
        the target's moves each deal contradicts [n, d]). Only the target's moves at or after
        ``since [n * d]`` (history positions; default 0: all) are asked of the target and counted.
        A move the deal makes illegal (a particle move can) gives the deal weight 0; a deal whose
        replay does not give ``obs`` back raises where ``strict`` (a proposal: the history is
        wrong), else gets weight 0."""
        game = self.game
        n = obs.shape[0]
        history = history.long().repeat_interleave(d, dim=0)
        target_seat = (1 - game.obs_player(obs)).repeat_interleave(d)
        if since is None:
            since = torch.zeros(n * d, dtype=torch.long, device=obs.device)
        log_w, log_fallback = log_prior.clone(), log_prior.clone()
        legal = torch.ones(n * d, dtype=torch.bool, device=obs.device)
        misses = torch.zeros(n * d, dtype=torch.long, device=obs.device)
        state = game.init_from_deal(deals)
        rows = torch.arange(n * d, device=obs.device)  # the sample each row of state holds
        done_states, done_rows = [], []
        for t in range(history.shape[1] + 1):
            action = history[rows, t] if t < history.shape[1] else torch.full_like(rows, -1)
            stop = action < 0
            if bool(stop.any()):  # these samples have replayed their whole history
                done_states.append(index_state(state, stop.nonzero().squeeze(1)))
                done_rows.append(rows[stop])
                going = (~stop).nonzero().squeeze(1)
                state, rows, action = index_state(state, going), rows[going], action[going]
                if rows.numel() == 0:
                    break
            mask = game.legal_mask(state)
            allowed = mask.gather(1, action[:, None]).squeeze(1)
            legal[rows] &= allowed
            action = torch.where(allowed, action, mask.float().argmax(dim=1))  # an illegal step corrupts a row
            player = game.current_player(state)
            theirs = ((player == target_seat[rows]) & (since[rows] <= t)).nonzero().squeeze(1)
            if theirs.numel():
                sub = index_state(state, theirs)
                probs, soft = self.target.probabilities_and_soft(
                    game.observe(sub, target_seat[rows][theirs]), mask[theirs]
                )
                moved = action[theirs][:, None]
                p = probs.double().gather(1, moved).squeeze(1)
                log_w.index_add_(0, rows[theirs], p.log())
                misses.index_add_(0, rows[theirs], (p <= 0).long())
                if soft is not None:
                    log_fallback.index_add_(
                        0, rows[theirs], soft.double().gather(1, moved).squeeze(1).clamp(min=1e-300).log()
                    )
            state = game.step(state, action)
        order = torch.cat(done_rows).argsort()
        states = index_state(concat_states(done_states), order)
        replayed = game.observe(states, game.obs_player(obs).repeat_interleave(d))
        matches = (replayed == obs.repeat_interleave(d, dim=0).to(replayed.dtype)).all(dim=1) & legal
        if bool((strict & ~matches).any()):
            raise RuntimeError(
                f"{game.name}: a deal replayed through the action history does not give the "
                "observation back (the history is wrong, or a hidden card is not in the deal)"
            )
        log_w = log_w.masked_fill(~matches, -torch.inf)
        log_fallback = log_fallback.masked_fill(~matches, -torch.inf)
        misses = misses.masked_fill(~matches, IMPOSSIBLE)
        return states, log_w.view(n, d), log_fallback.view(n, d), misses.view(n, d)


class Particles:
    """The deals each game's belief kept at its last decision (equally weighted draws from the
    posterior then), to be carried to its next one. A game is found by its public history: the
    stored history must be a prefix of the current one, for the same observer, and every card the
    observer knew then it still knows (kind counts; this tells apart games whose public histories
    agree). Each stored set is used once, and a set not used by the ``keep_calls``-th store after
    its own (a game that ended, or was left) is dropped, so that a long match or a server does not
    keep every game's last particles (a live game whose set was dropped gets fresh proposals, as a
    new game does)."""

    def __init__(self, game, carry, swap, weights, keep_calls: int = KEEP_CALLS):
        self._game, self.carry, self.swap, self.weights = game, carry, swap, weights
        self.keep_calls = keep_calls
        self.calls = 0  # stores so far: the age of a stored set
        self.stored: dict[tuple, list[tuple[Any, torch.Tensor, torch.Tensor, int]]] = {}  # Any: a host array

    @staticmethod
    def _keys(obs: torch.Tensor, history: torch.Tensor, game):
        """Per row: (observer, history length, history as a host array, known kind counts)."""
        kind_of = game.tables(obs.device).card_kind_index.long()
        D = kind_of.shape[0]
        known = torch.zeros(obs.shape[0], int(kind_of.max()) + 1, dtype=torch.long, device=obs.device).scatter_add_(
            1, kind_of.expand(obs.shape[0], D), (obs[:, :D] != 0).long()
        )
        lengths = (history >= 0).sum(dim=1)
        observer = game.obs_player(obs)
        host = to_host(torch.cat([observer[:, None].long(), lengths[:, None], history.long(), known], dim=1))
        L = history.shape[1]
        return [(row[0], row[1], tuple(row[2 : 2 + L]), row[2 + L :]) for row in host]

    def lookup(self, obs: torch.Tensor, history: torch.Tensor, d: int):
        """(previous deals [n * d, D], their history lengths [n], found [n] bool, their log weights
        [n * d] and log likelihoods of the target's moves then [n * d], float64; 0 where not found)."""
        game = self._game
        n, D = obs.shape[0], game.rules.deck_size
        previous = torch.zeros(n, d, D, dtype=torch.long, device=obs.device)
        scores = torch.zeros(n, 2, d, dtype=torch.float64, device=obs.device)
        length = torch.zeros(n, dtype=torch.long)
        found = torch.zeros(n, dtype=torch.bool)
        for i, (observer, current, actions, known) in enumerate(self._keys(obs, history, game)):
            for before in range(current - 1, -1, -1):
                entries = self.stored.get((observer, actions[:before]), [])
                hit = next(
                    (
                        j
                        for j, (k, deals, _, _) in enumerate(entries)
                        if deals.shape[0] == d and all(a <= b for a, b in zip(k, known))
                    ),
                    None,
                )
                if hit is not None:
                    _, previous[i], scores[i], _ = entries.pop(hit)
                    length[i], found[i] = before, True
                    break
        return (
            previous.view(n * d, D),
            length.to(obs.device),
            found.to(obs.device),
            scores[:, 0].reshape(-1),
            scores[:, 1].reshape(-1),
        )

    def store(
        self,
        obs: torch.Tensor,
        history: torch.Tensor,
        deals: torch.Tensor,
        d: int,
        log_weights: torch.Tensor | None = None,
        log_likelihoods: torch.Tensor | None = None,
    ) -> None:
        """Keep each row's ``d`` deals (``deals [n * d, D]``; with their ``[n * d]`` log weights and
        log likelihoods of the target's moves so far, or equally weighted) for its next decision."""
        n, device = obs.shape[0], obs.device
        zeros = torch.zeros(n * d, dtype=torch.float64, device=device)
        scores = torch.stack(
            [zeros if log_weights is None else log_weights, zeros if log_likelihoods is None else log_likelihoods]
        ).view(2, n, d)
        deals = deals.view(n, d, -1)
        self.calls += 1
        expired = self.calls - self.keep_calls  # this store and the keep_calls - 1 before it stay
        for key in [key for key, entries in self.stored.items() if not entries or entries[0][3] <= expired]:
            kept = [entry for entry in self.stored[key] if entry[3] > expired]
            if kept:
                self.stored[key] = kept
            else:
                del self.stored[key]
        for i, (observer, current, actions, known) in enumerate(self._keys(obs, history, self._game)):
            entry = (known, deals[i], scores[:, i], self.calls)
            self.stored.setdefault((observer, actions[:current]), []).append(entry)


def systematic_resample(weights: torch.Tensor, m: int, generator=None) -> torch.Tensor:
    """[n, m] indices into the columns of ``weights [n, d]`` (rows summing to 1): the m evenly
    spaced points of [0, 1) after one uniform offset per row, each picking the column whose
    cumulative weight interval holds it (low variance: a column of weight above 1/m is kept)."""
    n, d = weights.shape
    offset = torch.rand(n, 1, generator=generator, device=weights.device, dtype=torch.float64)
    points = (offset + torch.arange(m, device=weights.device, dtype=torch.float64)) / m
    cumulative = weights.double().cumsum(dim=1)
    cumulative[:, -1] = 1.0 + 1e-12
    return torch.searchsorted(cumulative, points).clamp(max=d - 1)


def resampled_rows(weights: torch.Tensor, m: int, generator=None) -> torch.Tensor:
    """The rows ``i * d + j`` of ``m`` systematic draws (``systematic_resample``) from each row of
    ``weights [n, d]``, in order: ``m`` equally weighted states of each row's ``d`` weighted ones."""
    n, d = weights.shape
    return (torch.arange(n, device=weights.device)[:, None] * d + systematic_resample(weights, m, generator)).reshape(
        -1
    )


def _rows_of(idx: torch.Tensor, d: int) -> torch.Tensor:
    """The rows ``i * d + j`` (j < d) of the observations ``idx``, in order."""
    return (idx[:, None] * d + torch.arange(d, device=idx.device)).reshape(-1)


def _replace_rows(states, rows: torch.Tensor, new_states, n: int, d: int):
    """``states`` (n * d rows) with the d samples of each observation in ``rows`` taken from ``new_states``."""
    source = torch.arange(n * d, device=rows.device)
    sample = torch.arange(d, device=rows.device)
    source.view(n, d)[rows] = n * d + torch.arange(rows.numel(), device=rows.device)[:, None] * d + sample
    return index_state(concat_states([states, new_states]), source)


__all__ = ["BeliefSample", "DealPosterior", "effective_sample_size", "resampled_rows", "systematic_resample"]
