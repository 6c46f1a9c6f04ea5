"""``deepcfr arena``: a batched match between two bots, paired deals, one line of figures."""

from __future__ import annotations

from .common import add_json_flag, emit


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "arena",
        help="play two bots against each other (paired deals, both seat orders)",
        description="Play bot A against bot B on paired deals (each deal in both seat orders) and "
        "report A's win rate and mean score difference with a 95%% confidence interval.",
    )
    p.add_argument("--game", default="lost_cities", help="game name (kuhn, leduc, lost_cities)")
    p.add_argument("--a", required=True, help="bot A (e.g. heuristic_careful)")
    p.add_argument("--b", required=True, help="bot B (e.g. random)")
    p.add_argument("--games", type=int, default=2000, help="number of games, even (games/2 deals)")
    p.add_argument("--seed", type=int, default=0, help="seed for the deals and the bots' randomness")
    p.add_argument("--variant", default=None, help="Lost Cities rule variant (classic, mini)")
    p.add_argument("--device", default="cpu", help="torch device to play on")
    p.add_argument("--record", default=None, metavar="PATH",
                   help="append every game to this JSON-lines file (replay with `deepcfr replay`)")
    add_json_flag(p)
    p.set_defaults(func=run)


def make_arena_game(name: str, variant: str | None):
    from ..games.registry import game_names, make_game

    if name not in game_names():
        raise ValueError(f"unknown game {name!r}; valid games: {', '.join(game_names())}")
    params = {}
    if variant is not None:
        if name != "lost_cities":
            raise ValueError(f"--variant applies to lost_cities only, not to game {name!r}")
        params["variant"] = variant
    return make_game(name, **params)


def run(args) -> int:
    from ..evaluate.arena import play_match
    from ..games.bots import make_bot

    game = make_arena_game(args.game, args.variant)
    bot_a = make_bot(game, args.a)
    bot_b = make_bot(game, args.b)
    played = game
    if args.record:
        from ..evaluate.replay import RecordingGame

        played = RecordingGame(game)
    result = play_match(played, bot_a, bot_b, games=args.games, seed=args.seed, device=args.device)
    out = {"game": args.game, "a": args.a, "b": args.b}
    if args.game == "lost_cities":
        out["variant"] = args.variant or "classic"
    out.update(result.to_dict())
    out["seed"] = args.seed
    if args.record:
        from ..evaluate.replay import arena_players

        played.save(args.record, arena_players(args.games, args.a, args.b), seed=args.seed)
        out["recorded"] = args.record
    emit(out, args.json, title=f"arena: {args.a} vs {args.b}")
    return 0
