"""Lost Cities bots: ``discard_only`` and a family of heuristic players.

Every bot decides for a whole batch from the compact observation (``layout.decode``) and the
legal mask; none of them sees hidden information. The heuristic players score every action with
tensor arithmetic and take the best legal one (deterministic: equal inputs give equal actions).

How the heuristic thinks (per colour, in points; margins scale with ``|expedition_cost|``):
- *Projection*: an expedition is worth my cards on it, plus the playable cards of its colour in
  my hand (scaled down when I have fewer turns left than cards), plus a fraction of the unseen
  cards above my top that I may still draw, plus the expedition cost. A colour is *committed*
  when it is open, or when its projection clears the style's opening margin with enough cards
  in hand.
- *Card decision*: playing a numbered card in a committed colour costs the value of the cards it
  skips (lower cards in my hand, unseen lower cards I might still draw), so the lowest card that
  keeps the expedition ascending goes first and a big jump waits while the deck is long.
  Wagers go down early, only on strong colour holdings. Discarding costs the card's value to me
  (nothing when it is below my expedition top) plus its value to the opponent (nothing when it
  is below their top; most when their expedition of that colour is open).
- *Draw decision*: take a discard pile's top card when it is playable in a committed colour
  (or makes its colour worth opening), or extends an open expedition of the opponent (denial);
  otherwise draw from the deck. Near the end, the player ahead draws from the deck to finish
  the game, and a player behind with more cards to play than turns may take a pile card instead
  of shortening the game.
Cycles: a pile card is taken only when it is worth more than the style's threshold, and such a
card is then kept for play, not discarded back; at most the player behind stalls, so the deck
keeps shrinking. (Measured: no cut-off game in 18 x 2000 heuristic-vs-heuristic games, classic
and mini.) The ply cap still bounds any game.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import torch

from ..base import sample_from_probs
from .layout import LOC_HAND, LOC_MY_EXP, LOC_OPP_EXP, LOC_PILE0, LOC_UNKNOWN, OBS_DTYPE
from .rules import LostCitiesRules
from .style_bots import style_bot_factories

# A finite "never unless forced" score, so that argmax over a legal row is always well defined.
_NEVER = -1.0e4


class DiscardOnlyBot:
    """Never plays a card: discards a uniformly random card of its hand and always draws from the
    deck. It scores exactly 0."""

    name = "discard_only"

    def __init__(self, rules: LostCitiesRules):
        self.rules = rules

    def act(self, obs: torch.Tensor, mask: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
        return sample_from_probs(self._wanted(mask).to(torch.float32), generator)

    def policy(self, obs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """[n, A] the probabilities ``act`` samples from (what an exploiter's belief weighs by)."""
        wanted = self._wanted(mask).to(torch.float32)
        return wanted / wanted.sum(dim=1, keepdim=True)

    def _wanted(self, mask: torch.Tensor) -> torch.Tensor:
        K = self.rules.num_kinds
        preferred = torch.zeros_like(mask)
        preferred[:, K : 2 * K + 1] = True  # every discard, and the deck draw
        wanted = mask & preferred
        # Every card decision allows a discard and every draw decision the deck; the fallback
        # to the full mask only guards against a malformed row.
        return torch.where(wanted.any(dim=1, keepdim=True), wanted, mask)


@dataclass(frozen=True)
class HeuristicStyle:
    """A heuristic player's temperament. Point figures are for classic rules (expedition cost
    -20) and are scaled by ``|expedition_cost| / 20`` for other rules."""

    open_margin: float  # open an expedition when its projection is at least this
    min_open_cards: int  # ... and I hold at least this many playable numbered cards of it
    future_factor: float  # share of the unseen cards above my top that I expect to still play
    wager_margin: float  # play a wager when the colour's projection (before wagers) is at least this
    wager_step: float  # extra projection needed for each wager already on the expedition
    wager_min_cards: int  # ... and I hold at least this many playable numbered cards of it
    wager_min_deck: float  # ... and at least this share of the initial draw pile remains
    wait_tolerance: float  # play rather than discard a dead card while the skipped value is below this
    skip_weight: float  # weight of the unseen cards a play skips (they might still have come)
    danger_open: float  # weight of a discard's value to an opponent with that expedition open
    danger_closed: float  # ... with that expedition not open
    pile_threshold: float  # take a pile's top card when its value to me exceeds this
    deny_weight: float  # weight of denying the opponent a pile card
    stall_when_behind: bool  # near the end, when behind with cards to play, draw from piles
    end_turns: int  # "near the end": at most this many of my turns left


STYLES: dict[str, HeuristicStyle] = {
    # Opens only on solid holdings, wagers only on strong colours, waits longer before skipping
    # cards, guards its discards, never stalls.
    "heuristic_careful": HeuristicStyle(
        open_margin=8.0,
        min_open_cards=3,
        future_factor=0.6,
        wager_margin=12.0,
        wager_step=6.0,
        wager_min_cards=4,
        wager_min_deck=0.5,
        wait_tolerance=4.0,
        skip_weight=2.0,
        danger_open=0.9,
        danger_closed=0.5,
        pile_threshold=4.0,
        deny_weight=0.5,
        stall_when_behind=False,
        end_turns=3,
    ),
    # The strongest: coordinate-searched against the other styles (classic rules).
    "heuristic_balanced": HeuristicStyle(
        open_margin=5.0,
        min_open_cards=3,
        future_factor=0.75,
        wager_margin=3.0,
        wager_step=2.0,
        wager_min_cards=3,
        wager_min_deck=0.25,
        wait_tolerance=6.0,
        skip_weight=1.6,
        danger_open=0.7,
        danger_closed=0.5,
        pile_threshold=3.0,
        deny_weight=0.4,
        stall_when_behind=True,
        end_turns=3,
    ),
    # Opens below the break-even projection, wagers on almost any committed colour, plays
    # through gaps, grabs pile cards, stalls when behind.
    "heuristic_aggressive": HeuristicStyle(
        open_margin=-3.0,
        min_open_cards=3,
        future_factor=0.85,
        wager_margin=0.0,
        wager_step=0.0,
        wager_min_cards=2,
        wager_min_deck=0.25,
        wait_tolerance=10.0,
        skip_weight=1.0,
        danger_open=0.5,
        danger_closed=0.3,
        pile_threshold=2.0,
        deny_weight=0.3,
        stall_when_behind=True,
        end_turns=4,
    ),
}


class _Outlook(NamedTuple):
    """What a heuristic bot's observer knows and projects, per row (and colour: [m, C]) of a batch:
    computed once, read by the card and the draw scores."""

    where_is: torch.Tensor  # [m, 4, C, P] unknown, in my hand, on my / their expedition
    tops: torch.Tensor  # [m, 2, C] highest number on my / their expedition, 0 if none
    exp_cards: torch.Tensor  # [m, 2, C] cards on my / their expedition
    exp_wagers: torch.Tensor  # [m, 2, C] wagers on them
    exp_sum: torch.Tensor  # [m, 2, C] sum of their numbers
    hand_count: torch.Tensor  # numbered cards in my hand above my top
    opp_open: torch.Tensor  # the opponent's expedition is open
    deck_share: torch.Tensor  # [m] the deck left, a share of the deck after the deal
    p_get: torch.Tensor  # [m] the chance that I draw a given unseen card
    turns: torch.Tensor  # [m] my turns left
    future: torch.Tensor  # [m, 1] the weight of the unseen cards above my top
    base: torch.Tensor  # the projection of each expedition
    committed: torch.Tensor  # open, or worth opening now
    promise: torch.Tensor  # how near the opening margin the projection is, in [0, 1]
    committed_cards: torch.Tensor  # [m] cards in my hand for committed colours
    w_hand: torch.Tensor  # [m] the weight of a hand card: turns left per committed card, at most 1
    danger_row: torch.Tensor  # [m, C] row of the danger table of each opponent expedition


class HeuristicBot:
    """A rule-based Lost Cities player in one of the ``STYLES`` (see the module docstring).

    Speed matters: it runs on every opponent decision when it is a traversal's opponent. The scores
    are computed from the observation's location codes with few ops (per-colour counts and
    bitmasks of the numbered kinds from one exact matmul; values and counts of bitmasks from
    tables), every float by the same operations as the original implementation, so scores and
    actions are bit-identical to it (tests/test_bot_speed_equivalence.py keeps the original as
    the oracle). ``act`` on a batch of at least ``split_min_rows`` rows sorts the rows by the
    kind of decision their mask allows and scores only the actions each group can take.
    """

    split_min_rows = 256  # below this, sorting costs more fixed op overhead than it saves
    single_table_max_ranks = 12  # bitmask tables over all ranks up to this, else over two halves

    def __init__(self, rules: LostCitiesRules, style: HeuristicStyle, name: str):
        self.rules = rules
        self.style = style
        self.name = name
        # Style margins are in classic points; other rules scale them by the expedition cost.
        cost = abs(rules.expedition_cost) or rules.min_rank + rules.n_ranks - 1
        self._scale = cost / 20.0
        self._constants: dict[tuple, dict[str, Any]] = {}  # tensors, and low_bits an int

    # --- public API -----------------------------------------------------------------------------
    def act(self, obs: torch.Tensor, mask: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
        n = obs.shape[0]
        if n < self.split_min_rows:
            scores = self._scores_torch(obs, n, 0, n)
            return scores.masked_fill_(~mask, float("-inf")).argmax(dim=1)
        # Rows sorted into: card decisions only, both kinds (never from the engine), draw decisions
        # only, nothing legal. Each group's scores are computed and searched only in the columns
        # its masks can allow.
        K2 = 2 * self.rules.num_kinds
        card = mask[:, :K2].sum(dim=1) > 0
        draw = mask[:, K2:].sum(dim=1) > 0
        group = (~card).long() * 2 + (card == draw)
        order = torch.argsort(group)
        card_only, both, draw_only, _ = torch.bincount(group, minlength=4).tolist()
        card_end, draw_end = card_only + both, card_only + both + draw_only
        mask = mask[order]
        scores = self._scores_torch(obs[order], card_end, card_only, draw_end)
        actions = torch.zeros(n, dtype=torch.long, device=obs.device)  # rows with nothing legal: 0
        if card_only:
            rows = slice(0, card_only)
            actions[rows] = scores[rows, :K2].masked_fill_(~mask[rows, :K2], float("-inf")).argmax(dim=1)
        if both:
            rows = slice(card_only, card_end)
            actions[rows] = scores[rows].masked_fill_(~mask[rows], float("-inf")).argmax(dim=1)
        if draw_only:
            rows = slice(card_end, draw_end)
            actions[rows] = scores[rows, K2:].masked_fill_(~mask[rows, K2:], float("-inf")).argmax(dim=1) + K2
        return torch.empty_like(actions).index_put_((order,), actions)

    def action_scores(self, obs: torch.Tensor) -> torch.Tensor:
        """Score ``[n, A]`` of every action (legal or not) for the player who observes ``obs``."""
        n = obs.shape[0]
        return self._scores_torch(obs, n, 0, n)

    # --- implementation -------------------------------------------------------------------------
    def _tables(self, device: torch.device) -> dict[str, Any]:
        """Constant tables on ``device``, built once, with the same float32 ops as the original."""
        key = (device, self.single_table_max_ranks)
        if key in self._constants:
            return self._constants[key]
        r, st, s = self.rules, self.style, self._scale
        W, R, P = r.n_wagers, r.n_ranks, r.cards_per_color
        f32, dev = torch.float32, device
        kinds = torch.arange(1, R + 1, device=dev)  # numbered kinds 1..R
        value = (r.min_rank + kinds - 1).to(f32)  # [R]
        copy_kind = torch.cat([torch.zeros(W, dtype=torch.long, device=dev), kinds])  # kind of copy j
        copy_value = torch.cat([torch.zeros(W, device=dev), value])
        # Per card copy: 1, is a wager, bit 2^(kind - 1) of the numbered kinds' bitmask. (Only 0/1
        # and powers of two: the matmul is exact even where float32 matmuls run in TF32.)
        card_weights = torch.stack(
            [
                torch.ones(P, device=dev),
                (copy_kind == 0).to(f32),
                torch.where(copy_kind > 0, 2.0 ** (copy_kind - 1).to(f32), 0.0),
            ],
            dim=1,
        )
        # Value and count of the numbered kinds in a bitmask: one table over all ranks, or one
        # per half (low bits, high bits) so that the tables stay small.
        low_bits = R if R <= self.single_table_max_ranks else (R + 1) // 2

        def bitmask_table(first_kind: int, n_bits: int) -> torch.Tensor:
            masks = torch.arange(2**n_bits, device=dev)
            present = ((masks[:, None] >> torch.arange(n_bits, device=dev)) & 1).to(f32)
            weights = torch.stack([value[first_kind - 1 : first_kind - 1 + n_bits], torch.ones(n_bits, device=dev)], 1)
            with torch.autocast(device_type=dev.type, enabled=False):  # exact in float32 only
                return present @ weights  # [2^n_bits, 2] exact integers

        # Danger of each kind (wager first) to an opponent expedition that is open, by (wagers on
        # it) * (R + 1) + (its top): [(W + 1) * (R + 1), R + 1].
        wagers = torch.arange(W + 1, device=dev, dtype=f32)
        opp_tops = torch.arange(R + 1, device=dev)
        open_numbered = value * (1 + wagers)[:, None, None] * st.danger_open
        open_numbered = open_numbered * (kinds > opp_tops[:, None])  # [W + 1, R + 1, R]
        open_wager = torch.where(opp_tops > 0, 0.0, 10.0 * s * st.danger_open).to(f32).expand(W + 1, R + 1)
        danger_open = torch.cat([open_wager[:, :, None], open_numbered], dim=2).reshape((W + 1) * (R + 1), R + 1)
        top_slots = torch.cat([torch.full((1,), -1, device=dev), copy_kind])  # by top copy + 1, 0 = empty pile
        tables = {
            "codes": torch.tensor([LOC_UNKNOWN, LOC_HAND, LOC_MY_EXP, LOC_OPP_EXP], dtype=OBS_DTYPE, device=dev)[
                :, None, None
            ],
            "card_weights": card_weights,
            "low_bits": low_bits,
            "fit_low": bitmask_table(1, low_bits),
            "fit_high": bitmask_table(low_bits + 1, R - low_bits) if R > low_bits else None,
            "kinds": kinds.to(torch.int32),
            "value": value,
            "danger_open": danger_open,
            # Danger to a closed expedition per unit of deck share: wager, numbered kinds.
            "danger_closed": torch.cat(
                [torch.tensor([5.0 * s * st.danger_closed], device=dev), value * st.danger_closed]
            ),
            "top_kind": top_slots,
            "top_value": torch.cat([torch.zeros(1, device=dev), copy_value]),
            "zero": torch.zeros((), device=dev),
            "zero_long": torch.zeros((), dtype=torch.long, device=dev),
            "never": torch.tensor(_NEVER, device=dev),
        }
        self._constants[key] = tables
        return tables

    def _scores_torch(self, obs: torch.Tensor, card_end: int, draw_start: int, draw_end: int) -> torch.Tensor:
        """Scores ``[n, A]``: card actions of rows ``[0, card_end)`` and draw actions of rows
        ``[draw_start, draw_end)``; the other entries are left uninitialised."""
        r = self.rules
        n, dev = obs.shape[0], obs.device
        t = self._tables(dev)
        scores = torch.empty(n, r.num_actions, dtype=torch.float32, device=dev)
        m = max(card_end, draw_end)  # rows past m need nothing
        if m == 0:
            return scores
        loc = obs[:m, : r.deck_size].reshape(m, 1, r.n_colors, r.cards_per_color)  # location codes (layout.py)
        outlook = self._outlook(obs, loc, t)
        if card_end > 0:
            rows = slice(0, card_end)
            self._card_scores_torch(scores, t, outlook, rows)
        if draw_end > draw_start:
            rows = slice(draw_start, draw_end)
            self._draw_scores_torch(scores, t, outlook, rows, loc)
        return scores

    def _outlook(self, obs: torch.Tensor, loc: torch.Tensor, t: dict[str, Any]) -> _Outlook:
        """What the observer of rows ``[0, m)`` knows per colour, and the projections and
        commitments that both decisions' scores read (``loc``: [m, 1, C, P] the location codes)."""
        r, st = self.rules, self.style
        s = self._scale
        m, dev = loc.shape[0], loc.device
        f32 = torch.float32
        zero = t["zero"]
        # --- what the observer knows, per colour (sums of small integers: exact) ------------
        where_is = loc == t["codes"]  # [m, 4, C, P]: unknown, in my hand, on my / their expedition
        with torch.autocast(
            device_type=dev.type, enabled=False
        ):  # exact in float32 only, whatever the caller autocasts
            stats = where_is.to(f32) @ t["card_weights"]  # [m, 4, C, (cards, wagers, bitmask)]
        exp_cards, exp_wagers = stats[:, 2:, :, 0], stats[:, 2:, :, 1]  # [m, 2, C]
        tops = torch.frexp(stats[:, 2:, :, 2]).exponent  # [m, 2, C] highest number (int32), 0 if none
        my_top, opp_top = tops[:, 0], tops[:, 1]
        # Bitmasks of numbered kinds; for unseen cards (in the deck or the opponent's unknown hand)
        # and my hand, only the kinds above my top. Their values and counts come from tables.
        bitmasks = stats[..., 2].to(torch.int32)  # [m, 4, C]
        bitmasks[:, :2].bitwise_right_shift_(my_top[:, None]).bitwise_left_shift_(my_top[:, None])
        if t["fit_high"] is None:
            sums = t["fit_low"][bitmasks]  # [m, 4, C, (value, count)]
        else:
            low_bits = t["low_bits"]
            sums = t["fit_low"][bitmasks & (2**low_bits - 1)] + t["fit_high"][bitmasks >> low_bits]
        unseen_above, exp_sum = sums[:, 0, :, 0], sums[:, 2:, :, 0]
        hand_sum, hand_count = sums[:, 1, :, 0], sums[:, 1, :, 1]
        my_sum = exp_sum[:, 0]
        my_open = exp_cards[:, 0] > 0
        opp_open = exp_cards[:, 1] > 0

        deck_size = obs[:m, r.deck_size].long()
        deck = deck_size.to(f32)
        unseen_total = stats[:, 0, :, 0].sum(dim=1).clamp(min=1)  # cards of unknown location
        deck_share = deck / float(r.deck_size - 2 * r.hand_size)
        p_get = 0.5 * deck / unseen_total  # [m]
        turns = torch.div(deck_size + 1, 2, rounding_mode="floor").clamp(min=1).to(f32)

        future = st.future_factor * p_get[:, None]
        fit = (turns[:, None] / hand_count.clamp(min=1)).clamp(max=1.0)
        base = my_sum + hand_sum * fit + future * unseen_above + r.expedition_cost
        opens_now = (base >= st.open_margin * s) & (hand_count >= st.min_open_cards)
        committed = my_open | opens_now  # [m, C]
        promise = ((base - (st.open_margin - 20.0) * s) / (20.0 * s)).clamp(0.0, 1.0)
        committed_cards = torch.where(committed, hand_count, zero).sum(dim=1)
        w_hand = (turns / committed_cards.clamp(min=1)).clamp(max=1.0)  # [m]
        # Row of the danger table of each opponent expedition (were it open).
        danger_row = (exp_wagers[:, 1] * (r.n_ranks + 1)).long() + opp_top
        return _Outlook(
            where_is=where_is,
            tops=tops,
            exp_cards=exp_cards,
            exp_wagers=exp_wagers,
            exp_sum=exp_sum,
            hand_count=hand_count,
            opp_open=opp_open,
            deck_share=deck_share,
            p_get=p_get,
            turns=turns,
            future=future,
            base=base,
            committed=committed,
            promise=promise,
            committed_cards=committed_cards,
            w_hand=w_hand,
            danger_row=danger_row,
        )

    def _card_scores_torch(self, scores: torch.Tensor, t: dict[str, Any], outlook: _Outlook, rows: slice) -> None:
        """Write the play and discard scores of ``rows`` of the batch into ``scores[rows, :2K]``."""
        r, st = self.rules, self.style
        s = self._scale
        C, W, R1 = r.n_colors, r.n_wagers, r.n_ranks + 1
        value, zero = t["value"], t["zero"]
        o = outlook
        where_is, tops, committed, w_hand = o.where_is[rows], o.tops[rows], o.committed[rows], o.w_hand[rows]
        p_get, promise, base, my_wagers = o.p_get[rows], o.promise[rows], o.base[rows], o.exp_wagers[rows, 0]
        hand_count, deck_share, opp_open = o.hand_count[rows], o.deck_share[rows], o.opp_open[rows]
        danger_row = o.danger_row[rows]
        n = where_is.shape[0]
        play = scores[rows, : C * R1].view(n, C, R1)
        discard = scores[rows, C * R1 : 2 * C * R1].view(n, C, R1)
        above = t["kinds"] > tops[:, :, :, None]  # [n, 2, C, R] numbers that fit my / their expedition
        above_mine = above[:, 0]
        fits = where_is[:, :2, :, W:] & above[:, :1]  # unseen / in my hand, and above my top
        my_has_num = tops[:, 0] > 0

        # Play a number: its slack minus the value of the cards it skips. The original's
        # (hand * w_hand + unseen * skip_weight) * value * above_mine: a card is in my hand or
        # unseen, never both, so the sum is exactly one of the two terms.
        hand_cost = w_hand[:, None] * value  # [n, R]
        unseen_cost = (st.skip_weight * p_get)[:, None] * value
        each = torch.where(fits[:, 1], hand_cost[:, None], torch.where(fits[:, 0], unseen_cost[:, None], zero))
        # Cumulative sum over the original's shape (the wager column, 0, first): on a GPU the
        # scan's association may depend on the row length.
        skipped = torch.nn.functional.pad(each, (1, 0)).cumsum(dim=2)[:, :, 1:].sub_(each)
        play_base = st.wait_tolerance * s + (1.0 - w_hand)[:, None] * value  # [n, R]
        torch.sub(play_base[:, None], skipped, out=skipped)
        torch.where(committed[:, :, None] & above_mine, skipped, t["never"], out=play[:, :, 1:])
        wager_ok = (
            ~my_has_num
            & committed
            & (base >= (st.wager_margin + st.wager_step * my_wagers) * s)
            & (hand_count >= st.wager_min_cards)
            & (deck_share >= st.wager_min_deck)[:, None]
        )
        play[:, :, 0] = torch.where(wager_ok, st.wait_tolerance * s + 5.0 * s, _NEVER)

        # Discard: minus its value to me, minus its value to the opponent: (-keep) - danger,
        # exactly the original's float ops (only the sign of a zero may differ).
        keep_weight = torch.where(committed, w_hand[:, None], promise)
        minus_keep = torch.where(above_mine, value * keep_weight.neg_()[:, :, None], zero)
        danger = torch.where(
            opp_open[:, :, None], t["danger_open"][danger_row], (t["danger_closed"] * deck_share[:, None])[:, None]
        )  # [n, C, R + 1]
        torch.sub(minus_keep, danger[:, :, 1:], out=discard[:, :, 1:])
        keep_wager = base.clamp(min=0) * torch.where(committed, 1.0, promise) * 0.5
        minus_keep_wager = torch.where(my_has_num, zero, keep_wager.neg_())
        torch.sub(minus_keep_wager, danger[:, :, 0], out=discard[:, :, 0])

    def _draw_scores_torch(
        self, scores: torch.Tensor, t: dict[str, Any], outlook: _Outlook, rows: slice, loc: torch.Tensor
    ) -> None:
        """Write the draw scores (the deck, each discard pile) of ``rows`` of the batch into
        ``scores[rows, 2K:]``."""
        r, st = self.rules, self.style
        s = self._scale
        R, K = r.n_ranks, r.num_kinds
        zero = t["zero"]
        o = outlook
        top_code, top_copy = loc[rows, 0].max(dim=2)  # a pile's top card has its highest code
        top_slot = torch.where(top_code >= LOC_PILE0, top_copy + 1, t["zero_long"])
        top = t["top_kind"][top_slot]  # [d, C] kind, -1 when empty
        top_value = t["top_value"][top_slot]
        my_top, committed, base, w_hand = o.tops[rows, 0], o.committed[rows], o.base[rows], o.w_hand[rows]
        opens_with_it = (base + top_value * (1 - o.future[rows]) >= st.open_margin * s) & (
            o.hand_count[rows] >= st.min_open_cards - 1
        )
        # (top > my_top >= 0: a numbered card that fits.)
        gain = torch.where((top > my_top) & (committed | opens_with_it), top_value * w_hand[:, None], zero)
        wager_gain = torch.where((my_top == 0) & committed & (base >= st.wager_margin * s), 5.0 * s, 0.0)
        gain = torch.where(top == 0, wager_gain, gain)
        # Denial: the danger of the top's kind (the wager's for an empty pile), open expeditions only.
        top_danger = t["danger_open"].view(-1)[o.danger_row[rows] * (R + 1) + top.clamp(min=0)]
        top_danger = torch.where(o.opp_open[rows], top_danger, zero)
        pile_scores = gain + st.deny_weight * top_danger - st.pile_threshold * s

        # Expedition scores (integers, exact): mine minus theirs.
        cards = o.exp_cards[rows]
        raw = (o.exp_sum[rows] + r.expedition_cost) * (1 + o.exp_wagers[rows]) + r.bonus * (cards >= r.bonus_threshold)
        score_by_player = torch.where(cards > 0, raw, zero).sum(dim=2)
        lead = score_by_player[:, 0] - score_by_player[:, 1]
        near_end = o.turns[rows] <= st.end_turns
        scores[rows, 2 * K] = torch.where(near_end & (lead > 0), 20.0 * s, 0.0)
        if st.stall_when_behind:
            stall = near_end & (lead < 0) & (o.committed_cards[rows] > o.turns[rows])
            # Any pile card beats shortening the game while behind.
            pile_scores = torch.where(stall[:, None], pile_scores.clamp(min=0) + 1.0, pile_scores)
        scores[rows, 2 * K + 1 :] = pile_scores


# What `deepcfr eval` plays a checkpoint against when no opponent is named: the middle heuristic
# first, then the two floors (random: any learning at all; discard_only: a passive opponent).
EVALUATION_OPPONENTS = ("heuristic_careful", "random", "discard_only")


def bot_factories(rules: LostCitiesRules) -> dict:
    """Bot factories by name for a Lost Cities game with ``rules`` (used by games.bots.make_bot):
    these, then the style bots of the benchmark population (style_bots.py)."""
    factories: dict[str, Callable[..., Any]] = {"discard_only": lambda: DiscardOnlyBot(rules)}
    for name, style in STYLES.items():
        factories[name] = lambda style=style, name=name: HeuristicBot(rules, style, name)
    factories.update(style_bot_factories(rules))
    return factories
