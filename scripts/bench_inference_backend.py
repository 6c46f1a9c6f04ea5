"""A/B of ``traversal.inference_backend``: local (each worker runs its own CPU forwards) against
server (one process owns the networks on ``inference_server.device`` and batches every worker's
requests), in one run with the same seed and config.

Each round trains ``--iterations`` iterations with each backend (alternating, ``--repeats``
rounds) on worker processes and prints, per backend, iteration and traversal seconds (the
first iteration, where player 0 still plays uniform, is left out of the medians), the workers'
rows per policy call, the server's realized rows per forward, and the speedup of the server.
Each request carries a worker's whole lockstep batch, so rows per forward reach hundreds; the
server should win wherever it has a GPU, and on a small CPU-only machine it competes with the
workers for cores.

    .venv/bin/python scripts/bench_inference_backend.py                 # cpu.yaml, 2 workers
    .venv/bin/python scripts/bench_inference_backend.py --workers 8 --server-device cuda \\
        --set traversal.chunk_size=1024 --set traversal.traversals_per_player=16384
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time


def main() -> int:
    import torch

    from deepcfr.bench.throughput import bench_overrides
    from deepcfr.train.config import load_config
    from deepcfr.train.trainer import Trainer

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--config", default="lost_cities/cpu.yaml", help="config file or shipped config name")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--worker-batch", type=int, default=256)
    p.add_argument("--traversals", type=int, default=512, help="traversals per player per iteration")
    p.add_argument("--iterations", type=int, default=3)
    p.add_argument("--repeats", type=int, default=1)
    p.add_argument("--server-device", default="auto")
    p.add_argument(
        "--train-steps", type=int, default=20, help="advantage/strategy steps (small: traversal is measured)"
    )
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--json", action="store_true")
    args = p.parse_args()

    # the benches' overrides (no evaluation, no progress display, the loop from a cold start) first
    base = bench_overrides(
        [
            "traversal.executor=processes",
            f"traversal.num_workers={args.workers}",
            f"traversal.chunk_size={args.worker_batch}",
            f"traversal.traversals_per_player={args.traversals}",
            f"run.iterations={args.iterations}",
            "run.time_budget_seconds=null",
            f"advantage.train_steps={args.train_steps}",
            f"strategy.train_steps={args.train_steps}",
            f"inference_server.device={args.server_device}",
            *args.overrides,
        ]
    )
    per_backend: dict[str, dict[str, list[float]]] = {}
    for r in range(args.repeats):
        for backend in ("local", "server"):
            config = load_config(args.config, [*base, f"traversal.inference_backend={backend}"])
            t0 = time.perf_counter()
            trainer = Trainer(config)
            trainer.train()
            wall = time.perf_counter() - t0
            rec = per_backend.setdefault(
                backend,
                {k: [] for k in ("iteration", "traversal", "worker_rows", "server_rows", "server_max_rows", "wall")},
            )
            rec["wall"].append(wall)
            for m in trainer.history[1:]:
                rec["iteration"].append(m["time/iteration_seconds"])
                rec["traversal"].append(m["time/traversal_seconds"])
                rec["worker_rows"].append(m["traversal/avg_batch"])
                if "inference_server/avg_batch_rows" in m:
                    rec["server_rows"].append(m["inference_server/avg_batch_rows"])
                    rec["server_max_rows"].append(m["inference_server/max_batch_rows"])
            print(f"round {r + 1} {backend}: {wall:.1f}s wall (incl. process start-up)", file=sys.stderr, flush=True)

    med = {
        b: {k: (statistics.median(v) if v else float("nan")) for k, v in rec.items()} for b, rec in per_backend.items()
    }
    speedup = med["local"]["traversal"] / med["server"]["traversal"]
    info = {
        "config": os.path.basename(args.config),
        "workers": args.workers,
        "worker_batch": args.worker_batch,
        "traversals_per_player": args.traversals,
        "server_device": args.server_device,
        "cuda": torch.cuda.is_available(),
        "cpus": os.cpu_count(),
        "threads_per_worker": 1,
        "medians": med,
        "traversal_speedup_server_vs_local": speedup,
    }
    if args.json:
        print(json.dumps(info))
        return 0
    print(
        f"{info['config']}: {args.workers} workers x {args.worker_batch} traversals per chunk, "
        f"{args.traversals} per player per iteration; server on {args.server_device} "
        f"(cuda available: {info['cuda']}); {os.cpu_count()} CPUs, 1 thread per worker; "
        f"medians over iterations 2..{args.iterations} of {args.repeats} round(s)"
    )
    print(f"{'backend':8s} {'iter s':>8s} {'trav s':>8s} {'rows/call (worker)':>19s} {'rows/forward (server)':>22s}")
    for b in ("local", "server"):
        m = med[b]
        server_rows = f"{m['server_rows']:.0f} (max {m['server_max_rows']:.0f})" if b == "server" else "-"
        print(f"{b:8s} {m['iteration']:8.2f} {m['traversal']:8.2f} {m['worker_rows']:19.0f} {server_rows:>22s}")
    print(f"server vs local, traversal time: {speedup:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
