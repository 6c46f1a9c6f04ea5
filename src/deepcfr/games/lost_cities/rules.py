"""Lost Cities rule parameters (the rules: docs/rules.md), named variants, card and action indexing.

Card kinds: kind 0 is a wager, kinds 1..n_ranks are numbered cards of value min_rank + kind - 1.
A *kind index* is ``k = colour * (n_ranks + 1) + kind`` (K = n_colors * (n_ranks + 1) kinds).
A *physical card id* is ``colour * (n_wagers + n_ranks) + j``: j < n_wagers are the colour's
wager copies, j >= n_wagers the numbered card of kind ``j - n_wagers + 1``.

Actions (A = 2K + 1 + n_colors):
  ``k``            play a card of kind k onto the own expedition
  ``K + k``        discard a card of kind k onto its colour's pile
  ``2K``           draw from the deck
  ``2K + 1 + c``   draw the top card of discard pile c

Outside code names actions and cards through :class:`LostCitiesRules` rather than this
numbering: ``action_id("discard", "red", 5)``, ``action_id("draw_pile", "blue")``,
``action(a) -> Move(kind, colour, rank)``, ``card_id("red", 0, copy=1)`` (rank 0 is a wager) and
``card(id) -> (colour, rank)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

from pydantic import BaseModel, ConfigDict, model_validator

COLOR_NAMES = ["red", "green", "blue", "white", "yellow", "purple", "orange", "black", "pink", "cyan"]
MOVE_KINDS = ("play", "discard", "draw_deck", "draw_pile")
WAGER = 0  # the rank of a wager card


@dataclass(frozen=True)
class Move:
    """An action by name: ``kind`` (play | discard | draw_deck | draw_pile), the colour index
    (None for draw_deck) and, for play and discard, the card's rank (its value; 0 = wager)."""

    kind: str
    colour: int | None = None
    rank: int | None = None


class LostCitiesRules(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    n_colors: int = 5
    n_ranks: int = 9
    min_rank: int = 2
    n_wagers: int = 3
    hand_size: int = 8
    expedition_cost: int = -20
    bonus_threshold: int = 8
    bonus: int = 20
    ply_cap: int = 1000  # decisions after which a game is cut off and scored as it stands
    utility: str = "score_diff"  # or "win_loss"

    @model_validator(mode="after")
    def _check(self) -> LostCitiesRules:
        def bad(name: str, why: str):
            raise ValueError(f"invalid Lost Cities rule {name}={getattr(self, name)!r}: {why}")

        if not 1 <= self.n_colors <= len(COLOR_NAMES):
            bad("n_colors", f"must be between 1 and {len(COLOR_NAMES)}")
        if not 1 <= self.n_ranks <= 20:
            bad("n_ranks", "must be between 1 and 20")
        if not 0 <= self.n_wagers <= 5:
            bad("n_wagers", "must be between 0 and 5")
        if self.min_rank < 1:
            bad("min_rank", "must be at least 1")
        if self.hand_size < 1:
            bad("hand_size", "must be at least 1")
        if self.deck_size < 2 * self.hand_size + 1:
            bad("hand_size", f"deck of {self.deck_size} cards needs at least 2 * hand_size + 1 cards")
        if self.deck_size > 200:
            bad("n_colors", f"deck of {self.deck_size} cards is larger than the supported 200")
        if self.bonus_threshold < 1:
            bad("bonus_threshold", "must be at least 1")
        if self.ply_cap < 2:
            bad("ply_cap", "must be at least 2")
        if self.utility not in ("score_diff", "win_loss"):
            bad("utility", "must be 'score_diff' or 'win_loss'")
        return self

    # Derived sizes -------------------------------------------------------------------------
    @property
    def cards_per_color(self) -> int:
        return self.n_wagers + self.n_ranks

    @property
    def deck_size(self) -> int:
        return self.n_colors * (self.n_wagers + self.n_ranks)

    @property
    def num_kinds(self) -> int:
        return self.n_colors * (self.n_ranks + 1)

    @property
    def num_actions(self) -> int:
        return 2 * self.num_kinds + 1 + self.n_colors

    @property
    def draw_deck_action(self) -> int:
        return 2 * self.num_kinds

    def kind_value(self, kind: int) -> int:
        return 0 if kind == 0 else self.min_rank + kind - 1

    def card_color(self, card: int) -> int:
        return card // self.cards_per_color

    def card_kind(self, card: int) -> int:
        j = card % self.cards_per_color
        return 0 if j < self.n_wagers else j - self.n_wagers + 1

    def card_kind_index(self, card: int) -> int:
        return self.card_color(card) * (self.n_ranks + 1) + self.card_kind(card)

    def kind_name(self, k: int) -> str:
        c, kind = divmod(k, self.n_ranks + 1)
        return f"{COLOR_NAMES[c]} {'wager' if kind == 0 else self.kind_value(kind)}"

    # Public naming of colours, ranks, cards and actions -----------------------------------
    def colour_index(self, colour: int | str) -> int:
        """A colour by index or name (``"red"``)."""
        names = COLOR_NAMES[: self.n_colors]
        if isinstance(colour, str):
            if colour not in names:
                raise ValueError(f"unknown colour {colour!r}; valid: {', '.join(names)}")
            return names.index(colour)
        if not 0 <= int(colour) < self.n_colors:
            raise ValueError(f"colour {colour!r} out of range 0..{self.n_colors - 1} ({', '.join(names)})")
        return int(colour)

    def ranks(self) -> list[int]:
        """The ranks of a colour's cards: 0 (wager, when the variant has wagers) and the values."""
        return ([WAGER] if self.n_wagers else []) + [self.kind_value(k) for k in range(1, self.n_ranks + 1)]

    def kind_of_rank(self, rank: int) -> int:
        """Kind (0 = wager, 1..n_ranks) of a card rank (its value; 0 = wager)."""
        if rank not in self.ranks():
            raise ValueError(f"rank {rank!r} is not a card of this variant; valid: {self.ranks()} (0 = wager)")
        return 0 if rank == WAGER else rank - self.min_rank + 1

    def action_id(self, kind: str, colour: int | str | None = None, rank: int | None = None) -> int:
        """The action id of a move: ``("play" | "discard", colour, rank)``, ``("draw_deck",)`` or
        ``("draw_pile", colour)``."""
        if kind == "draw_deck":
            return self.draw_deck_action
        if kind not in MOVE_KINDS:
            raise ValueError(f"unknown move {kind!r}; valid: {', '.join(MOVE_KINDS)}")
        if colour is None:
            raise ValueError(f"a {kind} move names a colour")
        c = self.colour_index(colour)
        if kind == "draw_pile":
            return self.draw_deck_action + 1 + c
        if rank is None:
            raise ValueError(f"a {kind} move names a rank (0 = wager)")
        k = c * (self.n_ranks + 1) + self.kind_of_rank(rank)
        return k if kind == "play" else self.num_kinds + k

    def action(self, a: int) -> Move:
        """The move of action id ``a`` (inverse of :meth:`action_id`)."""
        K = self.num_kinds
        a = int(a)
        if not 0 <= a < self.num_actions:
            raise ValueError(f"action {a} out of range 0..{self.num_actions - 1}")
        if a < 2 * K:
            c, kind = divmod(a % K, self.n_ranks + 1)
            return Move("play" if a < K else "discard", c, self.kind_value(kind))
        if a == 2 * K:
            return Move("draw_deck")
        return Move("draw_pile", a - 2 * K - 1)

    def card_id(self, colour: int | str, rank: int, copy: int = 0) -> int:
        """The physical id of a card (``copy`` picks one of a colour's interchangeable wagers)."""
        c, kind = self.colour_index(colour), self.kind_of_rank(rank)
        if kind == 0:
            if not 0 <= copy < self.n_wagers:
                raise ValueError(f"wager copy {copy} out of range 0..{self.n_wagers - 1}")
            return c * self.cards_per_color + copy
        if copy != 0:
            raise ValueError("numbered cards have one copy (copy=0)")
        return c * self.cards_per_color + self.n_wagers + kind - 1

    def card(self, card: int) -> tuple[int, int]:
        """(colour index, rank) of a physical card id (inverse of :meth:`card_id`, up to the wager copy)."""
        if not 0 <= int(card) < self.deck_size:
            raise ValueError(f"card {card} out of range 0..{self.deck_size - 1}")
        return self.card_color(int(card)), self.kind_value(self.card_kind(int(card)))

    def action_name(self, a: int) -> str:
        move = self.action(a)
        if move.kind == "draw_deck":
            return "draw deck"
        colour = COLOR_NAMES[cast(int, move.colour)]  # every move but draw_deck has a colour
        if move.kind == "draw_pile":
            return f"draw pile {colour}"
        return f"{move.kind} {colour} {'wager' if move.rank == WAGER else move.rank}"


VARIANTS: dict[str, dict] = {
    "classic": {},
    "mini": dict(
        n_colors=3, n_ranks=5, min_rank=2, n_wagers=1, hand_size=5, expedition_cost=-10, bonus_threshold=5, bonus=10
    ),
}


def make_rules(variant: str = "classic", **overrides) -> LostCitiesRules:
    if variant not in VARIANTS:
        raise ValueError(f"unknown Lost Cities variant {variant!r}; valid: {', '.join(VARIANTS)}")
    return LostCitiesRules(**{**VARIANTS[variant], **overrides})
