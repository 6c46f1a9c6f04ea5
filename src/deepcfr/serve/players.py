"""What the server adds to ``deepcfr.players``: it loads only the checkpoints it was told about
(the files given with ``--checkpoint``, files under ``--runs``, and the shipped champion), so a
page cannot make it unpickle an arbitrary file."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Sequence

from ..players import PlayerSpec, quote
from ..player_specs import parse_player
from .paths import PathError, is_under

__all__ = ["CheckpointPolicy"]


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
        raise PathError(f"checkpoint {quote(path)} is not one this server serves: use one given with --checkpoint "
                        f"({served}){where}")

    def confine(self, spec: PlayerSpec) -> PlayerSpec:
        """``spec`` with every checkpoint path checked and resolved (PathError when not served),
        those a search's settings name too (its rollout policy; its value function may only be
        the shipped one)."""
        if spec.kind == "checkpoint" and not spec.is_champion:
            return dataclasses.replace(spec, path=str(self.check(spec.path)))
        if spec.kind != "search":
            return spec
        settings = dict(spec.settings)
        rollout = settings.get("rollout_policy")
        if isinstance(rollout, str) and rollout != "base":
            settings["rollout_policy"] = str(self.confine(parse_player(rollout)))
        value_fn = settings.get("value_fn")
        if value_fn is not None and value_fn != "auto":
            raise PathError(f"search setting value_fn={quote(str(value_fn))}: this server values cut rollouts only "
                            "with the value function shipped beside the champion (value_fn=auto)")
        return dataclasses.replace(spec, base=self.confine(spec.base), settings=settings)
