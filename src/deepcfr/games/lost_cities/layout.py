"""The compact Lost Cities observation (one uint8 row per information state) and its batched view.

Row layout for observer p, with D = deck_size physical cards (ids as in rules.py):
  [0, D)   location code of each physical card as p knows it:
             0 unknown to p (in the deck, or in the opponent's hand and not known)
             1 in p's hand
             2 on p's expedition
             3 on the opponent's expedition
             4 in the opponent's hand, known (the opponent took it from a discard pile)
             5 + j  in its colour's discard pile at height j (0 = bottom)
           The wager copies of a colour are interchangeable, so their codes are sorted ascending
           (a canonical form: equal information gives an equal row).
  D + 0    cards left in the deck
  D + 1    decision phase: 0 = play/discard a card, 1 = draw
  D + 2    colour discarded this turn (n_colors = none); only set in the draw phase
  D + 3    observer seat p
  D + 4    seat to move
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .rules import LostCitiesRules

LOC_UNKNOWN, LOC_HAND, LOC_MY_EXP, LOC_OPP_EXP, LOC_OPP_KNOWN, LOC_PILE0 = 0, 1, 2, 3, 4, 5
NUM_SCALARS = 5
OBS_DTYPE = torch.uint8


def obs_size(rules: LostCitiesRules) -> int:
    return rules.deck_size + NUM_SCALARS


@dataclass
class LostCitiesObsView:
    """Batched, decoded view of observations; counts are by kind ``[n, n_colors, n_ranks + 1]``."""

    hand: torch.Tensor  # my hand counts by kind
    my_expedition: torch.Tensor  # counts by kind on my expedition
    opp_expedition: torch.Tensor
    opp_known: torch.Tensor  # counts by kind known to be in the opponent's hand
    pile_height: torch.Tensor  # [n, C]
    pile_top: torch.Tensor  # [n, C] kind (0..n_ranks) of each pile's top card, -1 when empty
    piles: torch.Tensor  # [n, C, cards_per_color] kind + 1 at each height (bottom first), 0 above the top
    deck_size: torch.Tensor  # [n]
    phase: torch.Tensor  # [n]
    discarded_color: torch.Tensor  # [n], n_colors = none
    player: torch.Tensor  # [n] observer seat
    to_move: torch.Tensor  # [n]


def card_kinds(rules: LostCitiesRules, device=None) -> torch.Tensor:
    """Kind (0..n_ranks) of each physical card, ``[n_colors, cards_per_color]``."""
    j = torch.arange(rules.cards_per_color, device=device)
    kind = torch.where(j < rules.n_wagers, 0, j - rules.n_wagers + 1)
    return kind.expand(rules.n_colors, -1)


def decode(rules: LostCitiesRules, obs: torch.Tensor) -> LostCitiesObsView:
    n = obs.shape[0]
    C, P, R1 = rules.n_colors, rules.cards_per_color, rules.n_ranks + 1
    D = rules.deck_size
    loc = obs[:, :D].long().view(n, C, P)
    kinds = card_kinds(rules, obs.device).expand(n, C, P)

    def counts(code: int) -> torch.Tensor:
        out = torch.zeros(n, C, R1, dtype=torch.long, device=obs.device)
        return out.scatter_add_(2, kinds, (loc == code).long())

    in_pile = loc >= LOC_PILE0
    height = in_pile.sum(dim=2)
    pos = (loc - LOC_PILE0).clamp(min=0)
    piles = torch.zeros(n, C, P + 1, dtype=torch.long, device=obs.device)
    # Cards not in a pile write to the spare slot P, which is dropped.
    piles.scatter_(2, torch.where(in_pile, pos, P), kinds + 1)
    piles = piles[:, :, :P]
    top = piles.gather(2, (height - 1).clamp(min=0)[:, :, None]).squeeze(2) - 1
    top = torch.where(height > 0, top, -1)
    s = obs[:, D:].long()
    return LostCitiesObsView(
        hand=counts(LOC_HAND),
        my_expedition=counts(LOC_MY_EXP),
        opp_expedition=counts(LOC_OPP_EXP),
        opp_known=counts(LOC_OPP_KNOWN),
        pile_height=height,
        pile_top=top,
        piles=piles,
        deck_size=s[:, 0],
        phase=s[:, 1],
        discarded_color=s[:, 2],
        player=s[:, 3],
        to_move=s[:, 4],
    )


def legal_mask_from_obs(rules: LostCitiesRules, obs: torch.Tensor) -> torch.Tensor:
    """The legal-action mask ``[n, num_actions]`` of the player to move, recomputed from that
    player's own observation (the mover's information is enough to know its legal actions).
    Rows whose observer is not the mover, or whose game is over, get whatever the observation
    implies; callers only use it for the mover's own rows."""
    view = decode(rules, obs)
    n, C, R1 = obs.shape[0], rules.n_colors, rules.n_ranks + 1
    kinds = torch.arange(R1, device=obs.device)
    # Highest kind on each of my expeditions (-1 when empty): a card of kind k is playable iff
    # k >= it (numbers are unique per colour, and wagers (kind 0) only before any number).
    top = torch.where(view.my_expedition > 0, kinds, -1).amax(dim=2)
    in_hand = view.hand > 0
    playable = in_hand & (kinds >= top[:, :, None])
    play_phase = (view.phase == 0)[:, None]
    mask = torch.zeros(n, rules.num_actions, dtype=torch.bool, device=obs.device)
    K = rules.num_kinds
    mask[:, :K] = (playable.reshape(n, K)) & play_phase
    mask[:, K : 2 * K] = in_hand.reshape(n, K) & play_phase
    draw_phase = view.phase == 1
    mask[:, 2 * K] = draw_phase
    colours = torch.arange(C, device=obs.device)
    mask[:, 2 * K + 1 :] = (view.pile_height > 0) & (colours != view.discarded_color[:, None]) & draw_phase[:, None]
    return mask
