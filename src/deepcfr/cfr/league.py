"""A league of frozen past advantage networks, sampled as traversal opponents.

Each snapshot holds both players' advantage-network weights (state dicts on CPU) from the end of
an iteration. Per traversal batch :meth:`League.sample` picks the opponent: the current sigma_t,
a *recent* snapshot (the last ``recent_window``), an *older* one, or the anchor, with the
configured weights renormalised over the categories that are available (an empty category or
a missing anchor drops out; with nothing available it is always the current policy). Within
a category snapshots are equally likely. The pool keeps the ``size`` most recent snapshots.

Only the ``current`` choice plays sigma_t, so only it may feed the strategy memory (the trainer
enforces this). A league is a heuristic for large games; it breaks CFR's guarantees.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch

CATEGORIES = ("current", "recent", "older", "anchor")


@dataclass(frozen=True)
class LeagueChoice:
    kind: str  # "current" | "snapshot" | "anchor"
    category: str  # one of CATEGORIES
    index: int | None = None  # snapshot index into League.snapshots (kind == "snapshot")
    iteration: int | None = None  # the snapshot's iteration


def _cpu_state_dict(state_dict: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    return {k: v.detach().to("cpu").clone() for k, v in state_dict.items()}


class League:
    def __init__(self, config, seed: int = 0):
        self.config = config
        self.snapshots: list[tuple[int, list[dict[str, torch.Tensor]]]] = []  # (iteration, [sd_p0, sd_p1])
        self.generator = torch.Generator().manual_seed(int(seed))

    def __len__(self) -> int:
        return len(self.snapshots)

    def maybe_add(self, iteration: int, state_dicts: Sequence[Mapping[str, torch.Tensor]]) -> bool:
        """Add a snapshot of both players' advantage networks when ``iteration`` is on the
        ``snapshot_every`` schedule; returns whether it was added."""
        if iteration % self.config.snapshot_every != 0:
            return False
        self.add(iteration, state_dicts)
        return True

    def add(self, iteration: int, state_dicts: Sequence[Mapping[str, torch.Tensor]]) -> None:
        if len(state_dicts) != 2:
            raise ValueError(f"League.add: need one advantage state dict per player (2), got {len(state_dicts)}")
        self.snapshots.append((int(iteration), [_cpu_state_dict(sd) for sd in state_dicts]))
        while len(self.snapshots) > self.config.size:
            self.snapshots.pop(0)

    def category_weights(self, has_anchor: bool) -> dict[str, float]:
        """Normalised probability of each category given what is available now."""
        recent = min(len(self.snapshots), self.config.recent_window)
        older = len(self.snapshots) - recent
        raw = {
            "current": self.config.weight_current,
            "recent": self.config.weight_recent if recent else 0.0,
            "older": self.config.weight_older if older else 0.0,
            "anchor": self.config.weight_anchor if has_anchor else 0.0,
        }
        total = sum(raw.values())
        if total <= 0:
            return {c: float(c == "current") for c in CATEGORIES}
        return {c: w / total for c, w in raw.items()}

    def sample(self, has_anchor: bool | None = None) -> LeagueChoice:
        """Draw the opponent for one traversal batch (uses the league's own generator)."""
        if has_anchor is None:
            has_anchor = self.config.anchor is not None
        weights = self.category_weights(has_anchor)
        probs = torch.tensor([weights[c] for c in CATEGORIES], dtype=torch.float64)
        category = CATEGORIES[int(torch.multinomial(probs, 1, generator=self.generator))]
        if category == "current":
            return LeagueChoice("current", category)
        if category == "anchor":
            return LeagueChoice("anchor", category)
        recent = min(len(self.snapshots), self.config.recent_window)
        if category == "recent":
            lo, hi = len(self.snapshots) - recent, len(self.snapshots)
        else:
            lo, hi = 0, len(self.snapshots) - recent
        index = int(torch.randint(lo, hi, (1,), generator=self.generator))
        return LeagueChoice("snapshot", category, index, self.snapshots[index][0])

    def snapshot(self, index: int, player: int) -> dict[str, torch.Tensor]:
        """The advantage-network state dict of ``player`` in snapshot ``index``."""
        return self.snapshots[index][1][player]

    # ------------------------------------------------------------------ persistence
    def state_dict(self) -> dict[str, Any]:
        return {
            "snapshots": [(it, [dict(sd) for sd in sds]) for it, sds in self.snapshots],
            "generator": self.generator.get_state(),
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        try:
            snapshots = [(int(it), [_cpu_state_dict(sd) for sd in sds]) for it, sds in state["snapshots"]]
            generator_state = state["generator"]
        except (KeyError, TypeError, ValueError) as e:
            raise ValueError(f"League.load_state_dict: malformed state ({e})") from None
        self.snapshots = snapshots[-self.config.size :]
        self.generator.set_state(generator_state)
