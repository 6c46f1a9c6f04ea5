"""The batched Lost Cities engine: N games advanced by one call, state as a dataclass of tensors.

Same rules and conventions as reference.py, the oracle the tests compare against (except that
``current_player`` is -1 on finished games, the convention of every batched game).

Performance shape (figures: deepcfr bench engine, docs/performance.md). On a CPU a PyTorch op
on a few thousand rows costs a few microseconds whatever it does, so a step is built from as few
ops as possible, each on small contiguous tensors:
- A game is one row of bytes (``arena``) plus a packed turn word. The row holds, per card, what
  each player sees of it (so observe is one row gather); the legal-mask rows (per player: how
  often each kind is *blocked* by a higher card on the own expedition, and the cards in hand
  by kind; for the draw: the deck and pile heights), so that the legal mask is one row gather
  and two elementwise ops; the deck and the discard piles as stacks; the expeditions as packed
  counters. The row is kept small (560 bytes in the classic game: the mask rows overlap and the
  piles share words, see ``tables.Layout``), so that a batch of 4096 games stays in cache: with the
  1160-byte rows of the first layout the scattered reads and writes of a step cost 3-5x more.
- A step reads two bytes (the height of the pile the action touches and the hand entry of the
  kind it plays), then the card that moves, and looks up everything that changes in one table
  row chosen by (action, player, those bytes). Every change is an *addition* to an 8-byte word
  of the row (the bytes of a word add independently because none over- or underflows), so all
  of a step's writes are one ``scatter_add_``, and a finished game gets the all-zero row: it is
  left unchanged without any per-row ``where``.
- The turn word packs phase, player, the colour discarded this turn, the decision count and two
  counters whose carry bits mark the ply cap and the empty deck, so that it too changes by one
  addition from a table (so ply_cap is limited to 2^20 - 1 here).
- Wager copies in a hand are one base-3 digit each (absent, in hand, in hand and known to the
  opponent), so the copy a player plays (a known one first, as the reference does) is a table
  lookup as well.
- no Python loop over games, no boolean-mask indexing, no host sync (except ``check=True``).
"""

from __future__ import annotations

import torch

from ..base import IllegalActionError, index_state
from .bots import EVALUATION_OPPONENTS, bot_factories
from .encoding import LostCitiesEncoder
from .layout import (
    LOC_HAND,
    LOC_OPP_KNOWN,
    LOC_UNKNOWN,
    OBS_DTYPE,
    decode,
    obs_size,
)
from .rules import VARIANTS, LostCitiesRules, make_rules

# the state and its turn word live in state.py (determinize.py builds states without the engine)
from .state import (  # noqa: F401
    CAP_FLAG,
    DECISION_BITS,
    DECK_FLAG,
    MAX_PLY_CAP,
    T_DECISIONS,
    T_DECK,
    T_DISCARD,
    T_PHASE,
    T_PLAYER,
    T_PLY,
    LostCitiesState,
)
from .symmetry import ColourRelabelling
from .tables import K_HAND, K_HEIGHT, K_MOVE, K_SOURCE, K_SOURCE_STEP, K_TURN, KEY_BITS, Tables

# Sorting networks (comparator pairs) for the wager copies of a colour.
_SORTING_NETWORKS = {
    2: [(0, 1)],
    3: [(0, 1), (1, 2), (0, 1)],
    4: [(0, 1), (2, 3), (0, 2), (1, 3), (1, 2)],
    5: [(0, 1), (3, 4), (2, 4), (2, 3), (1, 4), (0, 3), (0, 2), (1, 3), (1, 2)],
}


def _sorting_network(width: int) -> list[tuple[int, int]]:
    odd_even_transposition = [(k, k + 1) for s in range(width) for k in range(s % 2, width - 1, 2)]
    return _SORTING_NETWORKS.get(width, odd_even_transposition)


def _windows(flat: torch.Tensor, width: int) -> torch.Tensor:
    """Every run of ``width`` consecutive elements of the 1-d ``flat`` as a row (a view)."""
    return flat.as_strided((flat.numel() - width + 1, width), (1, 1))


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
        if r.ply_cap > MAX_PLY_CAP:
            raise ValueError(f"ply_cap={r.ply_cap} is larger than the batched engine's limit {MAX_PLY_CAP}")
        self.num_actions = r.num_actions
        self.max_legal_actions = max(2 * r.hand_size, 1 + r.n_colors)  # play/discard a held kind; or draw
        self.obs_size = obs_size(r)
        self.max_game_length = r.ply_cap
        self.encoder = LostCitiesEncoder(r)
        self.feature_size = self.encoder.feature_size
        self.symmetry = ColourRelabelling(r)
        self.chance_kind_count = r.num_kinds  # capability "chance_kinds": a drawn card's kind (wager copies alike)
        self.hand_kind_count = r.num_kinds  # capability "hidden_hand"
        self._tables: dict[torch.device, Tables] = {}

    variants = tuple(VARIANTS)  # capability "variants": the named rule sets, classic first
    evaluation_opponents = EVALUATION_OPPONENTS  # capability "evaluation_opponents"

    def bots(self) -> dict:
        """Capability "bots": the Lost Cities bots for these rules, by name."""
        return bot_factories(self.rules)

    @classmethod
    def from_params(cls, variant: str = "classic", **rule_overrides) -> LostCitiesGame:
        return cls(make_rules(variant, **rule_overrides))

    @property
    def variant(self) -> str | None:
        """The named variant whose rules these are exactly (None for other rules)."""
        rules = self.config_dict()
        return next((v for v in VARIANTS if make_rules(v).model_dump() == rules), None)

    def config_dict(self) -> dict:
        return self.rules.model_dump()

    def describe(self) -> str:
        """The rules in words: the nearest named variant and what differs from it (the ply cap aside)."""
        rules = {k: v for k, v in self.config_dict().items() if k != "ply_cap"}
        best = min(VARIANTS, key=lambda v: sum(make_rules(v).model_dump()[k] != x for k, x in rules.items()))
        base = make_rules(best).model_dump()
        changed = ", ".join(f"{k}={x}" for k, x in rules.items() if base[k] != x)
        return f"lost_cities (variant {best}{'; ' + changed if changed else ''})"

    def action_name(self, action: int) -> str:
        return self.rules.action_name(int(action))

    def __repr__(self) -> str:
        return f"LostCitiesGame({self.rules!r})"

    def tables(self, device: torch.device | str) -> Tables:
        device = torch.device(device)
        t = self._tables.get(device)
        if t is None:
            t = self._tables[device] = Tables(self.rules, device)
        return t

    # Construction ----------------------------------------------------------------------------
    def init(
        self, n: int, generator: torch.Generator | None = None, device: str | torch.device = "cpu"
    ) -> LostCitiesState:
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
        D, H = r.deck_size, r.hand_size
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
        L = t.layout
        arena = torch.zeros(n, L.row_bytes, dtype=torch.uint8, device=device)
        hands = deals[:, : 2 * H]
        in_hand = torch.tensor([LOC_HAND], dtype=torch.uint8, device=device).expand(n, H)
        arena.scatter_(1, L.seen + hands[:, :H], in_hand)
        arena.scatter_(1, L.seen + (D + 5) + hands[:, H:], in_hand)
        seat = torch.arange(2, device=device).repeat_interleave(H)  # [2H]: 0 ... 0 1 ... 1
        arena.scatter_add_(
            1, L.hand(0) + seat * (L.hand(1) - L.hand(0)) + t.card_kind_index[hands], t.copy_digit[hands]
        )
        arena[:, L.heights] = L.deck_cards
        arena[:, L.deck_stack : L.deck_stack + L.deck_cards] = deals.flip(1)[:, : L.deck_cards].to(torch.uint8)
        return LostCitiesState(
            arena=arena,
            turn=torch.full((n,), t.turn0, dtype=torch.int64, device=device),
            terminal=torch.zeros(n, dtype=torch.bool, device=device),
            deck=deals.to(torch.uint8),
        )

    # Queries ---------------------------------------------------------------------------------
    def current_player(self, state: LostCitiesState) -> torch.Tensor:
        """[n] int64 seat to move; -1 on finished games."""
        return torch.where(state.terminal, -1, state.player)

    def is_terminal(self, state: LostCitiesState) -> torch.Tensor:
        return state.terminal

    def cut_off(self, state: LostCitiesState) -> torch.Tensor:
        """[n] bool: ended by the ply cap with cards left in the deck."""
        return (state.turn & (CAP_FLAG | DECK_FLAG)) == CAP_FLAG

    def num_decisions(self, state: LostCitiesState) -> torch.Tensor:
        return state.num_decisions

    def deals(self, state: LostCitiesState) -> torch.Tensor:
        """[n, D] int64 the deals the games started from (``init_from_deal`` order)."""
        return state.deck.long()

    deals_of = deals

    def deck_size(self, state: LostCitiesState) -> torch.Tensor:
        """[n] cards left in the deck."""
        return 256 - ((state.turn >> T_DECK) & 511)

    def expedition(self, state: LostCitiesState) -> torch.Tensor:
        """[n, 2, C] int64 packed expedition counters (cards | wagers << 8 | sum of values << 16);
        a view into the state."""
        L, C = self.tables(state.arena.device).layout, self.rules.n_colors
        return state.arena.view(torch.int64)[:, L.expedition // 8 : L.expedition // 8 + 2 * C].view(-1, 2, C)

    def legal_mask(self, state: LostCitiesState) -> torch.Tensor:
        """[n, A] bool; all False on terminal rows."""
        K = self.rules.num_kinds
        t = self.tables(state.arena.device)
        rows = t.rows(state.turn.shape[0])
        low = torch.add(state.turn & ((1 << KEY_BITS) - 1), state.terminal, alpha=1 << KEY_BITS)
        mask = _windows(state.arena.view(-1), self.num_actions).index_select(
            0, rows["bytes"] + t.mask_row.index_select(0, low)
        )
        # Discard: any in hand; draw: a non-empty pile, not the one discarded onto this turn.
        torch.minimum(mask[:, K:], t.mask_cap.index_select(0, low), out=mask[:, K:])
        # Play: in hand and not blocked (blocked counts are >= 0).
        torch.lt(mask[:, :K], mask[:, K : 2 * K], out=mask[:, :K].view(torch.bool))
        return mask.view(torch.bool)

    # Moves -----------------------------------------------------------------------------------
    def step(self, state: LostCitiesState, actions: torch.Tensor, check: bool = False) -> LostCitiesState:
        """Apply one action per row, in place. Terminal rows are left unchanged (their action is
        ignored). Actions must be legal: an illegal action in a live row leaves that row
        corrupt (or raises IndexError). ``check=True`` verifies them first (one host sync) and
        raises IllegalActionError naming the first bad row and action."""
        arena, turn = state.arena, state.turn
        device = arena.device
        t = self.tables(device)
        n = turn.shape[0]
        if not isinstance(actions, torch.Tensor) or actions.device != device or actions.dtype != torch.int64:
            actions = torch.as_tensor(actions, device=device).long()
        if check:
            self._check_actions(state, actions)
        rows = t.rows(n)
        flat = arena.view(-1)
        a = torch.where(state.terminal, t.null_action, actions)
        key = t.keys.index_select(0, torch.add(turn & ((1 << KEY_BITS) - 1), a, alpha=1 << KEY_BITS))
        # Read the height of the pile the action touches and the mover's hand entry of the kind.
        read = flat.index_select(0, (rows["bytes2"] + key[:, K_HEIGHT : K_HAND + 1]).view(-1)).view(n, 2).long()
        height = read[:, 0]
        # The card drawn (the top of the deck or of a pile); 0 for a card decision.
        drawn = flat.index_select(0, torch.addcmul(rows["bytes"] + key[:, K_SOURCE], height, key[:, K_SOURCE_STEP]))
        move = key[:, K_MOVE] + read[:, 1] + drawn
        NW = t.move_width
        change = t.moves.index_select(0, move)
        # (a product then an add: faster than addcmul_ into the strided columns)
        change[:, t.height_columns].add_(change[:, 2 * NW :] * height.unsqueeze(1))
        arena.view(torch.int64).scatter_add_(1, change[:, :NW], change[:, NW : 2 * NW])
        # New tensors, not in place: callers may hold the previous turn's ``terminal``.
        state.turn = turn = turn + key[:, K_TURN]
        state.terminal = (turn & (CAP_FLAG | DECK_FLAG)) != 0
        return state

    def _check_actions(self, state: LostCitiesState, actions: torch.Tensor) -> None:
        n = state.turn.shape[0]
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
            raise IllegalActionError(
                f"row {row}: illegal action {action} ({name}) for player "
                f"{int(state.player[row])} in the {phase} decision"
            )

    # Scores ----------------------------------------------------------------------------------
    def expedition_scores(self, state: LostCitiesState) -> torch.Tensor:
        """[n, 2, C] int64 score of each player's expedition of each colour."""
        r = self.rules
        e = self.expedition(state)
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

    def match_diagnostics(self, state: LostCitiesState, seat_a: torch.Tensor) -> dict:
        """Expeditions opened, expeditions scoring below zero and wagers played, per game, for the
        side in ``seat_a [n]`` (suffix ``_a``) and the other side (``_b``), read from each side's
        own final observation (the arena's play diagnostics)."""
        rules = self.rules
        kinds = torch.arange(rules.n_ranks + 1, device=seat_a.device)
        value = torch.where(kinds >= 1, rules.min_rank + kinds - 1, 0)
        out = {}
        for label, seat in (("a", seat_a), ("b", 1 - seat_a)):
            exp = decode(rules, self.observe(state, seat)).my_expedition  # [n, C, R1]
            cards = exp.sum(dim=2)
            opened = cards > 0
            score = (exp * value).sum(dim=2) + rules.expedition_cost
            score = score * (1 + exp[:, :, 0]) + rules.bonus * (cards >= rules.bonus_threshold)
            out[f"expeditions_opened_{label}"] = opened.sum(dim=1).double().mean().item()
            out[f"negative_expeditions_{label}"] = (opened & (score < 0)).sum(dim=1).double().mean().item()
            out[f"wagers_played_{label}"] = exp[:, :, 0].sum(dim=1).double().mean().item()
        return out

    def move_diagnostics(self, obs: torch.Tensor, actions: torch.Tensor) -> dict[str, torch.Tensor]:
        """Per move of the observer of ``obs`` (the mover): ``useless_pile_draws``, a draw from a
        discard pile of a card that fits none of the mover's started expeditions (its colour not
        opened, or ranked below the expedition's top). Drawing those keeps the deck from running
        out: the stalling that farms a heuristic without playing better (so strength against a
        bot is read beside it)."""
        rules = self.rules
        K = rules.n_colors * (rules.n_ranks + 1)
        view = decode(rules, obs)
        colour = (actions.long() - (2 * K + 1)).clamp(0, rules.n_colors - 1)
        from_pile = actions.long() > 2 * K
        kinds = torch.arange(rules.n_ranks + 1, device=obs.device)
        top = torch.where(view.my_expedition > 0, kinds, -1).amax(dim=2)  # [n, C]; -1: not opened
        mine = top.gather(1, colour[:, None]).squeeze(1)
        drawn = view.pile_top.gather(1, colour[:, None]).squeeze(1)  # the kind on top of that pile
        fits = (mine >= 0) & (drawn >= mine) & ((drawn > 0) | (mine == 0))  # a wager only before numbers
        return {"useless_pile_draws": (from_pile & ~fits).float()}

    # Information -----------------------------------------------------------------------------
    def chance_outcomes(
        self,
        state: LostCitiesState,
        actions: torch.Tensor,
        samples: int | None = None,
        generator: torch.Generator | None = None,
        with_kinds: bool = False,
    ):
        """The deck draws among ``actions`` (games/base.py CAPABILITIES): for each live row that draws
        from a deck of more than one card, the states after drawing each card of the deck instead
        (the deck's order is what is unknown: any of its cards could have been on top), each of
        weight 1 / cards; with ``samples``, that many of them drawn without replacement (all
        where the deck holds no more), weight 1 / drawn. Returns (source, outcomes, weights), and
        with ``with_kinds`` the kind of the card each outcome drew (``chance_kinds``)."""
        device = state.arena.device
        L = self.tables(device).layout
        actions = torch.as_tensor(actions, device=device).long()
        deck = self.deck_size(state)
        draws = ~state.terminal & (state.phase == 1) & (actions == 2 * self.rules.num_kinds) & (deck > 1)
        rows = draws.nonzero().squeeze(1)
        deck = deck[rows]
        # The alternatives of a row: positions in its deck stack whose card moves to the top.
        if samples is None:
            counts = deck
            first = torch.cumsum(counts, 0) - counts
            source = torch.repeat_interleave(torch.arange(rows.numel(), device=device), counts)
            position = torch.arange(source.numel(), device=device) - first[source]
        else:
            if samples < 1:
                raise ValueError(f"samples must be at least 1, got {samples}")
            counts = deck.clamp(max=samples)
            keys = torch.rand(rows.numel(), L.deck_cards, generator=generator, device=device)
            keys = keys.masked_fill(torch.arange(L.deck_cards, device=device) >= deck[:, None], 2.0)
            order = keys.argsort(dim=1)[:, :samples]  # a random subset of each row's positions
            keep = torch.arange(order.shape[1], device=device) < counts[:, None]
            source = torch.arange(rows.numel(), device=device)[:, None].expand_as(order)[keep]
            position = order[keep]
        outcomes = index_state(state, rows[source])
        top = L.deck_stack + deck[source] - 1
        picked = L.deck_stack + position
        arena = outcomes.arena
        on_top, chosen = arena.gather(1, top[:, None]), arena.gather(1, picked[:, None])
        arena.scatter_(1, picked[:, None], on_top)
        arena.scatter_(1, top[:, None], chosen)
        self.step(outcomes, actions[rows[source]])
        weights = (1.0 / counts.double())[source]
        if with_kinds:
            return rows[source], outcomes, weights, self.tables(device).card_kind_index[chosen.squeeze(1).long()]
        return rows[source], outcomes, weights

    def chance_kinds(self, state: LostCitiesState, actions: torch.Tensor):
        """The deck draws among ``actions`` (games/base.py CAPABILITIES), as ``chance_outcomes``
        finds them, by card kind: each row's share of each kind in its deck, and the kind on top
        (the card the draw will bring). Returns (source, probabilities [M, num_kinds], taken)."""
        device = state.arena.device
        t = self.tables(device)
        L = t.layout
        actions = torch.as_tensor(actions, device=device).long()
        deck = self.deck_size(state)
        draws = ~state.terminal & (state.phase == 1) & (actions == 2 * self.rules.num_kinds) & (deck > 1)
        rows = draws.nonzero().squeeze(1)
        deck = deck[rows]
        cards = state.arena[rows, L.deck_stack : L.deck_stack + L.deck_cards].long()  # bottom first
        kinds = t.card_kind_index[cards]
        in_deck = torch.arange(L.deck_cards, device=device) < deck[:, None]
        counts = torch.zeros(rows.numel(), self.rules.num_kinds, dtype=torch.float64, device=device)
        counts.scatter_add_(1, kinds, in_deck.double())
        taken = kinds.gather(1, (deck - 1)[:, None]).squeeze(1)
        return rows, counts / deck[:, None].double(), taken

    def hidden_hand(self, obs: torch.Tensor, other_obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Capability "hidden_hand": by card kind ``[n, num_kinds]``, the copies ``obs``'s observer
        cannot see and how many of them the other seat (observing ``other_obs``, the same states)
        holds. By kind, because each view sorts its wager copies on its own (layout.py)."""
        D, K = self.rules.deck_size, self.rules.num_kinds
        kind = self.tables(obs.device).card_kind_index.long().expand(obs.shape[0], D)

        def by_kind(cards: torch.Tensor) -> torch.Tensor:
            return torch.zeros(obs.shape[0], K, dtype=torch.long, device=obs.device).scatter_add_(1, kind, cards.long())

        unknown = by_kind(obs[:, :D] == LOC_UNKNOWN)
        # the other's hand less what the observer knows of it (cards taken from a pile)
        held = by_kind(other_obs[:, :D] == LOC_HAND) - by_kind(obs[:, :D] == LOC_OPP_KNOWN)
        return unknown, held

    def card_kinds(self, device: torch.device | str) -> torch.Tensor:
        """[deck_size] each card's kind (capability "hidden_hand"; wager copies of a colour alike)."""
        return self.tables(device).card_kind_index.long()

    def determinize(
        self,
        obs: torch.Tensor,
        d: int,
        generator: torch.Generator | None = None,
        hand_logits: torch.Tensor | None = None,
    ) -> LostCitiesState:
        """``n * d`` states consistent with the observations ``obs [n, obs_size]`` (row ``i * d + j``
        is sample ``j`` of ``obs[i]``): see determinize.py."""
        from .determinize import determinize

        return determinize(self, obs, d, generator, hand_logits)

    def shuffle_deck(self, state: LostCitiesState, d: int, generator: torch.Generator | None = None) -> LostCitiesState:
        """``n * d`` copies of ``state`` (row ``i * d + j`` is copy ``j`` of game ``i``), each deck in a
        fresh uniform order and everything else as it is: see determinize.py."""
        from .determinize import shuffle_deck

        return shuffle_deck(self, state, d, generator)

    def history_deals(
        self, obs: torch.Tensor, history: torch.Tensor, d: int, generator: torch.Generator | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """(``[n * d, D]`` deals consistent with ``obs`` and the public action ``history``, their
        ``[n * d]`` log importance weights with respect to the deal prior): see deals.py."""
        from .deals import history_deals

        return history_deals(self, obs, history, d, generator)

    def carry_deals(
        self,
        obs: torch.Tensor,
        history: torch.Tensor,
        fresh: torch.Tensor,
        previous: torch.Tensor,
        previous_length: torch.Tensor,
        generator: torch.Generator | None = None,
    ):
        """The belief's particles carried to a later decision (games/base.py CAPABILITIES): see deals.py."""
        from .deals import carry_deals

        return carry_deals(self, obs, history, fresh, previous, previous_length, generator)

    def deal_log_weights(self, obs: torch.Tensor, history: torch.Tensor, deals: torch.Tensor) -> torch.Tensor:
        """``history_deals``' log importance weight of any consistent deals (games/base.py
        CAPABILITIES): see deals.py."""
        from .deals import deal_log_weights

        return deal_log_weights(self, obs, history, deals)

    def swap_deals(
        self, obs: torch.Tensor, history: torch.Tensor, deals: torch.Tensor, generator: torch.Generator | None = None
    ) -> torch.Tensor:
        """The belief's particle move (games/base.py CAPABILITIES): see deals.py."""
        from .deals import swap_deals

        return swap_deals(self, obs, history, deals, generator)

    def observe(self, state: LostCitiesState, player: int | torch.Tensor) -> torch.Tensor:
        """[n, obs_size] uint8 rows of layout.py for the observer ``player`` (int or [n]; a -1 in a
        tensor, ``current_player`` of a finished game, is read as seat 0)."""
        r = self.rules
        D, C, W = r.deck_size, r.n_colors, r.n_wagers
        device = state.arena.device
        t = self.tables(device)
        n = state.turn.shape[0]
        rows = t.rows(n)
        if isinstance(player, torch.Tensor):
            observer = player.to(device=device, dtype=torch.int64).expand(n).clamp(0, 1)
            at = torch.add(rows["seen"], observer, alpha=D + 5)  # a Python scalar: no host-to-device copy
        else:
            if player not in (0, 1):
                raise ValueError(f"player must be 0 or 1, got {player!r}")
            observer = torch.full((n,), int(player), dtype=torch.int64, device=device)
            at = rows["seen"] + int(player) * (D + 5)
        obs = _windows(state.arena.view(-1), D + 5).index_select(0, at)
        if W > 1:  # wager copies are interchangeable: the canonical order is ascending codes
            where = rows["wager_cells"]  # [W, n, C] flat positions of the wager copies in obs
            flat = obs.view(-1)
            copies = list(flat.index_select(0, where.view(-1)).view(W, n, C).unbind(0))
            for i, j in _sorting_network(W):
                copies[i], copies[j] = torch.minimum(copies[i], copies[j]), torch.maximum(copies[i], copies[j])
            flat.scatter_(0, where.view(-1), torch.stack(copies).view(-1))
        for i, value in enumerate((self.deck_size(state), state.phase, state.discarded_color, observer, state.player)):
            obs[:, D + i] = value
        return obs

    def obs_player(self, obs: torch.Tensor) -> torch.Tensor:
        return obs[:, self.rules.deck_size + 3].long()

    def encode(self, obs: torch.Tensor) -> torch.Tensor:
        return self.encoder(obs)
