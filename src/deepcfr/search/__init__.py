"""Play-time search over a base policy (network or bot): determinized rollouts with common
random numbers (rollout.py), settings in a ``search`` section (config.py); the posterior over the
opponent's hidden cards given its past moves (belief.py), with the opponent modelled by the
probabilities of its moves (opponent.py): the search's ``belief`` option and the exploiter's belief;
the search that plans the decider's next turns in the oracle's worlds (plan.py, issue 66's ceiling)."""

from .belief import BeliefSample, DealPosterior, effective_sample_size, resampled_rows
from .config import SearchConfig, SearchConfigError, search_config
from .opponent import OpponentModel, OpponentModelError
from .plan import PlanSearch
from .rollout import PlayedRollouts, RolloutSearch, SearchDecision, SearchStats, paired_choice, play_rollouts

__all__ = [
    "BeliefSample",
    "DealPosterior",
    "effective_sample_size",
    "resampled_rows",
    "OpponentModel",
    "OpponentModelError",
    "PlanSearch",
    "PlayedRollouts",
    "RolloutSearch",
    "SearchConfig",
    "SearchConfigError",
    "SearchDecision",
    "SearchStats",
    "paired_choice",
    "play_rollouts",
    "search_config",
]
