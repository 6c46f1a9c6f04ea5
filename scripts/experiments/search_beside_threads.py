"""How much a search call slows down beside threads that run Python in the same process (the
interpreter lock): why the served search players run in a process of their own
(docs/performance.md, "The served page under load").

    OMP_NUM_THREADS=1 .venv/bin/python scripts/experiments/search_beside_threads.py --busy 0 1 3 --switch-ms 5 0.5

For each switch interval and count of busy threads (each only runs a Python loop, as a request
thread does between its tensor operations), times `--repeats` calls of `--spec` over
`--decisions` opening decisions and prints the fastest and slowest.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--spec", default="search[determinizations=8]:champion")
    p.add_argument("--decisions", type=int, default=3)
    p.add_argument("--busy", type=int, nargs="+", default=[0, 1, 3])
    p.add_argument("--switch-ms", type=float, nargs="+", default=[5.0, 0.5])
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args()
    from deepcfr.bench.search import decision_positions
    from deepcfr.players import load_player

    player = load_player(args.spec)
    obs, mask = decision_positions(player.game, args.decisions, 0, seed=1)
    player.act(obs, mask)  # the first call's one-off costs
    print(f"{args.spec}, {args.decisions} opening decisions a call, {args.repeats} calls each")
    for switch_ms in args.switch_ms:
        sys.setswitchinterval(switch_ms / 1000)
        for busy in args.busy:
            stop = threading.Event()
            threads = [threading.Thread(target=_spin, args=(stop,), daemon=True) for _ in range(busy)]
            for t in threads:
                t.start()
            seconds = []
            for _ in range(args.repeats):
                start = time.perf_counter()
                player.act(obs, mask)
                seconds.append(time.perf_counter() - start)
            stop.set()
            for t in threads:
                t.join()
            print(
                f"  switch interval {switch_ms:g} ms, {busy} busy threads: "
                f"{min(seconds):.2f}-{max(seconds):.2f} s a call"
            )


def _spin(stop: threading.Event) -> None:
    """Run Python until ``stop`` is set (a thread that competes for the interpreter lock)."""
    while not stop.is_set():
        sum(range(1000))


if __name__ == "__main__":
    main()
