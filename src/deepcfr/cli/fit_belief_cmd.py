"""``deepcfr fit-belief``: fit the learned belief of the opponent's hand that weighs the search's
determinizations (``search[belief=learned]``) on the positions of matches between the given
players, and save it."""

from __future__ import annotations

import sys
import time

from .common import add_json_flag, emit, make_named_game
from .fit_value_cmd import add_fit_arguments, matchup_positions


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "fit-belief",
        help="fit the belief of the opponent's hand that the search's belief=learned deals the hidden cards by",
        description="Play matches between the given pairs of players (paired deals), keep a random subset of "
        "their positions, fit a network of the mover's observation to which of its unknown cards the other "
        "seat holds (binary cross-entropy per card kind, a correction to the uniform belief), and save it (a "
        "checkpoint of kind hand_belief; its meta says what it was fitted on and its held-out log loss beside "
        "the uniform belief's). `search[belief=learned,hand_belief=PATH]` uses it.",
    )
    add_fit_arguments(p, steps=12000)
    p.add_argument("--out", required=True, help="where to write the hand belief")
    add_json_flag(p)
    p.set_defaults(func=run)


def run(args) -> int:
    import torch

    from ..games.base import capability
    from ..train.hand_belief import HandBelief, fit_hand_belief, save_hand_belief

    game = make_named_game(args.game, args.variant)
    capability(game, "hidden_hand")  # before the matches: names the game that has no such belief
    start = time.perf_counter()
    positions, names, collect_seconds = matchup_positions(args, game)

    def fitted(step, steps, loss):
        print(
            f"fit: step {step}/{steps}, train log loss {loss:.4f} ({time.perf_counter() - start:.0f}s)",
            file=sys.stderr,
            flush=True,
        )

    net, info = fit_hand_belief(
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
    )
    trained_on = {
        "matchups": [f"{a} vs {b}" for a, b in names],
        "games_each": args.games,
        "keep": args.keep,
        "seed": args.seed,
        "torch_threads": torch.get_num_threads(),
        **info,
    }
    save_hand_belief(args.out, HandBelief(game, net, trained_on))
    emit(
        {
            "out": args.out,
            "game": game.name,
            **trained_on,
            "collect_seconds": collect_seconds,
            "seconds": time.perf_counter() - start,
        },
        args.json,
        title=f"fit-belief: {args.out}",
    )
    return 0
