"""What one Deep CFR iteration reports: seconds per phase (:class:`PhaseTimer`), the traversal,
executor, memory and loss-guard figures of a :class:`~deepcfr.train.trainer.Trainer`, and the
line the run's log shows."""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from deepcfr.cfr.traversal import TraversalStats

PHASES = ("traversal", "critic_train", "memory_add", "advantage_train", "strategy_train", "eval", "checkpoint")


class PhaseTimer:
    """Seconds per named phase of one iteration: ``with timer("traversal"): ...`` adds up."""

    def __init__(self, phases: tuple[str, ...] = PHASES):
        self.seconds = dict.fromkeys(phases, 0.0)
        self.start = time.perf_counter()

    @contextmanager
    def __call__(self, phase: str) -> Iterator[None]:
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[phase] += time.perf_counter() - t0

    def elapsed(self) -> float:
        return time.perf_counter() - self.start


def iteration_metrics(trainer, stats: TraversalStats, timer: PhaseTimer) -> dict[str, Any]:
    """The iteration's traversal, executor, memory and loss-guard figures."""
    metrics = stats.as_metrics()
    metrics.update(trainer.executor_metrics())  # e.g. inference_server/*
    seconds = timer.seconds["traversal"]
    metrics["traversal/decisions_per_second"] = stats.decisions / seconds if seconds > 0 else 0.0
    for label, count in trainer.opponent_counts.items():
        metrics[f"traversal/opponent_{label}"] = count
    metrics.update(memory_metrics(trainer))
    metrics["train/nonfinite_loss_count"] = trainer.nonfinite_loss_count
    metrics["amp/nonfinite_loss_count"] = trainer.nonfinite_loss_count
    metrics["amp/grad_scale"] = trainer.amp.grad_scale
    return metrics


def time_metrics(
    timer: PhaseTimer, batch_seconds: float, iteration_seconds: float, elapsed_seconds: float
) -> dict[str, float]:
    """Seconds per phase, building batches, the iteration and the run so far."""
    metrics = {f"time/{name}_seconds": seconds for name, seconds in timer.seconds.items()}
    metrics["time/batch_seconds"] = batch_seconds
    metrics["time/iteration_seconds"] = iteration_seconds
    metrics["time/elapsed_seconds"] = elapsed_seconds
    return metrics


def summary_line(t: int, m: Mapping[str, Any]) -> str:
    """Iteration ``t`` in one log line: losses, exploitability, decisions a second, batch, seconds."""
    parts = [f"iter {t}"]
    for key in (
        "loss/advantage_p0",
        "loss/advantage_p1",
        "loss/strategy",
        "exploitability/average",
        "exploitability/current",
        "exploitability/mixture",
    ):
        if key in m and m[key] == m[key]:
            parts.append(f"{key.split('/', 1)[1] if key.startswith('loss') else key}={m[key]:.4g}")
    parts.append(f"decisions/s={m['traversal/decisions_per_second']:.0f}")
    parts.append(f"avg_batch={m['traversal/avg_batch']:.0f}")
    parts.append(f"{m['time/iteration_seconds']:.2f}s")
    return " ".join(parts)


def memory_metrics(trainer) -> dict[str, float]:
    """The replay memories' sizes, samples seen and bytes a sample (and the critic's)."""
    out: dict[str, float] = {}
    for p, memory in enumerate(trainer.advantage_memories):
        out[f"memory/advantage_p{p}_size"] = len(memory)
        out[f"memory/advantage_p{p}_seen"] = memory.seen
    if trainer.critic is not None:
        out.update(trainer.critic.metrics())
    out["memory/strategy_size"] = len(trainer.strategy_memory)
    out["memory/strategy_seen"] = trainer.strategy_memory.seen
    out["memory/advantage_bytes_per_sample"] = trainer.advantage_memories[0].nbytes_per_sample
    out["memory/strategy_bytes_per_sample"] = trainer.strategy_memory.nbytes_per_sample
    out["memory/feature_bytes_per_sample"] = 4 * trainer.feature_size
    out["memory/target_overflow"] = trainer.target_overflow_count
    return out
