"""Search throughput: rollout decisions per second of one batched search call, beside the bare
forward bound of the base network at the batch the rollouts start with."""

from __future__ import annotations

import time
from typing import Any

import torch

from ..games.base import sample_from_probs
from .forward import forward_bound_states_per_second


def decision_positions(game, n: int, plies: int, seed: int = 0):
    """Observations and masks of the players to move in ``n`` games after ``plies`` random plies
    (rows whose game ended are dropped)."""
    gen = torch.Generator().manual_seed(seed)
    state = game.init(n, gen)
    for _ in range(plies):
        state = game.step(state, sample_from_probs(game.legal_mask(state).float(), gen))
    live = ~game.is_terminal(state)
    obs = game.observe(state, game.current_player(state).clamp(min=0))
    return obs[live], game.legal_mask(state)[live]


def bench_search(search, decisions: int = 64, plies: int = 20, repeats: int = 2, seed: int = 0) -> dict:
    """Time ``search.decide`` on ``decisions`` positions (after one untimed call); the best of
    ``repeats``. The forward bound is that of the base's strategy network (when it has one) at
    the starting rollout batch (decisions x candidates x determinizations, capped by max_batch)."""
    game = search.game
    obs, mask = decision_positions(game, decisions, plies, seed)
    obs, mask = obs.to(search.device), mask.to(search.device)
    search.decide(obs, mask)  # warm-up (tables, allocator)
    best: dict[str, Any] | None = None
    for _ in range(repeats):
        search.stats.reset()
        start = time.perf_counter()
        search.decide(obs, mask)
        seconds = time.perf_counter() - start
        s = search.stats
        rate = s.rollout_decisions / seconds
        if best is None or rate > best["rollout_decisions_per_second"]:
            best = {
                "rollout_decisions_per_second": rate,
                "seconds": seconds,
                "rollouts": s.rollouts,
                "rollout_decisions": s.rollout_decisions,
                "capped_rollouts": s.capped_rollouts,
                "seconds_per_decision": seconds / obs.shape[0],
                # what an improve round calls its teacher's speed: searched positions a second
                "positions_per_second": obs.shape[0] / seconds,
            }
    if best is None:
        raise ValueError(f"repeats must be at least 1, got {repeats}")
    cfg = search.config
    batch = min(obs.shape[0] * cfg.candidates * cfg.determinizations, cfg.max_batch)
    out = {
        "decisions": int(obs.shape[0]),
        "plies_before": plies,
        "rollout_batch": batch,
        "threads": torch.get_num_threads(),
        "device": str(search.device),
        "rollout_dtype_used": search.rollout_dtype,
        **best,
        "mean_rollout_length": best["rollout_decisions"] / max(best["rollouts"], 1),
    }
    net = getattr(getattr(search.base, "agent", None), "strategy_net", None)
    if net is not None:
        bound = forward_bound_states_per_second(net, batch, search.device)
        out["forward_bound_states_per_second"] = bound
        out["fraction_of_forward_bound"] = best["rollout_decisions_per_second"] / bound
    return out
