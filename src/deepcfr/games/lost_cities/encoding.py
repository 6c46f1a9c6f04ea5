"""Network features for Lost Cities: a pure, batched function of the compact observation.

``LostCitiesEncoder(rules)(obs [n, obs_size] uint8) -> [n, feature_size] float32``. The compact
row (layout.py) is small so that replay memories stay small; features are computed in batch
when a network needs them. Blocks, in order (D cards, C colours, P = cards per colour,
R1 = n_ranks + 1 kinds per colour, W wagers per colour):

- per card, nine groups of D values (card id order): in my hand, on my expedition, on the
  opponent's expedition, known to be in the opponent's hand, in a discard pile, on top of its
  pile, its height in the pile / P, still playable on my expedition (by rank order alone),
  still playable on the opponent's;
- per expedition, six groups of [my C colours, the opponent's C]: opened, cards / P, wagers / W,
  sum of values / the colour's total, top kind / n_ranks, score / score scale;
- per colour: pile heights / P (C), one-hot kind of each pile's top card (C x R1, all zero when
  empty), cards of each colour I cannot see / P (C);
- totals (3): my score, the opponent's, the difference, each / (C x score scale);
- deck (5): cards left / initial deck size, and flags deck <= 1, 2, 4, 8;
- turn (C + 5): phase one-hot (2), colour discarded this turn one-hot (C + 1, last = none),
  my seat, whether I am to move;
- hand outlook, seven groups of C: my hand's cards / P, wagers / W, sum of values / the
  colour's total; of those still playable on my expedition, cards / P and sum of values /
  total; the unseen cards still playable there, sum of values / total; and the projected score
  of the expedition with all its playable hand cards added / score scale (how good opening or
  extending it looks: the sums an MLP would otherwise have to learn from the per-card groups).

Written for speed on a CPU (the forward pass, not the encoding, should bound traversal, so
encoding must stay near a microsecond per state; docs/design.md): the per-card block is computed
in uint8 with same-shape ops and lookup tables and converted once, since comparisons with
broadcasting or bool outputs are many times slower there.
"""

from __future__ import annotations

from typing import Any

import torch

from .layout import LOC_HAND, LOC_MY_EXP, LOC_OPP_EXP, LOC_OPP_KNOWN, LOC_PILE0
from .rules import LostCitiesRules

# The version of these features: a network trained on one version reads only that version. Bump it
# whenever a feature changes (an exported network records it; the web page's JS encoder names it too).
ENCODING_VERSION = 1
DECK_FLAGS = (1, 2, 4, 8)
CARD_GROUPS = 9
HAND_GROUPS = 7


class LostCitiesEncoder:
    version = ENCODING_VERSION

    def __init__(self, rules: LostCitiesRules):
        self.rules = r = rules
        D, C, R1 = r.deck_size, r.n_colors, r.n_ranks + 1
        self.feature_size = CARD_GROUPS * D + 12 * C + C * (R1 + 2) + 3 + 1 + len(DECK_FLAGS) + C + 5 + HAND_GROUPS * C
        self.score_scale = float(max(1, abs(r.expedition_cost)) * (1 + r.n_wagers))
        self._tables: dict[torch.device, dict[str, Any]] = {}  # tensors, and color_total a float

    def _tables_for(self, device: torch.device) -> dict[str, Any]:
        t = self._tables.get(device)
        if t is None:
            r = self.rules
            P, R1 = r.cards_per_color, r.n_ranks + 1
            kinds = [r.card_kind(c) for c in range(P)]  # the same in every colour
            # playable[top]: which cards of a colour are still playable when the expedition's
            # top numbered kind is ``top`` (0: none yet).
            playable = [[float(k > top or (k == 0 and top == 0)) for k in kinds] for top in range(R1)]
            # Per colour sums of a card group by one small matmul: cards, wagers, sum of values,
            # sum of 2^kind over numbered cards (its exponent is the top kind), sum of kind + 1.
            colour_sums = [
                [1.0, float(k == 0), float(r.kind_value(k)), 0.0 if k == 0 else 2.0**k, k + 1.0] for k in kinds
            ]
            t = {
                "playable": torch.tensor(playable, dtype=torch.float32, device=device),
                "colour_sums": torch.tensor(colour_sums, dtype=torch.float32, device=device).t().contiguous(),
                "one_hot_kind": torch.eye(R1 + 1, dtype=torch.float32, device=device)[:, 1:].contiguous(),
                "one_hot_color": torch.eye(r.n_colors + 1, dtype=torch.float32, device=device),
                "deck_flags": torch.tensor(DECK_FLAGS, dtype=torch.float32, device=device),
                "color_total": float(sum(r.kind_value(k) for k in kinds)),
            }
            self._tables[device] = t
        return t

    def __call__(self, obs: torch.Tensor) -> torch.Tensor:
        # The sums below must be exact (2^kind sums up to 2^21): no reduced-precision autocast.
        with torch.autocast(device_type=obs.device.type, enabled=False):
            return self._encode(obs)

    def _encode(self, obs: torch.Tensor) -> torch.Tensor:
        r = self.rules
        D, C, R1 = r.deck_size, r.n_colors, r.n_ranks + 1
        if obs.dim() != 2 or obs.shape[1] != D + 5:
            raise ValueError(f"obs must have shape [n, {D + 5}], got {tuple(obs.shape)}")
        t = self._tables_for(obs.device)
        n = obs.shape[0]
        out = torch.empty(n, self.feature_size, dtype=torch.float32, device=obs.device)
        codes = obs[:, :D].contiguous()
        # Each block below writes its columns of ``out`` through a view (no copy).
        card_out = out[:, : CARD_GROUPS * D].view(n, CARD_GROUPS, D)
        height = self._card_places(codes, card_out)
        at = CARD_GROUPS * D
        sums, score = self._expeditions(codes, height, t, card_out, out[:, at : at + 12 * C])
        at += 12 * C
        self._piles(sums, t, out[:, at : at + C * (R1 + 2)])
        at += C * (R1 + 2)
        self._totals_deck_turn(obs, score, t, out[:, at : at + 3 + 5 + C + 5])
        at += 3 + 5 + C + 5
        self._hand_outlook(codes, card_out, sums, t, out[:, at:])
        return out

    def _card_places(self, codes: torch.Tensor, card_out: torch.Tensor) -> torch.Tensor:
        """Per card groups 0-6 (where each card is, its height in its pile) into ``card_out``, in
        uint8 (group-major, so every op is on contiguous rows); returns [n, C] the pile heights."""
        r = self.rules
        D, C, P = r.deck_size, r.n_colors, r.cards_per_color
        n = codes.shape[0]
        cards = torch.empty(7, n, D, dtype=torch.uint8, device=codes.device)
        for g, code in enumerate((LOC_HAND, LOC_MY_EXP, LOC_OPP_EXP, LOC_OPP_KNOWN)):
            torch.bitwise_xor(codes, code, out=cards[g]).clamp_max_(1).bitwise_xor_(1)  # 1 where equal
        # In a pile: codes >= LOC_PILE0. Height in the pile: code - LOC_PILE0 (0 elsewhere).
        torch.clamp(codes, LOC_PILE0 - 1, LOC_PILE0, out=cards[4]).sub_(LOC_PILE0 - 1)
        torch.clamp(codes, LOC_PILE0, 255, out=cards[6]).sub_(LOC_PILE0)
        height = cards[4].view(n, C, P).sum(dim=2, dtype=torch.uint8)  # [n, C]
        # On top: in a pile at height (pile height - 1), i.e. code == LOC_PILE0 - 1 + pile height.
        top_code = (height + (LOC_PILE0 - 1)).repeat_interleave(P, dim=1)
        torch.bitwise_xor(codes, top_code, out=cards[5]).clamp_max_(1).bitwise_xor_(1)
        cards[5] &= cards[4]
        card_out[:, :7].copy_(cards.transpose(0, 1))
        card_out[:, 6] *= 1.0 / P
        return height

    def _expeditions(
        self, codes: torch.Tensor, height: torch.Tensor, t: dict[str, Any], card_out: torch.Tensor, block: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The per expedition block, and per card groups 7-8 (still playable on each expedition);
        returns the per colour sums [sum, group, n, C] and [2 sides, n, C] the expeditions' scores."""
        r = self.rules
        D, C, P, W = r.deck_size, r.n_colors, r.cards_per_color, r.n_wagers
        n = codes.shape[0]
        # Per colour sums, computed with the cards of a colour along the first dimension (sums
        # over an inner dimension of 12 are slow on a CPU, and so is a matmul with 12 x 5 weights):
        # groups my expedition, the opponent's, piles, pile tops, cards whose place I know.
        by_rank = codes.view(n, C, P).permute(2, 0, 1).contiguous()  # [P, n, C]
        groups = torch.empty(P, 5, n, C, dtype=torch.uint8, device=codes.device)
        for g, code in enumerate((LOC_MY_EXP, LOC_OPP_EXP)):
            torch.bitwise_xor(by_rank, code, out=groups[:, g]).clamp_max_(1).bitwise_xor_(1)
        torch.clamp(by_rank, LOC_PILE0 - 1, LOC_PILE0, out=groups[:, 2]).sub_(LOC_PILE0 - 1)
        torch.bitwise_xor(by_rank, height + (LOC_PILE0 - 1), out=groups[:, 3]).clamp_max_(1).bitwise_xor_(1)
        groups[:, 3] &= groups[:, 2]
        torch.clamp(by_rank, 0, 1, out=groups[:, 4])  # known place: any code but unknown (0)
        sums = torch.mm(t["colour_sums"], groups.view(P, -1).to(torch.float32)).view(5, 5, n, C)
        n_cards, wagers, total = sums[0, :2], sums[1, :2], sums[2, :2]  # [2 sides, n, C]
        top_kind = torch.frexp(sums[3, :2])[1].clamp_(min=1) - 1  # exponent of the sum of 2^kind
        card_out[:, 7:9] = t["playable"].index_select(0, top_kind.transpose(0, 1).reshape(-1)).view(n, 2, D)
        opened = n_cards.clamp(max=1)
        score = ((total + r.expedition_cost) * (1 + wagers) + r.bonus * (n_cards >= r.bonus_threshold)) * opened
        side = block.view(n, 6, 2, C)
        values = (
            opened,
            n_cards * (1.0 / P),
            wagers * (1.0 / max(W, 1)),
            total * (1.0 / t["color_total"]),
            top_kind * (1.0 / r.n_ranks),
            score * (1.0 / self.score_scale),
        )
        for f, value in enumerate(values):
            side[:, f] = value.transpose(0, 1)
        return sums, score

    def _piles(self, sums: torch.Tensor, t: dict[str, Any], block: torch.Tensor) -> None:
        """Per colour: pile height, its top card's kind, cards I cannot see."""
        r = self.rules
        C, P, R1 = r.n_colors, r.cards_per_color, r.n_ranks + 1
        n = block.shape[0]
        block[:, :C] = sums[0, 2] * (1.0 / P)
        top_card = t["one_hot_kind"].index_select(0, sums[4, 3].reshape(-1).long())  # kind + 1 of each top card
        block[:, C : C * (R1 + 1)] = top_card.view(n, C * R1)
        block[:, C * (R1 + 1) :] = (P - sums[0, 4]) * (1.0 / P)

    def _totals_deck_turn(self, obs: torch.Tensor, score: torch.Tensor, t: dict[str, Any], block: torch.Tensor) -> None:
        """The totals, the deck and the turn."""
        r = self.rules
        D, C = r.deck_size, r.n_colors
        f32 = torch.float32
        scores = score.sum(dim=2).t() * (1.0 / (C * self.score_scale))  # [n, 2]
        block[:, 0:2] = scores
        block[:, 2] = scores[:, 0] - scores[:, 1]
        deck = obs[:, D].to(f32)
        block[:, 3] = deck * (1.0 / max(1, D - 2 * r.hand_size))
        block[:, 4:8] = (deck.unsqueeze(1) <= t["deck_flags"]).to(f32)
        scalars = obs[:, D + 1 :].long()
        block[:, 8] = (scalars[:, 0] == 0).to(f32)
        block[:, 9] = (scalars[:, 0] == 1).to(f32)
        block[:, 10 : 11 + C] = t["one_hot_color"].index_select(0, scalars[:, 1].clamp(0, C))
        block[:, 11 + C] = scalars[:, 2].to(f32)
        block[:, 12 + C] = (scalars[:, 3] == scalars[:, 2]).to(f32)

    def _hand_outlook(
        self, codes: torch.Tensor, card_out: torch.Tensor, sums: torch.Tensor, t: dict[str, Any], block: torch.Tensor
    ) -> None:
        """Hand outlook: sums per colour of my hand, its cards playable on my expedition, and the
        unseen cards playable there (cards of a colour along the first dimension, as above)."""
        r = self.rules
        C, P, W = r.n_colors, r.cards_per_color, r.n_wagers
        n = codes.shape[0]
        in_hand, playable = card_out[:, 0], card_out[:, 7]
        unseen = codes.clamp_max(1).bitwise_xor_(1).to(torch.float32)
        outlook = torch.stack((in_hand, in_hand * playable, unseen * playable))  # [3, n, D]
        outlook = outlook.view(3, n, C, P).permute(3, 0, 1, 2).reshape(P, -1)
        hand_sums = torch.mm(t["colour_sums"][:3], outlook).view(3, 3, n, C)  # [sum, group, n, C]
        hand_cards, hand_wagers, hand_total = hand_sums[:, 0]
        play_cards, play_wagers, play_total = hand_sums[:, 1]
        unseen_total = hand_sums[2, 2]
        mine = 0  # my side of the expedition sums [sum, side, n, C]
        n_cards, wagers, total = sums[0, mine], sums[1, mine], sums[2, mine]
        cards_after = n_cards + play_cards
        projected = (
            (total + play_total + r.expedition_cost) * (1 + wagers + play_wagers)
            + r.bonus * (cards_after >= r.bonus_threshold)
        ) * cards_after.clamp(max=1)
        inv_total = 1.0 / t["color_total"]
        for f, value in enumerate(
            (
                hand_cards * (1.0 / P),
                hand_wagers * (1.0 / max(W, 1)),
                hand_total * inv_total,
                play_cards * (1.0 / P),
                play_total * inv_total,
                unseen_total * inv_total,
                projected * (1.0 / self.score_scale),
            )
        ):
            block[:, f * C : (f + 1) * C] = value
