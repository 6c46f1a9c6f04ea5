"""``deepcfr bench``: benchmarks, one subcommand each (``engine`` first; more can be added)."""

from __future__ import annotations

from .common import add_json_flag, emit


def register(subparsers) -> None:
    p = subparsers.add_parser("bench", help="benchmarks (engine, ...)", description="Benchmarks.")
    benches = p.add_subparsers(dest="bench", metavar="BENCH")
    benches.required = True

    e = benches.add_parser(
        "engine",
        help="random-play decisions per second of a batched game engine",
        description="Run random play on a batch of games for a fixed time and report decisions per second.",
    )
    e.add_argument("--game", default="lost_cities", help="game name (kuhn, leduc, lost_cities)")
    e.add_argument("--batch", type=int, default=4096, help="games advanced in lockstep")
    e.add_argument("--seconds", type=float, default=5.0, help="measuring time")
    e.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    e.add_argument("--seed", type=int, default=0, help="seed for deals and random actions")
    e.add_argument("--variant", default=None, help="Lost Cities rule variant (classic, mini)")
    add_json_flag(e)
    e.set_defaults(func=run_engine)


def run_engine(args) -> int:
    from ..games.registry import game_names

    if args.game not in game_names():
        raise ValueError(f"unknown game {args.game!r}; valid games: {', '.join(game_names())}")
    if args.batch < 1:
        raise ValueError(f"--batch must be at least 1, got {args.batch}")
    if args.seconds <= 0:
        raise ValueError(f"--seconds must be positive, got {args.seconds}")
    if args.threads < 1:
        raise ValueError(f"--threads must be at least 1, got {args.threads}")
    params = {}
    if args.variant is not None:
        if args.game != "lost_cities":
            raise ValueError(f"--variant applies to lost_cities only, not to game {args.game!r}")
        params["variant"] = args.variant
    from ..games.benchmark import bench_engine

    result = bench_engine(args.game, args.batch, args.seconds, args.threads, args.seed, **params)
    out = {"bench": "engine", "game": args.game, "batch": args.batch}
    out.update(result if isinstance(result, dict) else vars(result))
    emit(out, args.json, title=f"bench engine: {args.game}")
    return 0
