"""Kuhn poker (OpenSpiel ``kuhn_poker``); the code lives in deepcfr.games.poker.kuhn."""

from .poker.kuhn import BET, KUHN_VERSION, PASS, KuhnGame, KuhnReference, KuhnState

__all__ = ["BET", "KUHN_VERSION", "PASS", "KuhnGame", "KuhnReference", "KuhnState"]
