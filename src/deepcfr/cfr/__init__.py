"""CFR core: regret matching, batched traversals, replay memory, networks, league, network policies."""

from .league import League, LeagueChoice
from .policies import (
    BotPolicy,
    ExactAveragePolicy,
    PerPlayerPolicy,
    RegretMatchingPolicy,
    StrategyNetPolicy,
    UniformPolicy,
    greedy,
)
from .regret_matching import regret_matching
from .traversal import TraversalResult, TraversalStats, external_sampling, outcome_sampling, traverse

__all__ = [
    "BotPolicy", "ExactAveragePolicy", "League", "LeagueChoice", "PerPlayerPolicy", "RegretMatchingPolicy",
    "StrategyNetPolicy", "TraversalResult", "TraversalStats", "UniformPolicy", "external_sampling", "greedy",
    "outcome_sampling", "regret_matching", "traverse",
]
