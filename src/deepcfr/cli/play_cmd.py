"""`deepcfr play`: a person plays against a trained agent (--checkpoint) or a bot (--vs) in the terminal."""

from __future__ import annotations

import secrets
import sys

from .common import add_search_options, search_settings


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "play",
        help="play a game in the terminal against an agent or a bot",
        description="Play Lost Cities, Kuhn or Leduc against a trained agent (--checkpoint PATH) or a bot "
        "(--vs NAME, no checkpoint needed). Type the number of a move; ? shows the agent's action "
        "probabilities, h help, q quits. Ctrl-C or end of input leave cleanly.",
    )
    p.add_argument("--checkpoint", default=None, help="checkpoint of a trained agent to play against")
    p.add_argument("--vs", default=None, help="play against this bot instead (e.g. random, heuristic_careful)")
    p.add_argument("--game", default=None, help="game for --vs: lost_cities (default), kuhn or leduc")
    p.add_argument("--variant", default=None, help="Lost Cities rule variant for --vs (classic, mini)")
    p.add_argument("--seat", type=int, choices=(0, 1), default=0, help="your seat (0 moves first)")
    p.add_argument("--seed", type=int, default=None, help="deal seed (default: a random one, printed)")
    p.add_argument("--policy", default="average", choices=("average", "current", "mixture"),
                   help="which of the agent's policies plays")
    p.add_argument("--greedy", action="store_true", help="the agent plays its most probable action")
    p.add_argument("--show-probs", action="store_true", help="show the agent's probabilities after each of its moves")
    p.add_argument("--record", default=None, metavar="FILE", help="append the game to FILE (JSON lines)")
    p.add_argument("--plain", action="store_true", help="plain text: no colours or styles")
    p.add_argument("--search", action="store_true",
                   help="the agent (or bot) searches each move: determinized rollouts (settings: --search-*); "
                   "? then shows the moves it weighed with their values and 95%% confidence intervals")
    add_search_options(p)
    p.set_defaults(func=run)


def build_opponent(args, seed: int):
    """(batched game, opponent) from the command line."""
    from ..games.registry import game_names, make_game
    from ..play import BotOpponent, PolicyOpponent

    if args.checkpoint and args.vs:
        raise ValueError("give either --checkpoint PATH (play an agent) or --vs BOT (play a bot), not both")
    if not args.checkpoint and not args.vs:
        raise ValueError("play needs an opponent: --checkpoint PATH or --vs BOT (e.g. --vs random)")
    if args.search:
        return _search_opponent(args, seed)
    if args.checkpoint:
        from ..train.agent import load_agent

        agent = load_agent(args.checkpoint)
        game = agent.game
        if args.game is not None and args.game != game.name:
            raise ValueError(f"--game {args.game} does not match the checkpoint's game {game.name}")
        if args.variant is not None:
            raise ValueError("--variant applies to --vs only: an agent plays the rules it was trained on")
        # Greedy play takes the argmax here, so that the probabilities shown stay the policy's own.
        policy = agent.policy(kind=args.policy, greedy=False)
        name = f"agent@{agent.iteration}"
        return game, PolicyOpponent(policy, name, seed=seed + 1, greedy=args.greedy)
    name = args.game or "lost_cities"
    if name not in game_names():
        raise ValueError(f"unknown game {name!r}; valid games: {', '.join(game_names())}")
    params = {}
    if args.variant is not None:
        if name != "lost_cities":
            raise ValueError(f"--variant applies to lost_cities only, not to game {name!r}")
        params["variant"] = args.variant
    game = make_game(name, **params)
    from ..games.bots import make_bot

    return game, BotOpponent(make_bot(game, args.vs), seed=seed + 1)


def _search_opponent(args, seed: int):
    from ..play.opponents import SearchOpponent
    from ..players import PlayerSpec, load_player

    if args.checkpoint:
        if args.variant is not None:
            raise ValueError("--variant applies to --vs only: an agent plays the rules it was trained on")
        base = PlayerSpec(kind="checkpoint", path=args.checkpoint, policy=args.policy, greedy=args.greedy)
        game = None
    else:
        from .arena_cmd import make_arena_game

        base = PlayerSpec(kind="bot", name=args.vs)
        game = make_arena_game(args.game or "lost_cities", args.variant)
    settings = {"seed": seed + 1, **search_settings(args)}
    player = load_player(PlayerSpec(kind="search", base=base), game, "cpu", settings)
    if args.game is not None and args.game != player.game.name:
        raise ValueError(f"--game {args.game} does not match the checkpoint's game {player.game.name}")
    return player.game, SearchOpponent(player, player.game.action_name)


def run(args) -> int:
    from ..play import make_view, play_game

    seed = args.seed if args.seed is not None else secrets.randbelow(2**31)
    game, opponent = build_opponent(args, seed)
    outcome = play_game(make_view(game), opponent, args.seat, seed, sys.stdin, sys.stdout, plain=args.plain,
                        show_probs=args.show_probs, record=args.record)
    return outcome.exit_code
