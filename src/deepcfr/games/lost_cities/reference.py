"""The reference Lost Cities engine: one game, plain Python, written to be read.

It is the oracle the batched engine is tested against, and it serves human play, replays and
debugging. Rules: docs/rules.md; card ids, action indices and the observation
row: rules.py and layout.py.

Conventions shared with the batched engine (tests check they agree):
- A turn is two decisions by the same player: a card decision (play or discard) and a draw.
- The game ends when a draw takes the deck's last card, or when ``rules.ply_cap`` decisions have
  been made (then ``cut_off`` is set and the game is scored as it stands).
- A card taken from a discard pile is *known* to the opponent until it is played or discarded.
  Wagers of one colour are interchangeable, so when a player plays or discards a wager while
  holding a known wager of that colour, the known one is the one that leaves: what the opponent
  still "knows" is then a certainty.
- After the game ends the player to move is still flipped by the final draw, and
  ``legal_actions()`` is empty.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from ..base import IllegalActionError
from .layout import LOC_HAND, LOC_MY_EXP, LOC_OPP_EXP, LOC_OPP_KNOWN, LOC_PILE0, obs_size
from .rules import COLOR_NAMES, LostCitiesRules

PHASE_CARD, PHASE_DRAW = 0, 1


class LostCitiesReference:
    """One game of Lost Cities. Build with ``new(rules, seed)`` or ``from_deal(rules, deal)``."""

    def __init__(self, rules: LostCitiesRules | None, deal: Sequence[int]):
        self.rules = rules = rules if rules is not None else LostCitiesRules()
        deal = [int(card) for card in deal]
        if sorted(deal) != list(range(rules.deck_size)):
            raise ValueError(f"deal must be a permutation of the card ids 0..{rules.deck_size - 1}, got {deal}")
        hand_size = rules.hand_size
        self.hands: list[list[int]] = [deal[:hand_size], deal[hand_size : 2 * hand_size]]
        self.deck: list[int] = deal[2 * hand_size :]  # draw order, first = top
        # expeditions[p][c]: cards in the order played; piles[c]: bottom first.
        self.expeditions: list[list[list[int]]] = [[[] for _ in range(rules.n_colors)] for _ in range(2)]
        self.piles: list[list[int]] = [[] for _ in range(rules.n_colors)]
        self.known: list[set[int]] = [set(), set()]  # known[p]: cards in p's hand that p's opponent knows
        self.player = 0
        self.phase = PHASE_CARD
        self.discarded_color: int | None = None  # colour discarded onto in this turn
        self.num_decisions = 0
        self.cut_off = False
        self.history: list[int] = []

    @classmethod
    def new(cls, rules: LostCitiesRules | None = None, seed: int = 0) -> LostCitiesReference:
        rules = rules if rules is not None else LostCitiesRules()
        deal = list(range(rules.deck_size))
        random.Random(seed).shuffle(deal)
        return cls(rules, deal)

    @classmethod
    def from_deal(cls, rules: LostCitiesRules | None, deal: Sequence[int]) -> LostCitiesReference:
        return cls(rules, deal)

    def deal(self) -> list[int]:
        """The deal (what ``from_deal`` takes) of a game that has not moved yet."""
        if self.num_decisions:
            raise ValueError("the deal of a Lost Cities game can only be read before the first move")
        return list(self.hands[0]) + list(self.hands[1]) + list(self.deck)

    # Queries ---------------------------------------------------------------------------------
    def current_player(self) -> int:
        return self.player

    def is_terminal(self) -> bool:
        return not self.deck or self.cut_off

    def _numbered_kinds(self, player: int, color: int) -> list[int]:
        return [k for k in (self.rules.card_kind(card) for card in self.expeditions[player][color]) if k > 0]

    def _why_not_playable(self, player: int, kind_index: int) -> str | None:
        """None if the player may play a card of this kind onto their expedition (hand aside)."""
        color, kind = divmod(kind_index, self.rules.n_ranks + 1)
        numbered = self._numbered_kinds(player, color)
        if not numbered:
            return None
        if kind == 0:
            return "a wager cannot be played once the expedition holds a numbered card"
        top = max(numbered)
        if kind <= top:
            return f"{self.rules.kind_value(kind)} is not higher than {self.rules.kind_value(top)}"
        return None

    def legal_actions(self) -> list[int]:
        if self.is_terminal():
            return []
        rules = self.rules
        num_kinds = rules.num_kinds
        if self.phase == PHASE_CARD:
            kinds = sorted({rules.card_kind_index(card) for card in self.hands[self.player]})
            plays = [k for k in kinds if self._why_not_playable(self.player, k) is None]
            return plays + [num_kinds + k for k in kinds]
        actions = [rules.draw_deck_action]
        for color, pile in enumerate(self.piles):
            if pile and color != self.discarded_color:
                actions.append(rules.action_id("draw_pile", color))
        return actions

    def legal_mask(self) -> list[bool]:
        mask = [False] * self.rules.num_actions
        for action in self.legal_actions():
            mask[action] = True
        return mask

    # Moves -----------------------------------------------------------------------------------
    def _illegal(self, action: int, why: str) -> IllegalActionError:
        return IllegalActionError(
            f"illegal action {action} ({self.rules.action_name(action)}) for player {self.player}: {why}"
        )

    def apply(self, action: int) -> None:
        rules = self.rules
        if isinstance(action, bool) or not isinstance(action, int):
            try:
                action = int(action)  # numpy / 0-d tensor integers
            except (TypeError, ValueError):
                raise IllegalActionError(f"action must be an integer, got {action!r}") from None
        if not 0 <= action < rules.num_actions:
            raise IllegalActionError(f"action {action} out of range 0..{rules.num_actions - 1}")
        if self.is_terminal():
            raise self._illegal(action, "the game is over")
        num_kinds = rules.num_kinds
        player = self.player
        if self.phase == PHASE_CARD:
            if action >= 2 * num_kinds:
                raise self._illegal(action, "a card must be played or discarded before drawing")
            kind_index = action % num_kinds
            color = kind_index // (rules.n_ranks + 1)
            in_hand = [card for card in self.hands[player] if rules.card_kind_index(card) == kind_index]
            if not in_hand:
                raise self._illegal(action, f"no {rules.kind_name(kind_index)} in hand")
            if action < num_kinds:
                why = self._why_not_playable(player, kind_index)
                if why is not None:
                    raise self._illegal(action, why)
            known = [card for card in in_hand if card in self.known[player]]
            card = (known or in_hand)[0]
            self.hands[player].remove(card)
            self.known[player].discard(card)
            if action < num_kinds:
                self.expeditions[player][color].append(card)
            else:
                self.piles[color].append(card)
                self.discarded_color = color
            self.phase = PHASE_DRAW
        else:
            if action < 2 * num_kinds:
                raise self._illegal(action, "the card decision is made; now draw a card")
            if action == rules.draw_deck_action:
                card = self.deck.pop(0)
            else:
                color = action - rules.draw_deck_action - 1
                if not self.piles[color]:
                    raise self._illegal(action, "that discard pile is empty")
                if color == self.discarded_color:
                    raise self._illegal(action, "cannot draw the card discarded in this turn")
                card = self.piles[color].pop()
                self.known[player].add(card)
            self.hands[player].append(card)
            self.phase = PHASE_CARD
            self.discarded_color = None
            self.player = 1 - player
        self.num_decisions += 1
        self.history.append(action)
        if self.deck and self.num_decisions >= rules.ply_cap:
            self.cut_off = True

    # Scoring ---------------------------------------------------------------------------------
    def expedition_scores(self, player: int) -> list[int]:
        rules = self.rules
        out = []
        for cards in self.expeditions[player]:
            if not cards:
                out.append(0)
                continue
            kinds = [rules.card_kind(card) for card in cards]
            wagers = sum(1 for k in kinds if k == 0)
            total = sum(rules.kind_value(k) for k in kinds)
            score = (total + rules.expedition_cost) * (1 + wagers)
            if len(cards) >= rules.bonus_threshold:
                score += rules.bonus
            out.append(score)
        return out

    def scores(self) -> tuple[int, int]:
        return sum(self.expedition_scores(0)), sum(self.expedition_scores(1))

    def score_detail(self) -> dict:
        """The points of a game record's result: scores, each expedition's score, and whether the
        ply cap cut the game off."""
        return {
            "scores": [int(s) for s in self.scores()],
            "expedition_scores": [self.expedition_scores(0), self.expedition_scores(1)],
            "cut_off": bool(self.cut_off),
        }

    def returns(self) -> tuple[float, float]:
        """Utilities (per rules.utility) of the scores as they stand (final once terminal)."""
        s0, s1 = self.scores()
        if self.rules.utility == "win_loss":
            u0 = float((s0 > s1) - (s0 < s1))
        else:
            u0 = float(s0 - s1)
        return u0, -u0

    # Information -----------------------------------------------------------------------------
    def observe(self, player: int) -> list[int]:
        """The compact observation row of layout.py for ``player``."""
        rules = self.rules
        opponent = 1 - player
        row = [0] * obs_size(rules)
        for card in self.hands[player]:
            row[card] = LOC_HAND
        for card in self.known[opponent]:
            row[card] = LOC_OPP_KNOWN
        for color in range(rules.n_colors):
            for card in self.expeditions[player][color]:
                row[card] = LOC_MY_EXP
            for card in self.expeditions[opponent][color]:
                row[card] = LOC_OPP_EXP
            for height, card in enumerate(self.piles[color]):
                row[card] = LOC_PILE0 + height
            first = color * rules.cards_per_color
            row[first : first + rules.n_wagers] = sorted(row[first : first + rules.n_wagers])
        deck_size = rules.deck_size
        row[deck_size + 0] = len(self.deck)
        row[deck_size + 1] = self.phase
        row[deck_size + 2] = rules.n_colors if self.discarded_color is None else self.discarded_color
        row[deck_size + 3] = player
        row[deck_size + 4] = self.player
        return row

    # Display ---------------------------------------------------------------------------------
    def card_name(self, card: int) -> str:
        return self.rules.kind_name(self.rules.card_kind_index(card))

    def __str__(self) -> str:
        rules = self.rules

        def cards(cs) -> str:
            return ", ".join(self.card_name(c) + ("*" if any(c in k for k in self.known) else "") for c in cs) or "-"

        lines = [
            f"Lost Cities: deck {len(self.deck)}, decisions {self.num_decisions}, "
            + (
                "game over" + (" (cut off)" if self.cut_off else "")
                if self.is_terminal()
                else f"player {self.player} to {'play or discard' if self.phase == PHASE_CARD else 'draw'}"
            )
        ]
        for p in range(2):
            lines.append(f"player {p}: score {self.scores()[p]}; hand: {cards(sorted(self.hands[p]))}")
            for color in range(rules.n_colors):
                if self.expeditions[p][color]:
                    lines.append(f"  {COLOR_NAMES[color]:>7}: {cards(self.expeditions[p][color])}")
        piles = [f"{COLOR_NAMES[c]} {cards(pile)}" for c, pile in enumerate(self.piles) if pile]
        lines.append("piles (bottom first): " + ("; ".join(piles) if piles else "-"))
        lines.append("(* = known to the opponent)")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"LostCitiesReference(decisions={self.num_decisions}, deck={len(self.deck)}, player={self.player})"
