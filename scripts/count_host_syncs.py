#!/usr/bin/env python
"""Host syncs per lockstep step of each sampled traversal of Lost Cities (fixed seed), counted by
``deepcfr.host_syncs.SyncCounter`` (the table of docs/performance.md).

    .venv/bin/python scripts/count_host_syncs.py [--traversals 512] [--device cpu]
"""

from __future__ import annotations

import argparse
import json

import torch


def cases():
    from deepcfr.cfr.traversal import CriticSampling, OutcomeSampling

    return {"outcome": OutcomeSampling(epsilon=0.6), "critic": CriticSampling(epsilon=0.1)}


def main() -> None:
    from deepcfr.cfr.networks import DeepCFRMLP
    from deepcfr.cfr.policies import RegretMatchingPolicy, StrategyNetPolicy
    from deepcfr.cfr.traversal import traverse
    from deepcfr.games.registry import make_game
    from deepcfr.host_syncs import SyncCounter

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traversals", type=int, default=512)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    torch.set_num_threads(1)
    game = make_game("lost_cities")
    steps = [0]
    engine_step = game.step

    def counted_step(state, actions, check=False):
        steps[0] += 1
        return engine_step(state, actions, check)

    game.step = counted_step
    torch.manual_seed(0)
    nets = [
        DeepCFRMLP(game.feature_size, game.num_actions, hidden_size=32, num_layers=1).to(args.device) for _ in range(2)
    ]
    traverser, opponent = RegretMatchingPolicy(nets[0], game.encode), StrategyNetPolicy(nets[1], game.encode)
    report = {}
    for name, options in cases().items():
        steps[0] = 0
        generator = torch.Generator(device=args.device).manual_seed(1)
        with SyncCounter() as counter:
            traverse(options, game, 0, args.traversals, traverser, opponent, 2, generator, device=args.device)
        report[name] = {
            "syncs": counter.count,
            "lockstep_steps": steps[0],
            "syncs_per_step": round(counter.count / max(steps[0], 1), 2),
            "by_op": counter.by_op,
        }
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
