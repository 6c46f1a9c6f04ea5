"""The batched Lost Cities engine: N games advanced by one call, state as a dataclass of tensors.

Same rules and conventions as reference.py, the oracle the tests compare against.

Performance shape (DESIGN.md; figures in scripts/bench_engine.py). On a CPU a PyTorch op on a
few thousand rows costs a few microseconds whatever it does, but ops that broadcast along the
innermost dimension, copy short strided runs, gather/scatter many short rows, or allocate
megabytes are many times slower. So:
- everything a step or a legal mask needs is kept incrementally: per player, the hand counts and
  the playable kinds (one table the legal mask reads with one row gather), expedition counters
  per colour, discard piles as stacks with heights, and per card what each player sees of it
  and where it really is (so that observe is one row gather);
- every row is updated by flat ``index_copy_`` / ``index_add_`` of one element or one short
  block per row;
- what an action means comes from lookup tables; terminal rows get a *null action* whose
  writes land in scratch slots or change nothing, so no update needs a per-row ``where``;
- no Python loop over games, no boolean-mask indexing, no host sync (except ``check=True``).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..base import IllegalActionError
from .encoding import LostCitiesEncoder
from .layout import LOC_HAND, LOC_MY_EXP, LOC_OPP_EXP, LOC_OPP_KNOWN, LOC_PILE0, OBS_DTYPE, obs_size
from .rules import LostCitiesRules, make_rules

# Where a card really is (plane 2 of ``cards_seen``). The codes are chosen so that for player p
# the copies of a wager in p's hand have the largest keys ``code ^ (0x80 * p)``, a known copy
# first: the wager copy a player plays or discards is found with one argmax.
ABS_DECK, ABS_EXP0, ABS_EXP1, ABS_PILE0 = 0x00, 0x01, 0x02, 0x03
ABS_HAND0, ABS_KNOWN0, ABS_HAND1, ABS_KNOWN1 = 0xFE, 0xFF, 0x7E, 0x7F

# Columns of the per-action integer table (one row per action, then the null action).
F_PILE, F_CARD, F_WAGER_BASE, F_DECK_STEP, F_DECISION, F_FLIP, F_DISCARDED_AFTER = range(7)
NUM_FIELDS = 7
# Columns of the per-action boolean table.
B_IS_CARD, B_IS_WAGER, B_FROM_DECK, B_KEEP_DISCARDED, B_IS_DISCARD = range(5)
NUM_FLAGS = 5
_ROW_CACHE_LIMIT = 16

# Sorting networks (comparator pairs) for the wager copies of a colour.
_SORTING_NETWORKS = {
    2: [(0, 1)],
    3: [(0, 1), (1, 2), (0, 1)],
    4: [(0, 1), (2, 3), (0, 2), (1, 3), (1, 2)],
    5: [(0, 1), (3, 4), (2, 4), (2, 3), (1, 4), (0, 3), (0, 2), (1, 3), (1, 2)],
}


def _sorting_network(width: int) -> list[tuple[int, int]]:
    if width in _SORTING_NETWORKS:
        return _SORTING_NETWORKS[width]
    return [(k, k + 1) for s in range(width) for k in range(s % 2, width - 1, 2)]  # odd-even transposition


def _as_rows(t: torch.Tensor, width: int) -> torch.Tensor:
    """A contiguous uint8 tensor as rows of ``width`` bytes, each row viewed with the widest
    integer type that divides ``width`` (row copies cost per element, not per byte)."""
    for dtype, size in ((torch.int64, 8), (torch.int32, 4), (torch.int16, 2)):
        if width % size == 0:
            return t.view(-1, width).view(dtype)
    return t.view(-1, width)


@dataclass
class LostCitiesState:
    """Batched state; every field has a leading batch dimension n. Besides the game itself it
    holds derived tables that steps keep up to date (see the module docstring).
    D cards, C colours, P cards per colour, K kinds."""

    deck: torch.Tensor  # [n, D + 1] uint8 card ids in deal order (column D is scratch); next draw: deck_pos
    deck_pos: torch.Tensor  # [n] int64 index of the next card to draw (D = deck empty)
    cards_seen: torch.Tensor  # [n, 3, D + 5] uint8 per card: player 0's observation code, player 1's,
    #                           and the card's absolute location (ABS_*); column D is scratch and
    #                           the last 5 make room for an observation's scalars
    kinds: torch.Tensor  # [n, 3, 2, K] uint8 per player: [0] 1 where the kind is playable on the
    #                      expedition (rank order alone), [1] cards of the kind in hand; player
    #                      index 2 is all zero (read when there is no card decision)
    expedition: torch.Tensor  # [n, 2, C] int64 packed: cards | wagers << 8 | sum of values << 16
    min_kind: torch.Tensor  # [n, 2, C] int64 smallest playable kind: 0 until a numbered card, then top + 1
    piles: torch.Tensor  # [n, C + 1, P + 2] uint8 card ids: pile c is row c + 1 with its card at
    #                      height j in slot j + 1; row 0 and slots outside a stack are scratch
    pile_height: torch.Tensor  # [n, C + 1] uint8; column 0 stands for the deck and is always 1
    player: torch.Tensor  # [n] int64 seat to move
    phase: torch.Tensor  # [n] int64: 0 play/discard, 1 draw
    discarded_color: torch.Tensor  # [n] int64 colour discarded onto this turn, C = none
    num_decisions: torch.Tensor  # [n] int64
    terminal: torch.Tensor  # [n] bool
    cut_off: torch.Tensor  # [n] bool: ended by the ply cap with cards left in the deck


class _Tables:
    """Constant lookup tables for one rules object on one device."""

    def __init__(self, rules: LostCitiesRules, device: torch.device):
        C, P, W, R1 = rules.n_colors, rules.cards_per_color, rules.n_wagers, rules.n_ranks + 1
        D, K, A = rules.deck_size, rules.num_kinds, rules.num_actions
        deck_action = rules.draw_deck_action
        self.device = device
        fields, flags = [], []
        hand_delta, height_delta, exp_add, exp_floor, seen_height = [], [], [], [], []
        seen = [[], [], []]  # [plane][2 * a + p]: the moved card's new code in each plane
        for a in range(A + 1):
            f = [0] * NUM_FIELDS
            b = [False] * NUM_FLAGS
            f[F_DISCARDED_AFTER] = C
            codes = [(0, 0), (0, 0), (0, 0)]  # per plane: (code if player 0 moves, if player 1 moves)
            add = floor = dh = dhe = on_pile = 0
            if a < 2 * K:
                k = a % K
                color, kind = divmod(k, R1)
                play = a < K
                f[F_PILE] = color + 1
                f[F_CARD] = color * P if kind == 0 else color * P + W + kind - 1
                f[F_WAGER_BASE] = color * P
                f[F_DECISION] = 1
                b[B_IS_CARD] = True
                b[B_IS_WAGER] = kind == 0
                dh = 255  # -1 as uint8
                if play:
                    codes = [(LOC_MY_EXP, LOC_OPP_EXP), (LOC_OPP_EXP, LOC_MY_EXP), (ABS_EXP0, ABS_EXP1)]
                    add = 1 | int(kind == 0) << 8 | rules.kind_value(kind) << 16
                    floor = 0 if kind == 0 else kind + 1
                else:  # codes at height 0; the pile's height is added
                    codes = [(LOC_PILE0, LOC_PILE0), (LOC_PILE0, LOC_PILE0), (ABS_PILE0, ABS_PILE0)]
                    on_pile = 1
                    b[B_IS_DISCARD] = True
                    f[F_DISCARDED_AFTER] = color
                    dhe = 1
            elif a < A:
                from_deck = a == deck_action
                f[F_PILE] = 0 if from_deck else a - deck_action
                f[F_DECK_STEP] = int(from_deck)
                f[F_DECISION] = 1
                f[F_FLIP] = 1
                b[B_FROM_DECK] = from_deck
                dh = 1
                dhe = 0 if from_deck else 255
                if from_deck:
                    codes = [(LOC_HAND, 0), (0, LOC_HAND), (ABS_HAND0, ABS_HAND1)]
                else:
                    codes = [(LOC_HAND, LOC_OPP_KNOWN), (LOC_OPP_KNOWN, LOC_HAND), (ABS_KNOWN0, ABS_KNOWN1)]
            else:  # the null action of terminal rows: writes go to scratch or change nothing
                f[F_CARD] = D
                b[B_IS_CARD] = True
                b[B_KEEP_DISCARDED] = True
            fields.append(f)
            flags.append(b)
            hand_delta.append(dh)
            height_delta.append(dhe)
            exp_add.append(add)
            exp_floor.append(floor)
            seen_height.append(on_pile)
            for plane in range(3):
                seen[plane].extend(codes[plane])
        i64 = dict(dtype=torch.int64, device=device)
        u8 = dict(dtype=torch.uint8, device=device)
        self.action_table = torch.tensor(fields, **i64)
        self.flag_table = torch.tensor(flags, dtype=torch.bool, device=device)
        self.hand_delta = torch.tensor(hand_delta, **u8)
        self.height_delta = torch.tensor(height_delta, **u8)
        self.exp_add = torch.tensor(exp_add, **i64)
        self.exp_floor = torch.tensor(exp_floor, **i64)
        self.seen = torch.tensor(seen, **u8).t().contiguous()  # [2 * (A + 1), 3]
        self.seen_height = torch.tensor(seen_height, **u8)
        self.null_action = A
        # Per card id (and the scratch id D): kind index, colour.
        self.card_kind_index = torch.tensor([rules.card_kind_index(c) for c in range(D)] + [0], **i64)
        self.card_color = torch.tensor([rules.card_color(c) for c in range(D)] + [0], **i64)
        # playable[m]: the kinds of a colour playable when the smallest playable kind is m.
        playable = (torch.arange(R1) >= torch.arange(R1 + 1).unsqueeze(1)).to(torch.uint8)
        self.playable = _as_rows(playable.contiguous().to(device), R1)
        # draw_part[gate * (C + 1) + discarded colour]: the deck and pile entries of the legal mask,
        # before the non-empty test, when drawing (gate 1) or not (gate 0).
        draw = torch.zeros(2, C + 1, 1 + C, dtype=torch.uint8)
        for disc in range(C + 1):
            draw[1, disc, 0] = 1
            for c in range(C):
                draw[1, disc, 1 + c] = int(c != disc)
        self.draw_part = draw.view(2 * (C + 1), 1 + C).to(device)
        self.wager_key = torch.tensor([0, 0x80], **u8)
        self.sizes = (D, C, K)
        self.cards_per_color, self.n_wagers = P, W
        self._rows: dict[int, dict[str, torch.Tensor]] = {}

    def rows(self, n: int) -> dict[str, torch.Tensor]:
        """Row-offset vectors for a batch of n (cached: every step needs them)."""
        r = self._rows.get(n)
        if r is None:
            if len(self._rows) >= _ROW_CACHE_LIMIT:
                self._rows.clear()
            rows = torch.arange(n, device=self.device)
            D, C, K = self.sizes
            r = self._rows[n] = {
                "rows": rows, "rows2": 2 * rows, "rows3": 3 * rows,
                "piles": rows * (C + 1),  # pile_height
                "deck": rows * (D + 1),
                "seen": (rows * (3 * (D + 5))).unsqueeze(1) + torch.arange(3, device=self.device) * (D + 5),
                "wagers": rows * (3 * (D + 5)) + 2 * (D + 5),  # the absolute-location plane
                "hand": rows * (6 * K) + K,
                "playable": rows * (6 * C),
            }
            P, W = self.cards_per_color, self.n_wagers
            r["wager_cells"] = (torch.arange(W, device=self.device).view(W, 1, 1) + rows.view(1, n, 1) * (D + 5)
                                + torch.arange(C, device=self.device).view(1, 1, C) * P)
        return r


class LostCitiesGame:
    """Batched Lost Cities (base.BatchedGame). ``LostCitiesGame(rules)`` or
    ``LostCitiesGame.from_params(variant, **rule_overrides)``."""

    name = "lost_cities"
    version = 1
    num_players = 2
    obs_dtype = OBS_DTYPE

    def __init__(self, rules: LostCitiesRules | None = None):
        self.rules = rules if rules is not None else LostCitiesRules()
        r = self.rules
        self.num_actions = r.num_actions
        self.obs_size = obs_size(r)
        self.max_game_length = r.ply_cap
        self.encoder = LostCitiesEncoder(r)
        self.feature_size = self.encoder.feature_size
        self._tables: dict[torch.device, _Tables] = {}

    @classmethod
    def from_params(cls, variant: str = "classic", **rule_overrides) -> "LostCitiesGame":
        return cls(make_rules(variant, **rule_overrides))

    def config_dict(self) -> dict:
        return self.rules.model_dump()

    def action_name(self, action: int) -> str:
        return self.rules.action_name(int(action))

    def __repr__(self) -> str:
        return f"LostCitiesGame({self.rules!r})"

    def tables(self, device: torch.device | str) -> _Tables:
        device = torch.device(device)
        t = self._tables.get(device)
        if t is None:
            t = self._tables[device] = _Tables(self.rules, device)
        return t

    # Construction ----------------------------------------------------------------------------
    def init(self, n: int, generator: torch.Generator | None = None,
             device: str | torch.device = "cpu") -> LostCitiesState:
        """n freshly shuffled games, reproducible from ``generator`` (a CPU generator, or one on
        ``device``)."""
        gen_device = generator.device if generator is not None else torch.device(device)
        keys = torch.rand(n, self.rules.deck_size, generator=generator, device=gen_device)
        return self._init(keys.argsort(dim=1).to(device), validate=False)

    def init_from_deal(self, deals: torch.Tensor, device: str | torch.device | None = None) -> LostCitiesState:
        """Games from explicit deals ``[n, D]``: each row a permutation of the card ids; the first
        hand_size cards are player 0's hand, the next hand_size player 1's, the rest the deck
        in draw order (first = top)."""
        deals = torch.as_tensor(deals)
        return self._init(deals.to(device) if device is not None else deals, validate=True)

    def _init(self, deals: torch.Tensor, validate: bool) -> LostCitiesState:
        r = self.rules
        D, H, C, P, K = r.deck_size, r.hand_size, r.n_colors, r.cards_per_color, r.num_kinds
        device = deals.device
        deals = deals.to(torch.int64)
        if validate and (deals.dim() != 2 or deals.shape[1] != D):
            raise ValueError(f"deals must have shape [n, {D}], got {tuple(deals.shape)}")
        n = deals.shape[0]
        if validate:
            in_range = bool(((deals >= 0) & (deals < D)).all())
            counts = torch.zeros(n, D, dtype=torch.int64, device=device)
            if not in_range or not bool(counts.scatter_add_(1, deals, torch.ones_like(deals)).eq(1).all()):
                raise ValueError(f"every row of deals must be a permutation of the card ids 0..{D - 1}")
        t = self.tables(device)
        seen = torch.zeros(n, 3, D + 5, dtype=torch.uint8, device=device)
        for plane, (code0, code1) in enumerate([(LOC_HAND, 0), (0, LOC_HAND), (ABS_HAND0, ABS_HAND1)]):
            seen[:, plane].scatter_(1, deals[:, :H], code0)
            seen[:, plane].scatter_(1, deals[:, H:2 * H], code1)
        kinds = torch.zeros(n, 3, 2, K, dtype=torch.uint8, device=device)
        kinds[:, :2, 0] = 1  # every kind is playable on an empty expedition
        hand_kinds = t.card_kind_index[deals[:, :2 * H]].view(n, 2, H)
        kinds[:, :2, 1].scatter_add_(2, hand_kinds, torch.ones_like(hand_kinds, dtype=torch.uint8))
        pile_height = torch.zeros(n, C + 1, dtype=torch.uint8, device=device)
        pile_height[:, 0] = 1
        piles = torch.zeros(n, C + 1, P + 2, dtype=torch.uint8, device=device)
        piles[:, 0, 2] = D  # the scratch slot that draws and terminal rows write
        deck = torch.zeros(n, D + 1, dtype=torch.uint8, device=device)
        deck[:, :D] = deals
        zeros = torch.zeros(n, dtype=torch.int64, device=device)
        return LostCitiesState(
            deck=deck,
            deck_pos=torch.full((n,), 2 * H, dtype=torch.int64, device=device),
            cards_seen=seen,
            kinds=kinds,
            expedition=torch.zeros(n, 2, C, dtype=torch.int64, device=device),
            min_kind=torch.zeros(n, 2, C, dtype=torch.int64, device=device),
            piles=piles,
            pile_height=pile_height,
            player=zeros.clone(),
            phase=zeros.clone(),
            discarded_color=torch.full((n,), C, dtype=torch.int64, device=device),
            num_decisions=zeros.clone(),
            terminal=torch.zeros(n, dtype=torch.bool, device=device),
            cut_off=torch.zeros(n, dtype=torch.bool, device=device),
        )

    # Queries ---------------------------------------------------------------------------------
    def current_player(self, state: LostCitiesState) -> torch.Tensor:
        return state.player

    def is_terminal(self, state: LostCitiesState) -> torch.Tensor:
        return state.terminal

    def cut_off(self, state: LostCitiesState) -> torch.Tensor:
        return state.cut_off

    def num_decisions(self, state: LostCitiesState) -> torch.Tensor:
        return state.num_decisions

    def deals(self, state: LostCitiesState) -> torch.Tensor:
        """[n, D] int64 the deals the games started from (``init_from_deal`` order)."""
        return state.deck[:, :self.rules.deck_size].long()

    deals_of = deals

    def deck_size(self, state: LostCitiesState) -> torch.Tensor:
        """[n] cards left in the deck."""
        return self.rules.deck_size - state.deck_pos

    def legal_mask(self, state: LostCitiesState) -> torch.Tensor:
        """[n, A] bool; all False on terminal rows."""
        r = self.rules
        C, K = r.n_colors, r.num_kinds
        t = self.tables(state.player.device)
        n = state.player.shape[0]
        # Card decision: the mover's row of ``kinds``; draw decision or game over: the zero row.
        not_card = state.terminal | state.phase.bool()
        row = t.rows(n)["rows3"] + torch.where(not_card, 2, state.player)
        kinds = state.kinds.view(3 * n, 2 * K).index_select(0, row)
        mask = torch.empty(n, r.num_actions, dtype=torch.uint8, device=kinds.device)
        has = torch.clamp_max(kinds[:, K:], 1, out=mask[:, K:2 * K])
        torch.bitwise_and(kinds[:, :K], has, out=mask[:, :K])
        drawing = torch.where(state.terminal, 0, state.phase)
        draw = t.draw_part.index_select(0, drawing * (C + 1) + state.discarded_color)
        torch.bitwise_and(draw, state.pile_height.clamp_max(1), out=mask[:, 2 * K:])
        return mask.view(torch.bool)

    # Moves -----------------------------------------------------------------------------------
    def step(self, state: LostCitiesState, actions: torch.Tensor, check: bool = False) -> LostCitiesState:
        """Apply one action per row, in place. Terminal rows are left unchanged (their action is
        ignored). Actions must be legal: an illegal action in a live row leaves that row
        corrupt (or raises IndexError). ``check=True`` verifies them first (one host sync) and
        raises IllegalActionError naming the first bad row and action."""
        r = self.rules
        D, C, P, W, K, R1 = r.deck_size, r.n_colors, r.cards_per_color, r.n_wagers, r.num_kinds, r.n_ranks + 1
        device = state.player.device
        t = self.tables(device)
        n = state.player.shape[0]
        if not isinstance(actions, torch.Tensor) or actions.device != device or actions.dtype != torch.int64:
            actions = torch.as_tensor(actions, device=device).long()
        if check:
            self._check_actions(state, actions)
        offsets = t.rows(n)
        a = torch.where(state.terminal, t.null_action, actions)
        f = t.action_table.index_select(0, a)
        flag = t.flag_table.index_select(0, a)
        player = state.player
        pile_slot = offsets["piles"] + f[:, F_PILE]
        height = state.pile_height.view(-1).index_select(0, pile_slot)
        pile_top = pile_slot * (P + 2) + height

        # The card that moves: from the hand (a numbered card is unique; a wager is a copy in
        # the hand, a known one first), the deck's top card, or a pile's top card.
        seen = state.cards_seen.view(-1)
        card = f[:, F_CARD]
        if W > 1:
            windows = seen.as_strided((seen.numel() - W + 1, W), (1, 1))
            keys = windows.index_select(0, offsets["wagers"] + f[:, F_WAGER_BASE])
            keys ^= t.wager_key.index_select(0, player).unsqueeze(1)
            card = torch.where(flag[:, B_IS_WAGER], card + keys.argmax(dim=1), card)
        deck_card = state.deck.view(-1).index_select(0, offsets["deck"] + state.deck_pos)
        pile_card = state.piles.view(-1).index_select(0, pile_top)
        card = torch.where(flag[:, B_IS_CARD], card, torch.where(flag[:, B_FROM_DECK], deck_card, pile_card))

        # Hand count, what each player sees of the card and where it is, the pile, the expedition.
        kind_index = t.card_kind_index.index_select(0, card)
        color = t.card_color.index_select(0, card)
        state.kinds.view(-1).index_add_(0, offsets["hand"] + player * (2 * K) + kind_index,
                                        t.hand_delta.index_select(0, a))
        codes = t.seen.index_select(0, a * 2 + player) + (t.seen_height.index_select(0, a) * height).unsqueeze(1)
        seen.index_copy_(0, (offsets["seen"] + card.unsqueeze(1)).view(-1), codes.view(-1))
        # Every row writes one above its pile's top: its card for a discard (a push), the scratch
        # id D for every other row (unread; the same value every time, so terminal rows stay
        # bit-identical).
        state.piles.view(-1).index_copy_(0, pile_top + 1, torch.where(flag[:, B_IS_DISCARD], card, D).to(torch.uint8))
        state.pile_height.view(-1).index_add_(0, pile_slot, t.height_delta.index_select(0, a))
        color_slot = (offsets["rows2"] + player) * C + color  # (row, mover, colour of the card)
        state.expedition.view(-1).index_add_(0, color_slot, t.exp_add.index_select(0, a))
        min_kind = state.min_kind.view(-1)
        new_min = torch.maximum(min_kind.index_select(0, color_slot), t.exp_floor.index_select(0, a))
        min_kind.index_copy_(0, color_slot, new_min)
        # The mover's playable kinds of that colour (they change when a numbered card is played).
        _as_rows(state.kinds, R1).index_copy_(0, offsets["playable"] + player * (2 * C) + color,
                                              t.playable.index_select(0, new_min))

        # Turn bookkeeping.
        state.deck_pos = state.deck_pos + f[:, F_DECK_STEP]
        state.phase = state.phase ^ f[:, F_DECISION]
        state.player = player ^ f[:, F_FLIP]
        state.discarded_color = torch.where(flag[:, B_KEEP_DISCARDED], state.discarded_color, f[:, F_DISCARDED_AFTER])
        state.num_decisions = state.num_decisions + f[:, F_DECISION]
        capped = state.num_decisions >= r.ply_cap
        deck_left = state.deck_pos < D
        state.terminal = capped | ~deck_left
        state.cut_off = capped & deck_left
        return state

    def _check_actions(self, state: LostCitiesState, actions: torch.Tensor) -> None:
        n = state.player.shape[0]
        if actions.shape != (n,):
            raise IllegalActionError(f"actions must have shape [{n}], got {tuple(actions.shape)}")
        if actions.dtype.is_floating_point or actions.dtype == torch.bool:
            raise IllegalActionError(f"actions must be integers, got dtype {actions.dtype}")
        live = ~state.terminal
        a = actions.long()
        in_range = (a >= 0) & (a < self.num_actions)
        mask = self.legal_mask(state)
        legal = mask.gather(1, torch.where(in_range, a, 0).unsqueeze(1)).squeeze(1) & in_range
        bad = live & ~legal
        if bool(bad.any()):
            row = int(bad.nonzero()[0, 0])
            action = int(a[row])
            name = self.rules.action_name(action) if 0 <= action < self.num_actions else "out of range"
            phase = "play/discard" if int(state.phase[row]) == 0 else "draw"
            raise IllegalActionError(f"row {row}: illegal action {action} ({name}) for player "
                                     f"{int(state.player[row])} in the {phase} decision")

    # Scores ----------------------------------------------------------------------------------
    def expedition_scores(self, state: LostCitiesState) -> torch.Tensor:
        """[n, 2, C] int64 score of each player's expedition of each colour."""
        r = self.rules
        e = state.expedition
        cards, wagers, total = e & 0xFF, (e >> 8) & 0xFF, e >> 16
        score = (total + r.expedition_cost) * (1 + wagers) + r.bonus * (cards >= r.bonus_threshold)
        return torch.where(cards > 0, score, 0)

    def scores(self, state: LostCitiesState) -> torch.Tensor:
        """[n, 2] int64 scores as they stand (final once terminal)."""
        return self.expedition_scores(state).sum(dim=2)

    def returns(self, state: LostCitiesState) -> torch.Tensor:
        """[n, 2] float32 utilities per rules.utility (of the current scores on non-terminal rows)."""
        s = self.scores(state)
        diff = (s[:, 0] - s[:, 1]).to(torch.float32)
        if self.rules.utility == "win_loss":
            diff = diff.sign()
        return torch.stack([diff, -diff], dim=1)

    # Information -----------------------------------------------------------------------------
    def observe(self, state: LostCitiesState, player: int | torch.Tensor) -> torch.Tensor:
        """[n, obs_size] uint8 rows of layout.py for the observer ``player`` (int or [n])."""
        r = self.rules
        D, C, P, W = r.deck_size, r.n_colors, r.cards_per_color, r.n_wagers
        device = state.player.device
        t = self.tables(device)
        n = state.player.shape[0]
        if isinstance(player, torch.Tensor):
            observer = player.to(device=device, dtype=torch.int64).expand(n)
        else:
            if player not in (0, 1):
                raise ValueError(f"player must be 0 or 1, got {player!r}")
            observer = torch.full((n,), int(player), dtype=torch.int64, device=device)
        obs = state.cards_seen.view(3 * n, D + 5).index_select(0, t.rows(n)["rows3"] + observer)
        if W > 1:  # wager copies are interchangeable: the canonical order is ascending codes
            where = t.rows(n)["wager_cells"]  # [W, n, C] flat positions of the wager copies in obs
            flat = obs.view(-1)
            copies = list(flat.index_select(0, where.view(-1)).view(W, n, C).unbind(0))
            for i, j in _sorting_network(W):
                copies[i], copies[j] = torch.minimum(copies[i], copies[j]), torch.maximum(copies[i], copies[j])
            flat.scatter_(0, where.view(-1), torch.stack(copies).view(-1))
        for i, value in enumerate((D - state.deck_pos, state.phase, state.discarded_color, observer, state.player)):
            obs[:, D + i] = value
        return obs

    def obs_player(self, obs: torch.Tensor) -> torch.Tensor:
        return obs[:, self.rules.deck_size + 3].long()

    def encode(self, obs: torch.Tensor) -> torch.Tensor:
        return self.encoder(obs)
