"""Sampled traversals for long games: outcome sampling and critic sampling, both played in
lockstep by ``_play_sampled`` (one policy call per player per step)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from deepcfr.games.base import Policy, batch_size, index_state, sample_from_probs
from deepcfr.host_syncs import to_host

from .traversal_core import (
    CriticSampling,
    OutcomeSampling,
    TraversalBatch,
    TraversalResult,
    call_policy,
    start_traversal,
)

# ------------------------------------------------------------------------------------------------
# Sampled play in lockstep (outcome and critic sampling)
# ------------------------------------------------------------------------------------------------

TraverserHook = Callable[..., None]  # (state, rows, game_ids, obs, mask, sigma, actions, q) -> None


def _play_sampled(
    batch: TraversalBatch,
    state,
    traverser_policy: Policy,
    opponent_policy: Policy,
    *,
    epsilon: float = 0.0,
    explore_once: bool = False,
    on_traverser: TraverserHook | None = None,
) -> torch.Tensor:
    """Play every row of ``state`` to its end, all rows in lockstep, and return the traverser's
    utility per row (games stopped by ``batch.step_cap`` are scored as they stand and counted).

    The traverser draws from ``q = epsilon * uniform(legal) + (1 - epsilon) * sigma``, the
    opponent from its policy; one policy call per player per step. ``on_traverser(state, rows,
    game_ids, obs, mask, sigma, actions, q)`` sees the traverser's rows before each step; the
    opponent's go to ``batch`` as strategy samples when it records them. ``explore_once``: the
    traverser explores (uniform over legal actions) with probability ``epsilon`` at each node
    until it first does, and plays sigma exactly from then on; ``on_traverser`` then also gets
    ``deviated`` [m] bool (the game's exploration happened at or before this node: everything
    after it is sigma) as a keyword. Finished rows are dropped once they are half the batch, so
    later steps do no work for them."""
    game, traverser, generator, stats = batch.game, batch.traverser, batch.generator, batch.stats
    on_opponent = batch.add_strategy if batch.record_strategy else None
    n = batch_size(state)
    device = game.is_terminal(state).device
    game_id = torch.arange(n, device=device)  # row -> original row (rows are compacted as games end)
    deviated = torch.zeros(n, dtype=torch.bool, device=device)  # explore_once: per original row
    utility = torch.zeros(n, dtype=torch.float32, device=device)
    engine_cut_off = getattr(game, "cut_off", None)  # optional: [n] bool, ended by the engine's own cap
    engine_cut_offs = torch.zeros((), dtype=torch.long, device=device)  # read once, at the end
    steps = 0
    while True:
        terminal = game.is_terminal(state)
        player = game.current_player(state).clamp(0, 1)
        is_trav = ~terminal & (player == traverser)
        # The one host sync of a step: how many rows are live (has the loop ended?) and how many
        # of them are the traverser's (the sizes of this step's two policy calls).
        live_count, trav_count = to_host(torch.stack([(~terminal).sum(), is_trav.sum()]))
        if live_count == 0:
            break
        if steps >= batch.step_cap:
            stats.cut_offs += live_count
            break
        if live_count * 2 <= terminal.shape[0] and terminal.shape[0] > 64:
            done = _where(terminal, terminal.shape[0] - live_count)
            done_state = index_state(state, done)
            utility[game_id[done]] = game.returns(done_state)[:, traverser].float()
            if engine_cut_off is not None:
                engine_cut_offs += engine_cut_off(done_state).sum()
            keep = _where(~terminal, live_count)
            state = index_state(state, keep)
            game_id = game_id[keep]
            terminal, player, is_trav = terminal[keep], player[keep], is_trav[keep]
        steps += 1
        stats.decisions += live_count
        live = ~terminal
        obs = game.observe(state, player)
        mask = game.legal_mask(state)
        trav = _where(is_trav, trav_count)
        opp = _where(live & ~is_trav, live_count - trav_count)
        actions = torch.zeros(player.shape[0], dtype=torch.long, device=player.device)
        if trav_count:
            t_obs, t_mask = obs[trav], mask[trav]
            sigma = call_policy(traverser_policy, t_obs, t_mask, stats)
            q = behaviour = sigma
            extra = {}
            if epsilon > 0.0:
                legal = t_mask.float()
                uniform_legal = legal / legal.sum(dim=1, keepdim=True)
                q = behaviour = epsilon * uniform_legal + (1.0 - epsilon) * sigma
            if explore_once:
                before = deviated[game_id[trav]]
                explored = (torch.rand(trav.shape[0], generator=generator, device=device) < epsilon) & ~before
                behaviour = torch.where(explored[:, None], uniform_legal, sigma) if epsilon > 0.0 else sigma
                deviated[game_id[trav]] = before | explored
                extra["deviated"] = before | explored
            a = sample_from_probs(behaviour, generator)
            actions[trav] = a
            if on_traverser is not None:
                on_traverser(state, trav, game_id[trav], t_obs, t_mask, sigma, a, q, **extra)
        if live_count > trav_count:
            o_obs, o_mask = obs[opp], mask[opp]
            probs = call_policy(opponent_policy, o_obs, o_mask, stats)
            actions[opp] = sample_from_probs(probs, generator)
            if on_opponent is not None:
                on_opponent(game_id[opp], o_obs, o_mask, probs)
        state = game.step(state, actions)
    utility[game_id] = game.returns(state)[:, traverser].float()
    if engine_cut_off is not None:
        stats.cut_offs += int(engine_cut_offs + (engine_cut_off(state) & game.is_terminal(state)).sum())
    return utility


def _where(mask: torch.Tensor, count: int) -> torch.Tensor:
    """The indices of ``mask``'s true entries (ascending), ``count`` of them: ``nonzero`` with the
    size known, so no host sync."""
    if _NONZERO_STATIC:
        try:
            return torch.nonzero_static(mask, size=count).squeeze(1)
        except (NotImplementedError, RuntimeError):  # a device without the kernel
            pass
    return torch.nonzero(mask).squeeze(1)


_NONZERO_STATIC = hasattr(torch, "nonzero_static")


# ------------------------------------------------------------------------------------------------
# Outcome sampling
# ------------------------------------------------------------------------------------------------


def outcome_sampling(
    game,
    traverser: int,
    num_traversals: int,
    traverser_policy: Policy,
    opponent_policy: Policy,
    iteration: int,
    generator: torch.Generator | None = None,
    options: OutcomeSampling = OutcomeSampling(),
    *,
    record_strategy: bool = True,
    device: str | torch.device = "cpu",
    max_steps: int | None = None,
    root_state: Any | None = None,
) -> TraversalResult:
    """``num_traversals`` outcome-sampling traversals for ``traverser``, all games in lockstep.

    At traverser nodes ``a*`` is drawn from ``q = epsilon * uniform(legal) + (1 - epsilon) * sigma``;
    the opponent plays ``opponent_policy``. Back from the leaf (``v~ = u``): at a traverser node
    ``v~(h,a) = b(a) + 1[a = a*] (v~(h a*) - b(a*)) / q(a*)``, ``v~(h) = sum_a sigma(a) v~(h,a)``
    and the target is ``v~(h,a) - v~(h)`` on legal actions; opponent nodes pass ``v~`` up.

    The baseline ``b`` is 0 for ``unsampled_target="zero"`` (the estimator of docs/design.md).
    For ``"mean"`` it is a per-traversal constant, the mean terminal utility of the *other* games
    of the batch (leave-one-out, so it does not depend on the game's own trajectory and the
    estimator stays unbiased). ``tail_correction=False`` uses the leaf utility for ``v~(h a*)``
    at every traverser node instead of the importance-corrected ``v~`` walked back from below:
    biased (it values the tail under ``q`` rather than ``sigma``, a bias that shrinks with
    epsilon) but free of the importance weights that compound over long games (Lost Cities: ~70
    own decisions, weights of 1e4-1e5).
    ``root_state`` (optional, ``num_traversals`` rows) replaces the random deals of ``game.init``.
    """
    batch, state = start_traversal(
        game, traverser, num_traversals, iteration, generator, device, root_state, record_strategy, max_steps
    )
    trav_records: list[tuple[torch.Tensor, ...]] = []

    def record_traverser(state, rows, game_ids, obs, mask, sigma, actions, q):
        trav_records.append((game_ids, obs, mask, sigma, actions, q.gather(1, actions[:, None]).squeeze(1)))

    utility = _play_sampled(
        batch, state, traverser_policy, opponent_policy, epsilon=options.epsilon, on_traverser=record_traverser
    )
    _outcome_targets(batch, trav_records, utility, options)
    return batch.result()


def _outcome_targets(
    batch: TraversalBatch, trav_records: list, utility: torch.Tensor, options: OutcomeSampling
) -> None:
    """Outcome sampling's targets, walked back from each game's leaf over its traverser nodes
    (``trav_records`` in play order: game ids, obs, mask, sigma, action taken, q of that action),
    added to ``batch``."""
    stats = batch.stats
    n = utility.shape[0]
    tail_correction = options.tail_correction
    if options.unsampled_target == "mean" and n > 1:
        baseline = (utility.sum() - utility) / (n - 1)
    else:
        baseline = torch.zeros_like(utility)

    value = utility.clone()  # v~ of each game's current node, walked back from the leaf
    tail_weight = torch.ones_like(utility)  # product of sigma(a*)/q(a*) below the current node
    # The reported sizes stay on the device until the walk is done (no host sync per record);
    # the sum in float64 of each record's float32 sum, as a Python float sum would be.
    max_weight = torch.zeros((), dtype=torch.float32, device=utility.device)
    weight_sum = torch.zeros((), dtype=torch.float64, device=utility.device)
    for gid, t_obs, t_mask, sigma, a, q_a in reversed(trav_records):
        v_child = value[gid]
        b = baseline[gid]
        weight = tail_weight[gid] / q_a
        max_weight = torch.maximum(max_weight, weight.max())
        weight_sum += weight.sum().double()
        tail_weight[gid] = weight * sigma.gather(1, a[:, None]).squeeze(1)
        v_sampled = b + (v_child - b) / q_a  # v~(h, a*)
        v_ha = torch.where(t_mask, b[:, None], 0.0)
        v_ha.scatter_(1, a[:, None], v_sampled[:, None])
        v_h = (sigma * v_ha).sum(dim=1)
        target = (v_ha - v_h[:, None]) * t_mask
        batch.add_advantage(gid, t_obs, t_mask, target)
        if tail_correction:
            value[gid] = v_h
        else:  # index_fill_, not ``[gid] = 1.0``: a Python scalar put by index is copied from the
            # host on CUDA (a sync at every traverser record: 856 syncs in 568 steps on an H200)
            tail_weight.index_fill_(0, gid, 1.0)
    if trav_records:
        top, total = to_host(torch.stack([max_weight.double(), weight_sum]))
        stats.max_importance_weight = max(stats.max_importance_weight, top)
        stats.importance_weight_sum += total


# ------------------------------------------------------------------------------------------------
# Critic sampling (the trainer's learned Q values replace the sampled regret estimate)
# ------------------------------------------------------------------------------------------------


def critic_sampling(
    game,
    traverser: int,
    num_traversals: int,
    traverser_policy: Policy,
    opponent_policy: Policy,
    iteration: int,
    generator: torch.Generator | None = None,
    options: CriticSampling = CriticSampling(),
    *,
    record_strategy: bool = True,
    device: str | torch.device = "cpu",
    max_steps: int | None = None,
    root_state: Any | None = None,
) -> TraversalResult:
    """Trajectories for a learned critic (ESCHER, McAleer et al. 2023): played as in outcome
    sampling, except that the traverser explores only once per game (uniform over legal actions
    with probability ``epsilon`` at each node until it first does, sigma exactly after), and each
    traverser node is returned with what the critic needs instead of a sampled regret: its
    ``sigma`` [m, A], the ``action`` taken [m], the traverser's final ``utility`` [m], the
    opponent's observation at that node ``opponent_obs`` [m, K] (its private cards: a critic may
    value the history rather than the information set) and ``on_policy_tail`` [m] (the game's
    one exploration is at or before this node, so its utility samples ``Q(I, a)`` of sigma:
    whether a node qualifies is decided by its past alone, so the kept samples are unbiased,
    where "no exploration after it" would favour short games); ``target`` is zero. The trainer
    fits ``Q(I, a)`` to (obs, action, utility) and fills in ``target = Q(I, .) - sum_a sigma(a)
    Q(I, a)`` on legal actions: no importance weight, so the target's noise is the critic's error
    rather than the game's outcome noise times ``1/q``. Every visited node gets a target for every
    legal action, so exploration only has to reach information sets off sigma's path and teach
    the critic the actions sigma rarely takes."""
    batch, state = start_traversal(
        game, traverser, num_traversals, iteration, generator, device, root_state, record_strategy, max_steps
    )
    records: list[tuple[torch.Tensor, ...]] = []

    def record_traverser(state, rows, game_ids, obs, mask, sigma, actions, q, deviated):
        opponent = torch.full((batch_size(state),), 1 - traverser, dtype=torch.long, device=obs.device)
        opponent_obs = game.observe(state, opponent)[rows]
        records.append((game_ids, obs, opponent_obs, mask, sigma, actions, deviated))

    utility = _play_sampled(
        batch,
        state,
        traverser_policy,
        opponent_policy,
        epsilon=options.epsilon,
        explore_once=True,
        on_traverser=record_traverser,
    )
    for gid, obs, opponent_obs, mask, sigma, a, tail in records:
        target = torch.zeros(mask.shape, dtype=torch.float32, device=mask.device)
        batch.add_advantage(
            gid,
            obs,
            mask,
            target,
            sigma=sigma.float(),
            action=a,
            utility=utility[gid],
            on_policy_tail=tail,
            opponent_obs=opponent_obs,
        )
    return batch.result()
