"""``deepcfr strength``: the standard strength table of a network (the champion's card's rows):
greedy against a reference network and every bot, and the search over it against the network
alone (what the search adds) and against a bot, on paired deals, with the luck-corrected
estimate beside the plain one. With ``--population``: any player against every member of the
benchmark population (players/population.py), a row per member, the population score and the
worst member."""

from __future__ import annotations

import sys

from .common import DEFAULT_GAME, add_json_flag, add_value_option, emit, game_help, step_progress, value_function


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "strength",
        help="the strength table of a network: vs a reference, every bot, and what the search over it adds",
        description="Greedy against --reference (greedy) and each --vs bot; each --search spec ({net} = the "
        "network) against the network alone, greedy, and against each --search-vs bot. Paired deals, 95%% CIs; "
        "with a value function every row also shows the corrected estimate and its variance ratio.",
    )
    p.add_argument(
        "net",
        metavar="SPEC",
        help="the network: champion or a checkpoint path (played greedy); with "
        "--population any player spec (a network without @options plays greedy: write PATH@average for "
        "its sampled policy)",
    )
    p.add_argument(
        "--population",
        action="store_true",
        help="play SPEC against every member of the benchmark population (players/population.py): a row "
        "per member (paired deals, corrected estimate), the population score (the mean over members, "
        "equal weights, CI sqrt(sum ci^2)/n) and the worst member. --games is per member; --target-ci "
        "is the population score's CI (each member plays to target * sqrt(members))",
    )
    p.add_argument("--game", default=None, help="with --population: " + game_help(f"SPEC's, else {DEFAULT_GAME}"))
    p.add_argument("--variant", default=None, help="with --population: Lost Cities rule variant (classic, mini)")
    p.add_argument("--reference", default=None, help="a fixed reference network to play head to head (a path)")
    p.add_argument("--vs", default=None, help="comma-separated opponents (default: every bot of the game)")
    p.add_argument("--games", type=int, default=2000, help="games per network match (even)")
    p.add_argument(
        "--search",
        nargs="*",
        default=[],
        help="search specs over the network, {net} standing for it (e.g. 'search:{net}')",
    )
    p.add_argument("--search-games", type=int, default=400, help="games per search match (even)")
    p.add_argument(
        "--search-vs",
        default=None,
        help="comma-separated opponents of the search rows (default: heuristic_balanced where the game has it)",
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--markdown", action="store_true", help="print the rows as a Markdown table")
    add_value_option(p)
    add_json_flag(p)
    p.set_defaults(func=run)


def run(args) -> int:
    if args.population:
        return run_population(args)
    if args.game is not None or args.variant is not None:
        raise ValueError("--game and --variant go with --population (the table's game is the network's)")
    from ..games.bots import bot_names
    from ..players import load_players
    from ..players.strength import markdown, strength_matches, strength_rows

    (_,), game = load_players([f"{args.net}@greedy"])
    bots = bot_names(game)
    opponents = args.vs.split(",") if args.vs else bots
    search_vs = args.search_vs.split(",") if args.search_vs else [b for b in bots if b == "heuristic_balanced"]
    matches = strength_matches(
        args.net, opponents, args.reference, args.games, args.search, args.search_games, search_vs
    )

    def shown(row):
        print(
            f"{row['a']} vs {row['b']}: {100 * row['win_rate']:.1f}%, {row['score_diff']:+.2f} +- "
            f"{row['score_diff_ci']:.2f} ({row['games']} games, {row['seconds']:.0f}s)",
            file=sys.stderr,
            flush=True,
        )

    rows = strength_rows(game, matches, args.seed, value_function(args, game), args.target_ci, on_row=shown)
    if args.markdown and not args.json:
        print(markdown(rows))
        return 0
    out = {"net": args.net, "seed": args.seed}
    for row in rows:
        out[f"{row['a']} vs {row['b']}"] = {k: v for k, v in row.items() if k not in ("a", "b")}
    emit(out, args.json, title=f"strength: {args.net}")
    return 0


def population_spec(text: str) -> str:
    """The spec ``--population`` plays: as written, except that a network named without options
    (a checkpoint path, champion) plays greedy, as in the rest of this command."""
    from ..players import parse_player

    spec = parse_player(text)
    return f"{text}@greedy" if spec.kind == "checkpoint" and "@" not in text else text


def run_population(args) -> int:
    from ..players.population import (
        POPULATION_VERSION,
        member_target,
        population_markdown,
        population_members,
        population_rows,
        population_summary,
    )
    from .common import players_and_game

    spec = population_spec(args.net)
    _, game = players_and_game([spec], args.game, args.variant, "cpu", {})
    members, skipped = population_members(game, spec)
    if not members:
        raise ValueError(
            f"no member of the population plays {game.name}: "
            + "; ".join(f"{s['member']}: {s['reason']}" for s in skipped)
        )
    for s in skipped:
        print(f"skipped {s['member']}: {s['reason']}", file=sys.stderr, flush=True)
    value_fn = value_function(args, game)
    target = member_target(args.target_ci, len(members))
    done = [0]

    def shown(row):
        done[0] += 1
        print(
            f"[{done[0]}/{len(members)}] {row['a']} vs {row['member']}: {100 * row['win_rate']:.1f}%, "
            f"{row['score_diff']:+.2f} +- {row['score_diff_ci']:.2f} ({row['games']} games, {row['seconds']:.0f}s)",
            file=sys.stderr,
            flush=True,
        )

    rows = population_rows(
        game, spec, members, args.games, args.seed, value_fn, target, on_row=shown, on_step=step_progress(sys.stderr)
    )
    summary = population_summary(rows)
    if args.markdown and not args.json:
        print(population_markdown(spec, rows, summary))
        return 0
    keep = (
        "games",
        "score_diff",
        "score_diff_ci",
        "win_rate",
        "win_rate_ci95",
        "mean_score_diff",
        "score_diff_ci95",
        "corrected_score_diff",
        "corrected_ci95",
        "variance_ratio",
        "mean_game_length",
        "seconds",
    )
    out = {
        "player": spec,
        "game": game.name,
        "population_version": POPULATION_VERSION,
        "seed": args.seed,
        "corrected": value_fn is not None,
        "member_target_ci": target,
        "members": [
            {"member": r["member"], "spec": m.spec, "kind": r["kind"], **{k: r[k] for k in keep if k in r}}
            for r, m in zip(rows, members)
        ],
        **summary,
        "skipped": skipped,
    }
    if args.json:
        emit(out, True)
        return 0
    _print_population(out)
    return 0


def _print_population(out: dict) -> None:
    from rich.console import Console
    from rich.table import Table

    estimate = "corrected" if out["corrected"] else "plain"
    table = Table(title=f"population v{out['population_version']}: {out['player']} ({estimate} score diff, 95% CI)")
    for name in ("member", "games", "score diff", "win rate"):
        table.add_column(name, justify="left" if name == "member" else "right")
    for r in out["members"]:
        table.add_row(
            r["member"],
            str(r["games"]),
            f"{r['score_diff']:+.2f} +- {r['score_diff_ci']:.2f}",
            f"{100 * r['win_rate']:.1f}% +- {100 * r['win_rate_ci95']:.1f}",
        )
    table.add_section()
    table.add_row("population score", "", f"{out['population_score']:+.2f} +- {out['population_ci']:.2f}", "")
    table.add_row(
        f"worst: {out['worst_member']}", "", f"{out['worst_score_diff']:+.2f} +- {out['worst_score_diff_ci']:.2f}", ""
    )
    console = Console()
    console.print(table)
    for s in out["skipped"]:
        console.print(f"skipped {s['member']}: {s['reason']}")
