"""Players for the web page: any spec that ``arena``, ``eval`` and ``play`` accept.

Specs are parsed and loaded by ``deepcfr.players`` (``parse_player`` / ``load_player``): a bot
name, a checkpoint path (its average policy; ``PATH@current``, ``PATH@greedy``), or ``search:``
around either. This module adds what a server needs on top:

- the server loads only checkpoints it was told about (``CheckpointPolicy``: the files given with
  ``--checkpoint`` and files under ``--runs``), so a page cannot make it unpickle an arbitrary file;
- a loaded player is kept (per spec, checkpoint version and rules), so a new game does not read
  the checkpoint again;
- each player decides under its own lock (a search player keeps its last decision's candidate
  values, which one game must not read from another's move).
"""

from __future__ import annotations

import dataclasses
import math
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import torch

from ..players import PlayerSpec, PlayerSpecError, describe_game, same_game, load_player, parse_player
from .paths import PathError, is_under

TOP_PROBS = 8  # actions shown with the agent's probabilities

__all__ = ["CheckpointPolicy", "Decision", "PlayerCache", "PlayerSpecError", "Seated", "top_probabilities"]


@dataclass
class Decision:
    action: int
    probs: torch.Tensor | None  # [A] the player's policy where it has one (the page shows it)
    values: list[dict] | None = None  # a search player's candidates: value with CI, prior, chosen


class CheckpointPolicy:
    """Which checkpoint files the server may load: the listed ones and files under ``runs``."""

    def __init__(self, checkpoints: Sequence[str | Path] = (), runs: str | Path | None = None):
        self.checkpoints = [Path(c) for c in checkpoints]
        self.runs = Path(runs) if runs is not None else None

    def check(self, path: str) -> Path:
        """The resolved file of an allowed checkpoint ``path`` (as given, or relative to ``runs``)."""
        given = Path(path)
        candidates = [given] + ([self.runs / given] if self.runs is not None and not given.is_absolute() else [])
        listed = {c.resolve() for c in self.checkpoints}
        for candidate in candidates:
            file = candidate.resolve()
            if file.is_file() and (file in listed or (self.runs is not None and is_under(self.runs, file))):
                return file
        served = ", ".join(str(c) for c in self.checkpoints) or "none"
        where = f" or a file under {self.runs}" if self.runs is not None else ""
        raise PathError(f"checkpoint {path!r} is not one this server serves: use one given with --checkpoint "
                        f"({served}){where}")


class Seated:
    """A loaded player at the table: its decisions, one at a time."""

    def __init__(self, player):
        self.player = player
        self.name = str(player.name)
        self.game = getattr(player, "game", None)
        self._lock = threading.Lock()

    def decide(self, obs: torch.Tensor, mask: torch.Tensor, generator: torch.Generator,
               action_name: Callable[[int], str] = str) -> Decision:
        """One decision on a batch of one (``obs [1, K]``, ``mask [1, A]``) by the player's own
        ``act``; the probabilities of its ``policy`` and a search's candidates come along."""
        with self._lock:
            action = int(self.player.act(obs, mask, generator)[0])
            last = getattr(self.player, "last_decision", None)
            values = [_finite(row) for row in last.rows(0, action_name)] if last is not None else None
        if not bool(mask[0, action]):
            raise RuntimeError(f"player {self.name} chose the illegal action {action}")
        policy = getattr(self.player, "policy", None)
        probs = None
        if callable(policy):
            with torch.no_grad():
                probs = policy(obs, mask)[0].float().cpu() * mask[0].cpu()
            probs = probs / probs.sum() if float(probs.sum()) > 0 else None
        return Decision(action, probs, values)


def _finite(row: dict) -> dict:
    """JSON has no NaN or infinity: a figure that is not a finite number becomes None."""
    return {k: None if isinstance(v, float) and not math.isfinite(v) else v for k, v in row.items()}


def _checkpoint_nodes(spec: PlayerSpec) -> list[PlayerSpec]:
    return [spec] if spec.kind == "checkpoint" else _checkpoint_nodes(spec.base) if spec.kind == "search" else []


class PlayerCache:
    """Loaded players by spec; thread-safe. See the module docstring."""

    def __init__(self, checkpoint_policy: CheckpointPolicy, device: str = "cpu"):
        self.checkpoint_policy = checkpoint_policy
        self.device = device
        self._players: dict[tuple, Seated] = {}
        self._lock = threading.Lock()

    def _confined(self, spec: PlayerSpec) -> PlayerSpec:
        """The spec with every checkpoint path checked and resolved (PathError when not served)."""
        if spec.kind == "checkpoint":
            return dataclasses.replace(spec, path=str(self.checkpoint_policy.check(spec.path)))
        if spec.kind == "search":
            return dataclasses.replace(spec, base=self._confined(spec.base))
        return spec

    def resolve(self, text: str, game=None) -> Seated:
        """The player ``text`` names, for ``game`` (None: a checkpoint's own game).
        PlayerSpecError, PathError or ValueError (all 400s) when it cannot be had."""
        spec = self._confined(parse_player(text))
        files = [Path(node.path) for node in _checkpoint_nodes(spec)]
        # A checkpoint's player is loaded once, for its own game, then checked against the table's.
        rules = None if files or game is None else (game.name, tuple(sorted(game.config_dict().items())))
        key = (str(spec), tuple(f.stat().st_mtime_ns for f in files), rules)
        with self._lock:
            if key not in self._players:
                try:
                    self._players[key] = Seated(load_player(spec, None if files else game, device=self.device))
                except (ValueError, OSError, RuntimeError, KeyError) as e:
                    raise ValueError(f"cannot load player {text!r}: {e}") from None
            seated = self._players[key]
        if game is not None and seated.game is not None and not same_game(seated.game, game):
            raise ValueError(f"player {text!r} plays {describe_game(seated.game)}, but this table plays {describe_game(game)}")
        return seated

    def game_of(self, text: str):
        """The game of a spec's checkpoint, or None for a bot (and search over a bot)."""
        if not _checkpoint_nodes(parse_player(text)):
            return None
        return self.resolve(text).game


def top_probabilities(probs: torch.Tensor, label: Callable[[int], str], chosen: int) -> list[dict]:
    """The most probable actions (and the chosen one) as ``{action, label, p, chosen}``."""
    order = [a for a in torch.argsort(probs, descending=True).tolist() if probs[a] > 0][:TOP_PROBS]
    if chosen not in order:
        order.append(chosen)
    return [{"action": a, "label": label(a), "p": round(float(probs[a]), 4), "chosen": a == chosen} for a in order]
