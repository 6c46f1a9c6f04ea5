"""Players for the web page: a spec string -> a player that acts on batched observations.

``resolve_player`` is the one place that turns a spec into a player. Until the shared
``deepcfr.players`` API is on main it understands the forms ``arena``/``eval``/``play`` take
today: a bot name (``heuristic_careful``) and a checkpoint path (``runs/x/checkpoints/latest.pt``,
its average policy; ``PATH@current``, ``PATH@greedy``, ``PATH@current,greedy`` for the others). A player has
``name``, ``act(obs, mask, generator) -> actions [n]`` and, for networks, ``policy(obs, mask)
-> probs [n, A]``.

The server loads only checkpoints it was told about: the files given with ``--checkpoint`` and
files under ``--runs`` (``CheckpointPolicy``), so a page cannot make the server unpickle an
arbitrary file.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import torch

from ..games.base import sample_from_probs
from .paths import PathError, is_under

CHECKPOINT_OPTIONS = ("average", "current", "greedy")
TOP_PROBS = 8  # actions shown with the agent's probabilities
SPEC_FORMS = ("a bot name (e.g. heuristic_careful)", "a checkpoint path (its average policy)",
              "PATH@current (its current policy), PATH@greedy or PATH@current,greedy (its most probable action)")


def valid_forms() -> str:
    return "valid forms: " + "; ".join(SPEC_FORMS)


class PlayerError(ValueError):
    """A player spec that cannot be used; the message lists the valid forms or choices."""


@dataclass
class Decision:
    action: int
    probs: torch.Tensor | None  # [A] the policy the action was drawn from, if the player has one
    values: list[dict] | None = None  # a search player's candidate values (once search players exist)


class _PolicyPlayer:
    """A network policy as a player: samples its action from ``policy(obs, mask)`` (or, greedy,
    takes the most probable one; ``policy`` still gives the probabilities it comes from)."""

    def __init__(self, policy: Callable[[torch.Tensor, torch.Tensor], torch.Tensor], name: str, greedy: bool):
        self._policy = policy
        self.name = name
        self.greedy = greedy

    def policy(self, obs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            probs = self._policy(obs, mask).float().cpu() * mask.cpu()
        # Never an illegal action, whatever the network says; an all-zero row plays uniformly.
        probs = torch.where(probs.sum(dim=1, keepdim=True) > 0, probs, mask.cpu().float())
        return probs / probs.sum(dim=1, keepdim=True)

    def act(self, obs, mask, generator=None) -> torch.Tensor:
        probs = self.policy(obs, mask)
        return probs.argmax(dim=1) if self.greedy else sample_from_probs(probs, generator)


def split_checkpoint_spec(spec: str) -> tuple[str, str, bool]:
    """``PATH[@option,...]`` -> (path, policy kind, greedy)."""
    path, sep, tail = spec.rpartition("@")
    if not sep:
        return spec, "average", False
    options = [o.strip() for o in tail.split(",") if o.strip()]
    unknown = [o for o in options if o not in CHECKPOINT_OPTIONS]
    if unknown or not path:
        raise PlayerError(f"player spec {spec!r}: unknown checkpoint option(s) {', '.join(unknown) or '(none)'}; "
                          f"{valid_forms()}")
    return path, "current" if "current" in options else "average", "greedy" in options


def looks_like_checkpoint(spec: str) -> bool:
    path = spec.rpartition("@")[0] or spec
    return "/" in path or "\\" in path or path.endswith((".pt", ".pth", ".ckpt"))


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


class PlayerCache:
    """Loaded players by spec (a checkpoint is loaded once per file version); thread-safe."""

    def __init__(self, checkpoint_policy: CheckpointPolicy, device: str = "cpu"):
        self.checkpoint_policy = checkpoint_policy
        self.device = device
        self._agents: dict[tuple[str, int], Any] = {}
        self._lock = threading.Lock()

    def agent(self, path: str):
        from ..train.trainer import load_agent

        file = self.checkpoint_policy.check(path)
        key = (str(file), file.stat().st_mtime_ns)
        with self._lock:
            if key not in self._agents:
                try:
                    self._agents[key] = load_agent(file, device=self.device)
                except (ValueError, OSError) as e:
                    raise PlayerError(f"cannot load checkpoint {path!r}: {e}") from None
            return self._agents[key]

    def game_of(self, spec: str):
        """The game a checkpoint spec was trained on, or None for a bot."""
        if not looks_like_checkpoint(spec):
            return None
        return self.agent(split_checkpoint_spec(spec.strip())[0]).game

    def resolve_player(self, spec: str, game):
        """The player named by ``spec`` for ``game``; PlayerError / PathError when it cannot be."""
        from ..games.bots import bot_names, make_bot

        spec = spec.strip()
        if not spec:
            raise PlayerError(f"empty player spec; {valid_forms()}")
        if spec.startswith("search:"):
            raise PlayerError(f"search players are not available in this build; {valid_forms()}")
        if looks_like_checkpoint(spec):
            path, kind, greedy = split_checkpoint_spec(spec)
            agent = self.agent(path)
            if agent.game.config_dict() != game.config_dict():
                raise PlayerError(f"checkpoint {path!r} plays {agent.game.name} with rules {agent.game.config_dict()}, "
                                  f"not this table's {game.config_dict()}")
            name = f"{Path(path).parent.parent.name or Path(path).stem}/{Path(path).name}@{kind}{',greedy' * greedy}"
            return _PolicyPlayer(agent.policy(kind=kind), f"{name} (iteration {agent.iteration})", greedy)
        if spec not in bot_names(game):
            raise PlayerError(f"unknown player {spec!r}; {valid_forms()}. Bots: {', '.join(bot_names(game))}")
        bot = make_bot(game, spec)
        if not getattr(bot, "name", None):
            bot.name = spec
        return bot


def decide(player, obs: torch.Tensor, mask: torch.Tensor, generator: torch.Generator) -> Decision:
    """One decision of ``player`` on a batch of one (``obs [1, K]``, ``mask [1, A]``): its own
    ``act``, and for the page the probabilities of its ``policy`` where it has one."""
    action = int(player.act(obs, mask, generator)[0])
    if not bool(mask[0, action]):
        raise RuntimeError(f"player {player.name} chose the illegal action {action}")
    probs = player.policy(obs, mask)[0].float().cpu() if callable(getattr(player, "policy", None)) else None
    return Decision(action, probs)


def top_probabilities(probs: torch.Tensor, label: Callable[[int], str], chosen: int) -> list[dict]:
    """The most probable actions (and the chosen one) as ``{action, label, p}``."""
    order = [a for a in torch.argsort(probs, descending=True).tolist() if probs[a] > 0][:TOP_PROBS]
    if chosen not in order:
        order.append(chosen)
    return [{"action": a, "label": label(a), "p": round(float(probs[a]), 4), "chosen": a == chosen} for a in order]
