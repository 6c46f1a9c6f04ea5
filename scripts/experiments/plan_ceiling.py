#!/usr/bin/env python
"""Issue 66's ceiling: how much planning past one decision could add when the opponent's hand is
known (``search[oracle=true,...]``: worlds from the match's true state, only the deck reshuffled;
a research bound, never a fair player). Plays one searcher against an opponent on paired deals,
luck-corrected by the shipped value function, and writes its figures with every deal pair's
corrected outcome, so that matches on the same deals (the same seed: a smaller match plays the
first deals of a larger one) can be compared pair by pair (``--compare``).

    OMP_NUM_THREADS=1 .venv/bin/python scripts/experiments/plan_ceiling.py \\
        --spec "search[oracle=true,plan_depth=2,determinizations=16,rollout_plies=2,plan_min_prior=0.02]:champion" \\
        --games 1000 --seed 0 --out runs/plan/d2.json
    .venv/bin/python scripts/experiments/plan_ceiling.py --compare runs/plan/d1.json runs/plan/d2.json

The record: docs/log/planning_ceiling.md.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import torch

from deepcfr.evaluate.arena import ci95_of_pairs, play_pairs
from deepcfr.evaluate.variance import cross_fitted
from deepcfr.players import load_players
from deepcfr.players.shipped import resolve_value_function


def measure(spec: str, opponent: str, games: int, seed: int) -> dict:
    """One match of ``spec`` against ``opponent`` on ``games / 2`` deals (both seat orders)."""
    (searcher, other), game = load_players([spec, opponent])
    value_fn = resolve_value_function("auto", game)
    start = time.perf_counter()
    pairs = play_pairs(game, searcher, other, games, seed, torch.device("cpu"), None, value_fn, None)
    seconds = time.perf_counter() - start
    fixed, _ = cross_fitted(pairs.pair_diff, pairs.pair_corrections)
    stats = searcher.stats.to_dict() if hasattr(searcher, "stats") else {}
    search = getattr(searcher, "search", None)
    return {
        "spec": spec,
        "opponent": opponent,
        "games": games,
        "seed": seed,
        "corrected_score_diff": fixed.mean().item(),
        "corrected_ci95": ci95_of_pairs(fixed),
        "mean_score_diff": pairs.pair_diff.mean().item(),
        "score_diff_ci95": ci95_of_pairs(pairs.pair_diff),
        "win_rate": (pairs.wins + 0.5 * pairs.draws) / games,
        "seconds": seconds,
        "seconds_per_move": stats.get("seconds_per_move"),
        "override_rate": stats.get("override_rate"),
        "searched_decisions": stats.get("searched_decisions"),
        "expanded_per_move": (
            getattr(search, "expanded", 0) / stats["searched_decisions"]
            if search is not None and hasattr(search, "expanded") and stats.get("searched_decisions")
            else None
        ),
        "pair_corrected": fixed.tolist(),
    }


def compare(files: list[str]) -> list[dict]:
    """Each match against the first, on the deal pairs both played: the mean paired difference of
    the corrected outcomes and its 95% CI."""
    runs = [json.loads(Path(f).read_text()) for f in files]
    first = torch.tensor(runs[0]["pair_corrected"], dtype=torch.float64)
    rows = []
    for run in runs[1:]:
        other = torch.tensor(run["pair_corrected"], dtype=torch.float64)
        if run["seed"] != runs[0]["seed"]:
            raise ValueError("matches on other deals (another seed) cannot be compared pair by pair")
        p = min(first.numel(), other.numel())
        diff = other[:p] - first[:p]
        rows.append(
            {
                "a": run["spec"],
                "b": runs[0]["spec"],
                "pairs": p,
                "diff": diff.mean().item(),
                "ci95": ci95_of_pairs(diff) if p > 1 else math.nan,
            }
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--spec")
    parser.add_argument("--opponent", default="champion@greedy")
    parser.add_argument("--games", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out")
    parser.add_argument("--compare", nargs="+", metavar="FILE", help="compare written matches with the first")
    args = parser.parse_args()
    torch.set_num_threads(1)
    if args.compare:
        for row in compare(args.compare):
            print(json.dumps(row))
        return
    if not args.spec:
        parser.error("--spec (or --compare)")
    figures = measure(args.spec, args.opponent, args.games, args.seed)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(figures) + "\n")
    print(json.dumps({k: v for k, v in figures.items() if k != "pair_corrected"}))


if __name__ == "__main__":
    main()
