"""Random-play throughput of a batched engine against its reference engine.

``bench_engine("lost_cities", batch=4096, seconds=3, threads=1)`` plays uniformly random legal
actions in a batch of games (finished games are replaced by fresh ones every few steps, so the
batch stays full) and counts the decisions made in live games per second of wall time; then it
plays the reference engine (one game at a time, random legal actions) for comparison. Random
actions are drawn with ``sample_uniform_legal`` (cumulative counts + searchsorted: no
torch.multinomial, no host sync).
"""

from __future__ import annotations

import dataclasses
import random
import time
from typing import Any

import torch

from .registry import make_game, make_reference

REFILL_EVERY = 8  # steps between replacing finished games with fresh ones


def sample_uniform_legal(mask: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
    """One uniformly random legal action per row of ``mask [n, A]`` (bool). Rows without a legal
    action get an arbitrary index."""
    n, num_actions = mask.shape
    dtype = torch.uint8 if num_actions < 256 else torch.int16 if num_actions < 32768 else torch.int32
    counts = mask.view(torch.uint8).cumsum(dim=1, dtype=dtype)
    pick = (torch.rand(n, 1, generator=generator, device=mask.device) * counts[:, -1:]).to(dtype)
    return torch.searchsorted(counts, pick + 1).squeeze(1).clamp_(max=num_actions - 1)


def _tensor_fields(state: Any) -> list[str]:
    return [f.name for f in dataclasses.fields(state) if not f.metadata.get("static", False)]


def refill_finished(game: Any, state: Any, generator: torch.Generator | None = None) -> int:
    """Replace the terminal rows of ``state`` (in place) by fresh games; returns how many."""
    rows = game.is_terminal(state).nonzero().squeeze(1)
    if rows.numel():
        fresh = game.init(rows.numel(), generator, device=rows.device)
        for name in _tensor_fields(state):
            getattr(state, name)[rows] = getattr(fresh, name)
    return rows.numel()


def _bench_batched(game: Any, batch: int, seconds: float, seed: int) -> dict:
    generator = torch.Generator().manual_seed(seed)
    state = game.init(batch, generator)
    has_cut_off = hasattr(game, "cut_off")
    for _ in range(3):  # warm-up: tables, allocator
        game.step(state, sample_uniform_legal(game.legal_mask(state), generator))
    state = game.init(batch, generator)
    length = torch.zeros(batch, dtype=torch.int64)
    decisions = torch.zeros((), dtype=torch.int64)
    finished = torch.zeros((), dtype=torch.int64)
    finished_length = torch.zeros((), dtype=torch.int64)
    cut_off = torch.zeros((), dtype=torch.int64)
    steps = 0
    start = time.perf_counter()
    cpu_start = time.process_time()
    while True:
        live = ~game.is_terminal(state)
        game.step(state, sample_uniform_legal(game.legal_mask(state), generator))
        length += live
        decisions += live.sum()
        steps += 1
        if steps % REFILL_EVERY == 0:
            done = game.is_terminal(state)
            finished += done.sum()
            finished_length += (length * done).sum()
            if has_cut_off:
                cut_off += (game.cut_off(state) & done).sum()
            length.masked_fill_(done, 0)
            refill_finished(game, state, generator)
            if time.perf_counter() - start >= seconds:
                break
    elapsed = time.perf_counter() - start
    cpu = time.process_time() - cpu_start
    n_finished = int(finished)
    return {
        "batched_decisions_per_second": int(decisions) / elapsed,
        "batched_cpu_seconds_per_wall_second": cpu / elapsed,
        "mean_game_length": int(finished_length) / n_finished if n_finished else float("nan"),
        "finished_games": n_finished,
        "cut_off_games": int(cut_off),
        "steps": steps,
    }


def _bench_reference(game: Any, reference_cls: Any, seconds: float, seed: int) -> dict:
    rng = random.Random(seed)
    rules = getattr(game, "rules", None)
    decisions = games = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        ref = reference_cls.new(rules, seed + games) if rules is not None else reference_cls.new(seed + games)
        while not ref.is_terminal():
            ref.apply(rng.choice(ref.legal_actions()))
            decisions += 1
        games += 1
    elapsed = time.perf_counter() - start
    return {"reference_decisions_per_second": decisions / elapsed, "reference_games": games}


def bench_engine(game_name: str = "lost_cities", batch: int = 4096, seconds: float = 3.0, threads: int = 1,
                 seed: int = 0, reference_seconds: float | None = None, **params: Any) -> dict:
    """Random-play decisions per second of the batched engine (wall time, ``threads`` intra-op
    threads) and of the reference engine; ``params`` go to the game (e.g. ``variant="mini"``)."""
    if batch < 1:
        raise ValueError(f"batch must be positive, got {batch}")
    if seconds <= 0:
        raise ValueError(f"seconds must be positive, got {seconds}")
    if threads < 1:
        raise ValueError(f"threads must be at least 1, got {threads}")
    game = make_game(game_name, **params)
    reference_cls = make_reference(game_name, **params)
    old_threads = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        batched = _bench_batched(game, batch, seconds, seed)
    finally:
        torch.set_num_threads(old_threads)
    reference = _bench_reference(game, reference_cls, reference_seconds or max(0.5, seconds / 3), seed)
    speedup = batched["batched_decisions_per_second"] / max(reference["reference_decisions_per_second"], 1e-9)
    return {"game": game_name, "params": params, "batch": batch, "threads": threads, **batched, **reference,
            "speedup": speedup}
