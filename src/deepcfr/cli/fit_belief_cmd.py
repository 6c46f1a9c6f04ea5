"""``deepcfr fit-belief``: fit the learned belief of the opponent's hand that weighs the search's
determinizations (``search[belief=learned]``) on the positions of matches between the given
players, and save it."""

from __future__ import annotations

from .common import add_json_flag, make_named_game
from .fitting import add_fit_arguments, fit_and_save


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
    from ..fitted.hand_belief import HandBelief, fit_hand_belief, save_hand_belief
    from ..games.base import capability

    game = make_named_game(args.game, args.variant)
    capability(game, "hidden_hand")  # before the matches: names the game that has no such belief

    def save(net, trained_on):
        save_hand_belief(args.out, HandBelief(game, net, trained_on))

    return fit_and_save(args, game, "fit-belief", fit_hand_belief, save, "log loss {:.4f}")
