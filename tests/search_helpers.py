"""Shared by the search, player and CLI tests: tiny untrained checkpoints and constructed positions."""

from __future__ import annotations

from pathlib import Path

import torch


def tiny_checkpoint(path: Path, variant: str = "mini", hidden: int = 8, ply_cap: int = 400) -> Path:
    """An untrained Lost Cities checkpoint (random-ish networks are enough to play and search)."""
    from deepcfr.train.config import TrainConfig
    from deepcfr.train.trainer import Trainer

    config = TrainConfig.model_validate(
        {
            "game": {"name": "lost_cities", "variant": variant, "rules": {"ply_cap": ply_cap}},
            "traversal": {"algorithm": "outcome", "traversals_per_player": 4, "chunk_size": 4},
            "memory": {"advantage_capacity": 64, "strategy_capacity": 64},
            "network": {"hidden_size": hidden},
        }
    )
    with Trainer(config) as trainer:
        return trainer.write_checkpoint(path)


def winning_endgame_obs(game) -> tuple[torch.Tensor, int]:
    """(observation of seat 0, the one winning action) in a mini-variant end-game: one card left in
    the deck, no discard piles, so the card decision and the forced draw from the deck end the game.
    Seat 0 has red 2-5 out (+4) against the opponent's blue 4-6 (+5) and holds red 6: playing it
    makes red a five-card expedition (20 - 10 + bonus 10 = +20) and wins; every other move loses."""
    r = game.rules
    assert (r.n_colors, r.n_ranks, r.n_wagers, r.hand_size) == (3, 5, 1, 5), "mini rules expected"
    D = r.deck_size
    obs = torch.zeros(1, game.obs_size, dtype=torch.uint8)
    obs[0, [1, 2, 3, 4]] = 2  # my expedition: red 2, 3, 4, 5
    obs[0, [5, 6, 7, 8, 9]] = 1  # my hand: red 6, green wager, green 2, 3, 4
    obs[0, [15, 16, 17]] = 3  # the opponent's expedition: blue 4, 5, 6
    obs[0, D] = 1  # one card left in the deck
    obs[0, D + 2] = r.n_colors  # nothing discarded this turn
    win = r.action_id("play", "red", 6)
    return obs, win


def decision_batch(game, n=48, seed=0, plies=12):
    """Observations and masks of the players to move after some random plies."""
    from deepcfr.games.base import sample_from_probs

    gen = torch.Generator().manual_seed(seed)
    s = game.init(n, gen)
    for _ in range(plies):
        s = game.step(s, sample_from_probs(game.legal_mask(s).float(), gen))
    live = ~game.is_terminal(s)
    obs = game.observe(s, game.current_player(s).clamp(min=0))[live]
    return obs, game.legal_mask(s)[live]
