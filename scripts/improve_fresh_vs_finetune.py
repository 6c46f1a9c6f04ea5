#!/usr/bin/env python
"""Fresh against fine-tuned distillation on the same positions (issue 15).

    PYTHONPATH=src python scripts/improve_fresh_vs_finetune.py RUN/checkpoints/latest.pt [--games 400]

Takes the positions an improvement run's checkpoint holds, trains a network on them twice with
the run's own settings (improve.init fresh, then fine_tune from the run's start network), and
plays each network alone against the evaluation bots on paired deals. Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json

import torch

from deepcfr.evaluate.arena import play_match
from deepcfr.improve import ImproveRunConfig, Improver
from deepcfr.players import load_player
from deepcfr.checkpoints import load_checkpoint
from deepcfr.train.config import config_from_dict, upgrade_saved_config


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("checkpoint", help="an improvement run's checkpoint (it holds the positions)")
    p.add_argument("--games", type=int, default=400, help="games per bot, even (paired deals)")
    p.add_argument("--seed", type=int, default=12345, help="seed of the evaluation deals")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a config field of the run, e.g. --set improve.train_steps=100")
    args = p.parse_args()
    torch.set_num_threads(1)
    payload = load_checkpoint(args.checkpoint, map_location="cpu")
    out = {}
    for init in ("fresh", "fine_tune"):
        config = config_from_dict(upgrade_saved_config(payload["config"], ImproveRunConfig),
                                  [*args.overrides, f"improve.init={init}"], args.checkpoint, ImproveRunConfig)
        with Improver(config) as improver:  # from improve.checkpoint: the run's start network
            improver.memory.load_state_dict(payload["memories"])
            net, metrics = improver.train_network(1)
            player = improver.network_player(net, init)
            out[f"{init}/train_loss"] = metrics.get("train/loss")
            for bot in config.improve.eval_opponents:
                r = play_match(improver.game, player, load_player(bot, improver.game), args.games, seed=args.seed)
                out[f"{init}/{bot}"] = {"win_rate": r.win_rate, "mean_score_diff": r.mean_score_diff,
                                        "score_diff_ci95": r.score_diff_ci95}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
