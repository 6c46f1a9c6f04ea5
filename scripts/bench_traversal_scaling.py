"""Traversals per second against the number of worker processes (``traversal.executor``).

Runs the same chunks of outcome-sampling traversals (both seats playing regret matching on
randomly initialised networks of the configured size) inline in this process and through a
ProcessExecutor with each worker count, alternating the modes for ``--repeats`` rounds, and
prints traversals/s, decisions/s and realized rows per forward for each. Worker start-up is timed
separately and excluded (one warm-up phase per executor).

    .venv/bin/python scripts/bench_traversal_scaling.py --workers 1 2 --traversals 512
    .venv/bin/python scripts/bench_traversal_scaling.py --variant mini --json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

import torch


def main() -> int:
    from deepcfr.cfr.networks import build_network
    from deepcfr.cfr.traversal import OutcomeSampling, TraversalStats
    from deepcfr.parallel.chunks import ChunkSpec, GameSpec, PolicySpec, chunk_sizes
    from deepcfr.parallel.executors import InlineExecutor, ProcessExecutor
    from deepcfr.seeding import chunk_seed

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--variant", default="classic", help="Lost Cities variant (classic | mini)")
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--traversals", type=int, default=512, help="traversals per phase")
    p.add_argument("--worker-batch", type=int, default=128, help="traversals per chunk (traversal.chunk_size)")
    p.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--threads", type=int, default=1, help="torch threads of this process (inline)")
    p.add_argument("--json", action="store_true")
    args = p.parse_args()

    torch.set_num_threads(args.threads)
    spec = GameSpec.of("lost_cities", {"variant": args.variant})
    game = spec.make()
    torch.manual_seed(0)
    networks = {
        f"advantage_{q}": build_network(
            {"hidden_size": args.hidden, "num_layers": args.layers}, game.feature_size, game.num_actions
        ).eval()
        for q in range(2)
    }
    options = OutcomeSampling(epsilon=0.6)

    def chunks(size: int, iteration: int):
        return [
            ChunkSpec(
                i,
                n,
                chunk_seed(0, iteration, 0, i),
                0,
                iteration,
                PolicySpec("regret", "advantage_0"),
                PolicySpec("regret", "advantage_1"),
                True,
                options,
            )
            for i, n in enumerate(chunk_sizes(args.traversals, size))
        ]

    executors = {
        f"inline (chunks of {args.worker_batch})": (InlineExecutor(game), args.worker_batch),
        f"inline (one batch of {args.traversals})": (InlineExecutor(game), args.traversals),
    }
    startup = {}
    for w in args.workers:
        t0 = time.perf_counter()
        executor = ProcessExecutor(spec, w)
        executor.run(networks, chunks(args.worker_batch, 0))  # warm-up
        startup[w] = time.perf_counter() - t0
        executors[f"processes x{w}"] = (executor, args.worker_batch)

    seconds: dict[str, list[float]] = {name: [] for name in executors}
    stats: dict[str, TraversalStats] = {}
    try:
        for r in range(args.repeats):
            for name, (executor, size) in executors.items():
                t0 = time.perf_counter()
                results = executor.run(networks, chunks(size, r + 1))
                seconds[name].append(time.perf_counter() - t0)
                total = TraversalStats()
                for result in results:
                    total.merge(result.stats)
                stats[name] = total
    finally:
        for executor, _ in executors.values():
            executor.close()

    base = statistics.median(seconds[next(iter(executors))])
    rows = []
    for name in executors:
        s = statistics.median(seconds[name])
        st = stats[name]
        rows.append(
            {
                "mode": name,
                "seconds": s,
                "traversals_per_second": args.traversals / s,
                "decisions_per_second": st.decisions / s,
                "rows_per_forward": st.avg_batch,
                "speedup_vs_inline": base / s,
                "runs": seconds[name],
            }
        )
    info = {
        "variant": args.variant,
        "network": f"{args.hidden}x{args.layers}",
        "traversals": args.traversals,
        "worker_batch": args.worker_batch,
        "threads_main": torch.get_num_threads(),
        "threads_per_worker": 1,
        "cpus": os.cpu_count(),
        "startup_seconds": startup,
        "results": rows,
    }
    if args.json:
        print(json.dumps(info))
        return 0
    print(
        f"Lost Cities {args.variant}, {args.hidden}x{args.layers} MLP, {args.traversals} traversals per phase, "
        f"chunks of {args.worker_batch}; {os.cpu_count()} CPUs, {torch.get_num_threads()} thread(s) inline, "
        f"1 per worker; median of {args.repeats}"
    )
    print(f"{'mode':32s} {'s/phase':>8s} {'trav/s':>8s} {'decisions/s':>12s} {'rows/fwd':>9s} {'vs inline':>9s}")
    for row in rows:
        print(
            f"{row['mode']:32s} {row['seconds']:8.2f} {row['traversals_per_second']:8.1f} "
            f"{row['decisions_per_second']:12.0f} {row['rows_per_forward']:9.1f} {row['speedup_vs_inline']:8.2f}x"
        )
    print("worker start-up (excluded): " + ", ".join(f"x{w}: {s:.1f}s" for w, s in startup.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
