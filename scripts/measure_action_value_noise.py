#!/usr/bin/env python
"""How much signal one sampled regret carries in Lost Cities: probe targets under a fixed policy.

Plays ``--games`` games of a bot against itself, keeps traverser nodes with probability
``--probe-rate``, and values every legal action there by one rollout under the same bot (probe
sampling, siblings sharing the deck order and their Gumbel noise). For each probed node the
target of action a is v(a) - v(bot's action). Prints the spread of those targets (the noise a
network must average away) against their mean gaps (the signal), and how many samples a
regression would need to see a gap of that size at 2 standard errors.

    PYTHONPATH=src .venv/bin/python scripts/measure_action_value_noise.py --bot heuristic_balanced
"""

from __future__ import annotations

import argparse
import json
import time

import torch

from deepcfr.cfr.policies import BotPolicy
from deepcfr.cfr.traversal import probe_sampling
from deepcfr.games.bots import make_bot
from deepcfr.games.registry import make_game


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bot", default="heuristic_balanced")
    parser.add_argument("--variant", default="classic")
    parser.add_argument("--games", type=int, default=200)
    parser.add_argument("--probe-rate", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    game = make_game("lost_cities", variant=args.variant)
    bot = make_bot(game, args.bot)
    policy = BotPolicy(bot)
    start = time.perf_counter()
    result = probe_sampling(game, 0, args.games, policy, policy, 1, torch.Generator().manual_seed(args.seed),
                            epsilon=0.0, probe_rate=args.probe_rate)
    seconds = time.perf_counter() - start
    adv = result.advantage
    mask, target = adv["mask"], adv["target"]
    chosen = bot.act(adv["obs"], mask)  # the bot's action: sigma is one-hot there, so its target is 0
    others = mask.clone()
    others[torch.arange(mask.shape[0]), chosen] = False
    gaps = target[others]
    play = torch.zeros_like(mask)
    kinds = game.rules.num_kinds
    play[:, :kinds] = True
    out = {
        "bot": args.bot, "variant": args.variant, "probed_nodes": int(mask.shape[0]),
        "decisions": result.stats.decisions, "seconds": seconds,
        "decisions_per_sample": result.stats.decisions / max(1, mask.shape[0]),
        "legal_actions_per_node": float(mask.sum(1).float().mean()),
        "target_std": float(gaps.std()),
        "mean_gap_other_actions": float(gaps.mean()),
        "mean_gap_play_actions": float(target[others & play].mean()),
        "mean_gap_other_card_actions": float(target[others & ~play & (torch.arange(mask.shape[1]) < 2 * kinds)].mean()),
        "share_nodes_where_another_action_sampled_better": float((target.masked_fill(~others, -1e9).max(1).values > 0).float().mean()),
    }
    gap = abs(out["mean_gap_other_actions"])
    out["samples_to_resolve_mean_gap_at_2se"] = (2 * out["target_std"] / max(gap, 1e-9)) ** 2
    if args.json:
        print(json.dumps(out))
        return
    for k, v in out.items():
        print(f"{k:55s} {v:.4g}" if isinstance(v, float) else f"{k:55s} {v}")


if __name__ == "__main__":
    main()
