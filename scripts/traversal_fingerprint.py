#!/usr/bin/env python
"""Fingerprints (SHA-256) of the samples and stats of each sampled traversal of Lost Cities
from a fixed seed, on CPU: run it before and after a change that must not alter the samples
(for example the host-sync removal of docs/performance.md) and compare the lines.

    .venv/bin/python scripts/traversal_fingerprint.py            # 130 traversals per case
    .venv/bin/python scripts/traversal_fingerprint.py --device cuda
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json

import torch


def cases():
    from deepcfr.cfr.traversal import CriticSampling, OutcomeSampling

    return {
        "outcome": OutcomeSampling(epsilon=0.6),
        "outcome_mean": OutcomeSampling(epsilon=0.5, unsampled_target="mean"),
        "outcome_no_tail": OutcomeSampling(epsilon=0.3, tail_correction=False),
        "critic": CriticSampling(epsilon=0.1),
        "critic_explore_more": CriticSampling(epsilon=0.3),
    }


def fingerprint(result) -> str:
    h = hashlib.sha256()
    for part in (result.advantage, result.strategy, {"a": result.advantage_root, "s": result.strategy_root}):
        for name in sorted(part):
            h.update(name.encode())
            h.update(part[name].detach().cpu().contiguous().view(torch.uint8).numpy().tobytes())
    h.update(json.dumps(dataclasses.asdict(result.stats), sort_keys=True).encode())
    return h.hexdigest()[:16]


def main() -> None:
    from deepcfr.cfr.networks import DeepCFRMLP
    from deepcfr.cfr.policies import RegretMatchingPolicy, StrategyNetPolicy
    from deepcfr.cfr.traversal import traverse
    from deepcfr.games.registry import make_game

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traversals", type=int, default=130)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    torch.set_num_threads(1)
    game = make_game("lost_cities")
    torch.manual_seed(0)
    nets = [
        DeepCFRMLP(game.feature_size, game.num_actions, hidden_size=64, num_layers=2).to(args.device) for _ in range(2)
    ]
    traverser, opponent = RegretMatchingPolicy(nets[0], game.encode), StrategyNetPolicy(nets[1], game.encode)
    for name, options in cases().items():
        for player in (0, 1):
            generator = torch.Generator(device=args.device).manual_seed(7 + player)
            result = traverse(
                options, game, player, args.traversals, traverser, opponent, 3, generator, device=args.device
            )
            print(f"{name} p{player} {fingerprint(result)}")


if __name__ == "__main__":
    main()
