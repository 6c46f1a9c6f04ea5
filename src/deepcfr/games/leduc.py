"""Leduc poker (OpenSpiel ``leduc_poker``); the code lives in deepcfr.games.poker.leduc."""

from .poker.leduc import CALL, FOLD, LEDUC_VERSION, RAISE, LeducGame, LeducReference, LeducState

__all__ = ["CALL", "FOLD", "LEDUC_VERSION", "RAISE", "LeducGame", "LeducReference", "LeducState"]
