"""Lost Cities: rules, the batched engine, the reference engine and the network encoding."""

from .encoding import LostCitiesEncoder
from .engine import LostCitiesGame, LostCitiesState
from .reference import LostCitiesReference
from .rules import COLOR_NAMES, MOVE_KINDS, VARIANTS, WAGER, LostCitiesRules, Move, make_rules

__all__ = [
    "LostCitiesGame",
    "LostCitiesState",
    "LostCitiesEncoder",
    "LostCitiesReference",
    "LostCitiesRules",
    "make_rules",
    "VARIANTS",
    "COLOR_NAMES",
    "MOVE_KINDS",
    "WAGER",
    "Move",
]
