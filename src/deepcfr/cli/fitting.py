"""What ``deepcfr fit-value`` and ``deepcfr fit-belief`` share: their options, the positions of the
matches they fit on, and the fitting, saving and summary around each one's own fit function."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

from .common import DEFAULT_GAME, emit, game_help


def add_fit_arguments(p, steps: int) -> None:
    """The options ``fit-value`` and ``fit-belief`` share: the game, the matches whose positions
    they fit, and the network and its training."""
    p.add_argument("--game", default=None, help=game_help(DEFAULT_GAME))
    p.add_argument("--variant", default=None, help="Lost Cities rule variant (classic, mini)")
    p.add_argument(
        "--matchup",
        nargs=2,
        action="append",
        metavar=("A", "B"),
        default=None,
        help="a pair of player specs whose games are training positions (repeat it; default: the "
        "champion greedy against each heuristic bot and sampled against itself where the champion "
        "plays this game, else every pair of the game's evaluation bots)",
    )
    p.add_argument("--games", type=int, default=4000, help="games per matchup (even)")
    p.add_argument("--keep", type=float, default=0.3, help="fraction of the positions kept (they are correlated)")
    p.add_argument("--steps", type=int, default=steps, help="training steps")
    p.add_argument("--batch-size", type=int, default=1024)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--hidden-size", type=int, default=256)
    p.add_argument("--num-layers", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default="cpu")


def matchup_positions(args, game, teacher=None):
    """(the positions of ``args``' matchups, their names, the seconds it took), progress on stderr."""
    from ..fitted.value_fn import collect_positions
    from ..players import load_player

    if args.games < 2 or args.games % 2:
        raise ValueError(f"--games must be a positive even number (paired deals), got {args.games}")
    if not 0 < args.keep <= 1:
        raise ValueError(f"--keep must be in (0, 1], got {args.keep}")
    names = [tuple(pair) for pair in args.matchup] if args.matchup else default_matchups(game)
    players = {name: load_player(name, game, args.device) for pair in names for name in pair}
    start = time.perf_counter()

    def collected(done, total, seconds):
        print(f"positions: {done}/{total} games ({seconds:.0f}s)", file=sys.stderr, flush=True)

    positions = collect_positions(
        game,
        [(players[a], players[b]) for a, b in names],
        args.games,
        args.seed,
        args.keep,
        teacher=teacher,
        on_batch=collected,
    )
    print(f"fitting on {len(positions)} positions", file=sys.stderr, flush=True)
    return positions, names, time.perf_counter() - start


def default_matchups(game) -> list[tuple[str, str]]:
    from ..games.bots import evaluation_opponents
    from ..players.shipped import champion_game

    bots = evaluation_opponents(game)
    champ = champion_game()
    if champ is not None and champ.config_dict() == game.config_dict() and champ.name == game.name:
        return [("champion@greedy", bot) for bot in bots if bot not in ("random", "discard_only")] + [
            ("champion", "champion")
        ]
    return [(a, b) for i, a in enumerate(bots) for b in bots[i + 1 :]] or [(bots[0], bots[0])]


def fit_and_save(
    args,
    game,
    command: str,
    fit: Callable,
    save: Callable,
    loss: str,
    teacher=None,
    settings: dict | None = None,
    **fit_options,
) -> int:
    """Collect the positions of ``args``' matchups (with ``teacher``'s values where given), fit
    ``fit(game, positions, hidden_size, num_layers, steps, batch_size, lr, seed=, device=,
    on_progress=, **fit_options)`` to them (progress on stderr, the training loss written by the
    format ``loss``, e.g. ``"mse {:.1f}"``), save ``save(net, trained_on)`` and print ``command``'s
    summary. ``trained_on`` is what the file says it was fitted on, ``settings`` among it."""
    import torch

    start = time.perf_counter()
    positions, names, collect_seconds = matchup_positions(args, game, teacher)

    def fitted(step, steps, value):
        print(
            f"fit: step {step}/{steps}, train {loss.format(value)} ({time.perf_counter() - start:.0f}s)",
            file=sys.stderr,
            flush=True,
        )

    net, info = fit(
        game,
        positions,
        args.hidden_size,
        args.num_layers,
        args.steps,
        args.batch_size,
        args.lr,
        seed=args.seed,
        device=args.device,
        on_progress=fitted,
        **fit_options,
    )
    trained_on = {
        "matchups": [f"{a} vs {b}" for a, b in names],
        "games_each": args.games,
        "keep": args.keep,
        "seed": args.seed,
        **(settings or {}),
        "torch_threads": torch.get_num_threads(),
        **info,
    }
    save(net, trained_on)
    emit(
        {
            "out": args.out,
            "game": game.name,
            **trained_on,
            "collect_seconds": collect_seconds,
            "seconds": time.perf_counter() - start,
        },
        args.json,
        title=f"{command}: {args.out}",
    )
    return 0
