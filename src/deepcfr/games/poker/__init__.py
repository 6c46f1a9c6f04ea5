"""Kuhn and Leduc poker (OpenSpiel's ``kuhn_poker`` and ``leduc_poker`` rules and action ids):
batched engines, one-game reference engines, and full game-tree enumeration for exact
evaluation. Import the games from ``deepcfr.games.kuhn`` and ``deepcfr.games.leduc``."""
