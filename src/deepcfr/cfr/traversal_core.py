"""What every traversal shares: the options object of each algorithm, the stats and result
types, the batch that starts each traversal and collects its samples, and the policy call that the
algorithms (:mod:`.external`, :mod:`.sampled`) share (see :mod:`deepcfr.cfr.traversal`)."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

import torch

from deepcfr.games.base import Policy, batch_size, clone_state

UNSAMPLED_TARGETS = ("zero", "mean")


def _check_epsilon(epsilon: float) -> None:
    if not 0.0 <= epsilon <= 1.0:
        raise ValueError(f"epsilon must be in [0, 1], got {epsilon!r}")


@dataclass(frozen=True)
class ExternalSampling:
    """Every traverser action expanded at every node (Kuhn, Leduc); no options."""

    name = "external"


@dataclass(frozen=True)
class OutcomeSampling:
    """One sampled trajectory per traversal with importance-weighted sampled regrets.

    ``epsilon``: the traverser samples from ``epsilon * uniform(legal) + (1 - epsilon) * sigma``.
    ``unsampled_target``: value of the actions not taken, ``zero`` or ``mean`` (a leave-one-out
    batch mean of the utilities). ``tail_correction``: importance-correct the value below the
    sampled action (unbiased); false uses the leaf utility there (biased by epsilon, but no
    compounding importance weights over long games)."""

    name = "outcome"
    epsilon: float = 0.6
    unsampled_target: str = "zero"
    tail_correction: bool = True

    def __post_init__(self):
        _check_epsilon(self.epsilon)
        if self.unsampled_target not in UNSAMPLED_TARGETS:
            raise ValueError(f"unsampled_target must be one of {UNSAMPLED_TARGETS}, got {self.unsampled_target!r}")


@dataclass(frozen=True)
class CriticSampling:
    """Trajectories for a learned critic (ESCHER-style): the traverser explores once per game,
    a uniform legal action with probability ``epsilon`` at each node until it first does."""

    name = "critic"
    epsilon: float = 0.1

    def __post_init__(self):
        _check_epsilon(self.epsilon)


TraversalOptions = ExternalSampling | OutcomeSampling | CriticSampling
ALGORITHMS: dict[str, type] = {cls.name: cls for cls in (ExternalSampling, OutcomeSampling, CriticSampling)}


def traversal_options(algorithm: str, **options: Any) -> TraversalOptions:
    """The options object of ``algorithm`` (by name) with ``options`` set and the rest defaulted."""
    if algorithm not in ALGORITHMS:
        raise ValueError(f"traversal algorithm must be one of {sorted(ALGORITHMS)}, got {algorithm!r}")
    cls = ALGORITHMS[algorithm]
    valid = {f.name for f in fields(cls)}
    unknown = sorted(set(options) - valid)
    if unknown:
        raise ValueError(
            f"{', '.join(unknown)}: not an option of {algorithm} sampling "
            f"(its options: {', '.join(sorted(valid)) or 'none'})"
        )
    return cls(**options)


@dataclass
class TraversalStats:
    """Counts from one or more traversal batches (``merge`` adds them up)."""

    traversals: int = 0  # games traversed
    decisions: int = 0  # decision nodes visited (traverser + opponent)
    forward_calls: int = 0  # policy calls (one per player per step at most)
    forward_rows: int = 0  # rows over all policy calls
    max_batch: int = 0  # largest single policy call
    cut_offs: int = 0  # games stopped by the decision cap (game.max_game_length)
    advantage_samples: int = 0
    strategy_samples: int = 0
    # Outcome sampling: the importance weight of v~(h, a*) relative to the leaf utility (the product
    # of sigma/q along the tail, divided by q(a*)); these compound, so their size is reported.
    max_importance_weight: float = 0.0
    importance_weight_sum: float = 0.0

    @property
    def mean_importance_weight(self) -> float:
        return self.importance_weight_sum / self.advantage_samples if self.advantage_samples else 0.0

    @property
    def avg_batch(self) -> float:
        return self.forward_rows / self.forward_calls if self.forward_calls else 0.0

    def record_forward(self, rows: int) -> None:
        self.forward_calls += 1
        self.forward_rows += rows
        self.max_batch = max(self.max_batch, rows)

    def merge(self, other: TraversalStats) -> TraversalStats:
        for f in fields(self):
            if f.name == "max_batch":
                self.max_batch = max(self.max_batch, other.max_batch)
            elif f.name == "max_importance_weight":
                self.max_importance_weight = max(self.max_importance_weight, other.max_importance_weight)
            else:
                setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))
        return self

    def as_metrics(self, prefix: str = "traversal/") -> dict[str, float]:
        return {
            f"{prefix}traversals": self.traversals,
            f"{prefix}decisions": self.decisions,
            f"{prefix}forward_calls": self.forward_calls,
            f"{prefix}avg_batch": self.avg_batch,
            f"{prefix}max_batch": self.max_batch,
            f"{prefix}cut_offs": self.cut_offs,
            f"{prefix}advantage_samples": self.advantage_samples,
            f"{prefix}strategy_samples": self.strategy_samples,
            f"{prefix}max_importance_weight": self.max_importance_weight,
            f"{prefix}mean_importance_weight": self.mean_importance_weight,
        }


@dataclass
class TraversalResult:
    """Samples as tensors. ``advantage``: obs [m, K], mask [m, A] bool, target [m, A] float32
    (zero on illegal actions), iteration [m] int32. ``strategy``: obs, mask, policy [m, A] float32,
    iteration. ``advantage_root`` / ``strategy_root``: the traversal (root) index of each sample."""

    advantage: dict[str, torch.Tensor]
    strategy: dict[str, torch.Tensor]
    stats: TraversalStats
    advantage_root: torch.Tensor = field(default_factory=lambda: torch.zeros(0, dtype=torch.long))
    strategy_root: torch.Tensor = field(default_factory=lambda: torch.zeros(0, dtype=torch.long))


def _empty_samples(game, device, value_name: str) -> dict[str, torch.Tensor]:
    return {
        "obs": torch.zeros(0, game.obs_size, dtype=game.obs_dtype, device=device),
        "mask": torch.zeros(0, game.num_actions, dtype=torch.bool, device=device),
        value_name: torch.zeros(0, game.num_actions, dtype=torch.float32, device=device),
        "iteration": torch.zeros(0, dtype=torch.int32, device=device),
    }


def _cat_samples(parts: list[dict[str, torch.Tensor]], game, device, value_name: str) -> dict[str, torch.Tensor]:
    if not parts:
        return _empty_samples(game, device, value_name)
    return {k: torch.cat([p[k] for p in parts]) for k in parts[0]}


@dataclass
class TraversalBatch:
    """One traversal batch: the arguments every algorithm shares, its stats, and the sample parts it
    collects (one per step or level), each part with the traversal (root) index of its rows."""

    game: Any
    traverser: int
    iteration: int
    generator: torch.Generator | None
    device: str | torch.device
    record_strategy: bool
    step_cap: int  # the decisions (or levels) a game is played before it is cut off and scored
    stats: TraversalStats
    advantage_parts: list[dict[str, torch.Tensor]] = field(default_factory=list)
    advantage_roots: list[torch.Tensor] = field(default_factory=list)
    strategy_parts: list[dict[str, torch.Tensor]] = field(default_factory=list)
    strategy_roots: list[torch.Tensor] = field(default_factory=list)

    def add_advantage(self, roots, obs, mask, target, **extra: torch.Tensor) -> None:
        """Advantage samples of one step (``extra``: further per-row fields, after the four)."""
        self.advantage_parts.append(
            {"obs": obs, "mask": mask, "target": target, "iteration": self._iterations(obs), **extra}
        )
        self.advantage_roots.append(roots)

    def add_strategy(self, roots, obs, mask, policy) -> None:
        """Strategy samples of one step (the opponent's sigma at its nodes); an ``on_opponent`` hook."""
        self.strategy_parts.append({"obs": obs, "mask": mask, "policy": policy, "iteration": self._iterations(obs)})
        self.strategy_roots.append(roots)

    def _iterations(self, obs: torch.Tensor) -> torch.Tensor:
        return torch.full((obs.shape[0],), self.iteration, dtype=torch.int32, device=obs.device)

    def result(self) -> TraversalResult:
        """The parts concatenated into the batch's result."""
        advantage = _cat_samples(self.advantage_parts, self.game, self.device, "target")
        strategy = _cat_samples(self.strategy_parts, self.game, self.device, "policy")
        self.stats.advantage_samples = advantage["obs"].shape[0]
        self.stats.strategy_samples = strategy["obs"].shape[0]
        no_roots = torch.zeros(0, dtype=torch.long, device=self.device)
        return TraversalResult(
            advantage=advantage,
            strategy=strategy,
            stats=self.stats,
            advantage_root=torch.cat(self.advantage_roots) if self.advantage_roots else no_roots,
            strategy_root=torch.cat(self.strategy_roots) if self.strategy_roots else no_roots,
        )


def start_traversal(
    game, traverser, num_traversals, iteration, generator, device, root_state, record_strategy, max_steps
) -> tuple[TraversalBatch, Any]:
    """A traversal batch's bookkeeping and its ``num_traversals`` root states (dealt by ``game.init``,
    or a copy of ``root_state``), after checking the arguments every traversal shares; games are cut
    off after ``max_steps`` (``game.max_game_length`` when None)."""
    if traverser not in (0, 1):
        raise ValueError(f"traverser must be 0 or 1, got {traverser!r}")
    if num_traversals < 1:
        raise ValueError(f"num_traversals must be >= 1, got {num_traversals!r}")
    step_cap = int(max_steps if max_steps is not None else game.max_game_length)
    stats = TraversalStats(traversals=num_traversals)
    batch = TraversalBatch(game, traverser, int(iteration), generator, device, record_strategy, step_cap, stats)
    return batch, _root_states(game, num_traversals, generator, device, root_state)


def call_policy(policy: Policy, obs: torch.Tensor, mask: torch.Tensor, stats: TraversalStats) -> torch.Tensor:
    """``policy``'s probabilities at (obs, mask), counted in ``stats``; illegal actions get 0."""
    probs = policy(obs, mask)
    stats.record_forward(obs.shape[0])
    if probs.shape != mask.shape:
        raise ValueError(f"policy returned probs of shape {tuple(probs.shape)}, expected {tuple(mask.shape)}")
    # Illegal actions never get probability, whatever the callable returned.
    return probs.float() * mask


def _root_states(game, n: int, generator, device, root_state):
    """The ``n`` root states of a traversal batch: dealt by ``game.init``, or a copy of ``root_state``."""
    if root_state is None:
        return game.init(n, generator=generator, device=device)
    if batch_size(root_state) != n:
        raise ValueError(f"root_state has {batch_size(root_state)} rows but num_traversals={n}")
    return clone_state(root_state)
