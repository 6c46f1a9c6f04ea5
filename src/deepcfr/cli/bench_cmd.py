"""``deepcfr bench``: benchmarks, one subcommand each; the measurements live in ``deepcfr.bench``."""

from __future__ import annotations

from .common import (
    DEFAULT_GAME,
    add_json_flag,
    add_search_options,
    add_set_option,
    emit,
    game_help,
    search_settings,
    variant_params,
)


def register(subparsers) -> None:
    p = subparsers.add_parser("bench", help="benchmarks (engine, traversal)", description="Benchmarks.")
    benches = p.add_subparsers(dest="bench", metavar="BENCH")
    benches.required = True

    e = benches.add_parser(
        "engine",
        help="random-play decisions per second of a batched game engine",
        description="Run random play on a batch of games for a fixed time and report decisions per second.",
    )
    e.add_argument("--game", default=DEFAULT_GAME, help=game_help(DEFAULT_GAME))
    e.add_argument("--batch", type=int, default=4096, help="games advanced in lockstep")
    e.add_argument("--seconds", type=float, default=5.0, help="measuring time")
    e.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    e.add_argument("--seed", type=int, default=0, help="seed for deals and random actions")
    e.add_argument("--variant", default=None, help="rule variant of a game that has them (Lost Cities: classic, mini)")
    add_json_flag(e)
    e.set_defaults(func=run_engine)

    t = benches.add_parser(
        "traversal",
        help="trainer traversal and training throughput against the forward-pass bound",
        description="Build a trainer from a config (evaluation off, no run directory), run warm-up "
        "iterations untimed, then time both players' traversals (decisions/s, traversals/s, mean "
        "forward batch) against the bare batched forward of the same network at that batch, the "
        "advantage training phase (samples/s, batch-building share) and bytes per stored sample.",
    )
    t.add_argument(
        "--config",
        default=None,
        help="YAML config file or shipped config name, e.g. kuhn/default.yaml (default: lost_cities/cpu.yaml)",
    )
    add_set_option(t, "override a config field, e.g. --set traversal.traversals_per_player=1024 (repeatable)")
    t.add_argument(
        "--iterations-warmup",
        type=int,
        default=1,
        help="untimed training iterations first (0: sigma stays uniform, no network in traversal)",
    )
    t.add_argument("--repeats", type=int, default=3, help="timed rounds of traversals (both players each)")
    t.add_argument(
        "--threads", type=int, default=None, help="torch intra-op threads (default: the config's run.threads)"
    )
    t.add_argument("--no-train", dest="train", action="store_false", help="skip the advantage-training measurement")
    add_json_flag(t)
    t.set_defaults(func=run_traversal)

    s = benches.add_parser(
        "search",
        help="rollout search throughput against the bare forward bound of the same network",
        description="Search a batch of decisions (positions after some random plies) once untimed, then "
        "time it: rollout decisions per second (engine + encoding + forward), seconds per decision, capped "
        "rollouts, beside the bare forward bound of the base network at the starting rollout batch.",
    )
    s.add_argument(
        "--player",
        default="search:heuristic_balanced",
        help="the search player, e.g. search:runs/x/checkpoints/latest.pt (a bare checkpoint or bot "
        "is searched over; default: search:heuristic_balanced)",
    )
    s.add_argument(
        "--dry-run",
        action="store_true",
        help="a tiny run (2 decisions, 2 deals, one repeat) that only checks the command works",
    )
    s.add_argument("--decisions", type=int, default=64, help="decisions searched at once")
    s.add_argument("--plies", type=int, default=20, help="random plies played before the decisions")
    s.add_argument("--repeats", type=int, default=2, help="timed calls (the best is reported)")
    s.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    s.add_argument("--device", default="cpu", help="torch device")
    s.add_argument("--variant", default=None, help="Lost Cities rule variant for a bot base (classic, mini)")
    s.add_argument("--seed", type=int, default=0, help="seed of the positions")
    add_search_options(s)
    add_json_flag(s)
    s.set_defaults(func=run_search)


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
    params = variant_params(args.game, args.variant)
    from ..bench.engine import bench_engine

    result = bench_engine(args.game, args.batch, args.seconds, args.threads, args.seed, **params)
    out = {"bench": "engine", "game": args.game, "batch": args.batch}
    out.update(result if isinstance(result, dict) else vars(result))
    emit(out, args.json, title=f"bench engine: {args.game}")
    return 0


def run_traversal(args) -> int:
    import os

    # Before torch starts OpenMP (no effect if something already imported torch): spinning
    # waiters collapse throughput when other processes share the cores.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    if args.iterations_warmup < 0:
        raise ValueError(f"--iterations-warmup must be at least 0, got {args.iterations_warmup}")
    if args.repeats < 1:
        raise ValueError(f"--repeats must be at least 1, got {args.repeats}")
    overrides = list(args.overrides)
    if args.threads is not None:
        if args.threads < 1:
            raise ValueError(f"--threads must be at least 1, got {args.threads}")
        overrides.append(f"run.threads={args.threads}")
    from ..bench.throughput import bench_overrides, bench_traversal
    from ..train.config import load_config, shipped_config_path
    from .train_cmd import DEFAULT_CONFIG

    config_path = args.config if args.config is not None else shipped_config_path(DEFAULT_CONFIG)
    config = load_config(config_path, bench_overrides(overrides))
    result = bench_traversal(config, warmup_iterations=args.iterations_warmup, repeats=args.repeats, train=args.train)
    out = {"bench": "traversal", "config": str(config_path), **result}
    emit(out, args.json, title=f"bench traversal: {config_path}")
    return 0


def run_search(args) -> int:
    import torch

    from ..bench.search import bench_search
    from ..players import PlayerSpec, parse_player
    from .common import players_and_game

    if args.decisions < 1 or args.repeats < 1 or args.threads < 1 or args.plies < 0:
        raise ValueError("--decisions, --repeats and --threads must be at least 1, --plies at least 0")
    torch.set_num_threads(args.threads)
    if args.dry_run:
        args.decisions, args.repeats, args.plies, args.search_determinizations = 2, 1, 4, 2
    spec = parse_player(args.player)
    if spec.kind != "search":
        spec = PlayerSpec(kind="search", base=spec)
    (player,), game = players_and_game([str(spec)], None, args.variant, args.device, search_settings(args))
    result = bench_search(player.search, args.decisions, args.plies, args.repeats, args.seed)
    out = {
        "bench": "search",
        "player": str(spec),
        **result,
        **{f"search_{k}": v for k, v in player.search.config.model_dump().items()},
    }
    emit(out, args.json, title=f"bench search: {spec}")
    return 0
