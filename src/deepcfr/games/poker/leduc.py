"""Leduc poker, exactly as OpenSpiel's ``leduc_poker`` (2 players, default parameters).

Six cards: ids 0..5, rank ``card // 2`` (0 = J, 1 = Q, 2 = K), two suits per rank. Each player
antes 1 chip and gets a private card; a public card is revealed after the first betting round.
Actions (OpenSpiel's ids): ``FOLD = 0``, ``CALL = 1`` (check or call), ``RAISE = 2`` (raise by 2
chips in round 1, by 4 in round 2). At most 2 raises per round. Fold is legal only when facing a
raise. A round ends when a player calls/checks after the round's first action. Player 0 opens
both rounds. At the showdown a pair with the public card wins, otherwise the higher private rank;
equal ranks split the pot. Returns are chips won, zero-sum.

Observation row (int8, ``obs_size = 11``) for observer p:
  ``[p, p's card (0..5), public card (0..5, -1 before it is revealed),``
  `` round-1 actions (4 slots), round-2 actions (4 slots)]`` with -1 for an empty slot.
This is exactly OpenSpiel's information state (its string also lists pot and money, which the
action history determines); card ids, not ranks, as OpenSpiel's info states distinguish suits.

Features (``encode``, 32 floats): seat one-hot (2), private rank one-hot (3), public rank one-hot
(3; zeros before the reveal), and per action slot a one-hot of fold/call/raise (8 x 3). Suits
do not matter in Leduc, so features use ranks: suit-swapped information states share features.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..base import IllegalActionError, clone_state, index_state
from .base import PokerGame, PokerReference
from .common import check_deal, check_deals, chips_won, own_private_by_seat, private_observation, start_step

FOLD, CALL, RAISE = 0, 1, 2
ACTION_NAMES = ("fold", "call", "raise")
RANK_NAMES = ("J", "Q", "K")
NUM_CARDS = 6
NUM_RANKS = 3
MAX_RAISES = 2
RAISE_AMOUNTS = (2, 4)  # per round
ROUND_SLOTS = 4  # most actions in one round: call, raise, raise, call
LEDUC_VERSION = 1


def card_rank(card: int) -> int:
    return card // 2


def card_name(card: int) -> str:
    return f"{RANK_NAMES[card_rank(card)]}{'sh'[card % 2]}"


@dataclass
class LeducState:
    cards: torch.Tensor  # [n, 3] long: seat 0's card, seat 1's card, public card
    history: torch.Tensor  # [n, 8] long: round-1 slots 0..3, round-2 slots 4..7; -1 = empty
    round: torch.Tensor  # [n] long, 0 or 1
    round_moves: torch.Tensor  # [n] long, actions taken in the current round
    raises: torch.Tensor  # [n] long, raises in the current round
    contrib: torch.Tensor  # [n, 2] long, chips each seat has put in the pot
    player: torch.Tensor  # [n] long, seat to move (meaningless once terminal)
    folded: torch.Tensor  # [n] long, seat that folded, -1 = none
    terminal: torch.Tensor  # [n] bool


class LeducGame(PokerGame):
    """Batched Leduc poker engine (see the module docstring)."""

    name = "leduc"
    version = LEDUC_VERSION
    num_players = 2
    num_actions = 3
    obs_size = 3 + 2 * ROUND_SLOTS
    obs_dtype = torch.int8
    feature_size = 2 + 2 * NUM_RANKS + 2 * ROUND_SLOTS * 3
    max_game_length = 2 * ROUND_SLOTS
    num_cards = NUM_CARDS
    deal_size = 3
    action_names = ACTION_NAMES
    history_start = 3  # observation columns [seat, card, public card, 8 action slots]
    chance_kind_count = NUM_CARDS  # capability "chance_kinds": the public card

    # Construction ------------------------------------------------------------------------
    def init_from_deal(self, deals: torch.Tensor) -> LeducState:
        """``deals [n, 3]``: seat 0's card, seat 1's card, the public card."""
        deals = torch.as_tensor(deals, dtype=torch.long)
        check_deals(deals, NUM_CARDS, self.deal_size)
        n, dev = deals.shape[0], deals.device

        def zeros():
            return torch.zeros(n, dtype=torch.long, device=dev)

        return LeducState(
            cards=deals.clone(),
            history=torch.full((n, 2 * ROUND_SLOTS), -1, dtype=torch.long, device=dev),
            round=zeros(),
            round_moves=zeros(),
            raises=zeros(),
            contrib=torch.ones((n, 2), dtype=torch.long, device=dev),
            player=zeros(),
            folded=torch.full((n,), -1, dtype=torch.long, device=dev),
            terminal=torch.zeros(n, dtype=torch.bool, device=dev),
        )

    # Queries -----------------------------------------------------------------------------
    def current_player(self, state: LeducState) -> torch.Tensor:
        """Seat to move, -1 for terminal rows."""
        return torch.where(state.terminal, -1, state.player)

    def legal_mask(self, state: LeducState) -> torch.Tensor:
        rows = torch.arange(state.player.shape[0], device=state.player.device)
        facing_raise = state.contrib[rows, 1 - state.player] > state.contrib[rows, state.player]
        live = ~state.terminal
        return torch.stack([live & facing_raise, live, live & (state.raises < MAX_RAISES)], dim=1)

    def returns(self, state: LeducState) -> torch.Tensor:
        rank = state.cards // 2
        pair = rank[:, :2] == rank[:, 2:3]
        return chips_won(state, rank[:, :2] + NUM_RANKS * pair.long())  # any pair beats any high card

    # Transition --------------------------------------------------------------------------
    def step(self, state: LeducState, actions: torch.Tensor, check: bool = False) -> LeducState:
        player = state.player
        slot = state.round * ROUND_SLOTS + state.round_moves.clamp(max=ROUND_SLOTS - 1)
        actions, active = start_step(self, state, actions, check, player, slot)
        rows = torch.arange(actions.shape[0], device=actions.device)

        fold = active & (actions == FOLD)
        call = active & (actions == CALL)
        raised = active & (actions == RAISE)
        mine = state.contrib[rows, player]
        theirs = state.contrib[rows, 1 - player]
        raise_amount = torch.where(state.round == 0, RAISE_AMOUNTS[0], RAISE_AMOUNTS[1])
        state.contrib[rows, player] = torch.where(call, theirs, torch.where(raised, theirs + raise_amount, mine))
        state.folded.copy_(torch.where(fold, player, state.folded))

        round_over = call & (state.round_moves >= 1)
        next_round = round_over & (state.round == 0)
        game_over = fold | (round_over & (state.round == 1))
        state.raises.copy_(torch.where(next_round, 0, state.raises + raised.long()))
        state.round_moves.copy_(torch.where(next_round, 0, state.round_moves + active.long()))
        state.round += next_round.long()
        state.player.copy_(torch.where(next_round, 0, torch.where(active, 1 - player, player)))
        state.terminal |= game_over
        return state

    # Observations ------------------------------------------------------------------------
    def observe(self, state: LeducState, player: int | torch.Tensor) -> torch.Tensor:
        public = torch.where(state.round == 1, state.cards[:, 2], -1)[:, None]
        return private_observation(state.cards, player, public, state.history).to(self.obs_dtype)

    def known_deal(self, obs: torch.Tensor) -> torch.Tensor:
        """The observer's card at its seat, the public card once revealed, -1 for the rest
        (capability "determinize")."""
        return torch.cat([own_private_by_seat(obs, -1), obs[:, 2:3].long()], dim=1)

    def encode(self, obs: torch.Tensor) -> torch.Tensor:
        o = obs.long()
        one_hot = torch.nn.functional.one_hot
        seat = one_hot(o[:, 0], 2)
        private = one_hot(o[:, 1] // 2, NUM_RANKS)
        public = one_hot(torch.where(o[:, 2] >= 0, o[:, 2] // 2 + 1, 0), NUM_RANKS + 1)[:, 1:]
        hist = one_hot(o[:, 3:] + 1, 4)[:, :, 1:].flatten(1)  # empty slot (-1) -> zeros
        return torch.cat([seat, private, public, hist], dim=1).to(torch.float32)

    # Chance ------------------------------------------------------------------------------
    def chance_outcomes(
        self,
        state: LeducState,
        actions: torch.Tensor,
        samples: int | None = None,
        generator: torch.Generator | None = None,
        with_kinds: bool = False,
    ):
        """The public card's reveal (games/base.py CAPABILITIES): for each row whose action ends
        the first betting round, the states after it with each card the players do not hold as
        the public card (weight 1/4 each; with ``samples``, that many of them drawn without
        replacement). Returns (source, outcomes, weights), and with ``with_kinds`` each outcome's
        public card (``chance_kinds``)."""
        after = self.step(clone_state(state), actions)
        rows = (after.round > state.round).nonzero().squeeze(1)
        cards = torch.arange(NUM_CARDS, device=state.cards.device)
        free = (cards != state.cards[rows, 0:1]) & (cards != state.cards[rows, 1:2])  # [m, 6], 4 per row
        keys = (
            torch.rand(rows.numel(), NUM_CARDS, generator=generator, device=cards.device)
            if samples
            else cards.double().expand(rows.numel(), NUM_CARDS)
        )
        take = NUM_CARDS - 2 if samples is None else min(int(samples), NUM_CARDS - 2)
        if take < 1:
            raise ValueError(f"samples must be at least 1, got {samples}")
        chosen = keys.masked_fill(~free, float("inf")).argsort(dim=1)[:, :take]  # [m, take] card ids
        source = torch.arange(rows.numel(), device=cards.device).repeat_interleave(take)
        outcomes = index_state(after, rows[source])
        outcomes.cards[:, 2] = chosen.reshape(-1)
        weights = torch.full((source.numel(),), 1.0 / take, dtype=torch.float64, device=cards.device)
        if with_kinds:
            return rows[source], outcomes, weights, outcomes.cards[:, 2].clone()
        return rows[source], outcomes, weights

    def chance_kinds(self, state: LeducState, actions: torch.Tensor):
        """The public card's reveal by card (games/base.py CAPABILITIES): for each row whose action
        ends the first betting round, 1/4 on each card the players do not hold, and the card dealt.
        Returns (source, probabilities [M, 6], taken)."""
        after = self.step(clone_state(state), actions)
        rows = (after.round > state.round).nonzero().squeeze(1)
        cards = torch.arange(NUM_CARDS, device=state.cards.device)
        free = (cards != state.cards[rows, 0:1]) & (cards != state.cards[rows, 1:2])
        return rows, free.double() / (NUM_CARDS - 2), state.cards[rows, 2]


class LeducReference(PokerReference):
    """One game of Leduc poker in plain Python (the test oracle; also for play and replays)."""

    num_actions = 3
    num_cards = NUM_CARDS
    deal_size = 3

    def __init__(self, deal):
        check_deal(deal, NUM_CARDS, 3)
        self.cards = tuple(int(c) for c in deal)  # seat 0, seat 1, public
        self.round = 0
        self.rounds: list[list[int]] = [[], []]  # actions of each betting round
        self.raises = 0
        self.contrib = [1, 1]
        self.player = 0
        self.folded: int | None = None
        self.terminal = False

    def current_player(self) -> int:
        return -1 if self.terminal else self.player

    def legal_actions(self) -> list[int]:
        if self.terminal:
            return []
        p = self.player
        actions = []
        if self.contrib[1 - p] > self.contrib[p]:
            actions.append(FOLD)
        actions.append(CALL)
        if self.raises < MAX_RAISES:
            actions.append(RAISE)
        return actions

    def apply(self, action: int) -> None:
        legal = self.legal_actions()
        if action not in legal:
            what = ACTION_NAMES[action] if action in (FOLD, CALL, RAISE) else "out of range"
            why = "the game is over" if self.terminal else f"legal: {[ACTION_NAMES[a] for a in legal]}"
            raise IllegalActionError(f"leduc: illegal action {action} ({what}); {why}")
        p = self.player
        moves = self.rounds[self.round]
        moves.append(action)
        if action == FOLD:
            self.folded = p
            self.terminal = True
            return
        if action == RAISE:
            self.contrib[p] = self.contrib[1 - p] + RAISE_AMOUNTS[self.round]
            self.raises += 1
        else:
            self.contrib[p] = self.contrib[1 - p]
            if len(moves) >= 2:  # a check or call after the round's first action ends the round
                if self.round == 1:
                    self.terminal = True
                    return
                self.round, self.raises, self.player = 1, 0, 0
                return
        self.player = 1 - p

    def is_terminal(self) -> bool:
        return self.terminal

    def hand_strength(self, player: int) -> int:
        rank, public_rank = card_rank(self.cards[player]), card_rank(self.cards[2])
        return rank + (NUM_RANKS if rank == public_rank else 0)

    def returns(self) -> list[float]:
        if not self.terminal:
            return [0.0, 0.0]
        if self.folded is not None:
            won = self.contrib[self.folded] if self.folded == 1 else -self.contrib[0]
        else:
            s0, s1 = self.hand_strength(0), self.hand_strength(1)
            won = self.contrib[0] * ((s0 > s1) - (s0 < s1))
        return [float(won), float(-won)]

    def observe(self, player: int) -> list[int]:
        public = self.cards[2] if self.round == 1 else -1
        slots = [r + [-1] * (ROUND_SLOTS - len(r)) for r in self.rounds]
        return [player, self.cards[player], public] + slots[0] + slots[1]

    def __repr__(self) -> str:
        rounds = "/".join("".join("fcr"[a] for a in r) for r in self.rounds)
        return f"LeducReference(cards={[card_name(c) for c in self.cards]}, history={rounds!r})"
