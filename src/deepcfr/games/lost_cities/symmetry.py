"""Colour relabelling: the rules treat every colour alike, so permuting the colours of an
information state permutes its legal actions, regrets and policy the same way and changes
nothing else. Training batches relabelled by a random permutation per row (``memory.augment``)
teach every colour what any colour's samples show.

A relabelling of a batch is a tensor ``colour_of [n, C]``: row i's colour c becomes
``colour_of[i, c]``. Applying it to compact observations (layout.py) moves whole colour blocks
of card columns (the canonical order of wager copies within a colour is kept) and maps the
"colour discarded this turn" scalar; actions map by their colour.
"""

from __future__ import annotations

import torch

from deepcfr.host_syncs import to_device

from .rules import LostCitiesRules


class ColourRelabelling:
    def __init__(self, rules: LostCitiesRules):
        self.rules = rules

    def sample(
        self, n: int, generator: torch.Generator | None = None, device: torch.device | str = "cpu"
    ) -> torch.Tensor:
        """``colour_of [n, C]``: an independent uniform permutation of the colours per row."""
        gen_device = generator.device if generator is not None else torch.device(device)
        keys = torch.rand(n, self.rules.n_colors, generator=generator, device=gen_device)
        return to_device(keys.argsort(dim=1), device)  # a pinned, non-blocking copy to a GPU

    @staticmethod
    def inverse(colour_of: torch.Tensor) -> torch.Tensor:
        return colour_of.argsort(dim=1)

    def obs(self, obs: torch.Tensor, colour_of: torch.Tensor) -> torch.Tensor:
        """Relabelled observations ``[n, obs_size]`` (same dtype)."""
        r = self.rules
        D, C, P = r.deck_size, r.n_colors, r.cards_per_color
        n = obs.shape[0]
        source_colour = self.inverse(colour_of)  # new colour -> old colour
        within = torch.arange(P, device=obs.device)
        columns = (source_colour[:, :, None] * P + within).reshape(n, D)
        out = torch.empty_like(obs)
        torch.gather(obs[:, :D], 1, columns, out=out[:, :D])
        out[:, D:] = obs[:, D:]
        # the colour discarded this turn (C: none) follows its colour
        extended = torch.cat([colour_of, torch.full((n, 1), C, dtype=colour_of.dtype, device=obs.device)], dim=1)
        out[:, D + 2] = extended.gather(1, obs[:, D + 2].long().clamp(max=C)[:, None]).squeeze(1).to(obs.dtype)
        return out

    def _action_map(self, colour_map: torch.Tensor) -> torch.Tensor:
        """``[n, A]``: action a of colour c -> the same action of colour ``colour_map[:, c]``."""
        r = self.rules
        R1, K = r.n_ranks + 1, r.num_kinds
        n = colour_map.shape[0]
        kind = torch.arange(R1, device=colour_map.device)
        kinds = (colour_map[:, :, None] * R1 + kind).reshape(n, K)
        deck = torch.full((n, 1), 2 * K, dtype=kinds.dtype, device=kinds.device)
        return torch.cat([kinds, K + kinds, deck, 2 * K + 1 + colour_map], dim=1)

    def kinds(self, kinds: torch.Tensor, colour_of: torch.Tensor) -> torch.Tensor:
        """Relabelled card kind indices ``[n]`` (colour-major, as the play actions; the chance kinds)."""
        R1 = self.rules.n_ranks + 1
        kinds = kinds.long()
        return colour_of.gather(1, (kinds // R1)[:, None]).squeeze(1) * R1 + kinds % R1

    def action_columns(self, colour_of: torch.Tensor) -> torch.Tensor:
        """``[n, A]`` source column of each relabelled action: ``values.gather(1, columns)``
        relabels per-action rows (masks, regrets, policies)."""
        return self._action_map(self.inverse(colour_of))

    def actions(self, actions: torch.Tensor, colour_of: torch.Tensor) -> torch.Tensor:
        """Relabelled action indices, ``[n]`` or ``[n, k]`` (k actions of row i by row i's permutation)."""
        index = actions.long()
        if index.dim() == 1:
            return self._action_map(colour_of).gather(1, index[:, None]).squeeze(1)
        return self._action_map(colour_of).gather(1, index)
