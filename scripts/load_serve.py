"""The served page under load: many games at once against one `deepcfr serve` on loopback.

    PYTHONPATH=src python scripts/load_serve.py                  # issue 39's load: 18 + 6 games
    PYTHONPATH=src python scripts/load_serve.py --network 4 --search 2 --deadline 120

Starts `deepcfr serve --port 0` in a subprocess (its own process, as a user runs it), then plays
`--network` games against `champion@greedy` and `--search` games against `search:champion` at
once (deepcfr.serve.load: one thread per game, uniformly random legal moves, no pause between
moves), and prints the start and reply latencies by opponent (p50, p95, max seconds), the
batch size each shared player saw (decisions per call) and any error. Bounded: loopback only, a
fixed count of games, `--deadline` seconds. `--json FILE` keeps the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path


def start_server(runs: str) -> tuple[subprocess.Popen, str]:
    """A `deepcfr serve` on 127.0.0.1 at a free port, and its URL."""
    src = str(Path(__file__).resolve().parent.parent / "src")
    env = {**os.environ, "PYTHONPATH": src + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.Popen([sys.executable, "-m", "deepcfr.cli.main", "serve", "--host", "127.0.0.1", "--port", "0",
                             "--runs", runs], stdout=subprocess.PIPE, text=True, env=env)
    line = proc.stdout.readline()
    if "http://" not in line:
        proc.terminate()
        raise SystemExit(f"the server did not start: {line!r}")
    return proc, line.split()[line.split().index("open") + 1]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--network", type=int, default=18, help="games against champion@greedy")
    p.add_argument("--search", type=int, default=6, help="games against search:champion")
    p.add_argument("--variant", default=None, help="rule variant (default: the champion's own)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--deadline", type=float, default=600.0, help="seconds after which no new request starts")
    p.add_argument("--json", default=None, help="write the figures to this file")
    args = p.parse_args()
    from deepcfr.serve.load import play_load

    opponents = ["champion@greedy"] * args.network + ["search:champion"] * args.search
    with tempfile.TemporaryDirectory(prefix="deepcfr-load-") as runs:
        proc, url = start_server(runs)
        try:
            result = play_load(url, opponents, seed=args.seed, variant=args.variant, deadline_s=args.deadline)
            with urllib.request.urlopen(url + "api/info", timeout=60) as answer:
                batching = json.loads(answer.read()).get("batching", [])
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    rows = result.summary()
    print(f"{result.games} games at once ({args.network} vs champion@greedy, {args.search} vs search:champion), "
          f"{result.finished} finished, {len(result.errors)} errors, {result.seconds:.0f} s "
          f"({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} cores)")
    print(f"  {'request':<6} {'opponent':<16} {'requests':>8} {'p50 s':>7} {'p95 s':>7} {'max s':>7}")
    for r in rows:
        print(f"  {r['kind']:<6} {r['opponent']:<16} {r['requests']:8d} {r['p50']:7.3f} {r['p95']:7.3f} {r['max']:7.3f}")
    for b in batching:  # what reached each shared player: one call per batch of tables' decisions
        print(f"  batched: {b['player']}: {b['decisions']} decisions in {b['calls']} calls "
              f"({b['decisions'] / max(b['calls'], 1):.2f} a call)")
    for e in result.errors:
        print("  error:", e)
    if args.json:
        Path(args.json).write_text(json.dumps({"games": result.games, "finished": result.finished,
                                               "errors": result.errors, "seconds": result.seconds, "rows": rows,
                                               "batching": batching},
                                              indent=1))
    sys.exit(1 if result.errors or result.finished < result.games else 0)


if __name__ == "__main__":
    main()
