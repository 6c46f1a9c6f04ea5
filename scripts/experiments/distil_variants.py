#!/usr/bin/env python
"""Distillation settings compared on the same searched positions (expert iteration).

    .venv/bin/python scripts/experiments/distil_variants.py RUN/checkpoints/latest.pt \
        --variant t5:improve.temperature=5 --variant t2:improve.temperature=2 \
        [--variant fine_tune:improve.init=fine_tune] [--positions-from OTHER_RUN/checkpoints/latest.pt ...] \
        [--gate-games 10000] [--games 2000] [--vs BOT ...] [--save DIR]

Takes the positions an improvement run's checkpoint holds (its last ``keep_rounds`` rounds, and
those of each ``--positions-from`` checkpoint before them: rounds run as separate runs from the
champion each hold only their own),
trains one network per variant on them with the run's settings plus the variant's overrides
(``Improver.train_network`` with the same seeds, so variants differ only by their settings), and
plays each, greedy, head to head against the run's start network (the gate's test,
``--gate-games`` paired games), against the fixed reference network and against each ``--vs``
bot (``--games`` each; default heuristic_balanced). Every variant plays the same deals; each
figure carries the luck-corrected estimate beside the plain one (the run's ``improve.value_fn``). A variant
that changes ``improve.temperature`` retargets the positions: the stored target is
``softmax(log pi + value / T)`` over the candidates, so ``log pi`` is recovered from it and the
values up to a constant per position. Fresh against fine-tuned networks (once a script of its
own): ``--variant fresh:improve.init=fresh --variant fine_tune:improve.init=fine_tune``. Prints one
JSON object; ``--save DIR`` writes each network as a loadable network checkpoint ``DIR/NAME.pt``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

from deepcfr.checkpoints import IMPROVE_RUN, CheckpointError, load_checkpoint
from deepcfr.evaluate.arena import play_match
from deepcfr.improve import Improver, ImproveRunConfig
from deepcfr.improve.loop import kept_positions, one_sided_p, positions_of
from deepcfr.improve.positions import Positions, retargeted
from deepcfr.players import load_player
from deepcfr.players.strength import REFERENCE_FILE
from deepcfr.train.config import config_from_dict, upgrade_saved_config


def variant(text: str) -> tuple[str, list[str]]:
    name, _, settings = text.partition(":")
    if not name or not settings:
        raise argparse.ArgumentTypeError(f"a variant is NAME:KEY=VALUE[,KEY=VALUE...], got {text!r}")
    return name, settings.split(",")


def figures(result) -> dict:
    mean, ci95 = result.best_score_diff  # the corrected estimate where there is a value function
    return {
        "games": result.games,
        "win_rate": result.win_rate,
        "mean_score_diff": result.mean_score_diff,
        "score_diff_ci95": result.score_diff_ci95,
        "corrected_score_diff": mean,
        "corrected_ci95": ci95,
        "p_better": one_sided_p(mean, ci95),
        "useless_pile_draws": result.figures().get("useless_pile_draws_a"),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("checkpoint", help="an improvement run's checkpoint (it holds the positions)")
    p.add_argument(
        "--variant",
        type=variant,
        action="append",
        required=True,
        metavar="NAME:KEY=VALUE,...",
        help="a variant's name and its config overrides (repeatable)",
    )
    p.add_argument(
        "--positions-from",
        action="append",
        default=[],
        metavar="CHECKPOINT",
        help="another improvement run's checkpoint whose positions are added (repeatable, oldest first)",
    )
    p.add_argument("--gate-games", type=int, default=10000, help="paired games against the start network")
    p.add_argument("--games", type=int, default=2000, help="paired games against the reference and each bot")
    p.add_argument(
        "--vs",
        action="append",
        default=None,
        metavar="BOT",
        help="a bot each variant plays (repeatable; default heuristic_balanced)",
    )
    p.add_argument("--reference", default=str(REFERENCE_FILE))
    p.add_argument("--seed", type=int, default=777, help="seed of the deals")
    p.add_argument("--save", type=Path, help="write each variant's network to DIR/NAME.pt")
    args = p.parse_args(argv)
    bots = args.vs or ["heuristic_balanced"]
    torch.set_num_threads(1)
    try:
        payload = load_checkpoint(args.checkpoint, map_location="cpu", kinds=(IMPROVE_RUN,))
    except CheckpointError as e:
        p.error(str(e))
    saved = upgrade_saved_config(payload["config"], ImproveRunConfig)
    saved["improve"].pop("positions_from", None)  # the positions trained on are the ones read here
    expected_game = {key: payload["meta"][key] for key in ("game", "game_version", "game_config")}
    blocks = []  # (the temperature its targets were made at, the block), oldest first
    for source in args.positions_from:
        try:
            temperature, rounds = kept_positions(source, expected_game)
        except CheckpointError as e:
            p.error(str(e))
        blocks += [(temperature, block) for _, block in rounds]
    run_temperature, rounds = positions_of(payload)  # the run's own, from the checkpoint read above
    blocks += [(run_temperature, block) for _, block in rounds]
    out: dict = {
        "checkpoint": args.checkpoint,
        "positions_from": args.positions_from,
        "positions": sum(len(block) for _, block in blocks),
        "run_temperature": run_temperature,
    }
    # Every variant's config and targets are made before the first one trains (minutes each).
    configs, positions = {}, {}
    for name, overrides in args.variant:
        configs[name] = config = config_from_dict(saved, overrides, args.checkpoint, ImproveRunConfig)
        try:
            positions[name] = Positions.concat(
                [retargeted(block, temperature, config.improve.temperature) for temperature, block in blocks]
            )
        except ValueError as e:
            p.error(f"variant {name}: {e}")
    for name, overrides in args.variant:
        start = time.perf_counter()
        with Improver(configs[name]) as improver:  # from improve.checkpoint: the run's start network
            net, metrics = improver.train_network(int(payload["improve"]["round"]), positions.pop(name))
            game = improver.game
            new = improver.network_player(net, name, greedy=True)
            row = {"overrides": overrides, **{k: metrics[k] for k in metrics if k.startswith("train/")}}
            value_fn = improver.value_fn
            row["vs_start"] = figures(
                play_match(
                    game,
                    new,
                    improver.network_player(improver.current, "start", greedy=True),
                    args.gate_games,
                    seed=args.seed,
                    value_fn=value_fn,
                )
            )
            row["vs_reference"] = figures(
                play_match(
                    game,
                    new,
                    load_player(f"{args.reference}@greedy", game),
                    args.games,
                    seed=args.seed + 1,
                    value_fn=value_fn,
                )
            )
            for k, bot in enumerate(bots):
                row[f"vs_{bot}"] = figures(
                    play_match(game, new, load_player(bot, game), args.games, seed=args.seed + 2 + k, value_fn=value_fn)
                )
            if args.save is not None:
                improver.save_network(net, args.save / f"{name}.pt")
            row["seconds"] = time.perf_counter() - start
        out[name] = row
        print(
            f"{name}: vs start {row['vs_start']['mean_score_diff']:+.2f} +- {row['vs_start']['score_diff_ci95']:.2f} "
            f"(corrected {row['vs_start']['corrected_score_diff']:+.2f} +- {row['vs_start']['corrected_ci95']:.2f}), "
            f"vs reference {row['vs_reference']['mean_score_diff']:+.2f}, "
            + ", ".join(f"vs {bot} {100 * row[f'vs_{bot}']['win_rate']:.1f}%" for bot in bots),
            file=sys.stderr,
        )
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
