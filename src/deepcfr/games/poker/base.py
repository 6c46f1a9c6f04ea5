"""What the Kuhn and Leduc engines share: parameter checks, dealing, seat lookup, infostate
enumeration and naming. Subclasses set the class attributes and the game rules."""

from __future__ import annotations

import random

import torch

from .common import random_deals
from .tree import game_tree


class PokerGame:
    name: str
    version: int
    num_players = 2
    num_actions: int
    num_cards: int
    deal_size: int
    action_names: tuple[str, ...]

    def __init__(self, **params):
        if params:
            raise ValueError(f"{self.name} takes no game parameters; got {', '.join(sorted(params))}")

    def init(self, n: int, generator: torch.Generator | None = None, device: str | torch.device = "cpu"):
        return self.init_from_deal(random_deals(n, self.num_cards, self.deal_size, generator, device))

    def init_from_deal(self, deals: torch.Tensor):  # pragma: no cover - every game defines it
        raise NotImplementedError

    def deals_of(self, state) -> torch.Tensor:
        """[n, deal_size] the deals the games started from (what ``init_from_deal`` takes)."""
        return state.cards.long()

    def obs_player(self, obs: torch.Tensor) -> torch.Tensor:
        return obs[:, 0].long()  # every poker observation starts with the observer's seat

    def enumerate_infostates(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Every information state where a player acts: ``(obs [M, obs_size], legal mask [M, A])``."""
        tree = game_tree(self)
        return tree.infostate_obs.clone(), tree.infostate_mask.clone()

    def action_name(self, action: int) -> str:
        if not 0 <= action < self.num_actions:
            raise ValueError(f"{self.name} action {action} out of range 0..{self.num_actions - 1}")
        return self.action_names[action]

    def config_dict(self) -> dict:
        return {"name": self.name, "version": self.version}


class PokerReference:
    num_actions: int
    num_cards: int
    deal_size: int

    @classmethod
    def new(cls, seed: int | None = None):
        return cls(random.Random(seed).sample(range(cls.num_cards), cls.deal_size))

    @classmethod
    def from_deal(cls, deal):
        return cls(deal)

    def deal(self) -> list[int]:
        """The deal (what ``from_deal`` takes) of this game."""
        return [int(c) for c in self.cards]

    def legal_actions(self) -> list[int]:  # pragma: no cover - every game defines it
        raise NotImplementedError

    def legal_mask(self) -> list[bool]:
        legal = self.legal_actions()
        return [a in legal for a in range(self.num_actions)]
