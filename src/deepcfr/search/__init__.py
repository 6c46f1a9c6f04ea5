"""Play-time search over a base policy (network or bot): determinized rollouts with common
random numbers (rollout.py), settings in a ``search`` section (config.py)."""

from .config import SearchConfig, SearchConfigError, search_config
from .rollout import PlayedRollouts, RolloutSearch, SearchDecision, SearchStats, paired_choice, play_rollouts

__all__ = ["PlayedRollouts", "RolloutSearch", "SearchConfig", "SearchConfigError", "SearchDecision", "SearchStats",
           "paired_choice", "play_rollouts", "search_config"]
