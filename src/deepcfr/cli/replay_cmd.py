"""`deepcfr replay FILE [--game K]`: step through a recorded game, both hands visible."""

from __future__ import annotations

import sys


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "replay",
        help="step through a recorded game (from play/arena --record), both hands visible",
        description="Replays a game recorded by `deepcfr play --record` or `deepcfr arena --record`, showing "
        "every decision with both hands. On a terminal it waits for Enter after each decision "
        "(a = show the rest, q = quit); otherwise it prints the whole game. Every game in the file is "
        "checked first: a corrupted line or a game from another rule set is an error naming the line.",
    )
    p.add_argument("file", metavar="FILE", help="record file (JSON lines, one game per line)")
    p.add_argument("--game", type=int, default=1, metavar="K", help="which game of the file (1 = first; default 1)")
    p.add_argument(
        "--variant",
        default=None,
        help="require games recorded under this rule variant of their game (Lost Cities: classic, mini)",
    )
    p.add_argument("--all", action="store_true", help="print the whole game without waiting for Enter")
    p.add_argument("--list", action="store_true", help="list the games in the file and exit")
    p.add_argument("--plain", action="store_true", help="plain text: no colours or styles")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..evaluate.replay import read_records
    from ..play.replay_view import show_replay

    expect_game = expect_config = None
    if args.variant is not None:
        from .common import make_named_game

        # the variant is one of the recorded game's own (its ``variants`` capability)
        expected = make_named_game(read_records(args.file, validate=False)[0].game, args.variant)
        expect_game, expect_config = expected.name, expected.config_dict()
    records = read_records(args.file, game=expect_game, game_config=expect_config)
    if args.list:
        for k, r in enumerate(records, start=1):
            res = r.result
            outcome = (
                "unfinished"
                if not res.get("finished", True)
                else f"scores {res['scores']}"
                if "scores" in res
                else f"returns {res.get('returns')}"
            )
            print(
                f"{k:>5}  line {r.line}: {r.game}, {r.players[0]} vs {r.players[1]}, seed {r.seed}, "
                f"{len(r.actions)} decisions, {outcome}"
            )
        return 0
    if not 1 <= args.game <= len(records):
        raise ValueError(f"--game {args.game}: the file holds games 1 to {len(records)}")
    record = records[args.game - 1]
    step = not args.all and sys.stdin.isatty()
    title = f"Replay of game {args.game} of {len(records)} in {args.file} (line {record.line})"
    return show_replay(record, sys.stdin, sys.stdout, step=step, plain=args.plain, title=title)
