"""CFR core: regret matching, batched traversals, replay memory, networks, league, network policies."""

from .league import League, LeagueChoice
from .policies import (
    BotPolicy,
    ExactAveragePolicy,
    KLRegularizedPolicy,
    PerPlayerPolicy,
    RegretMatchingPolicy,
    StrategyNetPolicy,
    UniformPolicy,
    greedy,
)
from .regret_matching import kl_regularized, regret_matching
from .traversal import TraversalResult, TraversalStats, external_sampling, outcome_sampling, traverse

__all__ = [
    "BotPolicy",
    "ExactAveragePolicy",
    "KLRegularizedPolicy",
    "League",
    "LeagueChoice",
    "PerPlayerPolicy",
    "RegretMatchingPolicy",
    "StrategyNetPolicy",
    "TraversalResult",
    "TraversalStats",
    "UniformPolicy",
    "external_sampling",
    "greedy",
    "kl_regularized",
    "outcome_sampling",
    "regret_matching",
    "traverse",
]
