"""`deepcfr play`: a person plays against any player spec (--vs; default the search over the
champion) in the terminal."""

from __future__ import annotations

import secrets
import sys

from .common import DEFAULT_GAME, add_search_options, game_help, make_named_game, players_and_game, search_settings


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "play",
        help="play a game in the terminal against any player (default: the strongest champion player)",
        description="Play Lost Cities, Kuhn, Leduc or Liar's Dice against a player named by a spec (--vs SPEC: a bot, "
        "champion, a checkpoint PATH, PATH@greedy, search:SPEC, ...; default: the strongest champion player its "
        "card measured: the network alone, champion@greedy, unless the search over it beat it head to head). "
        "Type the number of a move; ? shows the agent's "
        "action probabilities, h help, q quits. Ctrl-C or end of input leave cleanly.",
    )
    p.add_argument(
        "--vs",
        default=None,
        metavar="SPEC",
        help="the opponent, a player spec (default: the strongest champion player, today champion@greedy; "
        "e.g. heuristic_careful, "
        "champion@greedy, runs/x/checkpoints/latest.pt, search:heuristic_balanced)",
    )
    p.add_argument(
        "--checkpoint",
        default=None,
        help="a checkpoint to play against: the same as --vs PATH (with --policy / --greedy / --search)",
    )
    p.add_argument("--game", default=None, help=game_help(DEFAULT_GAME, "game for a bot opponent"))
    p.add_argument(
        "--variant",
        default=None,
        help="rule variant for a bot opponent, of a game that has them (Lost Cities: classic, mini)",
    )
    p.add_argument("--seat", type=int, choices=(0, 1), default=0, help="your seat (0 moves first)")
    p.add_argument("--seed", type=int, default=None, help="deal seed (default: a random one, printed)")
    p.add_argument(
        "--policy",
        default=None,
        choices=("average", "current"),
        help="with --checkpoint: which of the agent's policies plays (PATH@current)",
    )
    p.add_argument("--greedy", action="store_true", help="with --checkpoint: the most probable action (PATH@greedy)")
    p.add_argument("--show-probs", action="store_true", help="show the agent's probabilities after each of its moves")
    p.add_argument("--record", default=None, metavar="FILE", help="append the game to FILE (JSON lines)")
    p.add_argument("--plain", action="store_true", help="plain text: no colours or styles")
    p.add_argument(
        "--search",
        action="store_true",
        help="the opponent searches each move (search:SPEC): determinized rollouts (settings: "
        "--search-*); ? then shows the moves it weighed with their values and 95%% confidence intervals",
    )
    add_search_options(p)
    p.set_defaults(func=run)


def opponent_spec(args) -> str:
    """The opponent's spec from --vs, or from --checkpoint with --policy / --greedy / --search."""
    if args.checkpoint and args.vs:
        raise ValueError("give either --checkpoint PATH or --vs SPEC, not both (--checkpoint PATH is --vs PATH)")
    if args.checkpoint is None and (args.policy is not None or args.greedy):
        raise ValueError(
            "--policy and --greedy go with --checkpoint; with --vs write them into the spec (PATH@current, PATH@greedy)"
        )
    if args.checkpoint is not None:
        options = ([args.policy] if args.policy not in (None, "average") else []) + (["greedy"] if args.greedy else [])
        spec = args.checkpoint + (f"@{','.join(options)}" if options else "")
    elif args.vs is not None:
        spec = args.vs
    else:
        spec = default_opponent(args.game, args.variant)
    if args.search and not spec.startswith("search"):
        spec = f"search:{spec}"
    return spec


def default_opponent(game_name: str | None, variant: str | None) -> str:
    """The strongest shipped champion player (``players.shipped.strongest_champion_spec``), where
    the champion plays the game asked for; elsewhere a ValueError asking for --vs."""
    from ..players import describe_game, same_game
    from ..players.shipped import champion_game, strongest_champion_spec

    game, champion = make_named_game(game_name, variant), champion_game()
    if champion is not None and same_game(game, champion):
        return strongest_champion_spec()
    plays = f"the champion plays {describe_game(champion)}" if champion is not None else "no champion is shipped"
    raise ValueError(f"{plays}: name an opponent for {describe_game(game)} with --vs SPEC (e.g. --vs random)")


def build_opponent(args, seed: int):
    """(batched game, seated opponent) from the command line."""
    from ..players import Seated, parse_player

    spec = opponent_spec(args)
    settings = {"seed": seed + 1, **search_settings(args)} if parse_player(spec).kind == "search" else {}
    (player,), game = players_and_game([spec], None if args.game is None else args.game, args.variant, "cpu", settings)
    if args.game is not None and args.game != game.name:
        raise ValueError(f"--game {args.game} does not match the opponent's game {game.name}")
    return game, Seated(player, seed=seed + 1)


def run(args) -> int:
    from ..play import make_view, play_game

    seed = args.seed if args.seed is not None else secrets.randbelow(2**31)
    game, opponent = build_opponent(args, seed)
    outcome = play_game(
        make_view(game),
        opponent,
        args.seat,
        seed,
        sys.stdin,
        sys.stdout,
        plain=args.plain,
        show_probs=args.show_probs,
        record=args.record,
    )
    return outcome.exit_code
