"""What the Kuhn and Leduc engines share: parameter checks, dealing, seat lookup, infostate
enumeration and naming. Subclasses set the class attributes and the game rules."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from itertools import permutations
from typing import TYPE_CHECKING, Any

import torch

from ..base import index_state, tensor_fields
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
    obs_size: int
    max_game_length: int
    step: Callable[..., Any]  # the game's step(state, actions)

    def __init__(self, **params):
        if params:
            raise ValueError(f"{self.name} takes no game parameters; got {', '.join(sorted(params))}")

    def init(self, n: int, generator: torch.Generator | None = None, device: str | torch.device = "cpu"):
        return self.init_from_deal(random_deals(n, self.num_cards, self.deal_size, generator, device))

    def init_from_deal(self, deals: torch.Tensor):  # pragma: no cover - every game defines it
        raise NotImplementedError

    def chance_deals(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Every deal (distinct cards in deal order: the seats', then any public card) with its
        probability (all equally likely)."""
        deals = torch.tensor(list(permutations(range(self.num_cards), self.deal_size)), dtype=torch.long)
        return deals, torch.full((deals.shape[0],), 1.0 / deals.shape[0], dtype=torch.float64)

    def is_terminal(self, state) -> torch.Tensor:
        return state.terminal.clone()

    def deals_of(self, state) -> torch.Tensor:
        """[n, deal_size] the deals the games started from (what ``init_from_deal`` takes)."""
        return state.cards.long()

    def obs_player(self, obs: torch.Tensor) -> torch.Tensor:
        return obs[:, 0].long()  # every poker observation starts with the observer's seat

    # Determinization (capabilities "determinize" and "action_history") -------------------------
    history_start: int  # the observation's first action column (the rest are action slots, -1 = empty)

    def action_history(self, obs: torch.Tensor) -> torch.Tensor:
        """``[n, max_game_length]`` long: the actions of each game so far in the order they were
        taken, -1 after the last (the observation holds them all; empty slots, such as the end of
        a betting round, are squeezed out, keeping the order)."""
        slots = obs[:, self.history_start :].long()
        order = (slots < 0).to(torch.uint8).argsort(dim=1, stable=True)
        history = slots.gather(1, order)
        pad = self.max_game_length - history.shape[1]
        return torch.nn.functional.pad(history, (0, pad), value=-1) if pad > 0 else history

    def known_deal(self, obs: torch.Tensor) -> torch.Tensor:
        """``[n, deal_size]``: the deal's cards the observer of each row sees, -1 for the hidden ones."""
        raise NotImplementedError  # pragma: no cover - every card game defines it

    def hidden_deals(self, obs: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
        """``[n, deal_size]`` deals consistent with what each row's observer sees: the hidden
        cards drawn uniformly without replacement from the cards the observer has not seen."""
        known = self.known_deal(obs).long()
        n = known.shape[0]
        cards = torch.arange(self.num_cards, device=obs.device)
        seen = (known[:, :, None] == cards).any(dim=1)  # [n, num_cards]
        keys = torch.rand(n, self.num_cards, generator=generator, device=obs.device).masked_fill(seen, 2.0)
        unseen_order = keys.argsort(dim=1)  # the unseen cards first, in random order
        hidden = known < 0
        rank = (hidden.long().cumsum(dim=1) - 1).clamp(min=0)  # j-th hidden position takes the j-th card
        return torch.where(hidden, unseen_order.gather(1, rank), known)

    def determinize(self, obs: torch.Tensor, d: int, generator: torch.Generator | None = None):
        """``n * d`` states consistent with ``obs [n, obs_size]`` (row ``i * d + j`` is sample ``j``
        of ``obs[i]``): a deal from ``hidden_deals`` replayed through the observed action history,
        so ``observe(state, observer) == obs`` bit for bit. ``generator`` on ``obs.device``."""
        if obs.dim() != 2 or obs.shape[1] != self.obs_size:
            raise ValueError(f"obs must have shape [n, {self.obs_size}], got {tuple(obs.shape)}")
        if d < 1:
            raise ValueError(f"d (determinizations per observation) must be at least 1, got {d}")
        obs = obs.repeat_interleave(d, dim=0)
        return self.replay(self.init_from_deal(self.hidden_deals(obs, generator)), self.action_history(obs))

    def history_deals(
        self, obs: torch.Tensor, history: torch.Tensor, d: int, generator: torch.Generator | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """(``[n * d, deal_size]`` deals consistent with ``obs``, their log weights: 0; capability
        "history_deals"): the observation holds the whole history, and no public action rules out
        a hidden card, so they are ``hidden_deals``'s, drawn from the prior."""
        if history.shape[0] != obs.shape[0]:
            raise ValueError(f"history must have one row per observation ({obs.shape[0]}), got {history.shape[0]}")
        deals = self.hidden_deals(obs.repeat_interleave(d, dim=0), generator)
        return deals, torch.zeros(deals.shape[0], dtype=torch.float64, device=deals.device)

    def replay(self, state, history: torch.Tensor):
        """``state`` advanced in place by each row's actions ``history [n, L]`` (-1 = no more
        actions for that row): one batched step per column, over the rows still replaying."""
        for t in range(history.shape[1]):
            actions = history[:, t]
            going = actions >= 0
            if not bool(going.any()):
                break
            if bool(going.all()):
                self.step(state, actions)
                continue
            rows = going.nonzero().squeeze(1)
            moved = self.step(index_state(state, rows), actions[rows])
            for name in tensor_fields(state):
                getattr(state, name)[rows] = getattr(moved, name)
        return state

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
    cards: tuple[int, ...]

    if TYPE_CHECKING:  # each game's reference takes its deal

        def __init__(self, deal: Sequence[int]) -> None: ...

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
