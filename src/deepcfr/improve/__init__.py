"""Expert iteration (``deepcfr improve``): search-labelled self-play distilled into the strategy
network, gated round by round. Sits above search and train (it uses both, and the player specs)."""

from .config import ImproveConfig, ImproveRunConfig
from .labelling import LabelChunk, LabelResult
from .loop import LEARNER, Improver, derived_seed, improve_config, one_sided_p
from .positions import PositionMemory, Positions, improved_target, retargeted

__all__ = [
    "Improver",
    "improve_config",
    "ImproveConfig",
    "ImproveRunConfig",
    "PositionMemory",
    "Positions",
    "improved_target",
    "retargeted",
    "derived_seed",
    "one_sided_p",
    "LEARNER",
    "LabelChunk",
    "LabelResult",
]
