"""Batched Deep CFR traversals: external sampling (small games), outcome sampling and critic
sampling (long games).

All run many traversals in lockstep and make, per step, at most one policy call for the
traverser and one for the opponent, each over every game that needs it. The estimators are the
ones derived in docs/design.md, "Deep CFR here" (local targets: history values under sigma, never
divided by the traverser's own reach).

Policies are plain callables ``policy(obs, mask) -> probs`` (see ``deepcfr.cfr.policies``), so this
module knows nothing of networks, processes or devices beyond the tensors it is handed: a worker
process or a remote inference proxy can supply the same callables.

All return a :class:`TraversalResult`: advantage samples for the traverser
(``obs, mask, target, iteration``), strategy samples for the opponent (``obs, mask, policy,
iteration``; only when the opponent plays sigma_t, ``record_strategy=True``) and
:class:`TraversalStats`.

Each algorithm's options are one frozen object (:class:`ExternalSampling`, :class:`OutcomeSampling`,
:class:`CriticSampling`), passed unchanged from the config through the executors to
:func:`traverse`; its defaults are the only ones.

Chance events are dealt by ``game.init`` (the batched API has no chance player), so a traversal
samples chance once, at its root.
"""

from __future__ import annotations

import torch

from deepcfr.games.base import Policy

from .external import external_sampling
from .sampled import critic_sampling, outcome_sampling
from .traversal_core import (
    ALGORITHMS,
    CriticSampling,
    ExternalSampling,
    OutcomeSampling,
    TraversalOptions,
    TraversalResult,
    TraversalStats,
    traversal_options,
)

__all__ = [
    "ALGORITHMS",
    "CriticSampling",
    "ExternalSampling",
    "OutcomeSampling",
    "TraversalOptions",
    "TraversalResult",
    "TraversalStats",
    "critic_sampling",
    "external_sampling",
    "outcome_sampling",
    "traversal_options",
    "traverse",
]


def traverse(
    options: TraversalOptions,
    game,
    traverser: int,
    num_traversals: int,
    traverser_policy: Policy,
    opponent_policy: Policy,
    iteration: int,
    generator: torch.Generator | None = None,
    *,
    record_strategy: bool = True,
    device: str | torch.device = "cpu",
) -> TraversalResult:
    """The traversal that ``options`` names (:class:`ExternalSampling`, :class:`OutcomeSampling`
    or :class:`CriticSampling`), with those options."""
    args = (game, traverser, num_traversals, traverser_policy, opponent_policy, iteration, generator)
    if isinstance(options, ExternalSampling):
        return external_sampling(*args, record_strategy=record_strategy, device=device)
    if isinstance(options, OutcomeSampling):
        return outcome_sampling(*args, options, record_strategy=record_strategy, device=device)
    if isinstance(options, CriticSampling):
        return critic_sampling(*args, options, record_strategy=record_strategy, device=device)
    raise TypeError(
        f"traversal options must be one of {', '.join(c.__name__ for c in ALGORITHMS.values())}, "
        f"got {type(options).__name__}"
    )
