"""The served page under load: many games at once against one `deepcfr serve` on loopback.

    .venv/bin/python scripts/load_serve.py                  # issue 39's load: 18 + 6 games
    .venv/bin/python scripts/load_serve.py --network 4 --search 2 --deadline 120

Starts `deepcfr serve --port 0` in a subprocess (its own process, as a user runs it), then plays
`--network` games against `champion@greedy` and `--search` games against `search:champion` at
once (deepcfr.serve.load: one thread per game, uniformly random legal moves, no pause between
moves), and prints the start and reply latencies by opponent (p50, p95, max seconds), the
batch size each shared player saw (decisions per call, and a search's determinizations per
decision) and any error. Where the slow requests' time went comes from the server's
`Server-Timing` header (deepcfr.serve.timing): for the requests at or above each row's p95, the
mean seconds getting the players (`players`), waiting behind another batch (`queue`), in the
batched calls that made the computer's moves (`decide`), in the application all told (`app`),
and beyond it (`http`: the server's request queue and the connection). Bounded: loopback only,
a fixed count of games, `--deadline` seconds. `--json FILE` keeps the figures.
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
    proc = subprocess.Popen(
        [sys.executable, "-m", "deepcfr.cli.main", "serve", "--host", "127.0.0.1", "--port", "0", "--runs", runs],
        stdout=subprocess.PIPE,
        text=True,
    )
    line = proc.stdout.readline()
    if "http://" not in line:
        proc.terminate()
        raise SystemExit(f"the server did not start: {line!r}")
    return proc, line.split()[line.split().index("open") + 1]


def wait_for_offered_players(url: str, specs: list[str], timeout_s: float = 180.0) -> float:
    """Seconds until the server has built the players it offers (`deepcfr serve` builds them as
    it starts), so the load measures a server a person finds running, not its first seconds."""
    start = time.monotonic()
    while True:
        with urllib.request.urlopen(url + "api/info", timeout=60) as answer:
            loaded = set(json.loads(answer.read())["players_loaded"])
        if set(specs) <= loaded:
            return time.monotonic() - start
        if time.monotonic() - start > timeout_s:
            raise SystemExit(f"the server built {sorted(loaded)} in {timeout_s:.0f} s, not all of {sorted(set(specs))}")
        time.sleep(0.2)


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
            warm = wait_for_offered_players(url, opponents)
            result = play_load(url, opponents, seed=args.seed, variant=args.variant, deadline_s=args.deadline)
            with urllib.request.urlopen(url + "api/info", timeout=60) as answer:
                batching = json.loads(answer.read()).get("batching", [])
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    rows = result.summary()
    print(f"the server had built its offered players {warm:.1f} s after it answered")
    print(
        f"{result.games} games at once ({args.network} vs champion@greedy, {args.search} vs search:champion), "
        f"{result.finished} finished, {len(result.errors)} errors, {result.seconds:.0f} s "
        f"({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} cores)"
    )
    phases = ("players", "queue", "decide", "app", "http")
    print(
        f"  {'request':<6} {'opponent':<16} {'requests':>8} {'p50 s':>7} {'p95 s':>7} {'max s':>7}   "
        f"requests at or above the p95, mean s: {' '.join(f'{p:>7}' for p in phases)}"
    )
    for r in rows:
        tail = " ".join(f"{r['tail'][p]:7.3f}" for p in phases)
        print(
            f"  {r['kind']:<6} {r['opponent']:<16} {r['requests']:8d} "
            f"{r['p50']:7.3f} {r['p95']:7.3f} {r['max']:7.3f}   "
            f"{'':38}{tail}"
        )
    for b in batching:  # what reached each shared player: one call per batch of tables' decisions
        used = b.get("determinizations_per_decision")
        print(
            f"  batched: {b['player']}: {b['decisions']} decisions in {b['calls']} calls "
            f"({b['decisions'] / max(b['calls'], 1):.2f} a call)"
            + (f", {used:.1f} determinizations a searched decision" if used is not None else "")
        )
    for e in result.errors:
        print("  error:", e)
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                {
                    "games": result.games,
                    "finished": result.finished,
                    "errors": result.errors,
                    "seconds": result.seconds,
                    "rows": rows,
                    "batching": batching,
                },
                indent=1,
            )
        )
    sys.exit(1 if result.errors or result.finished < result.games else 0)


if __name__ == "__main__":
    main()
