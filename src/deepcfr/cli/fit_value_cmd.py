"""``deepcfr fit-value``: fit the value function of the full state that corrects matches for luck
(evaluate/variance.py) on the positions of matches between the given players, and save it."""

from __future__ import annotations

from .common import add_json_flag, make_named_game
from .fitting import add_fit_arguments, fit_and_save


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "fit-value",
        help="fit the value function that makes match estimates variance-reduced (arena, eval, the gate)",
        description="Play matches between the given pairs of players (paired deals), keep a random subset of "
        "their positions, fit a network of the full state (both seats' views) to the final score difference, "
        "and save it (a checkpoint of kind value_function; its meta says what it was trained on). "
        "`--value-fn PATH` of arena and eval uses it.",
    )
    add_fit_arguments(p, steps=16000)
    p.add_argument(
        "--start",
        default=None,
        metavar="FILE",
        help="a value function to continue fitting from (same hidden size and layers); on a game that "
        "names its chance kinds its state value teaches the new file's chance head (the value after "
        "each card a draw could bring, from one forward per draw)",
    )
    p.add_argument("--out", required=True, help="where to write the value function")
    add_json_flag(p)
    p.set_defaults(func=run)


def run(args) -> int:
    from ..fitted.value_fn import FullStateValue, fit_value, load_value_function, save_value_function
    from ..games.base import has_capability

    game = make_named_game(args.game, args.variant)
    start_value = load_value_function(args.start, game) if args.start else None
    teacher = start_value if start_value is not None and has_capability(game, "chance_kinds") else None

    def save(net, trained_on):
        save_value_function(args.out, FullStateValue(game, net, trained_on))

    return fit_and_save(
        args,
        game,
        "fit-value",
        fit_value,
        save,
        "mse {:.1f}",
        teacher=teacher,
        settings={"start": args.start},
        start=start_value.net if start_value is not None else None,
    )
