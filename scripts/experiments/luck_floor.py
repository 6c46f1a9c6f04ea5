"""How much of a paired match's variance any luck correction could remove (docs/log/results.md, "Fewer
games for the same confidence"): the starting hands' own share is what no value function of the
state can take away (a perfect one leaves each deal pair's expected outcome given its hands); the
rest, what the deck's order brought, is what a better value function could still remove.

Each of ``--hands`` starting hands is played with ``--orders`` shuffles of the rest of the deck,
each in both seat orders; one-way random effects split the variance of a deal pair's outcome
into the hands' share and the share within a hand, for the plain and the corrected estimate.

    .venv/bin/python scripts/experiments/luck_floor.py --matchup champion@greedy heuristic_balanced \
        --hands 1000 --orders 8 [--value-fn auto] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys

import torch

from deepcfr.evaluate.arena import play_pairs
from deepcfr.evaluate.variance import cross_fitted
from deepcfr.players import load_players
from deepcfr.players.shipped import resolve_value_function


def hand_deals(game, hands: int, orders: int, seed: int) -> torch.Tensor:
    """[hands * orders, D] deals: each starting hand pair repeated ``orders`` times, the deck
    behind it shuffled anew each time."""
    rules = game.rules
    dealt = 2 * rules.hand_size
    generator = torch.Generator().manual_seed(seed)
    deals = torch.rand(hands, rules.deck_size, generator=generator).argsort(dim=1).repeat_interleave(orders, dim=0)
    shuffle = torch.rand(hands * orders, rules.deck_size - dealt, generator=generator).argsort(dim=1)
    deals[:, dealt:] = torch.gather(deals[:, dealt:], 1, shuffle)
    return deals


def variance_shares(pair_values: torch.Tensor, hands: int, orders: int) -> dict[str, float]:
    """The variance of ``pair_values [hands * orders]`` (grouped by hand), the mean variance within
    a hand, and the hands' share (between-hand variance less what the within-hand noise adds to a
    hand's mean of ``orders``)."""
    grouped = pair_values.double().view(hands, orders)
    within = grouped.var(dim=1, unbiased=True).mean()
    return {
        "total": grouped.var().item(),
        "within_hand": within.item(),
        "hands": (grouped.mean(dim=1).var(unbiased=True) - within / orders).item(),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--matchup", nargs=2, action="append", required=True, metavar=("A", "B"))
    p.add_argument("--hands", type=int, default=1000)
    p.add_argument("--orders", type=int, default=8, help="deck orders per starting hand (at least 2)")
    p.add_argument("--value-fn", default="auto")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    if args.orders < 2 or args.hands < 2:
        p.error("--hands and --orders must be at least 2 (variance within and between hands)")
    torch.set_num_threads(args.threads)
    rows = []
    for a, b in args.matchup:
        (player_a, player_b), game = load_players([a, b])
        if not hasattr(game, "init_from_deal"):
            p.error(f"{game.name} cannot be dealt given hands (no init_from_deal)")
        value = resolve_value_function(args.value_fn, game)
        if value is None:
            p.error(f"no value function for {game.name} ({args.value_fn})")
        deals = hand_deals(game, args.hands, args.orders, args.seed)
        pairs = play_pairs(
            game, player_a, player_b, 2 * deals.shape[0], 0, torch.device("cpu"), None, value, None, deals=deals
        )
        corrected, _ = cross_fitted(pairs.pair_diff.double(), pairs.pair_corrections.double())
        plain = variance_shares(pairs.pair_diff, args.hands, args.orders)
        fixed = variance_shares(corrected, args.hands, args.orders)
        rows.append(
            {
                "a": a,
                "b": b,
                "hands": args.hands,
                "orders": args.orders,
                "plain": plain,
                "corrected": fixed,
                "variance_ratio": plain["total"] / fixed["total"],
                "ceiling": plain["total"] / max(plain["hands"], 1e-9),
            }
        )
    if args.json:
        print(json.dumps(rows))
        return 0
    print(
        "| A | B | hands x orders | plain: total / within a hand / hands' share | corrected: total / within / "
        "hands' share | variance ratio | ceiling (hands' share alone left) |"
    )
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        pl, co = r["plain"], r["corrected"]
        print(
            f"| `{r['a']}` | `{r['b']}` | {r['hands']} x {r['orders']} | {pl['total']:.0f} / "
            f"{pl['within_hand']:.0f} / {pl['hands']:.0f} | {co['total']:.0f} / {co['within_hand']:.0f} / "
            f"{co['hands']:.0f} | {r['variance_ratio']:.2f} | {r['ceiling']:.0f} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
