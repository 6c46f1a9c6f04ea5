"""``deepcfr strength``: the standard strength table of a network (the champion's card's rows):
greedy against a reference network and every bot, and the search over it against the network
alone (what the search adds) and against a bot, on paired deals, with the luck-corrected
estimate beside the plain one."""

from __future__ import annotations

import sys

from .common import add_json_flag, add_value_option, emit, value_function


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "strength",
        help="the strength table of a network: vs a reference, every bot, and what the search over it adds",
        description="Greedy against --reference (greedy) and each --vs bot; each --search spec ({net} = the "
        "network) against the network alone, greedy, and against each --search-vs bot. Paired deals, 95%% CIs; "
        "with a value function every row also shows the corrected estimate and its variance ratio.",
    )
    p.add_argument("net", help="the network: champion or a checkpoint path")
    p.add_argument("--reference", default=None, help="a fixed reference network to play head to head (a path)")
    p.add_argument("--vs", default=None, help="comma-separated opponents (default: every bot of the game)")
    p.add_argument("--games", type=int, default=2000, help="games per network match (even)")
    p.add_argument("--search", nargs="*", default=[], help="search specs over the network, {net} standing for it "
                   "(e.g. 'search:{net}')")
    p.add_argument("--search-games", type=int, default=400, help="games per search match (even)")
    p.add_argument("--search-vs", default=None, help="comma-separated opponents of the search rows (default: "
                   "heuristic_balanced where the game has it)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--markdown", action="store_true", help="print the rows as a Markdown table")
    add_value_option(p)
    add_json_flag(p)
    p.set_defaults(func=run)


def run(args) -> int:
    from ..games.bots import bot_names
    from ..players import load_players
    from ..players.strength import markdown, strength_matches, strength_rows

    (_,), game = load_players([f"{args.net}@greedy"])
    bots = bot_names(game)
    opponents = args.vs.split(",") if args.vs else bots
    search_vs = args.search_vs.split(",") if args.search_vs else [b for b in bots if b == "heuristic_balanced"]
    matches = strength_matches(args.net, opponents, args.reference, args.games, args.search, args.search_games,
                               search_vs)

    def shown(row):
        print(f"{row['a']} vs {row['b']}: {100 * row['win_rate']:.1f}%, {row['score_diff']:+.2f} +- "
              f"{row['score_diff_ci']:.2f} ({row['games']} games, {row['seconds']:.0f}s)", file=sys.stderr, flush=True)

    rows = strength_rows(game, matches, args.seed, value_function(args, game), args.target_ci, on_row=shown)
    if args.markdown and not args.json:
        print(markdown(rows))
        return 0
    out = {"net": args.net, "seed": args.seed}
    for row in rows:
        out[f"{row['a']} vs {row['b']}"] = {k: v for k, v in row.items() if k not in ("a", "b")}
    emit(out, args.json, title=f"strength: {args.net}")
    return 0
