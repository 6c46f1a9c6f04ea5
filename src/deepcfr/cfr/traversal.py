"""Batched Deep CFR traversals: external sampling (small games), outcome sampling and probe sampling
(long games).

All run many traversals in lockstep and make, per step, at most one policy call for the
traverser and one for the opponent, each over every game that needs it. The estimators are the
ones of DESIGN.md's appendix ("local" targets: history values under sigma, never divided by the
traverser's own reach).

Policies are plain callables ``policy(obs, mask) -> probs`` (see ``deepcfr.cfr.policies``), so this
module knows nothing of networks, processes or devices beyond the tensors it is handed: a worker
process or a remote inference proxy can supply the same callables.

All return a :class:`TraversalResult`: advantage samples for the traverser
(``obs, mask, target, iteration``), strategy samples for the opponent (``obs, mask, policy,
iteration``; only when the opponent plays sigma_t, ``record_strategy=True``) and
:class:`TraversalStats`.

Chance events are dealt by ``game.init`` (the batched API has no chance player), so a traversal
samples chance once, at its root.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Callable

import torch

from deepcfr.games.base import batch_size, clone_state, concat_states, index_state, sample_from_probs

Policy = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]

UNSAMPLED_TARGETS = ("zero", "mean")
ALGORITHMS = ("external", "outcome", "probe", "critic")
EXPLORE_MODES = ("once", "every")  # critic sampling: the traverser explores once per game, or at any node


@dataclass
class TraversalStats:
    """Counts from one or more traversal batches (``merge`` adds them up)."""

    traversals: int = 0  # games traversed
    decisions: int = 0  # decision nodes visited (traverser + opponent)
    forward_calls: int = 0  # policy calls (one per player per step at most)
    forward_rows: int = 0  # rows over all policy calls
    max_batch: int = 0  # largest single policy call
    cut_offs: int = 0  # games stopped by the decision cap (game.max_game_length)
    clipped_targets: int = 0  # outcome sampling: targets whose importance-corrected value was clipped
    advantage_samples: int = 0
    strategy_samples: int = 0
    # Outcome sampling: the importance weight of v~(h, a*) relative to the leaf utility (the product
    # of sigma/q along the tail, divided by q(a*)); these compound, so their size is reported.
    max_importance_weight: float = 0.0
    importance_weight_sum: float = 0.0

    @property
    def mean_importance_weight(self) -> float:
        return self.importance_weight_sum / self.advantage_samples if self.advantage_samples else 0.0

    @property
    def avg_batch(self) -> float:
        return self.forward_rows / self.forward_calls if self.forward_calls else 0.0

    def record_forward(self, rows: int) -> None:
        self.forward_calls += 1
        self.forward_rows += rows
        self.max_batch = max(self.max_batch, rows)

    def merge(self, other: "TraversalStats") -> "TraversalStats":
        for f in fields(self):
            if f.name == "max_batch":
                self.max_batch = max(self.max_batch, other.max_batch)
            elif f.name == "max_importance_weight":
                self.max_importance_weight = max(self.max_importance_weight, other.max_importance_weight)
            else:
                setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))
        return self

    def as_metrics(self, prefix: str = "traversal/") -> dict[str, float]:
        return {
            f"{prefix}traversals": self.traversals,
            f"{prefix}decisions": self.decisions,
            f"{prefix}forward_calls": self.forward_calls,
            f"{prefix}avg_batch": self.avg_batch,
            f"{prefix}max_batch": self.max_batch,
            f"{prefix}cut_offs": self.cut_offs,
            f"{prefix}clipped_targets": self.clipped_targets,
            f"{prefix}advantage_samples": self.advantage_samples,
            f"{prefix}strategy_samples": self.strategy_samples,
            f"{prefix}max_importance_weight": self.max_importance_weight,
            f"{prefix}mean_importance_weight": self.mean_importance_weight,
        }


@dataclass
class TraversalResult:
    """Samples as tensors. ``advantage``: obs [m, K], mask [m, A] bool, target [m, A] float32
    (zero on illegal actions), iteration [m] int32. ``strategy``: obs, mask, policy [m, A] float32,
    iteration. ``advantage_root`` / ``strategy_root``: the traversal (root) index of each sample."""

    advantage: dict[str, torch.Tensor]
    strategy: dict[str, torch.Tensor]
    stats: TraversalStats
    advantage_root: torch.Tensor = field(default_factory=lambda: torch.zeros(0, dtype=torch.long))
    strategy_root: torch.Tensor = field(default_factory=lambda: torch.zeros(0, dtype=torch.long))


def _empty_samples(game, device, value_name: str) -> dict[str, torch.Tensor]:
    return {
        "obs": torch.zeros(0, game.obs_size, dtype=game.obs_dtype, device=device),
        "mask": torch.zeros(0, game.num_actions, dtype=torch.bool, device=device),
        value_name: torch.zeros(0, game.num_actions, dtype=torch.float32, device=device),
        "iteration": torch.zeros(0, dtype=torch.int32, device=device),
    }


def _cat_samples(parts: list[dict[str, torch.Tensor]], game, device, value_name: str) -> dict[str, torch.Tensor]:
    if not parts:
        return _empty_samples(game, device, value_name)
    return {k: torch.cat([p[k] for p in parts]) for k in parts[0]}


def _result(game, device, stats, adv_parts, strategy_parts, adv_roots, strategy_roots) -> "TraversalResult":
    """Concatenate the per-step sample parts of one traversal batch into its result."""
    advantage = _cat_samples(adv_parts, game, device, "target")
    strategy = _cat_samples(strategy_parts, game, device, "policy")
    stats.advantage_samples = advantage["obs"].shape[0]
    stats.strategy_samples = strategy["obs"].shape[0]
    no_roots = torch.zeros(0, dtype=torch.long, device=device)
    return TraversalResult(
        advantage=advantage,
        strategy=strategy,
        stats=stats,
        advantage_root=torch.cat(adv_roots) if adv_roots else no_roots,
        strategy_root=torch.cat(strategy_roots) if strategy_roots else no_roots,
    )


def _call_policy(policy: Policy, obs: torch.Tensor, mask: torch.Tensor, stats: TraversalStats) -> torch.Tensor:
    probs = policy(obs, mask)
    stats.record_forward(obs.shape[0])
    if probs.shape != mask.shape:
        raise ValueError(f"policy returned probs of shape {tuple(probs.shape)}, expected {tuple(mask.shape)}")
    # Illegal actions never get probability, whatever the callable returned.
    return probs.float() * mask


def _check_common(game, traverser: int, num_traversals: int, epsilon: float | None = None) -> None:
    """The arguments every traversal shares (``epsilon`` for the sampled ones)."""
    if epsilon is not None and not 0.0 <= epsilon <= 1.0:
        raise ValueError(f"epsilon must be in [0, 1], got {epsilon!r}")
    if traverser not in (0, 1):
        raise ValueError(f"traverser must be 0 or 1, got {traverser!r}")
    if num_traversals < 1:
        raise ValueError(f"num_traversals must be >= 1, got {num_traversals!r}")


def _root(game, n: int, generator, device, root_state):
    if root_state is None:
        return game.init(n, generator=generator, device=device)
    if batch_size(root_state) != n:
        raise ValueError(f"root_state has {batch_size(root_state)} rows but num_traversals={n}")
    return clone_state(root_state)


# ------------------------------------------------------------------------------------------------
# External sampling
# ------------------------------------------------------------------------------------------------


@dataclass
class _Level:
    """One depth of the expanded tree (all traversals together)."""

    size: int  # nodes at this depth
    terminal_value: torch.Tensor  # [size] utility for the traverser at terminal nodes, 0 elsewhere
    child_parent: torch.Tensor | None = None  # [c] parent index (into this level) of each child
    child_weight: torch.Tensor | None = None  # [c] sigma(parent, a) at traverser parents, 1 at opponent parents
    trav_nodes: torch.Tensor | None = None  # [t] traverser nodes (indices into this level)
    trav_obs: torch.Tensor | None = None
    trav_mask: torch.Tensor | None = None
    trav_child_row: torch.Tensor | None = None  # [k] which traverser node (0..t) each expanded child belongs to
    trav_child_action: torch.Tensor | None = None  # [k] its action; the first k children are these
    root: torch.Tensor | None = None  # [size] traversal index of each node


def external_sampling(
    game,
    traverser: int,
    num_traversals: int,
    traverser_policy: Policy,
    opponent_policy: Policy,
    iteration: int,
    generator: torch.Generator | None = None,
    *,
    record_strategy: bool = True,
    device: str | torch.device = "cpu",
    max_depth: int | None = None,
    root_state: Any | None = None,
) -> TraversalResult:
    """``num_traversals`` external-sampling traversals for ``traverser``, level by level.

    At traverser nodes every legal action is expanded; ``v(h) = sum_a sigma(h,a) v(ha)`` and the
    target is ``r(I,a) = v(ha) - v(h)`` for legal ``a``. Opponent actions are sampled from
    ``opponent_policy`` (strategy samples recorded there when ``record_strategy``).
    ``root_state`` (optional, ``num_traversals`` rows) replaces the random deals of ``game.init``.
    """
    _check_common(game, traverser, num_traversals)
    depth_cap = int(max_depth if max_depth is not None else game.max_game_length)
    stats = TraversalStats(traversals=num_traversals)
    state = _root(game, num_traversals, generator, device, root_state)
    root = torch.arange(num_traversals, device=device)
    levels: list[_Level] = []
    strategy_parts: list[dict[str, torch.Tensor]] = []
    strategy_roots: list[torch.Tensor] = []
    it32 = int(iteration)

    depth = 0
    while True:
        n = batch_size(state)
        terminal = game.is_terminal(state)
        live = torch.nonzero(~terminal).squeeze(1)
        terminal_value = torch.where(terminal, game.returns(state)[:, traverser].float(), 0.0)
        level = _Level(size=n, terminal_value=terminal_value, root=root)
        levels.append(level)
        if live.numel() == 0:
            break
        if depth >= depth_cap:
            # Cut off: score the unfinished games as the engine scores them now.
            stats.cut_offs += int(live.numel())
            level.terminal_value = game.returns(state)[:, traverser].float()
            break
        depth += 1
        stats.decisions += int(live.numel())
        live_state = index_state(state, live)
        player = game.current_player(live_state)
        obs = game.observe(live_state, player)
        mask = game.legal_mask(live_state)
        is_trav = player == traverser
        trav = torch.nonzero(is_trav).squeeze(1)
        opp = torch.nonzero(~is_trav).squeeze(1)

        src_parts, act_parts, weight_parts = [], [], []
        if trav.numel():
            t_obs, t_mask = obs[trav], mask[trav]
            sigma = _call_policy(traverser_policy, t_obs, t_mask, stats)
            pairs = torch.nonzero(t_mask)  # row-major: children of one node are contiguous
            row, act = pairs[:, 0], pairs[:, 1]
            src_parts.append(trav[row])
            act_parts.append(act)
            weight_parts.append(sigma[row, act])
            level.trav_nodes = live[trav]
            level.trav_obs, level.trav_mask = t_obs, t_mask
            level.trav_child_row, level.trav_child_action = row, act
        if opp.numel():
            o_obs, o_mask = obs[opp], mask[opp]
            probs = _call_policy(opponent_policy, o_obs, o_mask, stats)
            a = sample_from_probs(probs, generator)
            src_parts.append(opp)
            act_parts.append(a)
            weight_parts.append(torch.ones(opp.numel(), device=probs.device))
            if record_strategy:
                strategy_parts.append({
                    "obs": o_obs, "mask": o_mask, "policy": probs,
                    "iteration": torch.full((opp.numel(),), it32, dtype=torch.int32, device=o_obs.device),
                })
                strategy_roots.append(root[live[opp]])
        src = torch.cat(src_parts)
        actions = torch.cat(act_parts)
        level.child_parent = live[src]
        level.child_weight = torch.cat(weight_parts)
        state = game.step(index_state(live_state, src), actions)
        root = root[level.child_parent]

    # Back up values from the deepest level; collect targets at traverser nodes.
    adv_parts: list[dict[str, torch.Tensor]] = []
    adv_roots: list[torch.Tensor] = []
    child_values = levels[-1].terminal_value
    for level in reversed(levels[:-1]):
        values = level.terminal_value.clone()
        values.index_add_(0, level.child_parent, level.child_weight * child_values)
        if level.trav_nodes is not None:
            k = level.trav_child_row.numel()
            q = torch.zeros_like(level.trav_mask, dtype=torch.float32)
            q[level.trav_child_row, level.trav_child_action] = child_values[:k]
            v_h = values[level.trav_nodes]
            target = (q - v_h[:, None]) * level.trav_mask
            adv_parts.append({
                "obs": level.trav_obs, "mask": level.trav_mask, "target": target,
                "iteration": torch.full((target.shape[0],), it32, dtype=torch.int32, device=target.device),
            })
            adv_roots.append(level.root[level.trav_nodes])
        child_values = values

    return _result(game, device, stats, adv_parts, strategy_parts, adv_roots, strategy_roots)


# ------------------------------------------------------------------------------------------------
# Sampled play in lockstep (outcome sampling, probe sampling's trajectories and its rollouts)
# ------------------------------------------------------------------------------------------------

TraverserHook = Callable[..., None]  # (state, rows, game_ids, obs, mask, sigma, actions, q) -> None
OpponentHook = Callable[[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor], None]  # (game_ids, obs, mask, probs)


def _play_sampled(game, state, traverser: int, traverser_policy: Policy, opponent_policy: Policy, generator,
                  stats: TraversalStats, step_cap: int, *, epsilon: float = 0.0,
                  group: torch.Tensor | None = None, num_groups: int = 0, explore_once: bool = False,
                  mark_explorations: bool = False,
                  on_traverser: TraverserHook | None = None, on_opponent: OpponentHook | None = None) -> torch.Tensor:
    """Play every row of ``state`` to its end, all rows in lockstep, and return the traverser's
    utility per row (games stopped by ``step_cap`` are scored as they stand and counted).

    The traverser draws from ``q = epsilon * uniform(legal) + (1 - epsilon) * sigma``, the
    opponent from its policy; one policy call per player per step. ``on_traverser(state, rows,
    game_ids, obs, mask, sigma, actions, q)`` sees the traverser's rows before each step,
    ``on_opponent(game_ids, obs, mask, probs)`` the opponent's. With ``group`` (``[n]`` in
    ``0..num_groups-1``), rows of a group draw with the same uniform number at each step (common
    random numbers), so rollouts that start from siblings diverge only where the game makes them.
    ``explore_once``: the traverser explores (uniform over legal actions) with probability
    ``epsilon`` at each node until it first does, and plays sigma exactly from then on;
    ``on_traverser`` then also gets ``deviated`` [m] bool (the game's exploration happened at or
    before this node: everything after it is sigma) and ``explored`` [m] bool (this node's action
    was the exploration) as keywords. ``mark_explorations``: the same behaviour as the plain
    ``q`` mixture (a uniform action with probability ``epsilon`` at every node), but which branch
    drew each action is passed on as ``explored`` (and ``deviated``: any exploration so far).
    Finished rows are dropped once they are half the batch, so later steps do no work for them."""
    n = batch_size(state)
    device = game.is_terminal(state).device
    game_id = torch.arange(n, device=device)  # row -> original row (rows are compacted as games end)
    deviated = torch.zeros(n, dtype=torch.bool, device=device)  # explore_once: per original row
    utility = torch.zeros(n, dtype=torch.float32, device=device)
    engine_cut_off = getattr(game, "cut_off", None)  # optional: [n] bool, ended by the engine's own cap
    steps = 0
    while True:
        terminal = game.is_terminal(state)
        live_count = int((~terminal).sum())
        if live_count == 0:
            break
        if steps >= step_cap:
            stats.cut_offs += live_count
            break
        if live_count * 2 <= terminal.shape[0] and terminal.shape[0] > 64:
            done = torch.nonzero(terminal).squeeze(1)
            done_state = index_state(state, done)
            utility[game_id[done]] = game.returns(done_state)[:, traverser].float()
            if engine_cut_off is not None:
                stats.cut_offs += int(engine_cut_off(done_state).sum())
            keep = torch.nonzero(~terminal).squeeze(1)
            state = index_state(state, keep)
            game_id = game_id[keep]
            terminal = terminal[keep]
        steps += 1
        stats.decisions += live_count
        live = ~terminal
        player = game.current_player(state).clamp(0, 1)
        obs = game.observe(state, player)
        mask = game.legal_mask(state)
        uniform = None
        if group is not None:
            uniform = torch.rand(num_groups, generator=generator, device=device)[group[game_id]]
        is_trav = live & (player == traverser)
        trav = torch.nonzero(is_trav).squeeze(1)
        opp = torch.nonzero(live & ~is_trav).squeeze(1)
        actions = torch.zeros(player.shape[0], dtype=torch.long, device=player.device)
        if trav.numel():
            t_obs, t_mask = obs[trav], mask[trav]
            sigma = _call_policy(traverser_policy, t_obs, t_mask, stats)
            q = sigma
            extra = {}
            if epsilon > 0.0:
                legal = t_mask.float()
                uniform_legal = legal / legal.sum(dim=1, keepdim=True)
                q = epsilon * uniform_legal + (1.0 - epsilon) * sigma
            if explore_once or mark_explorations:
                before = deviated[game_id[trav]]
                explored = torch.rand(trav.shape[0], generator=generator, device=device) < epsilon
                if explore_once:
                    explored &= ~before
                behaviour = torch.where(explored[:, None], uniform_legal, sigma) if epsilon > 0.0 else sigma
                deviated[game_id[trav]] = before | explored
                extra["deviated"] = before | explored
                extra["explored"] = explored
            else:
                behaviour = q
            a = sample_from_probs(behaviour, generator, uniform=None if uniform is None else uniform[trav])
            actions[trav] = a
            if on_traverser is not None:
                on_traverser(state, trav, game_id[trav], t_obs, t_mask, sigma, a, q, **extra)
        if opp.numel():
            o_obs, o_mask = obs[opp], mask[opp]
            probs = _call_policy(opponent_policy, o_obs, o_mask, stats)
            actions[opp] = sample_from_probs(probs, generator, uniform=None if uniform is None else uniform[opp])
            if on_opponent is not None:
                on_opponent(game_id[opp], o_obs, o_mask, probs)
        state = game.step(state, actions)
    utility[game_id] = game.returns(state)[:, traverser].float()
    if engine_cut_off is not None:
        stats.cut_offs += int((engine_cut_off(state) & game.is_terminal(state)).sum())
    return utility


def _strategy_recorder(iteration: int, parts: list, roots: list) -> OpponentHook:
    """An ``on_opponent`` hook that keeps the opponent's nodes as strategy samples."""
    def record(game_ids, obs, mask, probs):
        parts.append({"obs": obs, "mask": mask, "policy": probs,
                      "iteration": torch.full((obs.shape[0],), iteration, dtype=torch.int32, device=obs.device)})
        roots.append(game_ids)
    return record


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
    *,
    epsilon: float = 0.6,
    importance_clip: float | None = None,
    unsampled_target: str = "zero",
    tail_correction: bool = True,
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

    The baseline ``b`` is 0 for ``unsampled_target="zero"`` (the appendix's estimator). For
    ``"mean"`` it is a per-traversal constant, the mean terminal utility of the *other* games of
    the batch (leave-one-out, so it does not depend on the game's own trajectory and the
    estimator stays unbiased). ``importance_clip`` clips every ``v~(h,a)`` (and so ``v~(h)``)
    to ``+-importance_clip``; targets where that changed the sampled action's value are counted.
    ``tail_correction=False`` uses the leaf utility for ``v~(h a*)`` at every traverser node
    instead of the importance-corrected ``v~`` walked back from below: biased (it values the tail
    under ``q`` rather than ``sigma``, a bias that shrinks with epsilon) but free of the importance
    weights that compound over long games (Lost Cities: ~70 own decisions, weights of 1e4-1e5).
    ``root_state`` (optional, ``num_traversals`` rows) replaces the random deals of ``game.init``.
    """
    _check_common(game, traverser, num_traversals, epsilon)
    if unsampled_target not in UNSAMPLED_TARGETS:
        raise ValueError(f"unsampled_target must be one of {UNSAMPLED_TARGETS}, got {unsampled_target!r}")
    if importance_clip is not None and importance_clip <= 0:
        raise ValueError(f"importance_clip must be positive or None, got {importance_clip!r}")
    step_cap = int(max_steps if max_steps is not None else game.max_game_length)
    n = num_traversals
    stats = TraversalStats(traversals=n)
    it32 = int(iteration)

    state = _root(game, n, generator, device, root_state)
    trav_records: list[tuple[torch.Tensor, ...]] = []
    strategy_parts: list[dict[str, torch.Tensor]] = []
    strategy_roots: list[torch.Tensor] = []

    def record_traverser(state, rows, game_ids, obs, mask, sigma, actions, q):
        trav_records.append((game_ids, obs, mask, sigma, actions, q.gather(1, actions[:, None]).squeeze(1)))

    utility = _play_sampled(game, state, traverser, traverser_policy, opponent_policy, generator, stats, step_cap,
                            epsilon=epsilon, on_traverser=record_traverser,
                            on_opponent=_strategy_recorder(it32, strategy_parts, strategy_roots) if record_strategy else None)

    if unsampled_target == "mean" and n > 1:
        baseline = (utility.sum() - utility) / (n - 1)
    else:
        baseline = torch.zeros_like(utility)

    value = utility.clone()  # v~ of each game's current node, walked back from the leaf
    tail_weight = torch.ones_like(utility)  # product of sigma(a*)/q(a*) below the current node
    adv_parts: list[dict[str, torch.Tensor]] = []
    adv_roots: list[torch.Tensor] = []
    clip = importance_clip
    for gid, t_obs, t_mask, sigma, a, q_a in reversed(trav_records):
        v_child = value[gid]
        b = baseline[gid]
        weight = tail_weight[gid] / q_a
        stats.max_importance_weight = max(stats.max_importance_weight, float(weight.max()))
        stats.importance_weight_sum += float(weight.sum())
        tail_weight[gid] = weight * sigma.gather(1, a[:, None]).squeeze(1)
        v_sampled = b + (v_child - b) / q_a  # v~(h, a*)
        if clip is not None:
            clipped = v_sampled.abs() > clip
            stats.clipped_targets += int(clipped.sum())
            v_sampled = v_sampled.clamp(-clip, clip)
        v_ha = torch.where(t_mask, b[:, None], 0.0)
        v_ha.scatter_(1, a[:, None], v_sampled[:, None])
        v_h = (sigma * v_ha).sum(dim=1)
        target = (v_ha - v_h[:, None]) * t_mask
        adv_parts.append({
            "obs": t_obs, "mask": t_mask, "target": target,
            "iteration": torch.full((gid.numel(),), it32, dtype=torch.int32, device=t_obs.device),
        })
        adv_roots.append(gid)
        if tail_correction:
            value[gid] = v_h
        else:
            tail_weight[gid] = 1.0

    return _result(game, device, stats, adv_parts, strategy_parts, adv_roots, strategy_roots)


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
    *,
    epsilon: float = 0.1,
    explore: str = "once",
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
    where "no exploration after it" would favour short games), and ``game`` [m] (the traversal
    it belongs to; a game's nodes come in play order, for ``lambda_returns``); ``target`` is zero. The trainer fits ``Q(I, a)`` to (obs, action, utility) and fills in
    ``target = Q(I, .) - sum_a sigma(a) Q(I, a)`` on legal actions: no importance weight, so the
    target's noise is the critic's error rather than the game's outcome noise times ``1/q``.
    Every visited node gets a target for every legal action, so exploration only has to reach
    information sets off sigma's path and teach the critic the actions sigma rarely takes.

    ``explore="every"``: the traverser explores with probability ``epsilon`` at every node, so
    the critic sees off-sigma actions late in the game too, not only near its start; each node's
    ``explored`` [m] says whether its action was an exploration, and ``on_policy_tail`` means no
    exploration after the node (slightly favours short games: only a critic with nothing to
    bootstrap from uses it). A bootstrapping critic (``lambda_returns`` with ``cut=explored``)
    learns from every node."""
    _check_common(game, traverser, num_traversals, epsilon)
    if explore not in EXPLORE_MODES:
        raise ValueError(f"explore must be one of {EXPLORE_MODES}, got {explore!r}")
    step_cap = int(max_steps if max_steps is not None else game.max_game_length)
    stats = TraversalStats(traversals=num_traversals)
    it32 = int(iteration)
    state = _root(game, num_traversals, generator, device, root_state)
    records: list[tuple[torch.Tensor, ...]] = []
    strategy_parts: list[dict[str, torch.Tensor]] = []
    strategy_roots: list[torch.Tensor] = []

    def record_traverser(state, rows, game_ids, obs, mask, sigma, actions, q, deviated, explored):
        opponent = torch.full((batch_size(state),), 1 - traverser, dtype=torch.long, device=obs.device)
        opponent_obs = game.observe(state, opponent)[rows]
        records.append((game_ids, obs, opponent_obs, mask, sigma, actions, deviated, explored))

    once = explore == "once"
    utility = _play_sampled(game, state, traverser, traverser_policy, opponent_policy, generator, stats, step_cap,
                            epsilon=epsilon, explore_once=once, mark_explorations=not once,
                            on_traverser=record_traverser,
                            on_opponent=_strategy_recorder(it32, strategy_parts, strategy_roots) if record_strategy else None)
    if not once:  # on_policy_tail: no exploration after the node (a game's explorations so far vs all of them)
        count = torch.zeros(num_traversals, dtype=torch.long, device=utility.device)
        so_far = []
        for record in records:
            count[record[0]] += record[7].long()
            so_far.append(count[record[0]])
        records = [(*r[:6], n == count[r[0]], r[7]) for r, n in zip(records, so_far)]
    adv_parts = [{
        "obs": obs, "mask": mask, "target": torch.zeros(mask.shape, dtype=torch.float32, device=mask.device),
        "iteration": torch.full((gid.numel(),), it32, dtype=torch.int32, device=obs.device),
        "sigma": sigma.float(), "action": a, "utility": utility[gid], "on_policy_tail": tail,
        "explored": explored, "opponent_obs": opponent_obs, "game": gid,
    } for gid, obs, opponent_obs, mask, sigma, a, tail, explored in records]
    return _result(game, device, stats, adv_parts, strategy_parts, [r[0] for r in records], strategy_roots)


def lambda_returns(game: torch.Tensor, value: torch.Tensor, utility: torch.Tensor, lam: float,
                   cut: torch.Tensor | None = None) -> torch.Tensor:
    """TD(lambda) returns of the traverser nodes of critic trajectories: ``game`` [m] says which
    game each node belongs to (a game's nodes in play order), ``value`` [m] is the critic's
    ``V(I) = sum_a sigma(a) Q(I, a)`` at each node and ``utility`` [m] the game's final utility.
    The return of a game's last node is its utility; of an earlier node,
    ``(1 - lam) * V(next node) + lam * (return of the next node)``: ``lam = 1`` gives the final
    utility (Monte Carlo), ``lam = 0`` the critic's value of the next node (TD(0)). The
    bootstrapped returns carry less of the deck's and the players' future randomness.
    ``cut`` [m] bool marks nodes whose action did not follow sigma (explorations): the trace
    stops there, so the node before returns that node's ``V`` alone, and the returns stay
    returns of sigma whatever was explored later."""
    if not 0.0 <= lam <= 1.0:
        raise ValueError(f"lambda must be in [0, 1], got {lam!r}")
    m = game.shape[0]
    returns = utility.float().clone()
    if m == 0 or (lam == 1.0 and (cut is None or not bool(cut.any()))):
        return returns
    order = torch.sort(game, stable=True).indices  # each game's nodes together, in play order
    # each sorted position counted from its game's last node (0 for the last)
    counts = torch.unique_consecutive(game[order], return_counts=True)[1]
    last_index = torch.repeat_interleave(torch.cumsum(counts, 0) - 1, counts)
    from_end = last_index - torch.arange(m, device=game.device)
    value = value.float()
    for k in range(1, int(from_end.max()) + 1):
        at = torch.nonzero(from_end == k).squeeze(1)  # in sorted order: the next node is the next position
        rows, nxt = order[at], order[at + 1]
        trace = lam if cut is None else torch.where(cut[nxt], 0.0, lam)
        returns[rows] = (1.0 - trace) * value[nxt] + trace * returns[nxt]
    return returns


# ------------------------------------------------------------------------------------------------
# Probe sampling
# ------------------------------------------------------------------------------------------------


def probe_sampling(
    game,
    traverser: int,
    num_traversals: int,
    traverser_policy: Policy,
    opponent_policy: Policy,
    iteration: int,
    generator: torch.Generator | None = None,
    *,
    epsilon: float = 0.0,
    probe_rate: float = 0.05,
    probe_batch_size: int = 16384,
    record_strategy: bool = True,
    device: str | torch.device = "cpu",
    max_steps: int | None = None,
    root_state: Any | None = None,
) -> TraversalResult:
    """``num_traversals`` trajectories for ``traverser`` whose sampled nodes are valued by probes.

    Phase 1 plays the games in lockstep: the traverser draws from ``q = epsilon * uniform(legal)
    + (1 - epsilon) * sigma``, the opponent plays ``opponent_policy`` (its nodes are the strategy
    samples), and each traverser node is kept as a *probe root* with probability ``probe_rate``.
    Phase 2 expands every probe root into one child per legal action and plays every child to
    the end with sigma for both players (one rollout, a "probe" as in Gibson et al. 2012), all
    children in lockstep, siblings sharing their random numbers; ``v~(h,a)`` is the child's
    utility and the target ``v~(h,a) - sum_a sigma(a) v~(h,a)`` on legal actions.

    Unbiased, like external sampling: given the information state, the history is distributed
    by the opponent's and chance's reach (the traverser's own reach, and so ``epsilon``, only
    changes which information states are sampled), and each rollout is an unbiased sample of
    ``v(h a)`` under sigma. Unlike outcome sampling there are no importance weights, so the
    variance does not grow with game length; the price is ``|A| x`` (remaining length) decisions
    per sample. Roots are expanded in chunks of at most ``probe_batch_size`` children.
    """
    _check_common(game, traverser, num_traversals, epsilon)
    if not 0.0 < probe_rate <= 1.0:
        raise ValueError(f"probe_rate must be in (0, 1], got {probe_rate!r}")
    if probe_batch_size < 1:
        raise ValueError(f"probe_batch_size must be >= 1, got {probe_batch_size!r}")
    step_cap = int(max_steps if max_steps is not None else game.max_game_length)
    n = num_traversals
    stats = TraversalStats(traversals=n)
    it32 = int(iteration)

    state = _root(game, n, generator, device, root_state)
    probe_parts: list[tuple[Any, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]] = []
    strategy_parts: list[dict[str, torch.Tensor]] = []
    strategy_roots: list[torch.Tensor] = []

    def keep_probe_roots(state, rows, game_ids, obs, mask, sigma, actions, q):
        chosen = torch.nonzero(torch.rand(rows.shape[0], generator=generator, device=rows.device) < probe_rate).squeeze(1)
        if chosen.numel():
            probe_parts.append((index_state(state, rows[chosen]), game_ids[chosen], obs[chosen], mask[chosen],
                                sigma[chosen]))

    _play_sampled(game, state, traverser, traverser_policy, opponent_policy, generator, stats, step_cap,
                  epsilon=epsilon, on_traverser=keep_probe_roots,
                  on_opponent=_strategy_recorder(it32, strategy_parts, strategy_roots) if record_strategy else None)

    if not probe_parts:
        return _result(game, device, stats, [], strategy_parts, [], strategy_roots)
    roots = concat_states([p[0] for p in probe_parts])
    root_game = torch.cat([p[1] for p in probe_parts])
    r_obs, r_mask, r_sigma = (torch.cat([p[k] for p in probe_parts]) for k in (2, 3, 4))
    values = torch.zeros(r_mask.shape, dtype=torch.float32, device=r_mask.device)
    # Chunks of consecutive roots with at most probe_batch_size children (at least one root each).
    ends = torch.cumsum(r_mask.sum(dim=1), 0).cpu()  # children up to and including each root
    start, num_roots = 0, ends.shape[0]
    while start < num_roots:
        offset = int(ends[start - 1]) if start else 0
        # The last root whose children still fit (one search per chunk, not a step per root).
        stop = max(start + 1, int(torch.searchsorted(ends, offset + probe_batch_size, right=True)))
        local_root, action = torch.nonzero(r_mask[start:stop], as_tuple=True)
        children = game.step(index_state(roots, start + local_root), action)
        values[start + local_root, action] = _play_sampled(
            game, children, traverser, traverser_policy, opponent_policy, generator, stats, step_cap,
            group=local_root, num_groups=stop - start)
        start = stop
    v_h = (r_sigma * values).sum(dim=1)
    target = (values - v_h[:, None]) * r_mask
    adv = {"obs": r_obs, "mask": r_mask, "target": target,
           "iteration": torch.full((r_obs.shape[0],), it32, dtype=torch.int32, device=r_obs.device)}
    return _result(game, device, stats, [adv], strategy_parts, [root_game], strategy_roots)


def traverse(
    algorithm: str,
    game,
    traverser: int,
    num_traversals: int,
    traverser_policy: Policy,
    opponent_policy: Policy,
    iteration: int,
    generator: torch.Generator | None = None,
    *,
    epsilon: float = 0.6,
    importance_clip: float | None = None,
    unsampled_target: str = "zero",
    tail_correction: bool = True,
    probe_rate: float = 0.05,
    explore: str = "once",
    record_strategy: bool = True,
    device: str | torch.device = "cpu",
) -> TraversalResult:
    """Dispatch to ``external_sampling``, ``outcome_sampling`` or ``probe_sampling`` by name
    (config ``traversal.algorithm``)."""
    if algorithm == "external":
        return external_sampling(
            game, traverser, num_traversals, traverser_policy, opponent_policy, iteration, generator,
            record_strategy=record_strategy, device=device,
        )
    if algorithm == "outcome":
        return outcome_sampling(
            game, traverser, num_traversals, traverser_policy, opponent_policy, iteration, generator,
            epsilon=epsilon, importance_clip=importance_clip, unsampled_target=unsampled_target,
            tail_correction=tail_correction, record_strategy=record_strategy, device=device,
        )
    if algorithm == "critic":
        return critic_sampling(
            game, traverser, num_traversals, traverser_policy, opponent_policy, iteration, generator,
            epsilon=epsilon, explore=explore, record_strategy=record_strategy, device=device,
        )
    if algorithm == "probe":
        return probe_sampling(
            game, traverser, num_traversals, traverser_policy, opponent_policy, iteration, generator,
            epsilon=epsilon, probe_rate=probe_rate, record_strategy=record_strategy, device=device,
        )
    raise ValueError(f"traversal algorithm must be one of {ALGORITHMS}, got {algorithm!r}")
