"""The batched Lost Cities state (a dataclass of tensors) and its packed turn word; the engine
(engine.py) reads and writes it, determinize.py builds it from observations."""

from __future__ import annotations

from dataclasses import dataclass

import torch

# The turn word: phase (bit 0), player (bit 1), colour discarded this turn (bits 2-5, n_colors =
# none), decisions made (bits 8-27), a ply counter that starts at 2^20 - ply_cap (bits 28-47, its
# carry into bit 48 marks the cap) and a deck counter that starts at 256 - cards in the deck
# (bits 49-56, its carry into bit 57 marks the empty deck).
T_PHASE, T_PLAYER, T_DISCARD, T_DECISIONS, T_PLY, T_DECK = 0, 1, 2, 8, 28, 49
DECISION_BITS = 20
MAX_PLY_CAP = (1 << DECISION_BITS) - 1
CAP_FLAG, DECK_FLAG = 1 << (T_PLY + DECISION_BITS), 1 << (T_DECK + 8)


@dataclass
class LostCitiesState:
    """Batched state; every field has a leading batch dimension n. The layout of ``arena`` is
    described by ``tables.Layout``; read the game through ``LostCitiesGame``'s methods."""

    arena: torch.Tensor  # [n, row_bytes] uint8, 8-byte aligned rows (see the module docstring)
    turn: torch.Tensor  # [n] int64 packed turn word (T_* bits)
    terminal: torch.Tensor  # [n] bool
    deck: torch.Tensor  # [n, D] uint8 the deal the game started from (``init_from_deal`` order)

    @property
    def phase(self) -> torch.Tensor:
        """[n] int64: 0 play/discard, 1 draw."""
        return self.turn & 1

    @property
    def player(self) -> torch.Tensor:
        """[n] int64 seat to move (on finished games: the seat that would move next)."""
        return (self.turn >> T_PLAYER) & 1

    @property
    def discarded_color(self) -> torch.Tensor:
        """[n] int64 colour discarded onto this turn, n_colors = none."""
        return (self.turn >> T_DISCARD) & 15

    @property
    def num_decisions(self) -> torch.Tensor:
        return (self.turn >> T_DECISIONS) & MAX_PLY_CAP
