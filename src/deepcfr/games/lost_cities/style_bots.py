"""Lost Cities bots of distinct styles (issue 65): members of the benchmark population
(``players/population.py``), written from the rules and from how people play the game.

Each style is a small twist on one shared core (``StyleBot``), itself written independently of
``HeuristicBot`` (simpler, and not tuned against it), so that the population does not share one
implementation's blind spots. Every bot decides for a whole batch from the compact observation
(``layout.py``) and the legal mask, sees no hidden information, and is deterministic (it
scores every action and plays the best legal one; the generator is not used).

The core, per colour, in classic points (margins scale with ``|expedition_cost| / 20``):
- *Projection*: my expedition's sum, plus the playable cards of the colour in my hand (scaled
  down when I hold more such cards than I have turns left), plus a share of the unseen cards above
  my top that I may still draw, plus the expedition cost. A colour is *committed* when its
  expedition is open, or when the projection clears ``open_margin`` with at least
  ``min_open_cards`` playable cards in hand (the style may ask more: ``_would_open``).
- *Card decision*: a number in a committed colour scores ``tolerance`` minus the value of the cards
  it skips (my lower playable cards, and unseen lower cards weighted by the chance to draw them),
  so the lowest card goes first and a big jump waits; a wager goes on a committed colour with no
  number yet when the projection is strong and the deck long. A discard costs the card's value to
  me (nothing for a dead card) plus its danger: its value to the opponent's open expedition (times
  their wagers), or a share of it while their expedition is closed and the deck long.
- *Draw decision*: the deck, unless a pile's top card fits a committed colour (or makes its colour
  worth opening) or extends an open expedition of the opponent, by more than ``pile_threshold``.
  Near the end the player ahead on the board draws from the deck to finish the game, and the
  player behind with more cards to play than turns takes a pile card instead.

The styles (``STYLE_BOTS``; each defining habit has a test in tests/test_style_bots.py):
- ``never_pile``: never draws from a discard pile (always the deck); otherwise the core.
- ``denier``: takes a pile's top card whenever it extends the opponent's open expedition (the
  most valuable such card first) and never discards a card the opponent's open expedition can
  still use while it has another card to discard.
- ``rusher``: ahead on the board score, it always draws from the deck (the game ends sooner);
  behind, with more playable cards of its open expeditions in hand than turns left, it draws from
  a pile whenever one is legal (stalling, to get the turns to play them).
- ``wager_gambler``: while at least half of the draw pile remains, it plays a wager whenever one is
  legal on a colour where it holds at least two playable numbers or already has a wager down;
  it opens expeditions on thin holdings and takes wagers from the piles early.
- ``patient_opener``: opens an expedition (its first card, wager or number) only when the values
  of the colour's cards in its hand clear the expedition cost by ``patient_margin``, so that
  the expedition is positive from the cards it holds alone; otherwise it discards.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

import torch

from .layout import LOC_HAND, LOC_MY_EXP, LOC_OPP_EXP, LOC_PILE0, LOC_UNKNOWN, card_kinds
from .rules import LostCitiesRules

# A finite "never unless forced" score, so that argmax over a legal row is always well defined.
NEVER = -1.0e4
# Lexicographic preferences of a style sit above every ordinary score and below none of NEVER.
FIRST = 1.0e3


@dataclass(frozen=True)
class Temper:
    """The core's settings, in classic points (scaled by ``|expedition_cost| / 20``)."""

    open_margin: float = 4.0  # open a colour when its projection is at least this
    min_open_cards: int = 3  # ... and I hold at least this many playable numbered cards of it
    future_factor: float = 0.7  # share of the unseen cards above my top that I count on drawing
    wager_margin: float = 6.0  # a wager needs this projection (plus wager_step per wager down)
    wager_step: float = 3.0
    wager_min_cards: int = 3  # ... and this many playable numbered cards in hand
    wager_min_deck: float = 0.35  # ... and this share of the initial draw pile left
    tolerance: float = 6.0  # play rather than hold while the skipped value is below this
    skip_weight: float = 1.5  # weight of the unseen cards a play skips
    danger_open: float = 0.7  # weight of a discard's value to the opponent's open expedition
    danger_closed: float = 0.4  # ... to an expedition of theirs not open (times the deck share)
    pile_threshold: float = 3.0  # take a pile card when it is worth more than this to me
    deny_weight: float = 0.4  # weight of denying the opponent a pile card
    end_turns: int = 3  # "near the end": at most this many of my turns left
    patient_margin: float | None = None  # patient_opener: hand values + cost must reach this to open


@dataclass
class Position:
    """What the observer knows, per row and colour ([n, C] unless noted; [n, C, R1] by kind)."""

    value: torch.Tensor  # [R1] card value by kind (0 for a wager)
    hand: torch.Tensor  # [n, C, R1] my hand's counts
    my_top: torch.Tensor  # highest kind on my expedition: -1 empty, 0 wagers only
    opp_top: torch.Tensor
    my_open: torch.Tensor
    opp_open: torch.Tensor
    my_sum: torch.Tensor
    my_wagers: torch.Tensor
    opp_wagers: torch.Tensor
    fits_me: torch.Tensor  # [n, C, R1] numbered kinds above my top
    fits_opp: torch.Tensor  # [n, C, R1] numbered kinds above the opponent's top
    unseen: torch.Tensor  # [n, C, R1] copies in the deck or the opponent's unknown hand
    hand_fit_sum: torch.Tensor  # values of my playable numbered hand cards
    hand_fit_cnt: torch.Tensor
    projection: torch.Tensor
    deck_share: torch.Tensor  # [n] share of the initial draw pile left
    p_get: torch.Tensor  # [n] chance that I draw a given unseen card
    turns: torch.Tensor  # [n] my turns left if both draw from the deck
    lead: torch.Tensor  # [n] my board score minus the opponent's
    pile_top: torch.Tensor  # [n, C] kind of each pile's top card, -1 empty
    committed: torch.Tensor | None = None
    w_hand: torch.Tensor | None = None  # [n] share of my committed hand cards I have turns to play


class StyleBot:
    """The shared core (module docstring); a style overrides ``_would_open`` and ``_adjust``."""

    name = "style_core"
    temper = Temper()

    def __init__(self, rules: LostCitiesRules, name: str | None = None, temper: Temper | None = None):
        self.rules = rules
        if name is not None:
            self.name = name
        if temper is not None:
            self.temper = temper
        cost = abs(rules.expedition_cost) or rules.min_rank + rules.n_ranks - 1
        self.s = cost / 20.0
        self._tables: dict[torch.device, tuple[torch.Tensor, torch.Tensor]] = {}

    # --- public API -----------------------------------------------------------------------------
    def act(self, obs: torch.Tensor, mask: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
        return self.action_scores(obs).masked_fill_(~mask, float("-inf")).argmax(dim=1)

    def action_scores(self, obs: torch.Tensor) -> torch.Tensor:
        """Score ``[n, A]`` of every action (legal or not) for the player who observes ``obs``."""
        r, n = self.rules, obs.shape[0]
        K = r.num_kinds
        pos = self._position(obs)
        pos.committed = pos.my_open | self._would_open(pos, torch.zeros_like(pos.my_sum), 0)
        committed_cards = torch.where(pos.committed, pos.hand_fit_cnt, 0.0).sum(dim=1)
        pos.w_hand = (pos.turns / committed_cards.clamp(min=1)).clamp(max=1.0)
        play, discard = self._card_scores(pos)
        deck, piles = self._draw_scores(pos, committed_cards)
        play, discard, deck, piles = self._adjust(pos, play, discard, deck, piles)
        scores = torch.empty(n, r.num_actions, dtype=torch.float32, device=obs.device)
        scores[:, :K] = play.reshape(n, K)
        scores[:, K : 2 * K] = discard.reshape(n, K)
        scores[:, 2 * K] = deck
        scores[:, 2 * K + 1 :] = piles
        return scores

    # --- style hooks ----------------------------------------------------------------------------
    def _would_open(self, pos: Position, extra_value: torch.Tensor, extra_cards: int) -> torch.Tensor:
        """[n, C] whether a colour is worth opening with ``extra_value`` / ``extra_cards`` more
        playable cards in hand (a pile card)."""
        t, s = self.temper, self.s
        return (pos.projection + extra_value >= t.open_margin * s) & (
            pos.hand_fit_cnt + extra_cards >= t.min_open_cards
        )

    def _adjust(self, pos: Position, play, discard, deck, piles):
        return play, discard, deck, piles

    # --- the core -------------------------------------------------------------------------------
    def _consts(self, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
        if device not in self._tables:
            r = self.rules
            kinds = torch.arange(r.n_ranks + 1, device=device)
            value = torch.where(kinds > 0, r.min_rank + kinds - 1, 0).to(torch.float32)
            copy_kind = card_kinds(r, device)[0]  # [P] kind of each copy of a colour
            self._tables[device] = value, copy_kind
        return self._tables[device]

    def _position(self, obs: torch.Tensor) -> Position:
        r, t = self.rules, self.temper
        value, copy_kind = self._consts(obs.device)
        n, C, P, W, D = obs.shape[0], r.n_colors, r.cards_per_color, r.n_wagers, r.deck_size
        kinds = torch.arange(r.n_ranks + 1, device=obs.device)
        f32 = torch.float32
        loc = obs[:, :D].reshape(n, C, P)  # location codes (layout.py)

        def counts(code: int) -> torch.Tensor:
            """[n, C, R1] copies by kind with this location code (a numbered kind has one copy)."""
            at = (loc == code).to(f32)
            return torch.cat([at[:, :, :W].sum(dim=2, keepdim=True), at[:, :, W:]], dim=2)

        hand, mine, theirs = counts(LOC_HAND), counts(LOC_MY_EXP), counts(LOC_OPP_EXP)
        unseen = counts(LOC_UNKNOWN)  # in the deck, or in the opponent's hand and not known
        top_code, top_copy = loc.max(dim=2)  # a pile's top card has its colour's highest code
        pile_top = torch.where(top_code >= LOC_PILE0, copy_kind[top_copy.long()], -1)
        my_top = torch.where(mine > 0, kinds, -1).amax(dim=2)
        opp_top = torch.where(theirs > 0, kinds, -1).amax(dim=2)
        numbered = kinds >= 1
        fits_me = numbered & (kinds > my_top[:, :, None])
        fits_opp = numbered & (kinds > opp_top[:, :, None])
        hand_fit_sum = (hand * fits_me * value).sum(dim=2)
        hand_fit_cnt = (hand * fits_me).sum(dim=2)
        unseen_above = (unseen * fits_me * value).sum(dim=2)
        my_sum, opp_sum = (mine * value).sum(dim=2), (theirs * value).sum(dim=2)
        my_cards, opp_cards = mine.sum(dim=2), theirs.sum(dim=2)
        my_wagers, opp_wagers = mine[:, :, 0], theirs[:, :, 0]

        deck_size = obs[:, D].long()
        deck = deck_size.to(f32)
        deck_share = deck / float(max(1, r.deck_size - 2 * r.hand_size))
        p_get = 0.5 * deck / unseen.sum(dim=(1, 2)).clamp(min=1)
        turns = torch.div(deck_size + 1, 2, rounding_mode="floor").clamp(min=1).to(f32)
        fit = (turns[:, None] / hand_fit_cnt.clamp(min=1)).clamp(max=1.0)
        projection = my_sum + hand_fit_sum * fit + t.future_factor * p_get[:, None] * unseen_above + r.expedition_cost

        def board(total, wagers, cards):
            score = (total + r.expedition_cost) * (1 + wagers) + r.bonus * (cards >= r.bonus_threshold)
            return torch.where(cards > 0, score, 0.0).sum(dim=1)

        lead = board(my_sum, my_wagers, my_cards) - board(opp_sum, opp_wagers, opp_cards)
        return Position(
            value=value,
            hand=hand,
            my_top=my_top,
            opp_top=opp_top,
            my_open=my_cards > 0,
            opp_open=opp_cards > 0,
            my_sum=my_sum,
            my_wagers=my_wagers,
            opp_wagers=opp_wagers,
            fits_me=fits_me,
            fits_opp=fits_opp,
            unseen=unseen,
            hand_fit_sum=hand_fit_sum,
            hand_fit_cnt=hand_fit_cnt,
            projection=projection,
            deck_share=deck_share,
            p_get=p_get,
            turns=turns,
            lead=lead,
            pile_top=pile_top,
        )

    def _danger(self, pos: Position) -> torch.Tensor:
        """[n, C, R1] what a card of each kind is worth to the opponent if it reaches a pile."""
        t, s, value = self.temper, self.s, pos.value
        open_ = pos.opp_open[:, :, None]
        numbered_open = torch.where(pos.fits_opp, value * (1 + pos.opp_wagers)[:, :, None] * t.danger_open, 0.0)
        numbered_closed = value * t.danger_closed * pos.deck_share[:, None, None]
        danger = torch.where(open_, numbered_open, numbered_closed)
        wager_open = torch.where(pos.opp_top <= 0, 10.0 * s * t.danger_open, 0.0)
        wager_closed = (5.0 * s * t.danger_closed * pos.deck_share)[:, None].expand_as(wager_open)
        danger[:, :, 0] = torch.where(pos.opp_open, wager_open, wager_closed)
        return danger

    def _card_scores(self, pos: Position) -> tuple[torch.Tensor, torch.Tensor]:
        t, s, value = self.temper, self.s, pos.value
        committed, w_hand = cast(torch.Tensor, pos.committed), cast(torch.Tensor, pos.w_hand)[:, None, None]
        # A number: tolerance minus the cards it skips (my lower playable ones, unseen lower ones).
        each = (
            pos.hand * pos.fits_me * value * w_hand
            + pos.unseen * pos.fits_me * value * (t.skip_weight * pos.p_get)[:, None, None]
        )
        skipped = each.cumsum(dim=2) - each
        play = t.tolerance * s + (1.0 - w_hand) * value - skipped
        play = torch.where(committed[:, :, None] & pos.fits_me, play, NEVER)
        wager_ok = (
            (pos.my_top <= 0)
            & committed
            & (pos.projection >= (t.wager_margin + t.wager_step * pos.my_wagers) * s)
            & (pos.hand_fit_cnt >= t.wager_min_cards)
            & (pos.deck_share >= t.wager_min_deck)[:, None]
        )
        play[:, :, 0] = torch.where(wager_ok, (t.tolerance + 5.0) * s, NEVER)
        # A discard: minus its value to me (a promising colour counts in part), minus its danger.
        promise = ((pos.projection - (t.open_margin - 20.0) * s) / (20.0 * s)).clamp(0.0, 1.0)
        keep_weight = torch.where(committed, w_hand[:, :, 0], promise)
        keep = torch.where(pos.fits_me, value * keep_weight[:, :, None], 0.0)
        keep[:, :, 0] = torch.where(pos.my_top <= 0, pos.projection.clamp(min=0) * keep_weight * 0.5, 0.0)
        discard = -keep - self._danger(pos)
        return play, discard

    def _draw_scores(self, pos: Position, committed_cards: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        t, s, value = self.temper, self.s, pos.value
        top = pos.pile_top
        top_value = value[top.clamp(min=0)]
        fits_me = (top >= 1) & (top > pos.my_top)
        opens = self._would_open(pos, top_value, 1)
        committed, w_hand = cast(torch.Tensor, pos.committed), cast(torch.Tensor, pos.w_hand)  # set by act
        gain = torch.where(fits_me & (committed | opens), top_value * w_hand[:, None], 0.0)
        wager_gain = torch.where(
            (pos.my_top <= 0)
            & committed
            & (pos.projection >= t.wager_margin * s)
            & (pos.deck_share >= t.wager_min_deck)[:, None],
            5.0 * s,
            0.0,
        )
        gain = torch.where(top == 0, wager_gain, gain)
        piles = gain + t.deny_weight * self._pile_denial(pos) - t.pile_threshold * s
        near_end = pos.turns <= t.end_turns
        deck = torch.where(near_end & (pos.lead > 0), 20.0 * s, 0.0)
        stall = near_end & (pos.lead < 0) & (committed_cards > pos.turns)
        piles = torch.where(stall[:, None], piles.clamp(min=0) + 1.0, piles)
        return deck, piles

    def _pile_denial(self, pos: Position) -> torch.Tensor:
        """[n, C] the danger of each pile's top card to the opponent's open expeditions (0 where
        it does not extend one, or the pile is empty)."""
        top = pos.pile_top
        danger = self._danger(pos).gather(2, top.clamp(min=0)[:, :, None]).squeeze(2)
        return torch.where(self._top_helps_opponent(pos), danger, 0.0)

    @staticmethod
    def _top_helps_opponent(pos: Position) -> torch.Tensor:
        """[n, C] whether each pile's top card can go onto the opponent's open expedition."""
        top = pos.pile_top
        number = (top >= 1) & (top > pos.opp_top)
        wager = (top == 0) & (pos.opp_top <= 0)
        return pos.opp_open & (number | wager)


class NeverPileBot(StyleBot):
    """Always draws from the deck; otherwise the core."""

    name = "never_pile"

    def _adjust(self, pos, play, discard, deck, piles):
        return play, discard, deck, torch.full_like(piles, NEVER)


class DenierBot(StyleBot):
    """Denial first: takes the pile cards the opponent's open expeditions need, and keeps the cards
    they need out of the piles."""

    name = "denier"
    temper = Temper(danger_open=1.5, danger_closed=0.6, deny_weight=1.0)

    def _adjust(self, pos, play, discard, deck, piles):
        helps = self._top_helps_opponent(pos)
        piles = torch.where(helps, FIRST + piles, piles)
        needed = pos.opp_open[:, :, None] & pos.fits_opp
        needed[:, :, 0] = pos.opp_open & (pos.opp_top <= 0)
        return play, torch.where(needed, discard - FIRST, discard), deck, piles


class RusherBot(StyleBot):
    """Ahead on the board: deck only, to end the game. Behind with more cards to play than turns:
    any legal pile card, to stall (the most useful first)."""

    name = "rusher"

    @staticmethod
    def stalls(pos: Position) -> torch.Tensor:
        """[n] behind on the board, holding more playable cards of open expeditions than turns left.
        (Stalling whenever behind, from the first opened expedition on, measured -35 +- 5 a game
        against heuristic_balanced over 200 games; this rule -5.)"""
        to_play = torch.where(pos.my_open, pos.hand_fit_cnt, 0.0).sum(dim=1)
        return (pos.lead < 0) & (to_play > pos.turns)

    def _adjust(self, pos, play, discard, deck, piles):
        ahead, behind = (pos.lead > 0)[:, None], self.stalls(pos)[:, None]
        piles = torch.where(ahead, NEVER, torch.where(behind, FIRST + piles, piles))
        return play, discard, deck, piles


class WagerGamblerBot(StyleBot):
    """Wagers down early on anything it can back, opens thin expeditions."""

    name = "wager_gambler"
    temper = Temper(
        open_margin=-2.0,
        min_open_cards=2,
        wager_margin=-4.0,
        wager_step=0.0,
        wager_min_cards=2,
        wager_min_deck=0.5,
        pile_threshold=2.0,
    )
    early_share = 0.5  # "early": at least this share of the initial draw pile left

    def _gambles(self, pos: Position) -> torch.Tensor:
        """[n, C] colours where the gambler wants a wager now (the wager is legal there)."""
        early = (pos.deck_share >= self.early_share)[:, None]
        backed = (pos.hand_fit_cnt >= 2) | (pos.my_wagers > 0)
        return early & (pos.my_top <= 0) & backed

    def _adjust(self, pos, play, discard, deck, piles):
        gambles = self._gambles(pos)
        play[:, :, 0] = torch.where(gambles, FIRST + pos.hand_fit_sum, play[:, :, 0])
        piles = torch.where(gambles & (pos.pile_top == 0), piles + 10.0 * self.s, piles)
        return play, discard, deck, piles


class PatientOpenerBot(StyleBot):
    """Opens a colour only on a holding that pays for the expedition by itself."""

    name = "patient_opener"
    temper = Temper(patient_margin=2.0, open_margin=4.0, min_open_cards=3)

    def _would_open(self, pos, extra_value, extra_cards):
        held = pos.my_sum + pos.hand_fit_sum + extra_value + self.rules.expedition_cost
        return super()._would_open(pos, extra_value, extra_cards) & (held >= self.temper.patient_margin * self.s)


STYLE_BOTS = (NeverPileBot, DenierBot, RusherBot, WagerGamblerBot, PatientOpenerBot)


def style_bot_factories(rules: LostCitiesRules) -> dict:
    """Factories of the style bots by name (``bots.bot_factories`` adds them to the registry)."""
    return {cls.name: (lambda cls=cls: cls(rules)) for cls in STYLE_BOTS}


__all__ = [
    "StyleBot",
    "Temper",
    "Position",
    "NeverPileBot",
    "DenierBot",
    "RusherBot",
    "WagerGamblerBot",
    "PatientOpenerBot",
    "STYLE_BOTS",
    "style_bot_factories",
    "NEVER",
    "FIRST",
]
