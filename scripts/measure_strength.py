"""Strength of a Lost Cities network as docs/log/results.md reports it, per improvement round:
head to head against a fixed reference network, against every bot, alone (greedy) and searched,
each beside the farming diagnostic (pile draws of cards that fit none of the drawer's started
expeditions, per game) and the game length, so that a gain that only stalls a heuristic shows.

    PYTHONPATH=src python scripts/measure_strength.py runs/grow/checkpoints/latest.pt \
        [--reference PATH] [--games 2000] [--search-games 400] [--search SPEC ...] [--json]

Every match is on paired deals (each deal in both seat orders) with the same seed, so rows are
comparable between rounds. ``--search`` takes search specs over the network as templates with
``{net}`` for it (default: the search defaults, ``search:{net}``).
"""

from __future__ import annotations

import argparse
import json
import sys

import torch

from deepcfr.games.bots import bot_names
from deepcfr.players import load_players
from deepcfr.players.champion import resolve_value_function
from deepcfr.players.strength import REFERENCE_FILE, markdown, strength_matches, strength_rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("checkpoint", help="the network measured (a checkpoint path or spec base)")
    p.add_argument("--reference", default=str(REFERENCE_FILE), help="the fixed reference network (default: the one-round "
                   "bot recipe's network, reference/lost_cities_one_round.pt)")
    p.add_argument("--games", type=int, default=2000, help="games per network match (even)")
    p.add_argument("--search-games", type=int, default=400, help="games per search match (even; 0: none)")
    p.add_argument("--search", nargs="*", default=["search:{net}"], help="search specs with {net} for the network")
    p.add_argument("--bots", default=None, help="comma-separated bots (default: every bot of the game)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--value-fn", default="auto", help="the value function of the corrected estimates (auto, none, PATH)")
    p.add_argument("--target-ci", type=float, default=None, help="play each match until its 95%% CI half-width is "
                   "at most this (--games, --search-games: the most)")
    p.add_argument("--json", action="store_true", help="print the rows as one JSON object instead of Markdown")
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    net = args.checkpoint
    (_,), game = load_players([f"{net}@greedy"])
    bots = args.bots.split(",") if args.bots else [b for b in bot_names(game)]
    matches = strength_matches(net, bots, args.reference, args.games, args.search, args.search_games,
                               ["heuristic_balanced"])

    def shown(row):
        print(f"{row['a']} vs {row['b']}: {100 * row['win_rate']:.1f}%, {row['score_diff']:+.2f} +- "
              f"{row['score_diff_ci']:.2f} ({row['seconds']:.0f}s)", file=sys.stderr)

    rows = strength_rows(game, matches, args.seed, resolve_value_function(args.value_fn, game), args.target_ci,
                         on_row=shown)
    print(json.dumps({"checkpoint": net, "reference": args.reference, "seed": args.seed, "rows": rows})
          if args.json else markdown(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
