"""Speed of the Lost Cities heuristic bots' ``act``: the original implementation (kept verbatim in
tests/test_bot_speed_equivalence.py) against the current one, side by side in one run.

    PYTHONPATH=src python scripts/bench_bots.py --variant classic --batches 64,512,4096

States come from heuristic and random playouts (both decision phases). Each round times both
implementations on the same batch, in alternating order; the figures are medians over rounds, in
microseconds per state on one thread (the machine may be shared: compare the ratio).
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # before torch starts OpenMP

import argparse  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import torch  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))
from test_bot_speed_equivalence import STYLE_NAMES, reference_bot, states_for  # noqa: E402

from deepcfr.games.bots import make_bot  # noqa: E402
from deepcfr.games.registry import make_game  # noqa: E402


def time_per_state(bot, obs: torch.Tensor, mask: torch.Tensor, min_seconds: float) -> float:
    """Microseconds per state of ``bot.act`` on this batch (repeated for at least ``min_seconds``)."""
    calls, start = 0, time.perf_counter()
    while True:
        bot.act(obs, mask)
        calls += 1
        elapsed = time.perf_counter() - start
        if elapsed >= min_seconds:
            return elapsed / (calls * obs.shape[0]) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--variant", default="classic", choices=["classic", "mini"])
    parser.add_argument("--style", default="heuristic_balanced", choices=STYLE_NAMES)
    parser.add_argument("--batches", default="64,512,4096", help="comma-separated batch sizes")
    parser.add_argument("--rounds", type=int, default=7, help="rounds per batch size (median reported)")
    parser.add_argument("--seconds", type=float, default=0.3, help="time per implementation per round")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    game = make_game("lost_cities", variant=args.variant)
    obs_all, mask_all = states_for(args.variant)
    live = mask_all.any(dim=1)
    obs_all, mask_all = obs_all[live], mask_all[live]
    old, new = reference_bot(game.rules, args.style), make_bot(game, args.style)
    print(f"{args.variant} {args.style}, {args.threads} thread(s), {obs_all.shape[0]} states; "
          f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    print(f"{'batch':>6} {'old us/state':>13} {'new us/state':>13} {'speed-up':>9}")
    gen = torch.Generator().manual_seed(0)
    for batch in [int(b) for b in args.batches.split(",")]:
        rows = torch.randperm(obs_all.shape[0], generator=gen)[:batch]
        obs, mask = obs_all[rows].contiguous(), mask_all[rows].contiguous()
        assert torch.equal(old.act(obs, mask), new.act(obs, mask)), "implementations disagree"
        times = {"old": [], "new": []}
        ratios = []
        for round_ in range(args.rounds):
            order = [("old", old), ("new", new)] if round_ % 2 == 0 else [("new", new), ("old", old)]
            for key, bot in order:
                times[key].append(time_per_state(bot, obs, mask, args.seconds))
            ratios.append(times["old"][-1] / times["new"][-1])
        old_us, new_us = statistics.median(times["old"]), statistics.median(times["new"])
        print(f"{batch:>6} {old_us:>13.2f} {new_us:>13.2f} {statistics.median(ratios):>8.2f}x")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
