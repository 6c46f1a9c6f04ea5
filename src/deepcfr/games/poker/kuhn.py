"""Kuhn poker, exactly as OpenSpiel's ``kuhn_poker`` (2 players).

Cards 0 (J), 1 (Q), 2 (K); each player antes 1 chip and gets one card. Actions: ``PASS = 0``
(check, or fold when facing a bet) and ``BET = 1`` (bet 1 chip, or call). Player 0 acts first.
Sequences: pass-pass and bet-bet and pass-bet-bet go to a showdown (higher card wins the pot);
bet-pass and pass-bet-pass end with a fold. Returns are chips won, zero-sum.

Observation row (int8, ``obs_size = 5``) for observer p: ``[p, p's card, a0, a1, a2]`` where
``a_t`` is the t-th action of the game (-1 = not taken yet). It identifies p's information state
exactly (OpenSpiel's info state string is the card followed by the action history).

Features (``encode``, 11 floats): seat one-hot (2), card one-hot (3), and per action slot a
one-hot of pass/bet (3 x 2; zeros for an empty slot).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..base import IllegalActionError
from .base import PokerGame, PokerReference
from .common import check_deal, check_deals, chips_won, own_private_by_seat, private_observation, start_step

PASS, BET = 0, 1
ACTION_NAMES = ("pass", "bet")
CARD_NAMES = ("J", "Q", "K")
NUM_CARDS = 3
MAX_MOVES = 3
KUHN_VERSION = 1


@dataclass
class KuhnState:
    cards: torch.Tensor  # [n, 2] long, each seat's private card
    history: torch.Tensor  # [n, 3] long, actions so far, -1 = not taken
    num_moves: torch.Tensor  # [n] long
    contrib: torch.Tensor  # [n, 2] long, chips each seat has put in the pot
    folded: torch.Tensor  # [n] long, seat that folded, -1 = none
    terminal: torch.Tensor  # [n] bool


class KuhnGame(PokerGame):
    """Batched Kuhn poker engine (see the module docstring)."""

    name = "kuhn"
    version = KUHN_VERSION
    num_players = 2
    num_actions = 2
    obs_size = 2 + MAX_MOVES
    obs_dtype = torch.int8
    feature_size = 2 + NUM_CARDS + 2 * MAX_MOVES
    max_game_length = MAX_MOVES
    num_cards = NUM_CARDS
    deal_size = 2
    action_names = ACTION_NAMES
    history_start = 2  # observation columns [seat, card, a0, a1, a2]

    # Construction ------------------------------------------------------------------------
    def init_from_deal(self, deals: torch.Tensor) -> KuhnState:
        """``deals [n, 2]``: the private cards of seats 0 and 1."""
        deals = torch.as_tensor(deals, dtype=torch.long)
        check_deals(deals, NUM_CARDS, self.deal_size)
        n, dev = deals.shape[0], deals.device
        return KuhnState(
            cards=deals.clone(),
            history=torch.full((n, MAX_MOVES), -1, dtype=torch.long, device=dev),
            num_moves=torch.zeros(n, dtype=torch.long, device=dev),
            contrib=torch.ones((n, 2), dtype=torch.long, device=dev),
            folded=torch.full((n,), -1, dtype=torch.long, device=dev),
            terminal=torch.zeros(n, dtype=torch.bool, device=dev),
        )

    # Queries -----------------------------------------------------------------------------
    def current_player(self, state: KuhnState) -> torch.Tensor:
        """Seat to move, -1 for terminal rows."""
        return torch.where(state.terminal, -1, state.num_moves % 2)

    def legal_mask(self, state: KuhnState) -> torch.Tensor:
        return (~state.terminal)[:, None].expand(-1, self.num_actions).clone()

    def returns(self, state: KuhnState) -> torch.Tensor:
        return chips_won(state, state.cards)  # the higher card is the stronger hand

    # Transition --------------------------------------------------------------------------
    def step(self, state: KuhnState, actions: torch.Tensor, check: bool = False) -> KuhnState:
        player = state.num_moves % 2
        actions, active = start_step(self, state, actions, check, player, state.num_moves.clamp(max=MAX_MOVES - 1))
        rows = torch.arange(actions.shape[0], device=actions.device)
        mine = state.contrib[rows, player]
        facing_bet = state.contrib[rows, 1 - player] > mine
        bet = active & (actions == BET)
        passed = active & (actions == PASS)
        state.contrib[rows, player] = mine + bet.long()
        fold = passed & facing_bet
        state.folded.copy_(torch.where(fold, player, state.folded))
        # pass-pass, a called bet, or a fold ends the game
        ends = fold | (bet & facing_bet) | (passed & ~facing_bet & (state.num_moves == 1))
        state.terminal |= ends
        state.num_moves += active.long()
        return state

    # Observations ------------------------------------------------------------------------
    def observe(self, state: KuhnState, player: int | torch.Tensor) -> torch.Tensor:
        return private_observation(state.cards, player, state.history).to(self.obs_dtype)

    def known_deal(self, obs: torch.Tensor) -> torch.Tensor:
        """The observer's own card at its seat, -1 at the other (capability "determinize")."""
        return own_private_by_seat(obs, -1)

    def encode(self, obs: torch.Tensor) -> torch.Tensor:
        o = obs.long()
        one_hot = torch.nn.functional.one_hot
        seat = one_hot(o[:, 0], 2)
        card = one_hot(o[:, 1], NUM_CARDS)
        hist = one_hot(o[:, 2:] + 1, 3)[:, :, 1:].flatten(1)  # empty slot (-1) -> zeros
        return torch.cat([seat, card, hist], dim=1).to(torch.float32)


class KuhnReference(PokerReference):
    """One game of Kuhn poker in plain Python (the test oracle; also for play and replays)."""

    num_actions = 2
    num_cards = NUM_CARDS
    deal_size = 2

    def __init__(self, deal):
        check_deal(deal, NUM_CARDS, 2)
        self.cards = tuple(int(c) for c in deal)
        self.history: list[int] = []
        self.contrib = [1, 1]
        self.folded: int | None = None
        self.terminal = False

    def current_player(self) -> int:
        return -1 if self.terminal else len(self.history) % 2

    def legal_actions(self) -> list[int]:
        return [] if self.terminal else [PASS, BET]

    def apply(self, action: int) -> None:
        if action not in self.legal_actions():
            what = ACTION_NAMES[action] if action in (PASS, BET) else "out of range"
            why = "the game is over" if self.terminal else "legal: pass (0), bet (1)"
            raise IllegalActionError(f"kuhn: illegal action {action} ({what}); {why}")
        p = self.current_player()
        facing_bet = self.contrib[1 - p] > self.contrib[p]
        self.history.append(action)
        if action == BET:
            self.contrib[p] += 1
            if facing_bet:
                self.terminal = True  # called: showdown
        elif facing_bet:
            self.folded = p
            self.terminal = True
        elif len(self.history) == 2:
            self.terminal = True  # pass-pass: showdown

    def is_terminal(self) -> bool:
        return self.terminal

    def returns(self) -> list[float]:
        if not self.terminal:
            return [0.0, 0.0]
        if self.folded is not None:
            winner = 1 - self.folded
        else:
            winner = 0 if self.cards[0] > self.cards[1] else 1
        won = self.contrib[1 - winner]
        return [float(won), float(-won)] if winner == 0 else [float(-won), float(won)]

    def observe(self, player: int) -> list[int]:
        return [player, self.cards[player]] + self.history + [-1] * (MAX_MOVES - len(self.history))

    def __repr__(self) -> str:
        hist = "".join("pb"[a] for a in self.history)
        return f"KuhnReference(cards={[CARD_NAMES[c] for c in self.cards]}, history={hist!r})"
