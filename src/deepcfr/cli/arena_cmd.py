"""``deepcfr arena``: a batched match between any two players (bots, checkpoints, search agents),
paired deals, one line of figures."""

from __future__ import annotations

import sys

from .common import (
    DEFAULT_GAME,
    add_chance_samples_option,
    add_json_flag,
    add_search_options,
    add_value_option,
    emit,
    game_help,
    players_and_game,
    search_figures,
    search_settings,
    step_progress,
    value_function,
)


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "arena",
        help="play two players against each other (paired deals, both seat orders)",
        description="Play player A against player B on paired deals (each deal in both seat orders) and "
        "report A's win rate and mean score difference with a 95%% confidence interval. A player is a "
        "bot name, a checkpoint (PATH = its average policy, PATH@current, PATH@greedy) or search:SPEC "
        "(rollout search over either; settings from --search-* or inline).",
    )
    p.add_argument("--game", default=None, help=game_help(f"the checkpoint's, else {DEFAULT_GAME}"))
    p.add_argument(
        "--a",
        required=True,
        help="player A (e.g. heuristic_careful, runs/x/checkpoints/latest.pt, search:runs/x/checkpoints/latest.pt)",
    )
    p.add_argument("--b", required=True, help="player B (same forms)")
    p.add_argument("--games", type=int, default=2000, help="number of games, even (games/2 deals)")
    p.add_argument("--seed", type=int, default=0, help="seed for the deals and the players' randomness")
    p.add_argument("--variant", default=None, help="Lost Cities rule variant (classic, mini)")
    p.add_argument("--device", default="cpu", help="torch device to play on")
    p.add_argument(
        "--record",
        default=None,
        metavar="PATH",
        help="append every game to this JSON-lines file (replay with `deepcfr replay`)",
    )
    add_search_options(p)
    add_value_option(p)
    add_chance_samples_option(p)
    add_json_flag(p)
    p.set_defaults(func=run)


def run(args) -> int:
    from ..evaluate.arena import play_match
    from ..games.base import has_capability

    (player_a, player_b), game = players_and_game(
        [args.a, args.b], args.game, args.variant, args.device, search_settings(args)
    )
    played = game
    if args.record:
        from ..evaluate.replay import RecordingGame

        played = RecordingGame(game)
    result = play_match(
        played,
        player_a,
        player_b,
        games=args.games,
        seed=args.seed,
        device=args.device,
        on_step=step_progress(sys.stderr),
        value_fn=value_function(args, game),
        chance_samples=args.chance_samples,
        target_ci95=args.target_ci,
    )
    out = {"game": game.name, "a": args.a, "b": args.b}
    if has_capability(game, "variants"):
        out["variant"] = game.variant  # the rules played (a checkpoint's own when no --variant is given)
    out.update(result.to_dict())
    out["seed"] = args.seed
    out.update(search_figures(player_a, "a_"))
    out.update(search_figures(player_b, "b_"))
    if args.record:
        from ..evaluate.replay import arena_players

        played.save(args.record, arena_players(args.games, args.a, args.b), seed=args.seed)
        out["recorded"] = args.record
    emit(out, args.json, title=f"arena: {args.a} vs {args.b}")
    return 0
