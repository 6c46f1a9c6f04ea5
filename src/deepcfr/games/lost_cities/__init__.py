"""Lost Cities: rules, the batched engine, the reference engine and the network encoding."""

from .engine import LostCitiesGame, LostCitiesState
from .encoding import LostCitiesEncoder
from .reference import LostCitiesReference
from .rules import VARIANTS, LostCitiesRules, make_rules

__all__ = ["LostCitiesGame", "LostCitiesState", "LostCitiesEncoder", "LostCitiesReference",
           "LostCitiesRules", "make_rules", "VARIANTS"]
