"""What the luck corrections buy (docs/log/results.md, "Fewer games for the same confidence"): for each
matchup, the plain and the corrected paired estimate on the same games, their 95% CIs, the
variance ratio, the games each needs for +-1 point, and the seconds of the games and of the
corrections.

    .venv/bin/python scripts/experiments/measure_variance.py --value-fn auto --games 2000 \
        --matchup champion@greedy heuristic_balanced --matchup search:champion champion@greedy \
        [--chance-samples all,4] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys

import torch

from deepcfr.players import load_players
from deepcfr.players.shipped import resolve_value_function
from deepcfr.players.strength import match_row


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument(
        "--matchup", nargs=2, action="append", required=True, metavar=("A", "B"), help="two player specs (repeat it)"
    )
    p.add_argument(
        "--games", default="2000", help="games per matchup (even), or one count per matchup, comma-separated"
    )
    p.add_argument("--value-fn", default="auto")
    p.add_argument(
        "--chance-samples",
        default="all",
        help="comma-separated: all, or M outcomes per correction (a value function without a chance head)",
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    matchups = [tuple(pair) for pair in args.matchup]
    counts = [int(g) for g in args.games.split(",")]
    counts = counts * len(matchups) if len(counts) == 1 else counts
    _, game = load_players(matchups[0])  # the game of its checkpoint, else the default
    value = resolve_value_function(args.value_fn, game)
    if value is None:
        raise SystemExit(f"no value function for {game.name} ({args.value_fn})")
    rows = []
    for (a, b), games in zip(matchups, counts):
        for samples in args.chance_samples.split(","):
            value_samples = None if samples == "all" else int(samples)
            row = _row(game, a, b, games, args.seed, value, value_samples)
            rows.append(row)
            print(
                f"{a} vs {b} ({samples}): plain {row['mean_score_diff']:+.2f} +- {row['score_diff_ci95']:.2f}, "
                f"corrected {row['corrected_score_diff']:+.2f} +- {row['corrected_ci95']:.2f}, ratio "
                f"{row['variance_ratio']:.2f} ({row['seconds']:.0f}s)",
                file=sys.stderr,
                flush=True,
            )
    if args.json:
        print(json.dumps(rows))
        return 0
    print(
        "| A | B | chance values | games | plain | corrected | variance ratio | games for +-1, plain / corrected "
        "| s/game, game / corrections |"
    )
    print("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        game_s = (r["seconds"] - r["correction_seconds"]) / r["games"]
        print(
            f"| `{r['a']}` | `{r['b']}` | {r['chance_samples']} | {r['games']} | {r['mean_score_diff']:+.2f} +- "
            f"{r['score_diff_ci95']:.2f} | {r['corrected_score_diff']:+.2f} +- {r['corrected_ci95']:.2f} | "
            f"{r['variance_ratio']:.2f} | {r['games_for_1_plain']} / {r['games_for_1_corrected']} | "
            f"{game_s:.4f} / {r['correction_seconds'] / r['games']:.4f} |"
        )
    return 0


def _row(game, a, b, games, seed, value, samples) -> dict:
    row = match_row(game, a, b, games, seed, value, chance_samples=samples)
    row["chance_samples"] = (
        "chance head"
        if getattr(value, "chance_values", None) is not None
        else "every card"
        if samples is None
        else f"{samples} of the cards"
    )
    pairs = games // 2
    row["games_for_1_plain"] = 2 * round(pairs * row["score_diff_ci95"] ** 2)
    row["games_for_1_corrected"] = 2 * round(pairs * row["corrected_ci95"] ** 2)
    return row


if __name__ == "__main__":
    sys.exit(main())
