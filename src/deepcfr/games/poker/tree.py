"""The full game tree of a small game whose chance events are all in the deal (Kuhn, Leduc).

The tree is built with the batched engine itself, level by level: every deal is a root (with its
chance probability), and each level expands every legal action of every non-terminal node in one
``step`` call. So the tree is exactly the engine's game, and exact evaluation
(deepcfr.evaluate.exploitability) needs nothing but the engine.

A game qualifies if it has ``chance_deals() -> (deals [D, k] long, probs [D] float64)`` and
``init_from_deal(deals)`` besides the BatchedGame protocol, and if every information state's
histories have the same length (true when the observation holds the whole action history).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..base import index_state


@dataclass(frozen=True)
class GameTree:
    """Nodes are numbered level by level: nodes of depth d are ``level_start[d]:level_start[d+1]``,
    and every child has a larger index than its parent."""

    deals: torch.Tensor  # [D, k] long, every deal (chance outcome)
    deal_probs: torch.Tensor  # [D] float64
    deal: torch.Tensor  # [N] long, deal index of each node
    parent: torch.Tensor  # [N] long, -1 at roots
    depth: torch.Tensor  # [N] long, decisions from the root
    level_start: tuple[int, ...]  # len = number of levels + 1
    history: torch.Tensor  # [N, max_game_length] long, actions from the root, -1 padded
    player: torch.Tensor  # [N] long, seat to move, -1 at terminal nodes
    children: torch.Tensor  # [N, A] long, child per legal action, -1 otherwise
    returns: torch.Tensor  # [N, 2] float64, terminal utilities (zero at decision nodes)
    infostate: torch.Tensor  # [N] long, the mover's information state id, -1 at terminal nodes
    infostate_obs: torch.Tensor  # [M, obs_size] observation rows (sorted, unique)
    infostate_mask: torch.Tensor  # [M, A] bool legal actions
    infostate_player: torch.Tensor  # [M] long seat that acts there

    @property
    def num_nodes(self) -> int:
        return int(self.parent.shape[0])

    @property
    def num_infostates(self) -> int:
        return int(self.infostate_obs.shape[0])


def build_game_tree(game) -> GameTree:
    deals, deal_probs = game.chance_deals()
    state = game.init_from_deal(deals)
    num_deals = deals.shape[0]
    A, L = game.num_actions, game.max_game_length

    parents, depths, histories, players, masks, returns, obs_rows, deal_ids = [], [], [], [], [], [], [], []
    child_links = []  # (parent node ids, actions, child node ids) per level
    level_start = [0]
    node_ids = torch.arange(num_deals)
    parent = torch.full((num_deals,), -1, dtype=torch.long)
    history = torch.full((num_deals, L), -1, dtype=torch.long)
    deal = torch.arange(num_deals)
    depth = 0
    while True:
        terminal = game.is_terminal(state)
        player = torch.where(terminal, -1, game.current_player(state).long())
        mask = game.legal_mask(state) & ~terminal[:, None]
        parents.append(parent)
        depths.append(torch.full_like(parent, depth))
        histories.append(history)
        players.append(player)
        masks.append(mask)
        returns.append(game.returns(state).to(torch.float64))
        obs_rows.append(game.observe(state, player.clamp(min=0)))
        deal_ids.append(deal)
        level_start.append(level_start[-1] + parent.shape[0])

        rows, actions = mask.nonzero(as_tuple=True)
        if rows.numel() == 0:
            break
        if depth >= L:
            raise RuntimeError(f"{game.name}: game longer than max_game_length={L}")
        state = index_state(state, rows)
        game.step(state, actions)
        child_ids = level_start[-1] + torch.arange(rows.numel())
        child_links.append((node_ids[rows], actions, child_ids))
        parent = node_ids[rows]
        history = history[rows].clone()
        history[:, depth] = actions
        deal = deal[rows]
        node_ids = child_ids
        depth += 1

    N = level_start[-1]
    children = torch.full((N, A), -1, dtype=torch.long)
    for parent_ids, actions, child_ids in child_links:
        children[parent_ids, actions] = child_ids
    player = torch.cat(players)
    mask = torch.cat(masks)
    obs = torch.cat(obs_rows)
    depth_all = torch.cat(depths)

    decision = player >= 0
    infostate_obs, inverse = torch.unique(obs[decision], dim=0, return_inverse=True)
    M = infostate_obs.shape[0]
    infostate = torch.full((N,), -1, dtype=torch.long)
    infostate[decision] = inverse
    first_node = torch.full((M,), N, dtype=torch.long).scatter_reduce_(
        0, inverse, decision.nonzero().squeeze(1), reduce="amin"
    )
    infostate_mask = mask[first_node]
    infostate_player = player[first_node]
    # The observation must determine the mover, the legal actions and (for level-by-level best
    # responses) the depth; a disagreement is an engine bug.
    for name, per_node in (("legal mask", mask), ("player", player), ("depth", depth_all)):
        if not torch.equal(per_node[decision], per_node[first_node][inverse]):
            raise RuntimeError(f"{game.name}: observation does not determine the {name}")

    return GameTree(
        deals=deals,
        deal_probs=deal_probs.to(torch.float64),
        deal=torch.cat(deal_ids),
        parent=torch.cat(parents),
        depth=depth_all,
        level_start=tuple(level_start),
        history=torch.cat(histories),
        player=player,
        children=children,
        returns=torch.cat(returns),
        infostate=infostate,
        infostate_obs=infostate_obs,
        infostate_mask=infostate_mask,
        infostate_player=infostate_player,
    )


def game_tree(game) -> GameTree:
    """The game's tree, built once per game object and cached on it (it is immutable)."""
    tree = getattr(game, "_game_tree_cache", None)
    if tree is None:
        tree = build_game_tree(game)
        game._game_tree_cache = tree
    return tree
