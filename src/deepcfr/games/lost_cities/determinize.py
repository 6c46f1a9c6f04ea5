"""Determinization: full Lost Cities states consistent with one player's compact observation.

``determinize(game, obs, d, generator)`` (the game's ``determinize`` capability:
``LostCitiesGame.determinize(obs, d, generator)``) returns ``n * d`` engine states (row ``i * d + j`` is
sample ``j`` of observation ``i``) such that ``game.observe(state, observer) == obs`` bit for bit.
The cards the observer cannot see (location code 0) are dealt uniformly at random: a random
permutation of them fills the opponent's unknown hand slots first and the deck after (in random
order), and the cards known to be in the opponent's hand (code 4) stay there; with
``hand_logits`` (a learned belief) the opponent's unknown cards are drawn by weight instead and the
deck is a uniform order of the rest. Everything else
(hands, expeditions, piles in order, the turn) is copied from the observation.

The states are built directly (no replay of a history), all rows at once: the engine's arena row
(``tables.Layout``) is written from the sampled card locations with a few scatters.

What the compact observation does not hold, and what is chosen for it:
- which of the observer's own cards the opponent knows (cards the observer took from a pile):
  taken as unknown to the opponent. Only the opponent's view in the rollouts is affected.
- the number of decisions made so far (it only matters for the ply cap): the lower bound
  ``2 * cards drawn from the deck + phase`` (a game with pile draws is further along).
- the original deal (``state.deck``): the sampled current arrangement (hands, then the deck from
  its top, then the cards on the table), a permutation like a deal.
"""

from __future__ import annotations

from typing import Protocol

import torch

from ..base import index_state
from .layout import LOC_HAND, LOC_MY_EXP, LOC_OPP_EXP, LOC_OPP_KNOWN, LOC_PILE0, LOC_UNKNOWN, card_kinds
from .rules import LostCitiesRules
from .state import CAP_FLAG, DECISION_BITS, DECK_FLAG, T_DECISIONS, T_DECK, T_DISCARD, T_PLAYER, T_PLY, LostCitiesState
from .tables import Layout, Tables


class RulesGame(Protocol):
    """What these functions read of the game (LostCitiesGame; named here, not imported: the engine
    imports this module)."""

    rules: LostCitiesRules
    obs_size: int

    def tables(self, device: torch.device | str) -> Tables: ...

    def deck_size(self, state: LostCitiesState) -> torch.Tensor: ...

    def observe(self, state: LostCitiesState, player: int | torch.Tensor) -> torch.Tensor: ...


def determinize(
    game: RulesGame,
    obs: torch.Tensor,
    d: int,
    generator: torch.Generator | None = None,
    hand_logits: torch.Tensor | None = None,
) -> LostCitiesState:
    """``n * d`` states consistent with the observations ``obs [n, obs_size]`` (uint8 rows of
    layout.py, any observer), on ``obs.device``; row ``i * d + j`` is sample ``j`` of ``obs[i]``.
    ``generator`` must be on ``obs.device`` (or None for the default one).

    ``hand_logits [n, deck_size]`` (a learned belief: fitted/hand_belief.py): each unknown card's
    log-weight of being in the opponent's hand. The opponent's unknown cards are then drawn one
    after another, each with probability in proportion to exp(logit) among the cards left (the
    Gumbel top-k draw), and the undrawn deck is still a uniform order of the rest."""
    r = game.rules
    D = r.deck_size
    if obs.dim() != 2 or obs.shape[1] != game.obs_size:
        raise ValueError(f"obs must have shape [n, {game.obs_size}], got {tuple(obs.shape)}")
    if d < 1:
        raise ValueError(f"d (determinizations per observation) must be at least 1, got {d}")
    device = obs.device
    N = obs.shape[0] * d
    obs = obs.repeat_interleave(d, dim=0)
    loc = obs[:, :D].long()  # [N, D] the observer's location codes

    # Sample: a random order of the unknown cards; the first ``opp_free`` go to the opponent.
    unknown = loc == LOC_UNKNOWN
    opp_free = opponent_hand_size(game, obs) - (loc == LOC_OPP_KNOWN).sum(dim=1)
    keys = torch.rand(N, D, generator=generator, device=device)
    if hand_logits is None:
        rank = _ranks(torch.where(unknown, keys, 2.0))  # the known cards sort last
        to_opp = unknown & (rank < opp_free[:, None])
        deck_pos = torch.where(unknown & ~to_opp, rank - opp_free[:, None], -1)
        return state_from_hidden(game, obs, to_opp, deck_pos)
    if hand_logits.shape != (obs.shape[0] // d, D):
        raise ValueError(f"hand_logits must have shape [{obs.shape[0] // d}, {D}], got {tuple(hand_logits.shape)}")
    # Gumbel top-k: the opp_free largest logit + Gumbel noise are a draw without replacement
    # in proportion to exp(logit); smaller keys sort first, hence the minus.
    gumbel = -torch.log(-torch.log(keys.clamp(min=1e-12, max=1 - 1e-7)))
    logits = hand_logits.to(device=device, dtype=torch.float32).repeat_interleave(d, dim=0)
    to_opp = unknown & (_ranks(torch.where(unknown, -(logits + gumbel), torch.inf)) < opp_free[:, None])
    rest = unknown & ~to_opp
    order_keys = torch.rand(N, D, generator=generator, device=device)
    deck_pos = torch.where(rest, _ranks(torch.where(rest, order_keys, 2.0)), -1)
    return state_from_hidden(game, obs, to_opp, deck_pos)


def _ranks(keys: torch.Tensor) -> torch.Tensor:
    """[N, D] each entry's rank in its row when sorted ascending."""
    order = keys.argsort(dim=1)
    D = keys.shape[1]
    return torch.empty_like(order).scatter_(1, order, torch.arange(D, device=keys.device).expand_as(order))


def opponent_hand_size(game: RulesGame, obs: torch.Tensor) -> torch.Tensor:
    """[n] cards in the observer's opponent's hand (one fewer while it is to draw)."""
    D = game.rules.deck_size
    phase, observer, to_move = obs[:, D + 1].long(), obs[:, D + 3].long(), obs[:, D + 4].long()
    return game.rules.hand_size - ((phase == 1) & (to_move != observer)).long()


def state_from_hidden(
    game: RulesGame, obs: torch.Tensor, to_opp: torch.Tensor, deck_pos: torch.Tensor
) -> LostCitiesState:
    """The state of observations ``obs [N, obs_size]`` with the hidden cards placed: ``to_opp
    [N, D]`` bool marks the unknown cards in the opponent's hand, ``deck_pos [N, D]`` gives each
    deck card's position in the deck (0 = bottom, deck size - 1 = the next card drawn; -1 for
    cards not in the deck)."""
    r = game.rules
    D, C = r.deck_size, r.n_colors
    device = obs.device
    t = game.tables(device)
    L = t.layout
    N = obs.shape[0]
    loc = obs[:, :D].long()
    deck_count = obs[:, D].long()
    phase, discarded, observer, to_move = (obs[:, D + i].long() for i in range(1, 5))
    in_deck = deck_pos >= 0
    first = observer == 0
    obs_hand = loc == LOC_HAND
    opp_in_hand = to_opp | (loc == LOC_OPP_KNOWN)

    seen0, seen1 = _seen_planes(loc, to_opp, first)
    arena = torch.zeros(N, L.row_bytes, dtype=torch.uint8, device=device)
    arena[:, L.seen : L.seen + D] = seen0.to(torch.uint8)
    arena[:, L.seen + D + 5 : L.seen + 2 * D + 5] = seen1.to(torch.uint8)
    hands = _hands_by_kind(r, t, loc, first, obs_hand, opp_in_hand)
    blocked, exp_words = _expeditions(r, t, seen0, seen1)
    for seat in range(2):
        arena[:, L.blocked(seat) : L.blocked(seat) + r.num_kinds] = blocked[:, seat].reshape(N, -1).to(torch.uint8)
        arena[:, L.hand(seat) : L.hand(seat) + r.num_kinds] = hands[:, seat].to(torch.uint8)
    ev = arena.view(torch.int64)
    ev[:, L.expedition // 8 : L.expedition // 8 + 2 * C] = exp_words.view(N, 2 * C)
    _place_table_cards(r, L, arena, loc, deck_count, deck_pos, in_deck)

    # The turn word (state.T_*): phase, player, colour discarded, decisions, ply and deck counters.
    decisions = 2 * (L.deck_cards - deck_count) + phase
    turn = (
        phase
        | to_move << T_PLAYER
        | discarded << T_DISCARD
        | decisions << T_DECISIONS
        | ((1 << DECISION_BITS) - r.ply_cap + decisions) << T_PLY
        | (256 - deck_count) << T_DECK
    )
    deal = _deal_order(first, obs_hand, opp_in_hand, in_deck, deck_pos)
    terminal = (turn & (CAP_FLAG | DECK_FLAG)) != 0
    return LostCitiesState(arena=arena, turn=turn, terminal=terminal, deck=deal)


def _seen_planes(loc: torch.Tensor, to_opp: torch.Tensor, first: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Each seat's location codes (the arena's "seen" planes): the observer's is its observation,
    the opponent's its mirror with the cards of ``to_opp`` in its hand."""
    swap = torch.tensor([LOC_UNKNOWN, LOC_UNKNOWN, LOC_OPP_EXP, LOC_MY_EXP, LOC_HAND], device=loc.device)
    seen_opp = torch.where(loc >= LOC_PILE0, loc, swap[loc.clamp(max=LOC_OPP_KNOWN)])
    seen_opp = torch.where(to_opp, LOC_HAND, seen_opp)
    seen0 = torch.where(first[:, None], loc, seen_opp)
    seen1 = torch.where(first[:, None], seen_opp, loc)
    return seen0, seen1


def _hands_by_kind(
    r: LostCitiesRules,
    t: Tables,
    loc: torch.Tensor,
    first: torch.Tensor,
    obs_hand: torch.Tensor,
    opp_in_hand: torch.Tensor,
) -> torch.Tensor:
    """[N, 2 seats, kinds] hand entries by kind: one base-3 digit per copy (1 in hand, 2 in hand
    and known to the other)."""
    N, D = loc.shape
    kind_index = t.card_kind_index  # [D]
    copy_digit = t.copy_digit.long()  # [D] 3^copy for wagers, 1 for numbers
    opp_digit = torch.where(loc == LOC_OPP_KNOWN, 2, 1) * copy_digit
    hands = torch.zeros(N, 2, r.num_kinds, dtype=torch.long, device=loc.device)
    hands[:, 0].scatter_add_(
        1, kind_index.expand(N, D), torch.where(first[:, None], obs_hand * copy_digit, opp_in_hand * opp_digit)
    )
    hands[:, 1].scatter_add_(
        1, kind_index.expand(N, D), torch.where(first[:, None], opp_in_hand * opp_digit, obs_hand * copy_digit)
    )
    return hands


def _expeditions(
    r: LostCitiesRules, t: Tables, seen0: torch.Tensor, seen1: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Each seat's expeditions from the codes of its own plane: [N, 2, C, R1] the blocked counts
    and [N, 2, C] the expedition words."""
    N, D = seen0.shape
    C, P, R1 = r.n_colors, r.cards_per_color, r.n_ranks + 1
    device = seen0.device
    kind_index = t.card_kind_index  # [D]
    kinds = card_kinds(r, device).reshape(D)  # card ids run colour-major, as in the layout
    values = torch.where(kinds == 0, 0, r.min_rank + kinds - 1)
    color = torch.arange(D, device=device) // P
    blocked = torch.zeros(N, 2, C, R1, dtype=torch.long, device=device)
    exp_words = torch.zeros(N, 2, C, dtype=torch.long, device=device)
    for seat, plane in ((0, seen0), (1, seen1)):
        on_exp = plane == LOC_MY_EXP  # [N, D]
        word = on_exp.long() * (1 + (kinds == 0).long() * 256 + values * 65536)
        exp_words[:, seat].scatter_add_(1, color.expand(N, D), word)
        # blocked[c, j]: numbered cards of kind >= j on the expedition (a card of kind k blocks 0..k)
        per_kind = torch.zeros(N, C * R1, dtype=torch.long, device=device)
        per_kind.scatter_add_(1, kind_index.expand(N, D), (on_exp & (kinds > 0)).long())
        per_kind = per_kind.view(N, C, R1)
        blocked[:, seat] = per_kind.flip(2).cumsum(2).flip(2)
    return blocked, exp_words


def _place_table_cards(
    r: LostCitiesRules,
    L: Layout,
    arena: torch.Tensor,
    loc: torch.Tensor,
    deck_count: torch.Tensor,
    deck_pos: torch.Tensor,
    in_deck: torch.Tensor,
) -> None:
    """Write the heights, the deck stack and the piles into ``arena``."""
    N, D = loc.shape
    C, P = r.n_colors, r.cards_per_color
    device = loc.device
    color = torch.arange(D, device=device) // P
    in_pile = loc >= LOC_PILE0
    pile_heights = torch.zeros(N, C, dtype=torch.long, device=device).scatter_add_(
        1, color.expand(N, D), in_pile.long()
    )
    arena[:, L.heights] = deck_count.to(torch.uint8)
    arena[:, L.heights + 1 : L.heights + 1 + C] = pile_heights.to(torch.uint8)
    cards = torch.arange(D, device=device, dtype=torch.uint8).expand(N, D)
    spare = L.zero  # writes of the cards that go elsewhere land on the zero byte, reset below
    deck_byte = torch.where(in_deck, L.deck_stack + deck_pos, spare)
    height = (loc - LOC_PILE0).clamp(min=0)
    pile_byte = 8 * (L.piles // 8 + (color // 8) * P + height) + color % 8
    pile_byte = torch.where(in_pile, pile_byte, spare)
    arena.scatter_(1, torch.cat([deck_byte, pile_byte], dim=1), torch.cat([cards, cards], dim=1))
    arena[:, L.zero] = 0


def _deal_order(
    first: torch.Tensor,
    obs_hand: torch.Tensor,
    opp_in_hand: torch.Tensor,
    in_deck: torch.Tensor,
    deck_pos: torch.Tensor,
) -> torch.Tensor:
    """A deal-like permutation: the cards ordered by (hand of seat 0, hand of seat 1, deck top
    first, the rest)."""
    D = obs_hand.shape[1]
    in_hand0 = torch.where(first[:, None], obs_hand, opp_in_hand)
    in_hand1 = torch.where(first[:, None], opp_in_hand, obs_hand)
    group_key = torch.where(in_hand0, 0, torch.where(in_hand1, 1, torch.where(in_deck, 2, 3)))
    sort_key = group_key * 4 * D + torch.where(in_deck, D - deck_pos, torch.arange(D, device=obs_hand.device))
    return sort_key.argsort(dim=1).to(torch.uint8)


def shuffle_deck(
    game: RulesGame, state: LostCitiesState, d: int, generator: torch.Generator | None = None
) -> LostCitiesState:
    """``n * d`` copies of the full states ``state`` (row ``i * d + j`` is copy ``j`` of game
    ``i``) whose undrawn cards (the deck) lie in a fresh uniform order, everything else exactly as
    it is: both hands, what each player knows of the other's, the piles, the turn and its
    counters. The worlds of a search that knows every card but the deck's order (the oracle of
    issue 66's bound). ``generator`` must be on the state's device (or None)."""
    if d < 1:
        raise ValueError(f"d (copies per state) must be at least 1, got {d}")
    device = state.arena.device
    L = game.tables(device).layout
    n = state.turn.shape[0]
    rows = torch.arange(n, device=device).repeat_interleave(d)
    out = index_state(state, rows)
    count = game.deck_size(out)  # [N] the deck occupies stack slots 0 .. count - 1 (bottom first)
    slots = torch.arange(L.deck_cards, device=device)
    keys = torch.rand(rows.numel(), L.deck_cards, generator=generator, device=device)
    keys = torch.where(slots < count[:, None], keys, 2.0 + slots)  # the slots past the deck keep their place
    order = keys.argsort(dim=1)
    stack = out.arena[:, L.deck_stack : L.deck_stack + L.deck_cards]
    out.arena[:, L.deck_stack : L.deck_stack + L.deck_cards] = stack.gather(1, order)
    return out
