"""Latency of `deepcfr serve`'s game API: one person's move (with the computer's reply) per request.

    .venv/bin/python scripts/bench_serve.py --opponent heuristic_careful --games 20

Plays whole games through FastAPI's test client (in-process: no network), the person choosing
uniformly among the legal moves, and prints the median and 90th percentile milliseconds of
`POST /api/games/{id}/move`, `GET /api/games/{id}` and `POST /api/games`. Any player spec works
(e.g. `search:runs/x/checkpoints/latest.pt --checkpoint ...` with `--runs`).
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
import warnings

import torch


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--opponent", default="heuristic_careful")
    p.add_argument("--games", type=int, default=20)
    p.add_argument("--variant", default=None)
    p.add_argument("--runs", default="runs")
    p.add_argument("--checkpoint", nargs="*", default=[])
    args = p.parse_args()
    torch.set_num_threads(1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from fastapi.testclient import TestClient

    from deepcfr.serve import ServeSettings, create_app

    client = TestClient(create_app(ServeSettings(runs=args.runs, checkpoints=args.checkpoint)))
    rng = random.Random(0)
    times: dict[str, list[float]] = {"new game": [], "move + reply": [], "view": []}

    def timed(kind, fn, *args, **kwargs):
        t0 = time.perf_counter()
        r = fn(*args, **kwargs)
        times[kind].append(1000 * (time.perf_counter() - t0))
        if r.status_code != 200:
            raise SystemExit(f"{kind}: {r.status_code} {r.text}")
        return r.json()

    for g in range(args.games):
        body = {"opponent": args.opponent, "seat": g % 2, "seed": g, "variant": args.variant}
        view = timed("new game", client.post, "/api/games", json=body)
        while not view["finished"]:
            action = rng.choice(view["legal"])["action"]
            view = timed("move + reply", client.post, f"/api/games/{view['id']}/move", json={"action": action})
            timed("view", client.get, f"/api/games/{view['id']}")
    print(f"opponent {args.opponent}, {args.games} games, torch threads {torch.get_num_threads()}")
    for kind, ms in times.items():
        ms = sorted(ms)
        print(
            f"  {kind:<13} {len(ms):6d} requests  median {statistics.median(ms):7.2f} ms  "
            f"p90 {ms[int(0.9 * (len(ms) - 1))]:7.2f} ms"
        )


if __name__ == "__main__":
    main()
