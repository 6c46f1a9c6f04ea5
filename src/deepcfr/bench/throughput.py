"""Traversal and training throughput of a real trainer, against the bare forward-pass bound.

``bench_traversal(config)`` builds a ``Trainer`` from ``config`` (evaluation off, no run
directory), optionally runs ``warmup_iterations`` real iterations (untimed: they train the
advantage networks, so that sigma is regret matching on a network rather than uniform), then:

- **traversal**: times ``trainer.traverse_player(p, stats)`` for both players over ``repeats``
  rounds, as iteration ``t + 1`` would run them (the real path: chunks through the configured
  executor). Reports decisions/s and traversals/s (wall and per CPU second of this process), the
  realized mean forward batch (``TraversalStats.avg_batch``: rows per policy call, counted for
  every policy, so also under the uniform sigma_1 of iteration 1, where no network runs:
  ``networks_used`` tells) and advantage samples produced.
- **bound**: ``forward_bound_states_per_second`` of player 0's advantage network at the round's
  realized mean batch (rounded; the chunk size if there was no policy call), on the trainer's
  device with the thread count in force, measured after every round (same machine load); the
  median over rounds is the bound. ``fraction_of_bound`` = decisions/s / bound: traversal makes at most
  one forward row per decision, so the bare forward cannot be beaten, and engine, encoding and
  sampling should cost less than the networks (aim >= 0.5). With one forward row per decision
  (``forward_rows_per_decision``) the fraction is also the share of the traversal's wall time
  that its forward passes would take at the bound. ``*_per_cpu_second`` and
  ``fraction_of_bound_cpu`` count this process's CPU time instead of wall time: with one thread,
  the rates an idle machine would give (on shared machines the wall figures swing 2x).
- **training**: adds the timed traversals' samples to the memories (timed as memory add), then
  times ``trainer.train_advantage(p)`` for both players. Samples/s = steps x batch size x 2 /
  seconds (with ``advantage.aggregate`` a step may use fewer rows: the whole merged table), and
  the share of that time spent building batches (the trainer's ``time/batch_seconds``
  accounting: memory draw, mask/value unpacking, encoding; aim < 20%).
- **memory**: bytes per stored advantage sample against the float32 feature vector
  (``4 * feature_size``; aim < 10%).

Nothing here sets OMP_WAIT_POLICY (it must be set before torch starts): ``deepcfr bench`` does.
"""

from __future__ import annotations

import math
import os
import statistics
import time
from dataclasses import dataclass, field
from typing import Any

import torch

from ..cfr.traversal import TraversalStats
from ..games.registry import game_params
from ..train.config import TrainConfig
from ..train.iteration_metrics import memory_metrics
from ..train.trainer import Trainer
from .forward import forward_bound_states_per_second

# Overrides that make a trainer fit for benchmarking: no evaluation, no progress display, the loop
# from a cold start (a start policy is built above the trainer, by deepcfr train).
BENCH_OVERRIDES = ("eval.every=0", "run.progress=false", "init.spec=null", "init.kl_temperature=0")


def bench_overrides(overrides: list[str] | None = None) -> list[str]:
    """``BENCH_OVERRIDES`` first, then the caller's (a caller may still turn evaluation on)."""
    return [*BENCH_OVERRIDES, *(overrides or [])]


def _load() -> float:
    try:
        return os.getloadavg()[0]
    except OSError:  # not on every platform
        return math.nan


def bench_traversal(
    config: TrainConfig,
    warmup_iterations: int = 1,
    repeats: int = 3,
    train: bool = True,
    bound_repeats: int = 5,
) -> dict[str, Any]:
    """Run the benchmark described in the module docstring on ``config`` (build it with
    ``load_config(path, bench_overrides(overrides))``); returns flat snake_case figures."""
    if not isinstance(warmup_iterations, int) or warmup_iterations < 0:
        raise ValueError(f"warmup_iterations must be a non-negative int, got {warmup_iterations!r}")
    if not isinstance(repeats, int) or repeats < 1:
        raise ValueError(f"repeats must be a positive int, got {repeats!r}")
    if not isinstance(bound_repeats, int) or bound_repeats < 1:
        raise ValueError(f"bound_repeats must be a positive int, got {bound_repeats!r}")
    load_start = _load()
    with Trainer(config) as trainer:
        warmup_seconds = _warm_up(trainer, warmup_iterations)
        # The timed traversals are those of the next iteration (run_iteration counts up first),
        # so samples carry iteration t + 1 and get non-zero linear-CFR weights.
        trainer.iteration += 1
        networks_used = [trainer.advantage_trained[p] for p in range(2)]

        chunk = int(min(config.traversal.traversals_per_player, config.traversal.chunk_size))
        rounds = _timed_rounds(trainer, repeats, bound_repeats, chunk)
        stats, wall, cpu, bounds = rounds.stats, rounds.wall, rounds.cpu, rounds.bounds

        threads = torch.get_num_threads()
        bound_batch = max(1, round(stats.avg_batch)) if stats.forward_calls else chunk
        bound = statistics.median(bounds)
        # Per CPU second of this process (the share of wall time it got the CPU): with one thread,
        # an estimate of the uncontended rates; meaningless with several threads.
        bound_per_cpu_second = statistics.median(
            b / max(share, 1e-9) for b, share in zip(bounds, rounds.bound_cpu_shares)
        )
        decisions_per_cpu_second = stats.decisions / cpu if cpu > 0 else math.nan
        decisions_per_second = stats.decisions / wall
        out: dict[str, Any] = {
            "game": config.game.name,
            "variant": game_params(config).get("variant"),
            "algorithm": config.traversal.algorithm,
            "executor": config.traversal.executor,
            "network": f"{config.network.hidden_size}x{config.network.num_layers}",
            "device": str(trainer.device),
            "threads": threads,
            "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"),
            "load_average_start": load_start,
            "warmup_iterations": warmup_iterations,
            "warmup_seconds": warmup_seconds,
            "networks_used": all(networks_used),
            "repeats": repeats,
            "traversals_per_player": config.traversal.traversals_per_player,
            "traversals": stats.traversals,
            "decisions": stats.decisions,
            "traversal_seconds": wall,
            "traversal_cpu_seconds": cpu,
            "decisions_per_second": decisions_per_second,
            "decisions_per_second_per_round": rounds.round_rates,
            "decisions_per_cpu_second": decisions_per_cpu_second,
            "traversals_per_second": stats.traversals / wall,
            "decisions_per_traversal": stats.decisions / stats.traversals if stats.traversals else 0.0,
            "forward_calls": stats.forward_calls,
            "avg_forward_batch": stats.avg_batch,
            "max_forward_batch": stats.max_batch,
            "forward_rows_per_decision": stats.forward_rows / stats.decisions if stats.decisions else 0.0,
            "advantage_samples": stats.advantage_samples,
            "advantage_samples_per_second": stats.advantage_samples / wall,
            "forward_bound_batch": bound_batch,
            "forward_bound_states_per_second": bound,
            "forward_bound_per_round": bounds,
            "fraction_of_bound": decisions_per_second / bound,
            "forward_bound_states_per_cpu_second": bound_per_cpu_second,
            "fraction_of_bound_cpu": decisions_per_cpu_second / bound_per_cpu_second,
        }
        if train:
            out.update(_training_figures(trainer, config, rounds.produced))
        out.update(_memory_figures(trainer))
        out["load_average_end"] = _load()
    return out


def _warm_up(trainer: Trainer, iterations: int) -> float:
    """Run ``iterations`` real (untimed in the figures) iterations; their seconds."""
    warmup_seconds = 0.0
    for _ in range(iterations):
        t0 = time.perf_counter()
        trainer.run_iteration()
        warmup_seconds += time.perf_counter() - t0
    return warmup_seconds


@dataclass
class _Rounds:
    """What the timed traversal rounds give: their merged stats, the samples they produced (for the
    training phase), their decision rates, wall and CPU seconds, and the bound measured after each."""

    stats: TraversalStats = field(default_factory=TraversalStats)
    produced: list[tuple[int, list]] = field(default_factory=list)
    round_rates: list[float] = field(default_factory=list)
    bounds: list[float] = field(default_factory=list)
    bound_cpu_shares: list[float] = field(default_factory=list)
    wall: float = 0.0
    cpu: float = 0.0


def _timed_rounds(trainer: Trainer, repeats: int, bound_repeats: int, chunk: int) -> _Rounds:
    """``repeats`` rounds of both players' traversals, each followed by the forward bound at its
    realized mean batch (``chunk`` if no policy call was made)."""
    rounds = _Rounds()
    for _ in range(repeats):
        round_stats = TraversalStats()
        w0, c0 = time.perf_counter(), time.process_time()
        for player in range(2):
            advantage, _strategy = trainer.traverse_player(player, round_stats)
            rounds.produced.append((player, advantage))
        w, c = time.perf_counter() - w0, time.process_time() - c0
        rounds.wall += w
        rounds.cpu += c
        rounds.round_rates.append(round_stats.decisions / w if w > 0 else math.nan)
        rounds.stats.merge(round_stats)
        # The bound is measured after every round, so that both see the same machine load
        # (shared machines: other processes take the core for seconds at a time).
        batch = max(1, round(round_stats.avg_batch)) if round_stats.forward_calls else chunk
        w0, c0 = time.perf_counter(), time.process_time()
        rounds.bounds.append(
            forward_bound_states_per_second(trainer.advantage_nets[0], batch, trainer.device, repeats=bound_repeats)
        )
        w, c = time.perf_counter() - w0, time.process_time() - c0
        rounds.bound_cpu_shares.append(c / w if w > 0 else 1.0)
    return rounds


def _training_figures(trainer: Trainer, config: TrainConfig, produced: list[tuple[int, list]]) -> dict[str, Any]:
    """Add the timed traversals' samples to the memories, then time both players' advantage fits."""
    out: dict[str, Any] = {}
    if trainer.critic is not None:  # traversal.algorithm=critic: the critic fills in the targets
        t0 = time.perf_counter()
        produced = [
            (player, trainer.critic.phase(player, chunks, f"critic p{player}")[0]) for player, chunks in produced
        ]
        out["critic_seconds"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    for player, chunks in produced:
        for samples in chunks:
            trainer.add_advantage_samples(player, samples)
    out["memory_add_seconds"] = time.perf_counter() - t0
    cfg = config.advantage
    # The fitter accumulates its batch-building time in batch_seconds (reported per
    # iteration as time/batch_seconds); its difference over the phase is this phase's share.
    batch_before = trainer.fitter.batch_seconds
    t0 = time.perf_counter()
    for player in range(2):
        trainer.train_advantage(player)
    train_seconds = time.perf_counter() - t0
    batch_seconds = trainer.fitter.batch_seconds - batch_before
    samples = 2 * cfg.train_steps * cfg.batch_size
    out.update(
        {
            "advantage_train_steps": cfg.train_steps,
            "advantage_batch_size": cfg.batch_size,
            "advantage_aggregate": bool(getattr(cfg, "aggregate", False)),
            "advantage_train_seconds": train_seconds,
            "advantage_train_samples_per_second": samples / train_seconds if train_seconds > 0 else math.nan,
            "batch_build_seconds": batch_seconds,
            "batch_build_share": batch_seconds / train_seconds if train_seconds > 0 else math.nan,
        }
    )
    return out


def _memory_figures(trainer: Trainer) -> dict[str, Any]:
    """The advantage memories' size and bytes per sample, against the float32 feature vector."""
    memory = memory_metrics(trainer)
    bytes_per_sample = int(memory["memory/advantage_bytes_per_sample"])
    feature_bytes_per_sample = int(memory["memory/feature_bytes_per_sample"])
    return {
        "advantage_memory_size": int(memory["memory/advantage_p0_size"] + memory["memory/advantage_p1_size"]),
        "bytes_per_sample": bytes_per_sample,
        "feature_bytes_per_sample": feature_bytes_per_sample,
        "bytes_fraction_of_features": bytes_per_sample / feature_bytes_per_sample,
    }
