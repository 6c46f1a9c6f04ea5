#!/usr/bin/env python
"""How much could any inference of the opponent's hand add to the search? The upper bound: a
search whose determinizations keep the opponent's TRUE hand (only the undrawn deck is shuffled),
played against the same opponent beside the same search dealing the hidden cards uniformly, on
the same paired deals (Lost Cities). A research measurement, never a player: the oracle sees the
opponent's cards through the true states of the match.

How: the match's observations of the searcher's decisions are looked up in the true states of
that step; each card of the opponent's hand is marked "known to be in the opponent's hand" (the
code a card taken from a discard pile gets), and the game's own ``determinize`` keeps such cards
where they are. The ranking, the prior and the rollouts are the search's own.

    OMP_NUM_THREADS=1 .venv/bin/python scripts/experiments/search_hand_oracle.py \\
        --search "search[candidates=5,rollout_policy=base,rollout_plies=4,belief=none]:champion" \\
        --opponent champion@greedy --games 1000 --seed 0
"""

from __future__ import annotations

import argparse
import json
import time

import torch

from deepcfr.evaluate.arena import play_match
from deepcfr.games.lost_cities.layout import LOC_HAND, LOC_OPP_KNOWN
from deepcfr.players import load_players
from deepcfr.players.shipped import resolve_value_function


class HandOracle:
    """The true-hand observations of the match's current step, keyed by the observation."""

    def __init__(self, game):
        self.game = game
        self.weights = torch.randint(
            1, 2**40, (game.obs_size,), generator=torch.Generator().manual_seed(1), dtype=torch.long
        )
        self.keys = torch.empty(0, dtype=torch.long)
        self.oracle = torch.empty(0, game.obs_size, dtype=torch.uint8)
        self.recording = True  # off inside the search (its rollouts observe too)

    def key(self, obs: torch.Tensor) -> torch.Tensor:
        return (obs.long() * self.weights).sum(dim=1)

    def record(self, state, player: torch.Tensor, obs: torch.Tensor, observe) -> None:
        r = self.game.rules
        D, W = r.deck_size, r.n_wagers
        theirs = (observe(state, 1 - player)[:, :D] == LOC_HAND).view(-1, r.n_colors, r.cards_per_color)
        loc = obs[:, :D].clone().view(-1, r.n_colors, r.cards_per_color)
        numbered = loc[:, :, W:]  # one copy each: the same card in both views
        numbered[theirs[:, :, W:]] = LOC_OPP_KNOWN
        loc[:, :, W:] = numbered
        # the wager copies of a colour: each view sorts its codes on its own (layout.py's canonical
        # form), so by count: as many of the decider's unknown copies (code 0 sorts first) as the
        # opponent holds beyond those the decider already knows of
        wagers = loc[:, :, :W]
        extra = theirs[:, :, :W].sum(2) - (wagers == LOC_OPP_KNOWN).sum(2)
        wagers[torch.arange(W) < extra[..., None]] = LOC_OPP_KNOWN
        loc[:, :, :W] = wagers.sort(dim=2).values
        oracle = obs.clone()
        oracle[:, :D] = loc.view(-1, D)
        keys = self.key(obs)
        order = keys.argsort()
        self.keys, self.oracle = keys[order], oracle[order]

    def lookup(self, obs: torch.Tensor) -> torch.Tensor:
        keys = self.key(obs)
        at = torch.searchsorted(self.keys, keys).clamp(max=self.keys.numel() - 1)
        if not torch.equal(self.keys[at], keys):
            raise RuntimeError("an observation the oracle did not record")
        return self.oracle[at]


def with_oracle(game, searcher, oracle: HandOracle) -> None:
    """Patch ``game.observe`` to record each match step's true hands, and ``searcher``'s
    determinizations to deal from them."""
    observe = game.observe

    def observing(state, player):
        obs = observe(state, player)
        if oracle.recording and torch.is_tensor(player) and player.dim() == 1:
            oracle.record(state, player, obs, observe)
        return obs

    search = searcher.search
    if search.config.belief != "none":
        raise ValueError(
            f"the oracle deals in place of the search's belief: give the search belief=none, "
            f"not {search.config.belief!r}"
        )
    game.observe = observing
    determinize = search._determinize
    decide = search.decide

    def oracle_determinize(obs, d, generator):
        return determinize(oracle.lookup(obs), d, generator)

    def deciding(*args, **kwargs):
        oracle.recording = False
        try:
            return decide(*args, **kwargs)
        finally:
            oracle.recording = True

    search._determinize = oracle_determinize
    search.decide = deciding


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--search", default="search[candidates=5,rollout_policy=base,rollout_plies=4,belief=none]:champion"
    )
    parser.add_argument("--opponent", default="champion@greedy")
    parser.add_argument("--games", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--baseline", action="store_true", help="also the same search dealing uniformly")
    args = parser.parse_args()
    torch.set_num_threads(1)
    out = {}
    variants = ["oracle", "uniform"] if args.baseline else ["oracle"]
    for variant in variants:
        (searcher, opponent), game = load_players([args.search, args.opponent])
        if variant == "oracle":
            with_oracle(game, searcher, HandOracle(game))
        value_fn = resolve_value_function("auto", game)
        start = time.perf_counter()
        result = play_match(game, searcher, opponent, args.games, seed=args.seed, value_fn=value_fn)
        figures = result.to_dict()
        figures["search"] = searcher.stats.to_dict()
        figures["seconds"] = time.perf_counter() - start
        out[variant] = figures
        print(
            variant,
            json.dumps(
                {
                    k: figures.get(k)
                    for k in (
                        "corrected_score_diff",
                        "corrected_ci95",
                        "mean_score_diff",
                        "score_diff_ci95",
                        "win_rate",
                        "seconds",
                    )
                }
            ),
            flush=True,
        )
        print(variant, "override_rate", figures["search"]["override_rate"], flush=True)
    print(json.dumps(out, default=str))


if __name__ == "__main__":
    main()
