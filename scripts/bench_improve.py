"""One expert-iteration round (deepcfr.improve): searched positions labelled per second and the
share of the round's time in search, training and gating. Without --checkpoint it improves an
untrained tiny network of the given variant (what a machine without a trained run has).

    .venv/bin/python scripts/bench_improve.py --variant mini --games 64
    .venv/bin/python scripts/bench_improve.py --checkpoint runs/.../latest.pt --device cuda --games 400

With --executors (e.g. inline,processes) it measures the round's self-play alone under each
executor in turn (--repeats times, interleaved, workers started before the clock), checks that
every executor labelled the same positions, and prints positions per second for each.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import torch


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--checkpoint", default=None, help="checkpoint to improve (default: an untrained tiny network)")
    p.add_argument("--variant", default="mini", help="variant of the untrained network (without --checkpoint)")
    p.add_argument("--hidden", type=int, default=64, help="hidden size of the untrained network")
    p.add_argument("--device", default="cpu")
    p.add_argument("--games", type=int, default=64, help="self-play games in the round")
    p.add_argument("--batch-games", type=int, default=64, help="games in lockstep")
    p.add_argument("--determinizations", type=int, default=16)
    p.add_argument("--candidates", type=int, default=4)
    p.add_argument("--train-steps", type=int, default=200)
    p.add_argument("--gate-games", type=int, default=100)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--executors", default=None, help="compare self-play under these executors (comma-separated)")
    p.add_argument("--workers", type=int, default=2, help="improve.num_workers of the processes/ray executors")
    p.add_argument("--repeats", type=int, default=1, help="measurements per executor (with --executors)")
    p.add_argument("--json-out", default=None, help="also write the figures to this JSON file")
    args = p.parse_args()
    torch.set_num_threads(args.threads)

    from deepcfr.improve import Improver, improve_config
    from deepcfr.train.config import load_config
    from deepcfr.train.trainer import Trainer

    with tempfile.TemporaryDirectory() as tmp:
        checkpoint = args.checkpoint
        if checkpoint is None:  # an untrained network of the variant
            untrained = load_config(
                None,
                [
                    f"game.variant={args.variant}",
                    f"network.hidden_size={args.hidden}",
                    "memory.advantage_capacity=64",
                    "memory.strategy_capacity=64",
                ],
            )
            with Trainer(untrained) as trainer:
                checkpoint = str(trainer.write_checkpoint(Path(tmp) / "untrained.pt"))
        config = improve_config(
            checkpoint,
            overrides=[
                f"improve.teacher=search[determinizations={args.determinizations},candidates={args.candidates}]:learner",
                "improve.rounds=1",
                f"improve.games_per_round={args.games}",
                f"improve.batch_games={args.batch_games}",
                f"improve.train_steps={args.train_steps}",
                f"improve.gate_games={args.gate_games}",
                "improve.eval_games=0",
                f"run.device={args.device}",
                f"run.threads={args.threads}",
            ],
        )
        if args.executors:
            figures = compare_executors(config, args)
            print(json.dumps(figures, indent=1))
            if args.json_out:
                Path(args.json_out).write_text(json.dumps(figures, indent=1) + "\n")
            return 0
        improver = Improver(config)
        start = time.perf_counter()
        metrics = improver.run_round()
        wall = time.perf_counter() - start
    keys = (
        "selfplay/positions",
        "selfplay/positions_per_second",
        "selfplay/search_seconds",
        "train/seconds",
        "gate/seconds",
        "gate/mean_score_diff",
        "gate/score_diff_ci95",
        "gate/accepted",
        "time/share_search",
        "time/share_train",
        "time/share_gate",
    )
    figures = {
        "device": args.device,
        "checkpoint": args.checkpoint or f"untrained {args.variant} {args.hidden}x2",
        "games": args.games,
        "determinizations": args.determinizations,
        "candidates": args.candidates,
        "round_seconds": wall,
        **{k: metrics.get(k) for k in keys},
    }
    print(json.dumps(figures, indent=1))
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(figures, indent=1) + "\n")
    return 0


def compare_executors(config, args) -> dict:
    """Self-play of round 1 under each executor (see the module docstring)."""
    from deepcfr.improve import Improver

    kinds = [k.strip() for k in args.executors.split(",") if k.strip()]
    improvers = {}
    for kind in kinds:
        improver = Improver(
            config.model_copy(
                update={"improve": config.improve.model_copy(update={"executor": kind, "num_workers": args.workers})}
            )
        )
        improver.executor()  # workers start before the clock
        improvers[kind] = improver
    rates: dict[str, list[float]] = {k: [] for k in kinds}
    overlap: dict[str, list[float]] = {k: [] for k in kinds}  # batch seconds summed / wall: batches running at once
    reference = None
    try:
        for _ in range(args.repeats):
            for kind in kinds:
                positions, metrics = improvers[kind].self_play(1)
                rates[kind].append(metrics["selfplay/positions_per_second"])
                overlap[kind].append(metrics["selfplay/worker_seconds"] / metrics["selfplay/seconds"])
                if reference is None:
                    reference = positions
                elif not all(
                    torch.equal(getattr(reference, f), getattr(positions, f))
                    for f in ("obs", "mask", "candidates", "values", "target")
                ):
                    raise AssertionError(f"executor {kind} labelled other positions than {kinds[0]}")
    finally:
        for improver in improvers.values():
            improver.close()
    return {
        "variant": args.variant,
        "games": args.games,
        "batch_games": args.batch_games,
        "workers": args.workers,
        "determinizations": args.determinizations,
        "candidates": args.candidates,
        "threads": args.threads,
        "positions": len(reference),
        "same_positions": True,
        "positions_per_second": {k: v for k, v in rates.items()},
        "batch_seconds_per_wall_second": overlap,
        "mean_positions_per_second": {k: sum(v) / len(v) for k, v in rates.items()},
    }


if __name__ == "__main__":
    sys.exit(main())
