"""External sampling (Kuhn, Leduc): every traverser action expanded at every node, level by level
for all traversals together."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

import torch

from deepcfr.games.base import Policy, batch_size, index_state, sample_from_probs

from .traversal_core import TraversalBatch, TraversalResult, TraversalStats, call_policy, start_traversal


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
    batch, state = start_traversal(
        game, traverser, num_traversals, iteration, generator, device, root_state, record_strategy, max_depth
    )
    stats = batch.stats
    root = torch.arange(num_traversals, device=device)
    levels: list[_Level] = []

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
        if depth >= batch.step_cap:
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

        children = []  # (parent row among the live rows, action, weight) per kind of node
        if trav.numel():
            src, act, weight = _expand_traverser(level, live, trav, obs[trav], mask[trav], traverser_policy, stats)
            children.append((src, act, weight))
        if opp.numel():
            o_obs, o_mask = obs[opp], mask[opp]
            probs = call_policy(opponent_policy, o_obs, o_mask, stats)
            a = sample_from_probs(probs, generator)
            children.append((opp, a, torch.ones(opp.numel(), device=probs.device)))
            if record_strategy:  # the opponent's sigma_t at its on-policy nodes
                batch.add_strategy(root[live[opp]], o_obs, o_mask, probs)
        src, actions, weight = (torch.cat(part) for part in zip(*children))
        level.child_parent = live[src]
        level.child_weight = weight
        state = game.step(index_state(live_state, src), actions)
        root = root[level.child_parent]

    _back_up(batch, levels)
    return batch.result()


def _expand_traverser(level: _Level, live, trav, t_obs, t_mask, traverser_policy: Policy, stats: TraversalStats):
    """Every legal action of the traverser's nodes as a child: (parent row among the live rows,
    action, sigma of that action); the level keeps what the back-up needs."""
    sigma = call_policy(traverser_policy, t_obs, t_mask, stats)
    pairs = torch.nonzero(t_mask)  # row-major: children of one node are contiguous
    row, act = pairs[:, 0], pairs[:, 1]
    level.trav_nodes = live[trav]
    level.trav_obs, level.trav_mask = t_obs, t_mask
    level.trav_child_row, level.trav_child_action = row, act
    return trav[row], act, sigma[row, act]


def _back_up(batch: TraversalBatch, levels: list[_Level]) -> None:
    """Values backed up from the deepest level, ``v(h) = sum_a sigma(h, a) v(ha)`` (opponent
    children weigh 1: they are sampled), and the targets ``v(ha) - v(h)`` at traverser nodes (added
    to ``batch``)."""
    child_values = levels[-1].terminal_value
    for level in reversed(levels[:-1]):
        values = level.terminal_value.clone()
        # every level above the deepest has children; one with traverser nodes has their fields set
        values.index_add_(
            0, cast(torch.Tensor, level.child_parent), cast(torch.Tensor, level.child_weight) * child_values
        )
        if level.trav_nodes is not None:
            trav_mask = cast(torch.Tensor, level.trav_mask)
            child_row = cast(torch.Tensor, level.trav_child_row)
            child_action = cast(torch.Tensor, level.trav_child_action)
            k = child_row.numel()
            q = torch.zeros_like(trav_mask, dtype=torch.float32)
            q[child_row, child_action] = child_values[:k]
            v_h = values[level.trav_nodes]
            target = (q - v_h[:, None]) * trav_mask
            roots = cast(torch.Tensor, level.root)[level.trav_nodes]
            batch.add_advantage(roots, cast(torch.Tensor, level.trav_obs), trav_mask, target)
        child_values = values
