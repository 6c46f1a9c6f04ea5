"""Where a network-rollout step's time goes, per row: the engine (step, legal mask, observe,
current player), the encoding, the forward pass in float32 and bfloat16, the masked softmax and
the argmax of the logits, over the lockstep batch a search plays (decisions x candidates x deals
rows, from positions after some random plies). Every part runs on the same rows in each step.

    .venv/bin/python scripts/profile_rollout_step.py [--network champion] [--rows 4608] [--steps 60]

Figures: docs/performance.md ("A teacher that grows").
"""

from __future__ import annotations

import argparse
import time

import torch

from deepcfr.cfr.networks import masked_softmax
from deepcfr.games.base import sample_from_probs
from deepcfr.host_memory import keep_freed_memory
from deepcfr.players import load_player


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--network", default="champion", help="checkpoint spec of the rollout network")
    p.add_argument("--rows", type=int, default=4608, help="rollouts in the lockstep batch")
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--plies", type=int, default=20, help="random plies before the first step")
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    keep_freed_memory()  # as the search does
    player = load_player(f"{args.network}@greedy")
    game, net = player.game, player.agent.strategy_net
    gen = torch.Generator().manual_seed(0)
    state = game.init(args.rows, gen)
    for _ in range(args.plies):
        state = game.step(state, sample_from_probs(game.legal_mask(state).float(), gen))
    seconds: dict[str, float] = {}

    def timed(name, fn, *args):
        start = time.perf_counter()
        out = fn(*args)
        seconds[name] = seconds.get(name, 0.0) + time.perf_counter() - start
        return out

    rows = 0
    with torch.inference_mode():
        for _ in range(args.steps):
            if bool(game.is_terminal(state).all()):
                break
            player_ = timed("engine", lambda s: game.current_player(s).clamp(min=0), state)
            mask = timed("engine", game.legal_mask, state)
            obs = timed("engine", game.observe, state, player_)
            x = timed("encode", game.encode, obs)
            logits = timed("forward float32", net, x)
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=x.device.type == "cpu"):
                timed("forward bfloat16 (autocast)", net, x)
            timed("masked softmax", masked_softmax, logits, mask)
            actions = timed(
                "argmax of the logits", lambda z, m: z.masked_fill(~m, -torch.inf).argmax(dim=1), logits, mask
            )
            state = timed("engine", game.step, state, actions)
            rows += mask.shape[0]
    print(f"{rows} rows over {args.steps} steps of {args.rows} rollouts ({args.network}, {args.threads} thread(s))")
    for name, total in seconds.items():
        print(f"  {name:28s} {1e6 * total / rows:6.2f} us per row")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
