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

from dataclasses import dataclass

import torch

from ..base import sample_from_probs
from .layout import decode
from .rules import LostCitiesRules

# A finite "never unless forced" score, so that argmax over a legal row is always well defined.
_NEVER = -1.0e4


class DiscardOnlyBot:
    """Never plays a card: discards a uniformly random card of its hand and always draws from the
    deck. It scores exactly 0."""

    name = "discard_only"

    def __init__(self, rules: LostCitiesRules):
        self.rules = rules

    def act(self, obs: torch.Tensor, mask: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
        K = self.rules.num_kinds
        preferred = torch.zeros_like(mask)
        preferred[:, K : 2 * K + 1] = True  # every discard, and the deck draw
        wanted = mask & preferred
        # Every card decision allows a discard and every draw decision the deck; the fallback
        # to the full mask only guards against a malformed row.
        wanted = torch.where(wanted.any(dim=1, keepdim=True), wanted, mask)
        return sample_from_probs(wanted.to(torch.float32), generator)


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
        open_margin=8.0, min_open_cards=3, future_factor=0.6, wager_margin=12.0, wager_step=6.0,
        wager_min_cards=4, wager_min_deck=0.5, wait_tolerance=4.0, skip_weight=2.0, danger_open=0.9,
        danger_closed=0.5, pile_threshold=4.0, deny_weight=0.5, stall_when_behind=False, end_turns=3,
    ),
    # The strongest: coordinate-searched against the other styles (classic rules).
    "heuristic_balanced": HeuristicStyle(
        open_margin=5.0, min_open_cards=3, future_factor=0.75, wager_margin=3.0, wager_step=2.0,
        wager_min_cards=3, wager_min_deck=0.25, wait_tolerance=6.0, skip_weight=1.6, danger_open=0.7,
        danger_closed=0.5, pile_threshold=3.0, deny_weight=0.4, stall_when_behind=True, end_turns=3,
    ),
    # Opens below the break-even projection, wagers on almost any committed colour, plays
    # through gaps, grabs pile cards, stalls when behind.
    "heuristic_aggressive": HeuristicStyle(
        open_margin=-3.0, min_open_cards=3, future_factor=0.85, wager_margin=0.0, wager_step=0.0,
        wager_min_cards=2, wager_min_deck=0.25, wait_tolerance=10.0, skip_weight=1.0, danger_open=0.5,
        danger_closed=0.3, pile_threshold=2.0, deny_weight=0.3, stall_when_behind=True, end_turns=4,
    ),
}


class HeuristicBot:
    """A rule-based Lost Cities player in one of the ``STYLES`` (see the module docstring)."""

    def __init__(self, rules: LostCitiesRules, style: HeuristicStyle, name: str):
        self.rules = rules
        self.style = style
        self.name = name
        # Style margins are in classic points; other rules scale them by the expedition cost.
        cost = abs(rules.expedition_cost) or rules.min_rank + rules.n_ranks - 1
        self._scale = cost / 20.0

    def act(self, obs: torch.Tensor, mask: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
        scores = self.action_scores(obs)
        return scores.masked_fill(~mask, float("-inf")).argmax(dim=1)

    def action_scores(self, obs: torch.Tensor) -> torch.Tensor:
        """Score ``[n, A]`` of every action (legal or not) for the player who observes ``obs``."""
        r, st = self.rules, self.style
        s = self._scale
        n, dev = obs.shape[0], obs.device
        C, R1 = r.n_colors, r.n_ranks + 1
        v = decode(r, obs)
        f32 = torch.float32

        kinds = torch.arange(R1, device=dev)
        numbered = kinds >= 1  # [R1]
        value = torch.where(numbered, r.min_rank + kinds - 1, 0).to(f32)  # [R1]
        copies = torch.where(numbered, 1, r.n_wagers).to(f32)  # [R1]

        hand = v.hand.to(f32)
        my_exp, opp_exp = v.my_expedition, v.opp_expedition
        pile_counts = torch.nn.functional.one_hot(v.piles, R1 + 1)[..., 1:].sum(dim=2)
        known = v.hand + my_exp + opp_exp + v.opp_known + pile_counts
        unseen = (copies - known.to(f32)).clamp(min=0)  # cards in the deck or the opponent's unknown hand
        unseen_total = unseen.sum(dim=(1, 2)).clamp(min=1)
        deck = v.deck_size.to(f32)
        initial_deck = float(r.deck_size - 2 * r.hand_size)
        deck_share = deck / initial_deck
        # Chance that a given unseen card reaches my hand: it is in the deck, and I draw about half
        # of what is left.
        p_get = 0.5 * deck / unseen_total  # [n]
        turns = torch.div(v.deck_size + 1, 2, rounding_mode="floor").to(f32).clamp(min=1)  # my card decisions left

        def top_of(exp):  # highest numbered kind on an expedition, 0 if none
            return ((exp[:, :, 1:] > 0) * kinds[1:]).amax(dim=2)

        def exp_score(exp):
            opened = exp.sum(dim=2) > 0
            total = (exp.to(f32) * value).sum(dim=2)
            raw = (total + r.expedition_cost) * (1 + exp[:, :, 0].to(f32))
            raw = raw + r.bonus * (exp.sum(dim=2) >= r.bonus_threshold).to(f32)
            return torch.where(opened, raw, 0.0)

        my_top, opp_top = top_of(my_exp), top_of(opp_exp)  # [n, C]
        my_has_num = my_top > 0
        opp_has_num = opp_top > 0
        my_open = my_exp.sum(dim=2) > 0
        opp_open = opp_exp.sum(dim=2) > 0
        my_wagers = my_exp[:, :, 0].to(f32)
        opp_wagers = opp_exp[:, :, 0].to(f32)
        my_sum = (my_exp.to(f32) * value).sum(dim=2)

        above_mine = numbered & (kinds > my_top[:, :, None])  # [n, C, R1] numbered cards I can still play
        above_opp = numbered & (kinds > opp_top[:, :, None])
        hand_playable = hand * above_mine
        hand_count = hand_playable.sum(dim=2)  # [n, C]
        hand_sum = (hand_playable * value).sum(dim=2)
        unseen_above = (unseen * above_mine * value).sum(dim=2)

        fit = (turns[:, None] / hand_count.clamp(min=1)).clamp(max=1.0)
        base = my_sum + hand_sum * fit + st.future_factor * p_get[:, None] * unseen_above + r.expedition_cost
        opens_now = (base >= st.open_margin * s) & (hand_count >= st.min_open_cards)
        committed = my_open | opens_now  # [n, C]
        promise = torch.where(committed, 1.0, ((base - (st.open_margin - 20.0) * s) / (20.0 * s)).clamp(0.0, 1.0))

        # Share of my committed playable hand that I still have turns for: near the end, skipping
        # a lower card costs less than it gains.
        committed_cards = (hand_count * committed).sum(dim=1)
        w_hand = (turns / committed_cards.clamp(min=1)).clamp(max=1.0)  # [n]

        # --- card decision: play ------------------------------------------------------------
        skip_weight = st.skip_weight * p_get
        skip_cost_each = (hand * w_hand[:, None, None] + unseen * skip_weight[:, None, None]) * value * above_mine
        skipped = skip_cost_each.cumsum(dim=2) - skip_cost_each  # value strictly between my top and each kind
        play_numbered = st.wait_tolerance * s + (1.0 - w_hand)[:, None, None] * value - skipped
        play_numbered = torch.where(committed[:, :, None] & above_mine, play_numbered, _NEVER)
        wager_ok = (
            ~my_has_num
            & committed
            & (base >= (st.wager_margin + st.wager_step * my_wagers) * s)
            & (hand_count >= st.wager_min_cards)
            & (deck_share >= st.wager_min_deck)[:, None]
        )
        play_wager = torch.where(wager_ok, st.wait_tolerance * s + 5.0 * s, _NEVER)
        play = torch.cat([play_wager[:, :, None], play_numbered[:, :, 1:]], dim=2)  # [n, C, R1]

        # --- card decision: discard ---------------------------------------------------------
        keep_numbered = value * torch.where(committed, w_hand[:, None], promise)[:, :, None] * above_mine
        keep_wager = torch.where(my_has_num, 0.0, base.clamp(min=0) * promise * 0.5)
        keep = torch.cat([keep_wager[:, :, None], keep_numbered[:, :, 1:]], dim=2)
        danger = self._danger(value, above_opp, opp_open, opp_has_num, opp_wagers, deck_share, s)
        discard = -keep - danger
        card_scores = torch.cat([play.reshape(n, -1), discard.reshape(n, -1)], dim=1)

        # --- draw decision ------------------------------------------------------------------
        top = v.pile_top  # [n, C] kind, -1 when empty
        top_kind = top.clamp(min=0)
        top_value = value[top_kind]
        top_playable = (top >= 1) & (top > my_top)
        # In an uncommitted colour a pile card counts only if it makes the colour worth opening:
        # a card that merely "might help" would be discarded again next turn (and taken back by
        # the opponent, turn after turn).
        opens_with_it = ((base + top_value * (1 - st.future_factor * p_get[:, None]) >= st.open_margin * s)
                         & (hand_count + 1 >= st.min_open_cards))
        gain = torch.where(top_playable & (committed | opens_with_it), top_value * w_hand[:, None], 0.0)
        wager_gain = torch.where(~my_has_num & committed & (base >= st.wager_margin * s), 5.0 * s, 0.0)
        gain = torch.where(top == 0, wager_gain, gain)
        # Denial counts only against an open opponent expedition the card would extend.
        top_danger = danger.gather(2, top_kind[:, :, None]).squeeze(2) * opp_open
        pile_scores = gain + st.deny_weight * top_danger - st.pile_threshold * s

        lead = exp_score(my_exp).sum(dim=1) - exp_score(opp_exp).sum(dim=1)
        near_end = turns <= st.end_turns
        deck_score = torch.where(near_end & (lead > 0), 20.0 * s, 0.0)
        if st.stall_when_behind:
            stall = near_end & (lead < 0) & (committed_cards > turns)
            # Any pile card beats shortening the game while behind.
            pile_scores = torch.where(stall[:, None], pile_scores.clamp(min=0) + 1.0, pile_scores)
        draw_scores = torch.cat([deck_score[:, None], pile_scores], dim=1)
        return torch.cat([card_scores, draw_scores], dim=1)

    def _danger(self, value, above_opp, opp_open, opp_has_num, opp_wagers, deck_share, s):
        """Value ``[n, C, R1]`` of each card kind to the opponent if I hand it to them."""
        st = self.style
        numbered = torch.where(
            opp_open[:, :, None],
            value * (1 + opp_wagers)[:, :, None] * st.danger_open,
            value * st.danger_closed * deck_share[:, None, None],
        ) * above_opp
        wager = torch.where(
            opp_has_num,
            0.0,
            torch.where(opp_open, 10.0 * s * st.danger_open, 5.0 * s * st.danger_closed * deck_share[:, None]),
        )
        return torch.cat([wager[:, :, None], numbered[:, :, 1:]], dim=2)


def lost_cities_bot_factories(rules: LostCitiesRules) -> dict:
    """Bot factories by name for a Lost Cities game with ``rules`` (used by games.bots.make_bot)."""
    factories = {"discard_only": lambda: DiscardOnlyBot(rules)}
    for name, style in STYLES.items():
        factories[name] = lambda style=style, name=name: HeuristicBot(rules, style, name)
    return factories
