"""A player at a table (the terminal game, the web page): one decision on a batch of one, or the
decisions of several tables in one call (``decide_batch``), each with what a person may see of it:
the policy's probabilities, or the moves a search weighed."""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from dataclasses import dataclass

import torch

TOP_PROBS = 8  # actions shown with the agent's probabilities


@dataclass
class Decision:
    action: int
    probs: torch.Tensor | None  # [A] the player's policy where it has one, legal and normalised
    values: list[dict] | None = None  # a search player's candidates: value with CI, prior, chosen


class Seated:
    """A loaded player at the table. ``decide`` and ``decide_batch`` run under the player's own lock
    (a search player keeps its last call's candidate values, which one call must not read from
    another's)."""

    def __init__(self, player, seed: int = 0):
        if getattr(player, "needs_history", False):
            raise ValueError(
                f"{player.name}: a search with a belief plays from each game's action history, which a "
                "table does not pass yet: play it in deepcfr arena, eval or exploit, or without the belief"
            )
        self.player = player
        self.name = str(player.name)
        self.game = getattr(player, "game", None)
        self.generator = torch.Generator().manual_seed(seed)
        self._lock = threading.Lock()

    @property
    def thinking(self) -> str | None:
        """What to show while a search runs (None: a move comes at once)."""
        search = getattr(self.player, "search", None)
        if search is None:
            return None
        cfg = search.config
        return (
            f"{self.name} is thinking ({cfg.determinizations} hidden-card samples x up to "
            f"{cfg.candidates} moves, rolled out to the end)..."
        )

    def decide(
        self,
        obs: torch.Tensor,
        mask: torch.Tensor,
        generator: torch.Generator | None = None,
        action_name: Callable[[int], str] = str,
    ) -> Decision:
        """One decision on a batch of one (``obs [1, K]``, ``mask [1, A]``): ``decide_batch``'s row."""
        return self.decide_batch(obs, mask, generator, action_name)[0]

    def decide_batch(
        self,
        obs: torch.Tensor,
        mask: torch.Tensor,
        generator: torch.Generator | None = None,
        action_name: Callable[[int], str] = str,
    ) -> list[Decision]:
        """The decisions of ``n`` tables at once (``obs [n, K]``, ``mask [n, A]``): one call of the
        player's own ``act`` (with ``generator``, else the seat's own) and one of its ``policy`` for
        all rows, so a batch costs about what one decision does; each row's probabilities and a
        search's candidates come along."""
        with self._lock:
            actions = self.player.act(obs, mask, generator if generator is not None else self.generator).long().cpu()
            last = getattr(self.player, "last_decision", None)
            values = (
                [[_finite(row) for row in last.rows(i, action_name)] for i in range(len(actions))]
                if last is not None
                else [None] * len(actions)
            )
        legal = mask.cpu().bool()
        chosen_legal = legal.gather(1, actions[:, None]).squeeze(1)
        if not bool(chosen_legal.all()):
            bad = int(actions[~chosen_legal][0])
            raise RuntimeError(f"player {self.name} chose the illegal action {bad}")
        policy = getattr(self.player, "policy", None)
        probs = [None] * len(actions)
        if callable(policy):
            with torch.no_grad():
                rows = policy(obs, mask).float().cpu() * legal
            totals = rows.sum(dim=1, keepdim=True)
            rows = rows / totals.clamp(min=torch.finfo(rows.dtype).tiny)
            probs = [row if positive else None for row, positive in zip(rows, (totals[:, 0] > 0).tolist())]
        return [Decision(int(a), p, v) for a, p, v in zip(actions.tolist(), probs, values)]


def _finite(row: dict) -> dict:
    """JSON has no NaN or infinity: a figure that is not a finite number becomes None."""
    return {k: None if isinstance(v, float) and not math.isfinite(v) else v for k, v in row.items()}


def top_probabilities(probs: torch.Tensor, label: Callable[[int], str], chosen: int) -> list[dict]:
    """The most probable actions (and the chosen one) as ``{action, label, p, chosen}``."""
    order = [a for a in torch.argsort(probs, descending=True).tolist() if probs[a] > 0][:TOP_PROBS]
    if chosen not in order:
        order.append(chosen)
    return [{"action": a, "label": label(a), "p": round(float(probs[a]), 4), "chosen": a == chosen} for a in order]


__all__ = ["Decision", "Seated", "top_probabilities", "TOP_PROBS"]
