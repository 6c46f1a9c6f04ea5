"""Feature encoding cost: microseconds per state of ``game.encode`` on observations from random
play, at the batch sizes the traversal (a few thousand) and the training draws (16384) use,
with glibc's default allocator settings and with ``host_memory.keep_freed_memory`` (which the
trainer applies), each in its own process, rounds alternated, side by side.

    .venv/bin/python scripts/bench_encode.py [--variant classic] [--threads 1] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import torch

from deepcfr.games.base import sample_uniform_legal
from deepcfr.games.lost_cities.engine import LostCitiesGame
from deepcfr.host_memory import keep_freed_memory


def measure(args) -> dict[int, float]:
    """Microseconds per state per batch size, in this process."""
    torch.set_num_threads(args.threads)
    if args.keep_freed_memory and not keep_freed_memory():
        raise SystemExit("keep_freed_memory does not apply on this platform")
    game = LostCitiesGame.from_params(args.variant)
    generator = torch.Generator().manual_seed(0)
    sizes = [int(b) for b in args.batches.split(",")]
    state = game.init(4096, generator)
    rows = []
    while sum(r.shape[0] for r in rows) < max(sizes):
        rows.append(game.observe(state, game.current_player(state).clamp(min=0)))
        game.step(state, sample_uniform_legal(game.legal_mask(state), generator))
    obs = torch.cat(rows)
    out = {}
    for n in sizes:
        # distinct rows per call, as a training draw has
        batches = [obs[(i * 997) % (obs.shape[0] - n + 1) :][:n].contiguous() for i in range(4)]
        for batch in batches:
            game.encode(batch)
        start = time.perf_counter()
        for i in range(args.repeats):
            game.encode(batches[i % len(batches)])
        out[n] = (time.perf_counter() - start) / args.repeats * 1e6 / n
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variant", default="classic")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--batches", default="2048,16384")
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--keep-freed-memory", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args)))
        return
    results: dict[str, list[dict]] = {"glibc defaults": [], "keep_freed_memory": []}
    base = [
        sys.executable,
        __file__,
        "--child",
        "--variant",
        args.variant,
        "--threads",
        str(args.threads),
        "--batches",
        args.batches,
        "--repeats",
        str(args.repeats),
    ]
    for _ in range(args.rounds):
        for label, extra in (("glibc defaults", []), ("keep_freed_memory", ["--keep-freed-memory"])):
            done = subprocess.run(base + extra, capture_output=True, text=True, check=True, env=os.environ.copy())
            results[label].append(json.loads(done.stdout))
    game = LostCitiesGame.from_params(args.variant)
    print(
        f"lost_cities/{args.variant}: {game.feature_size} features, {args.threads} thread(s), "
        f"{args.rounds} alternated rounds, us per state (median of rounds)"
    )
    for n in args.batches.split(","):
        medians = {label: sorted(r[n] for r in rounds)[len(rounds) // 2] for label, rounds in results.items()}
        a, b = medians["glibc defaults"], medians["keep_freed_memory"]
        print(f"batch {int(n):6d}: glibc defaults {a:.2f}  keep_freed_memory {b:.2f}  ratio {a / b:.2f}x")


if __name__ == "__main__":
    main()
