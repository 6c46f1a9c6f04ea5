"""The batched engine's constant lookup tables (engine.py's docstring tells how a step uses them).

``Layout``: the byte offsets of the parts of a game's arena row. ``Tables``: for one rules object
on one device, the moves (what each move adds to which words of the row), the keys (per action
and low turn bits: where a step reads, which block of moves, how the turn word changes), the
legal mask's rows and caps, and the small per-card tables. Each table is built by a function of
its own: ``move_table``, ``key_table``, ``mask_table``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

from .layout import LOC_HAND, LOC_MY_EXP, LOC_OPP_EXP, LOC_OPP_KNOWN, LOC_PILE0
from .rules import LostCitiesRules
from .state import DECISION_BITS, T_DECISIONS, T_DECK, T_DISCARD, T_PLAYER, T_PLY

ROW_CACHE_LIMIT = 16

KEY_BITS = 6  # phase, player and discarded colour: the low bits of the turn word
# Columns of the per-(action, turn) table.
K_HEIGHT, K_HAND, K_SOURCE, K_SOURCE_STEP, K_MOVE, K_TURN = range(6)
# Columns of a move (then the words of a colour's blocked kinds, then a pile slot): what each
# player sees of the card (2), the mover's hand entry, a pile height, an expedition.
SEEN0, SEEN1, HAND, HEIGHT, EXP, BLOCKED = range(6)


def signed64(value: int) -> int:
    """``value`` modulo 2^64 as a signed 64-bit integer."""
    value &= (1 << 64) - 1
    return value - (1 << 64) if value >= 1 << 63 else value


class Layout:
    """Byte offsets of the parts of an arena row (one game), packed small (engine.py's docstring)."""

    def __init__(self, rules: LostCitiesRules):
        r = rules
        D, C, P = r.deck_size, r.n_colors, r.cards_per_color
        K, A = r.num_kinds, r.num_actions
        self.deck_cards = D - 2 * r.hand_size
        at = 0
        self.seen = at  # 2 planes of D + 5 bytes: each player's location code of every card
        at += 2 * (D + 5)
        # The legal-mask rows overlap: [blocked 0 | hand 0 | blocked 1 | hand 1 | heights]. Player
        # 0's window (A bytes) reads player 1's first blocked counts as its draw part, player 1's
        # and the draw's window (the same one) read the heights; the per-turn cap of the legal
        # mask zeroes the parts that do not apply (the draw part in a card decision, the hand
        # part in the draw, all of it on finished games).
        self.mask = at
        at += 4 * K + C + 1
        self.draw_row = self.mask + 2 * K
        self.heights = self.mask + 4 * K  # [deck, pile 0, ..., pile C - 1] heights
        self.zero = at  # a byte that stays 0 (read where nothing is to be read)
        at += 1
        self.deck_stack = at  # the deck's cards, bottom first (the next card on top)
        at += self.deck_cards
        at = (at + 7) // 8 * 8
        # The piles, interleaved: slot h of pile c is byte c % 8 of word (c // 8) * P + h, so that
        # the word a pile move touches is linear in the pile height and 8 piles share P words.
        self.piles = at
        self.pile_groups = (C + 7) // 8
        at += 8 * self.pile_groups * P
        self.expedition = at  # [2 players, C] words: cards | wagers << 8 | sum of values << 16
        at += 8 * 2 * C
        self.row_bytes = at
        self.row_words = at // 8
        self.kinds, self.num_actions, self.cards_per_color = K, A, P

    def blocked(self, player: int) -> int:
        """Byte offset of the player's blocked counts by kind (mask row, play part)."""
        return self.mask + player * 2 * self.kinds

    def hand(self, player: int) -> int:
        """Byte offset of the player's hand entries by kind (mask row, discard part): one base-3
        digit per copy of the kind (0 absent, 1 in hand, 2 in hand and known to the opponent)."""
        return self.mask + player * 2 * self.kinds + self.kinds

    def pile_slot(self, color: int, height: int) -> tuple[int, int]:
        """(word index, byte lane) of slot ``height`` of the colour's discard pile."""
        return self.piles // 8 + (color // 8) * self.cards_per_color + height, color % 8


@dataclass
class MoveTable:
    """The moves being built: a move adds to ``width`` words of the row; its row of ``base`` holds
    the word indices, then the values; ``step`` the values' change per pile height h read first.
    Only three entries depend on h: the slot's word and the two codes (the card's height in its
    pile), contiguous from column ``slot``. Row 0 is the null move (changes nothing)."""

    rules: LostCitiesRules
    layout: Layout
    width: int
    slot: int
    base: list[list[int]] = field(default_factory=list)
    step: list[list[int]] = field(default_factory=list)
    card_move: dict[tuple[int, int], int] = field(default_factory=dict)  # (action, player): first row
    draw_move: dict[tuple[int, int], int] = field(default_factory=dict)  # (pile, player): first row

    def new_move(self) -> tuple[list[int], list[int]]:
        base, step = [0] * (2 * self.width), [0] * (2 * self.width)
        self.base.append(base)
        self.step.append(step)
        return base, step

    def add_byte(self, base, step, column, byte, delta, delta_per_height=0) -> None:
        """Column ``column`` adds ``delta`` (+ height * delta_per_height) to arena byte ``byte``."""
        NW = self.width
        word, lane = divmod(byte, 8)
        base[column] = word
        base[NW + column] = signed64(base[NW + column] + (delta << (8 * lane)))
        step[NW + column] = signed64(step[NW + column] + (delta_per_height << (8 * lane)))

    def seen(self, base, step, mover, card, codes, codes_per_height=(0, 0)) -> None:
        """Change the card's codes by ``codes`` [mover's, opponent's] (+ per height)."""
        D = self.rules.deck_size
        for q in (0, 1):
            who = 0 if q == mover else 1
            byte = self.layout.seen + q * (D + 5) + card
            self.add_byte(base, step, SEEN0 + q, byte, codes[who], codes_per_height[who])

    def rows(self) -> list[list[int]]:
        """One table row per move: the word indices, the values, then the 3 per-height steps (one
        row read per step instead of two)."""
        S = self.slot
        assert all(not any(row[:S]) and not any(row[S + 3 :]) for row in self.step)
        return [base + step[S : S + 3] for base, step in zip(self.base, self.step)]


def _add_card_moves(moves: MoveTable, p: int, a: int) -> None:
    """The block of moves of card action ``a`` (play or discard) by player ``p``: one per hand
    entry of the kind (the base-3 digits of its copies)."""
    r, L, NW = moves.rules, moves.layout, moves.width
    C, P, W, R1, K = r.n_colors, r.cards_per_color, r.n_wagers, r.n_ranks + 1, r.num_kinds
    k = a % K
    color, kind = divmod(k, R1)
    play = a < K
    copies = W if kind == 0 else 1
    moves.card_move[a, p] = len(moves.base)
    for digits in range(3**copies):
        state = [(digits // 3**j) % 3 for j in range(copies)]
        known = [j for j, s in enumerate(state) if s == 2]
        held = [j for j, s in enumerate(state) if s == 1]
        base, step = moves.new_move()
        if not known and not held:
            continue  # not in hand: illegal, the null move
        copy = (known or held)[0]
        card = color * P + (copy if kind == 0 else W + kind - 1)
        was_known = bool(known)
        old = (LOC_HAND, LOC_OPP_KNOWN if was_known else 0)
        moves.add_byte(base, step, HAND, L.hand(p) + k, -(state[copy] * 3**copy))
        if play:
            moves.seen(base, step, p, card, (LOC_MY_EXP - old[0], LOC_OPP_EXP - old[1]))
            value = r.kind_value(kind)
            base[EXP] = L.expedition // 8 + p * C + color
            base[NW + EXP] = 1 | int(kind == 0) << 8 | value << 16
            if kind > 0:  # kinds up to this one can no longer be played
                for j in range(kind + 1):
                    byte = L.blocked(p) + color * R1 + j
                    column = BLOCKED + byte // 8 - (L.blocked(p) + color * R1) // 8
                    word, lane = divmod(byte, 8)
                    base[column] = word
                    base[NW + column] = signed64(base[NW + column] + (1 << (8 * lane)))
        else:  # onto the pile at height h
            moves.seen(base, step, p, card, (LOC_PILE0 - old[0], LOC_PILE0 - old[1]), (1, 1))
            base[moves.slot], lane = L.pile_slot(color, 0)
            step[moves.slot] = 1
            base[NW + moves.slot] = signed64(card << (8 * lane))
            moves.add_byte(base, step, HEIGHT, L.heights + 1 + color, 1)


def _add_draw_moves(moves: MoveTable, p: int, pile: int) -> None:
    """The block of moves of player ``p`` drawing from ``pile`` (0: the deck, 1 + c: pile c): one
    per card."""
    r, L, NW = moves.rules, moves.layout, moves.width
    P, R1 = r.cards_per_color, r.n_ranks + 1
    moves.draw_move[pile, p] = len(moves.base)
    for card in range(r.deck_size):
        base, step = moves.new_move()
        color, kind = r.card_color(card), r.card_kind(card)
        copy = card - color * P if kind == 0 else 0
        k = color * R1 + kind
        moves.add_byte(base, step, HEIGHT, L.heights + pile, -1)
        if pile == 0:
            moves.seen(base, step, p, card, (LOC_HAND, 0))
            moves.add_byte(base, step, HAND, L.hand(p) + k, 3**copy)
        else:  # from height h - 1
            c = pile - 1
            top = LOC_PILE0 - 1
            moves.seen(base, step, p, card, (LOC_HAND - top, LOC_OPP_KNOWN - top), (-1, -1))
            moves.add_byte(base, step, HAND, L.hand(p) + k, 2 * 3**copy)
            base[moves.slot], lane = L.pile_slot(c, -1)
            step[moves.slot] = 1
            base[NW + moves.slot] = signed64(-(card << (8 * lane)))


def move_table(rules: LostCitiesRules, layout: Layout) -> MoveTable:
    """Every move of the game (``MoveTable``): per player, the blocks of the card actions, then
    those of the draws."""
    C, R1, K = rules.n_colors, rules.n_ranks + 1, rules.num_kinds
    L = layout
    blocked_words = max(
        ((L.blocked(p) + c * R1 + R1 - 1) // 8 - (L.blocked(p) + c * R1) // 8 + 1) for p in range(2) for c in range(C)
    )
    slot = BLOCKED + blocked_words
    moves = MoveTable(rules, layout, width=slot + 1, slot=slot)
    moves.new_move()  # row 0: the null move
    for p in range(2):
        for a in range(2 * K):
            _add_card_moves(moves, p, a)
    for p in range(2):
        for pile in range(C + 1):
            _add_draw_moves(moves, p, pile)
    return moves


def key_table(rules: LostCitiesRules, layout: Layout, moves: MoveTable) -> list[list[int]]:
    """Per (action, low turn bits): where to read, which moves, how the turn word changes
    (columns ``K_*``); the null key (read the zero byte, the null move) where the action is not
    one of that turn."""
    C, R1, K, A = rules.n_colors, rules.n_ranks + 1, rules.num_kinds, rules.num_actions
    L = layout
    zero = L.zero
    null_key = [zero, zero, zero, 0, 0, 0]
    keys = [list(null_key) for _ in range((A + 1) << KEY_BITS)]
    step_turn = 1 << T_DECISIONS | 1 << T_PLY
    for a in range(A):
        for p in range(2):
            if a < 2 * K:
                k = a % K
                color = k // R1
                low = p << T_PLAYER | C << T_DISCARD  # card decision, nothing discarded yet
                turn = 1 + step_turn + (0 if a < K else (color - C) << T_DISCARD)
                keys[a << KEY_BITS | low] = [L.heights + 1 + color, L.hand(p) + k, zero, 0, moves.card_move[a, p], turn]
                continue
            pile = a - 2 * K
            if pile == 0:
                source, source_step = L.deck_stack - 1, 1
            else:
                word, lane = L.pile_slot(pile - 1, -1)
                source, source_step = 8 * word + lane, 8
            for discarded in range(C + 1):
                low = 1 | p << T_PLAYER | discarded << T_DISCARD
                turn = (
                    -1
                    + ((1 - p) - p) * (1 << T_PLAYER)
                    + (C - discarded) * (1 << T_DISCARD)
                    + step_turn
                    + (1 << T_DECK if pile == 0 else 0)
                )
                move = moves.draw_move[pile, p]
                keys[a << KEY_BITS | low] = [L.heights + pile, zero, source, source_step, move, turn]
    return keys


def mask_table(rules: LostCitiesRules, layout: Layout) -> tuple[list[int], torch.Tensor]:
    """The legal mask, by the low turn bits (phase, player, colour discarded this turn) and
    terminal (bit KEY_BITS): which row to read, and a cap for its hand and draw entries: 1 (any in
    hand, a non-empty pile), 0 for the pile discarded onto this turn and for the parts of the
    (overlapping) row that do not apply; all 0 on finished games."""
    C, K, A = rules.n_colors, rules.num_kinds, rules.num_actions
    L = layout
    mask_row = [L.mask] * (2 << KEY_BITS)
    mask_cap = torch.zeros(2 << KEY_BITS, A - K, dtype=torch.uint8)
    for low in range(1 << KEY_BITS):
        phase, player, discarded = low & 1, (low >> 1) & 1, low >> 2
        mask_row[low] = L.draw_row if phase else L.blocked(player)
        if phase:
            mask_cap[low, K:] = 1
            if discarded < C:
                mask_cap[low, K + 1 + discarded] = 0
        else:
            mask_cap[low, :K] = 1
    return mask_row, mask_cap


class Tables:
    """Constant lookup tables for one rules object on one device."""

    def __init__(self, rules: LostCitiesRules, device: torch.device):
        r = rules
        D, C, P, W = r.deck_size, r.n_colors, r.cards_per_color, r.n_wagers
        L = self.layout = Layout(r)
        self.device = device
        self.sizes = (D, C, r.num_kinds, r.num_actions)
        self.cards_per_color, self.n_wagers = P, W
        i64: dict[str, Any] = dict(dtype=torch.int64, device=device)
        moves = move_table(r, L)
        self.move_width = moves.width
        self.height_columns = slice(moves.slot, moves.slot + 3)  # the slot's word, then the codes' values
        self.keys = torch.tensor(key_table(r, L, moves), **i64)
        self.moves = torch.tensor(moves.rows(), **i64)
        self.null_action = r.num_actions
        mask_row, mask_cap = mask_table(r, L)
        self.mask_row = torch.tensor(mask_row, **i64)
        self.mask_cap = mask_cap.to(device)
        self.card_kind_index = torch.tensor([r.card_kind_index(c) for c in range(D)], **i64)
        copy_digit = [3 ** (c - r.card_color(c) * P) if r.card_kind(c) == 0 else 1 for c in range(D)]
        self.copy_digit = torch.tensor(copy_digit, dtype=torch.uint8, device=device)
        self.turn0 = C << T_DISCARD | ((1 << DECISION_BITS) - r.ply_cap) << T_PLY | (256 - L.deck_cards) << T_DECK
        self._rows: dict[int, dict[str, torch.Tensor]] = {}

    def rows(self, n: int) -> dict[str, torch.Tensor]:
        """Row-offset vectors for a batch of n (cached: every step needs them)."""
        r = self._rows.get(n)
        if r is None:
            if len(self._rows) >= ROW_CACHE_LIMIT:
                self._rows.clear()
            L = self.layout
            D, C, K, A = self.sizes
            P, W = self.cards_per_color, self.n_wagers
            rows = torch.arange(n, device=self.device)
            base = rows * L.row_bytes
            r = self._rows[n] = {
                "bytes": base,
                "bytes2": base.unsqueeze(1),
                "seen": base + L.seen,
                "wager_cells": (
                    torch.arange(W, device=self.device).view(W, 1, 1)
                    + rows.view(1, n, 1) * (D + 5)
                    + torch.arange(C, device=self.device).view(1, 1, C) * P
                ),
            }
        return r
