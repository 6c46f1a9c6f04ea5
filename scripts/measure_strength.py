"""Strength of a Lost Cities network as docs/results.md reports it, per improvement round:
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
import time
from pathlib import Path

import torch

from deepcfr.evaluate.arena import play_match
from deepcfr.games.bots import bot_names
from deepcfr.players import load_player

REFERENCE = Path(__file__).resolve().parent.parent / "reference" / "lost_cities_one_round.pt"


def match_row(game, a: str, b: str, games: int, seed: int) -> dict:
    player_a, player_b = load_player(a, game), load_player(b, game)
    start = time.perf_counter()
    result = play_match(game, player_a, player_b, games, seed=seed)
    row = {"a": a, "b": b, "games": games, "win_rate_ci95": result.win_rate_ci95, **result.figures(),
           "seconds": time.perf_counter() - start}
    stats = getattr(player_a, "stats", None)
    if stats is not None and stats.decisions:
        row["seconds_per_searched_move"] = stats.seconds / stats.decisions
    return row


def markdown(rows: list[dict]) -> str:
    lines = ["| A | B | games | win rate | score diff | game length | useless pile draws A / B | s/move |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in rows:
        s_move = f"{r['seconds_per_searched_move']:.3f}" if "seconds_per_searched_move" in r else ""
        draws = (f"{r['useless_pile_draws_a']:.2f} / {r['useless_pile_draws_b']:.2f}"
                 if "useless_pile_draws_a" in r else "-")
        lines.append(f"| `{r['a']}` | `{r['b']}` | {r['games']} | {100 * r['win_rate']:.1f}% +- "
                     f"{100 * r['win_rate_ci95']:.1f} | {r['mean_score_diff']:+.2f} +- {r['score_diff_ci95']:.2f} "
                     f"| {r['mean_game_length']:.1f} | {draws} | {s_move} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("checkpoint", help="the network measured (a checkpoint path or spec base)")
    p.add_argument("--reference", default=str(REFERENCE), help="the fixed reference network (default: the one-round "
                   "bot recipe's network, reference/lost_cities_one_round.pt)")
    p.add_argument("--games", type=int, default=2000, help="games per network match (even)")
    p.add_argument("--search-games", type=int, default=400, help="games per search match (even; 0: none)")
    p.add_argument("--search", nargs="*", default=["search:{net}"], help="search specs with {net} for the network")
    p.add_argument("--bots", default=None, help="comma-separated bots (default: every bot of the game)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--json", action="store_true", help="print the rows as one JSON object instead of Markdown")
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    net = args.checkpoint
    game = load_player(f"{net}@greedy").game
    bots = args.bots.split(",") if args.bots else [b for b in bot_names(game)]
    matches = [(f"{net}@greedy", f"{args.reference}@greedy", args.games)]
    matches += [(f"{net}@greedy", bot, args.games) for bot in bots]
    if args.search_games:
        matches += [(template.format(net=net), "heuristic_balanced", args.search_games) for template in args.search]
    rows = []
    for a, b, games in matches:
        rows.append(match_row(game, a, b, games, args.seed))
        print(f"{a} vs {b}: {100 * rows[-1]['win_rate']:.1f}%, {rows[-1]['mean_score_diff']:+.2f} "
              f"({rows[-1]['seconds']:.0f}s)", file=sys.stderr)
    print(json.dumps({"checkpoint": net, "reference": args.reference, "seed": args.seed, "rows": rows})
          if args.json else markdown(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
