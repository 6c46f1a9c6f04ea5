"""A search that plans past one decision (issue 66): its own next turns chosen well too.

The one-decision search (rollout.py) rolls each candidate out by the base policy: the decider's
own later moves are the network's, so it improves on the network by one step. ``PlanSearch``
chooses this move knowing that its next moves will be chosen well too. For each decision:

- **Worlds**: ``determinizations`` full states, each consistent with what the decider has seen,
  drawn as the one-decision search draws them (``RolloutSearch.deal_worlds``): the opponent's
  hidden cards from the learned hand belief (``belief=learned``), the belief's particles, or
  uniformly, the undrawn deck shuffled; with ``oracle`` the match's TRUE state with only the deck
  reshuffled (the ceiling's research bound, never a fair player).
- **Tree**: at every decision of the decider in its next ``plan_depth`` turns (the root's turn
  counts as the first; a turn is its moves between two of the opponent's), the base's top moves
  branch: ``candidates`` at the root, ``plan_candidates`` below it (those under ``plan_min_prior``
  left out); the opponent's replies are played in each world on the opponent's own view of it by
  the player it is known to be (``face``) or else the rollout policy, as are the decider's moves
  past the plan (greedy, or sampled with the same random numbers in every branch of a world),
  chance by the world's deck; ``rollout_plies`` decisions after the opponent's first move past
  the plan, the value function values the state (none: played to the end).
- **Backup**: below the root, the decider's best move: with ``plan_choice=infoset`` one move for
  all the worlds it cannot tell apart at that node (its observation the same, under the same root
  move), the best mean over them: the tree is keyed on the decider's information sets; with
  ``per_world`` each world its own best move, which knows the order of the deck (clairvoyant: an
  optimistic value, strategy fusion). At the root one move for all worlds, by the one-decision
  search's rule: the best mean plus ``prior_weight`` times the base's log probability among the
  moves that pass the paired test (``min_z``), i.e. the greedy move of pi_net exp(Q / tau) with
  tau = ``prior_weight``.
- **Anytime**: under ``time_limit_s`` the worlds are planned in rounds (``min_determinizations``
  first, then as many as all before while the rounds so far predict the next ends within the
  budget); a node's information set then gathers the worlds of its round.

Shape: all deciding games x root candidates x worlds x the tree's branches advance in one
lockstep batch, one engine step and one forward per network a ply over every row still running
(rows leave the batch as they end or are valued); roots are chunked so that the rows in flight
stay near ``max_batch``. A node's children come from ``nonzero`` of its valid candidates, so a
branch pruned by ``plan_min_prior`` or a game that ends costs nothing further.
"""

from __future__ import annotations

import math

import torch

from ..games.base import concat_states, index_state
from .config import SearchConfig
from .rollout import RolloutSearch

_MIX = 0x9E3779B97F4A7C15 - (1 << 64)  # a 64-bit odd constant as a signed int64 (golden ratio)


def observation_keys(obs: torch.Tensor, salt: torch.Tensor) -> torch.Tensor:
    """[n] int64 hash of each row of ``obs [n, K]`` (uint8) and its ``salt [n]``: equal rows with
    equal salts get equal keys; distinct ones collide with probability about 2^-64 a pair."""
    n, k = obs.shape
    words = torch.nn.functional.pad(obs, (0, -k % 8)).contiguous().view(torch.int64)  # [n, ceil(k / 8)]
    mix = (torch.arange(1, words.shape[1] + 2, device=obs.device, dtype=torch.int64) * _MIX) | 1
    key = (words * mix[:-1]).sum(dim=1) + salt.long() * mix[-1]
    return key ^ (key >> 29)


class _Edges:
    """The tree's edges (the root's first): each one's value, set where its row ends or is valued,
    and the branchings (each decider node's children), backed up deepest first."""

    def __init__(self, count: int, device: torch.device):
        self.parts = [torch.zeros(count, dtype=torch.float64, device=device)]
        self.count = count
        self.events: list = []  # (parent edges [R], group [R], first child edge, node [E], slot [E], width)

    def record(self, edge: torch.Tensor, value: torch.Tensor) -> None:
        flat = torch.cat(self.parts) if len(self.parts) > 1 else self.parts[0]
        flat[edge] = value
        self.parts = [flat]

    def branch(self, parent: torch.Tensor, group: torch.Tensor, which, slot, width: int) -> torch.Tensor:
        """The new edges of the children (node ``which``'s candidate ``slot``) of the ``parent`` edges."""
        first = self.count
        self.events.append((parent, group, first, which, slot, width))
        self.parts.append(torch.zeros(which.numel(), dtype=torch.float64, device=parent.device))
        self.count += which.numel()
        return first + torch.arange(which.numel(), device=parent.device)

    def backed_up(self) -> torch.Tensor:
        """Every edge's value, a branching's parent given its best child's: one move for the nodes
        of a group."""
        flat = torch.cat(self.parts) if len(self.parts) > 1 else self.parts[0]
        for parent, group, first, which, slot, width in reversed(self.events):
            table = torch.full((parent.numel(), width), -math.inf, dtype=torch.float64, device=flat.device)
            table[which, slot] = flat[first : first + which.numel()]
            totals = torch.zeros(int(group.max()) + 1, width, dtype=torch.float64, device=flat.device)
            choice = totals.index_add_(0, group, table).argmax(dim=1)  # a group's nodes share one observation
            flat[parent] = table.gather(1, choice[group][:, None]).squeeze(1)
        return flat


class _Frontier:
    """The rows of the tree still running, and what each carries."""

    def __init__(self, states, root, rootslot, stream, edge, turn, prev_opp, tail):
        self.states, self.root, self.rootslot, self.stream = states, root, rootslot, stream
        self.edge, self.turn, self.prev_opp, self.tail = edge, turn, prev_opp, tail

    @staticmethod
    def roots(worlds, m: int, k: int, d: int, dev: torch.device) -> _Frontier:
        """The root's edges, before its moves, in ``[m, k, d]`` layout: candidate-major inside a
        decision, worlds innermost (``worlds``: ``[m * d]``, row ``i * d + j``)."""
        order = torch.arange(m * d, device=dev).view(m, 1, d).expand(m, k, d).reshape(-1)
        M = m * k * d
        return _Frontier(
            index_state(worlds, order),
            torch.arange(m, device=dev).view(m, 1, 1).expand(m, k, d).reshape(-1),
            torch.arange(m * k, device=dev).view(m, k, 1).expand(m, k, d).reshape(-1),
            order.clone(),
            torch.arange(M, device=dev),
            torch.ones(M, dtype=torch.long, device=dev),
            torch.zeros(M, dtype=torch.bool, device=dev),
            torch.full((M,), -1, dtype=torch.long, device=dev),
        )

    def take(self, idx: torch.Tensor) -> _Frontier:
        return _Frontier(
            index_state(self.states, idx),
            self.root[idx],
            self.rootslot[idx],
            self.stream[idx],
            self.edge[idx],
            self.turn[idx],
            self.prev_opp[idx],
            self.tail[idx],
        )

    @staticmethod
    def join(parts: list[_Frontier]) -> _Frontier:
        parts = [p for p in parts if p.root.numel()]
        if len(parts) == 1:
            return parts[0]
        return _Frontier(
            concat_states([p.states for p in parts]),
            *(
                torch.cat([getattr(p, f) for p in parts])
                for f in ("root", "rootslot", "stream", "edge", "turn", "prev_opp", "tail")
            ),
        )

    @property
    def size(self) -> int:
        return self.root.numel()


class PlanSearch(RolloutSearch):
    """The search that plans ``plan_depth`` of the decider's turns (module docstring); the same
    settings, players and stats as the one-decision search it extends, whose worlds, ranking,
    rollout policy, value function and choice rule it uses."""

    plans = True

    def __init__(self, game, base, config: SearchConfig | None = None, **parts):
        """``parts``: the one-decision search's (rollout_policy, device, leaf_value, opponent, hand_belief)."""
        config = config or SearchConfig()
        if config.plan_depth is None:
            raise ValueError(
                "PlanSearch plans search.plan_depth turns: set it (none is the one-decision RolloutSearch)"
            )
        super().__init__(game, base, config, **parts)
        self.depth: int = config.plan_depth
        self.rows_per_world: float | None = None  # the most rows in flight per root and world seen (chunking)
        self.leaves = 0  # the tree's leaves over all calls: games ended, valued, or played out
        self.expanded = 0  # the decider's decisions expanded inside the plans (the roots' worlds included)

    def decide(
        self, obs: torch.Tensor, mask: torch.Tensor, history: torch.Tensor | None = None, state=None
    ) -> torch.Tensor:
        """The planned actions ``[n]`` for the decisions ``obs [n, obs_size]`` with legal masks
        ``mask``; ``history`` and ``state`` as the one-decision search reads them (the belief's
        public histories, the oracle's true states). ``self.last`` holds the root's figures."""
        cfg = self.config
        start = self.clock()
        obs, mask = obs.to(self.device), mask.to(self.device).bool()
        history = self.world_inputs(obs, history, state)
        n = obs.shape[0]
        candidates, valid, prior, has_prior = self.root_candidates(obs, mask)
        k = candidates.shape[1]
        single = valid.sum(dim=1) == 1
        todo = (~single).nonzero().squeeze(1)
        total = cfg.determinizations
        values = torch.zeros(n, k, total, dtype=torch.float64, device=self.device)
        done_d = 0
        if todo.numel():
            worlds = self.deal_worlds(obs[todo], total, *self._rows_of(todo, history, state))  # row i * total + j
            d = total if cfg.time_limit_s is None else min(total, cfg.min_determinizations)
            while done_d < total:
                d = min(d, total - done_d)
                per_world = self.rows_per_world or k * cfg.plan_candidates ** (2 * self.depth - 1)
                chunk = max(1, int(cfg.max_batch // (per_world * d)))
                for c0 in range(0, todo.numel(), chunk):
                    rows = todo[c0 : c0 + chunk]
                    at = torch.arange(c0, c0 + rows.numel(), device=self.device)[:, None] * total
                    round_worlds = index_state(worlds, (at + done_d + torch.arange(d, device=self.device)).reshape(-1))
                    values[rows, :, done_d : done_d + d] = self.plan_values(
                        round_worlds, obs[rows], candidates[rows], valid[rows], d
                    )
                done_d += d
                if cfg.time_limit_s is not None:
                    d = done_d  # the next round: as many as all before it
                    spent = self.clock() - start
                    if spent + spent * min(d, total - done_d) / done_d > cfg.time_limit_s:
                        break  # predicted past the budget: answer now
        values = values[:, :, :done_d]
        base_v = values[:, :1]
        moments = (
            values.sum(dim=2),
            (values**2).sum(dim=2),
            (values - base_v).sum(dim=2),
            ((values - base_v) ** 2).sum(dim=2),
        )
        return self._choose(n, candidates, valid, prior, has_prior, single, todo, done_d, moments, start)

    def _node_moves(self, obs: torch.Tensor, mask: torch.Tensor, rootslot: torch.Tensor):
        """At the decider's nodes inside the plan: its top moves [E, w], which of them branch
        [E, w] (legal, and not under plan_min_prior), and each node's group, the nodes that choose
        one move together (its observation under the same root move; per_world: itself)."""
        cfg = self.config
        ranking, probs = self.rank(obs, mask)
        top = ranking.topk(min(cfg.plan_candidates, mask.shape[1]), dim=1)
        ok = torch.isfinite(top.values)
        if probs is not None and cfg.plan_min_prior > 0:
            ok[:, 1:] &= probs.gather(1, top.indices[:, 1:]) >= cfg.plan_min_prior
        if cfg.plan_choice == "infoset":
            group = torch.unique(observation_keys(obs, rootslot), return_inverse=True)[1]
        else:
            group = torch.arange(obs.shape[0], device=obs.device)
        return top.indices, ok, group

    def plan_values(
        self, worlds, obs: torch.Tensor, candidates: torch.Tensor, valid: torch.Tensor, d: int
    ) -> torch.Tensor:
        """The planned value ``[m, k, d]`` for the decider of each of ``m`` decisions ``obs`` of
        each root candidate in each of its ``d`` ``worlds`` (``[m * d]``, row ``i * d + j``; invalid
        candidates are played as the base move and get its values): the tree below the move,
        backed up."""
        game, cfg, dev = self.game, self.config, self.device
        m, k = candidates.shape
        seat = game.obs_player(obs)
        rollout_act = self._rollout_act(seat)  # the faced opponent, where known, on its seat
        frontier = _Frontier.roots(worlds, m, k, d, dev)
        actions = torch.where(valid, candidates, candidates[:, :1]).view(m, k, 1).expand(m, k, d).reshape(-1)
        frontier.states = game.step(frontier.states, actions)
        M = m * k * d
        self.expanded += m * d
        tree = _Edges(M, dev)
        leaf_value = self.leaf_value
        plies = cfg.rollout_plies if leaf_value is not None else None
        peak, decisions, valued = M, 0, 0
        cut_off = getattr(game, "cut_off", None)  # games without a ply cap have none

        for _ in range(game.max_game_length + 2):
            done = game.is_terminal(frontier.states)
            if bool(done.any()):
                fin = done.nonzero().squeeze(1)
                ended = index_state(frontier.states, fin)
                tree.record(
                    frontier.edge[fin],
                    game.returns(ended).gather(1, seat[frontier.root[fin]][:, None]).squeeze(1).double(),
                )
                if cut_off is not None:
                    self.stats.capped_rollouts += int(cut_off(ended).sum())
                self.leaves += fin.numel()
                frontier = frontier.take((~done).nonzero().squeeze(1))
                if frontier.size == 0:
                    break
            player = game.current_player(frontier.states)
            mine = player == seat[frontier.root]
            # the opponent's first move past the plan starts the tail of rollout_plies decisions
            starts = (frontier.tail < 0) & ~mine & (frontier.turn >= cfg.plan_depth)
            frontier.tail = torch.where(starts, 0, frontier.tail)
            if plies is not None and leaf_value is not None:
                cut = frontier.tail >= plies
                if bool(cut.any()):
                    at = cut.nonzero().squeeze(1)
                    value = leaf_value(index_state(frontier.states, at)).to(dev).double()
                    tree.record(frontier.edge[at], torch.where(seat[frontier.root[at]] == 0, value, -value))
                    valued += at.numel()
                    self.leaves += at.numel()
                    keep = (~cut).nonzero().squeeze(1)
                    frontier, player, mine = frontier.take(keep), player[keep], mine[keep]
                    if frontier.size == 0:
                        break
            obs_all = game.observe(frontier.states, player)
            mask_all = game.legal_mask(frontier.states)
            branch = mine & (frontier.tail < 0)
            moved = (~branch).nonzero().squeeze(1)
            parts = []
            if moved.numel():  # the opponent, and everyone past the plan: the rollout policy
                rows = frontier.take(moved)
                uniform = torch.rand(m * d, generator=self.generator, device=dev)[rows.stream]
                act = rollout_act(obs_all[moved], mask_all[moved], player[moved], rows.root, uniform)
                rows.prev_opp = rows.prev_opp | ((rows.tail < 0) & ~mine[moved])
                rows.tail = torch.where(rows.tail >= 0, rows.tail + 1, rows.tail)
                rows.states = game.step(rows.states, act)
                parts.append(rows)
            nodes = branch.nonzero().squeeze(1)
            if nodes.numel():  # the decider inside the plan: its top moves branch
                ob, mb = obs_all[nodes], mask_all[nodes]
                node = frontier.take(nodes)
                node.turn = node.turn + node.prev_opp.long()
                node.prev_opp = torch.zeros_like(node.prev_opp)
                moves, ok, group = self._node_moves(ob, mb, node.rootslot)
                which, slot = ok.nonzero(as_tuple=True)
                children = node.take(which)
                children.edge = tree.branch(node.edge, group, which, slot, moves.shape[1])
                children.states = game.step(children.states, moves[which, slot])
                self.expanded += nodes.numel()
                parts.append(children)
            decisions += frontier.size
            frontier = _Frontier.join(parts)
            peak = max(peak, frontier.size)
        else:
            raise RuntimeError(f"{game.name}: plans still running after {game.max_game_length} decisions")

        flat = tree.backed_up()
        self.rows_per_world = max(self.rows_per_world or 0.0, 1.25 * peak / (m * d))
        self.stats.rollouts += M
        self.stats.rollout_decisions += decisions
        self.stats.valued_rollouts += valued
        return flat[:M].view(m, k, d)


__all__ = ["PlanSearch", "observation_keys"]
