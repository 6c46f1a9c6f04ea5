"""``run.threads: auto``: the trainer's torch thread count chosen by measured iteration times.

On a machine whose cores are shared (a laptop, a CI box), torch's intra-op threads wait for each
other at every operation: with one other CPU-bound process on two cores, two threads run an
iteration several times slower than one (docs/performance.md, "A shared CPU"). The tuner times
every iteration's own work (evaluation and checkpoint writing left out), tries each candidate
count once after the warm-up iteration, then keeps the fastest (the median of its recent
iterations), and gives a count another try once its last timing is ``probe_every`` iterations
old, since the load comes and goes. That try replaces the count's old timings: they were taken
under the load of then, and one of them taken during a passing burst of load kept a run on one
thread for 16 iterations (a third slower) after the burst had gone.
"""

from __future__ import annotations

import statistics
from collections import deque

import torch


class ThreadTuner:
    def __init__(self, candidates: list[int], probe_every: int = 8, window: int = 3):
        if not candidates:
            raise ValueError("ThreadTuner needs at least one thread count")
        self.candidates = sorted(set(candidates))
        self.probe_every = probe_every
        self.times: dict[int, deque] = {n: deque(maxlen=window) for n in self.candidates}
        self.last_timed: dict[int, int] = {n: -1 for n in self.candidates}
        self.current = self.candidates[-1]
        self.probing = False  # the current iteration retries a stale count: its timing replaces the old ones

    @classmethod
    def for_this_machine(cls) -> ThreadTuner:
        import os

        cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
        return cls([1, max(1, cpus // 2), cpus])

    def best(self) -> int:
        timed = [n for n in self.candidates if self.times[n]]
        return min(timed, key=lambda n: statistics.median(self.times[n])) if timed else self.current

    def choose(self, iteration: int) -> int:
        """The thread count for ``iteration`` (1-based; the first is the warm-up), set in torch."""
        untimed = [n for n in self.candidates if not self.times[n]]
        others = [c for c in self.candidates if c != self.best()]
        stale = min(others, key=lambda c: self.last_timed[c]) if others else None
        self.probing = False
        if iteration > 1 and untimed:
            n = untimed[0]
        elif stale is not None and iteration - self.last_timed[stale] >= self.probe_every:
            n, self.probing = stale, True  # the load may have changed since it was timed
        else:
            n = self.best()
        self.current = n
        torch.set_num_threads(n)
        return n

    def record(self, iteration: int, seconds: float) -> None:
        """The work seconds of ``iteration``, run with ``self.current`` threads."""
        if iteration > 1:  # the warm-up iteration also allocates the memories
            if self.probing:
                self.times[self.current].clear()
            self.times[self.current].append(seconds)
            self.last_timed[self.current] = iteration


__all__ = ["ThreadTuner"]
