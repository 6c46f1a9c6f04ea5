"""Liar's Dice with one six-sided die per player, exactly as OpenSpiel's ``liars_dice`` with its
default parameters (``numdice=1``, ``dice_sides=6``, ``bidding_rule=reset-face``, 2 players).

Each player rolls one die in secret (faces 1..6, stored as 0..5 like OpenSpiel's chance
outcomes; seat 0 rolls first). Player 0 bids first, then the players alternate. A bid
``(quantity, face)`` claims that at least ``quantity`` of the two dice show ``face``; it is
action ``(quantity - 1) * 6 + (face - 1)``, so bids 0..11 run ``1-1 .. 1-6, 2-1 .. 2-6`` and
each bid must be a larger action than the last one (OpenSpiel's "reset-face" order: a higher
quantity with any face, or the same quantity with a higher face). ``LIAR = 12`` calls the last
bid a lie; it is legal once a bid stands, and after the top bid ``2-6`` it is the only action.
Face 6 is wild ("stars"): a die showing 6 counts for every face. If the called bid holds, the
caller loses, otherwise the bidder loses; the loser gets -1 and the winner +1.

Observation row (int8, ``obs_size = 15``) for observer p: ``[p, p's die (0..5), a0 .. a12]``
with ``a_t`` the t-th action of the game (-1 = not taken yet). It identifies p's information
state exactly (OpenSpiel's info state string is the die followed by the bids). Bids increase,
so at most 12 bids and a call: 13 decisions.

Features (``encode``, 45 floats): seat one-hot (2), own die one-hot (6), the observer's bids
(12 bits), the opponent's bids (12 bits), the standing bid one-hot (12; zeros before the first
bid) and whether liar was called (1).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from itertools import product
from typing import cast

import torch

from .base import IllegalActionError
from .poker.base import PokerGame, PokerReference
from .poker.common import own_private_by_seat, private_observation, start_step

NUM_FACES = 6
NUM_DICE = 2  # one per player
WILD_FACE = NUM_FACES - 1  # face 6 (stored as 5) counts for every face
NUM_BIDS = NUM_DICE * NUM_FACES  # quantities 1..2 x faces 1..6
LIAR = NUM_BIDS  # action 12
NUM_ACTIONS = NUM_BIDS + 1
MAX_MOVES = NUM_BIDS + 1  # every bid once, then the call
LIARS_DICE_VERSION = 1


def bid_quantity(bid: int) -> int:
    return bid // NUM_FACES + 1


def bid_face(bid: int) -> int:
    """Face of a bid, 1..6."""
    return bid % NUM_FACES + 1


def _action_names() -> tuple[str, ...]:
    # OpenSpiel's action strings: "quantity-face", then "Liar".
    return tuple(f"{bid_quantity(b)}-{bid_face(b)}" for b in range(NUM_BIDS)) + ("Liar",)


ACTION_NAMES = _action_names()


def check_dice(dice) -> None:
    values = list(dice)
    if len(values) != NUM_DICE or any(not 0 <= int(d) < NUM_FACES for d in values):
        raise ValueError(f"invalid deal {values}: need {NUM_DICE} dice, each a face in 0..{NUM_FACES - 1}")


def check_dice_batch(deals: torch.Tensor) -> None:
    """The batched form of check_dice (one sync; init_from_deal is not a hot path)."""
    if deals.dim() != 2 or deals.shape[1] != NUM_DICE:
        raise ValueError(f"invalid deal: dice must have shape [n, {NUM_DICE}], got {list(deals.shape)}")
    bad = (~((deals >= 0) & (deals < NUM_FACES)).all(dim=1)).nonzero()
    if bad.numel():
        i = int(bad[0, 0])
        raise ValueError(f"invalid deal {deals[i].tolist()} in row {i}: each die is a face in 0..{NUM_FACES - 1}")


@dataclass
class LiarsDiceState:
    dice: torch.Tensor  # [n, 2] long, each seat's die (0..5 = faces 1..6)
    history: torch.Tensor  # [n, 13] long, actions so far, -1 = not taken
    num_moves: torch.Tensor  # [n] long
    last_bid: torch.Tensor  # [n] long, the standing bid, -1 = none yet
    caller: torch.Tensor  # [n] long, seat that called liar, -1 = none
    terminal: torch.Tensor  # [n] bool


class LiarsDiceGame(PokerGame):
    """Batched Liar's Dice engine (see the module docstring). PokerGame is the shared base of the
    small enumerable games (parameter check, information-state enumeration, action names); its
    card deal is replaced here by independent dice rolls."""

    name = "liars_dice"
    version = LIARS_DICE_VERSION
    num_players = 2
    num_actions = NUM_ACTIONS
    obs_size = 2 + MAX_MOVES
    obs_dtype = torch.int8
    feature_size = 2 + NUM_FACES + 3 * NUM_BIDS + 1
    max_game_length = MAX_MOVES
    num_faces = NUM_FACES
    deal_size = NUM_DICE
    action_names = ACTION_NAMES
    history_start = 2  # observation columns [seat, die, a0 .. a12]

    # Construction ------------------------------------------------------------------------
    def init(
        self, n: int, generator: torch.Generator | None = None, device: str | torch.device = "cpu"
    ) -> LiarsDiceState:
        if n < 0:
            raise ValueError(f"number of games n must be >= 0, got {n}")
        gen_device = generator.device if generator is not None else torch.device(device)
        dice = torch.randint(0, NUM_FACES, (n, NUM_DICE), generator=generator, device=gen_device)
        return self.init_from_deal(dice.to(device))

    def init_from_deal(self, deals: torch.Tensor) -> LiarsDiceState:
        """``deals [n, 2]``: the dice of seats 0 and 1 (0..5 = faces 1..6)."""
        deals = torch.as_tensor(deals, dtype=torch.long)
        check_dice_batch(deals)
        n, dev = deals.shape[0], deals.device
        return LiarsDiceState(
            dice=deals.clone(),
            history=torch.full((n, MAX_MOVES), -1, dtype=torch.long, device=dev),
            num_moves=torch.zeros(n, dtype=torch.long, device=dev),
            last_bid=torch.full((n,), -1, dtype=torch.long, device=dev),
            caller=torch.full((n,), -1, dtype=torch.long, device=dev),
            terminal=torch.zeros(n, dtype=torch.bool, device=dev),
        )

    def chance_deals(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Every roll of the two dice with its probability (36, all equally likely)."""
        deals = torch.tensor(list(product(range(NUM_FACES), repeat=NUM_DICE)), dtype=torch.long)
        return deals, torch.full((deals.shape[0],), 1.0 / deals.shape[0], dtype=torch.float64)

    def hidden_deals(self, obs: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
        """Dice consistent with what each row's observer sees (capability "determinize"): its own
        die, the other rolled uniformly (dice are independent)."""
        other = torch.randint(0, NUM_FACES, (obs.shape[0], 1), generator=generator, device=obs.device)
        return own_private_by_seat(obs, other)

    def deals_of(self, state: LiarsDiceState) -> torch.Tensor:
        """The deal of each row (what ``init_from_deal`` takes)."""
        return state.dice.clone()

    # Queries -----------------------------------------------------------------------------
    def current_player(self, state: LiarsDiceState) -> torch.Tensor:
        """Seat to move, -1 for terminal rows."""
        return torch.where(state.terminal, -1, state.num_moves % 2)

    def legal_mask(self, state: LiarsDiceState) -> torch.Tensor:
        actions = torch.arange(NUM_ACTIONS, device=state.last_bid.device)
        mask = (actions[None, :] > state.last_bid[:, None]) & ~state.terminal[:, None]  # liar (12) beats every bid
        mask[:, LIAR] &= state.last_bid >= 0  # nothing to call before the first bid
        return mask

    def returns(self, state: LiarsDiceState) -> torch.Tensor:
        bid = state.last_bid.clamp(min=0)
        quantity, face = bid // NUM_FACES + 1, bid % NUM_FACES
        count = ((state.dice == face[:, None]) | (state.dice == WILD_FACE)).sum(dim=1)
        loser = torch.where(count >= quantity, state.caller, 1 - state.caller)  # a true bid: the caller loses
        r0 = torch.where(loser == 1, 1, -1) * state.terminal
        return torch.stack([r0, -r0], dim=1).to(torch.float32)

    # Transition --------------------------------------------------------------------------
    def step(self, state: LiarsDiceState, actions: torch.Tensor, check: bool = False) -> LiarsDiceState:
        player = state.num_moves % 2
        actions, active = start_step(self, state, actions, check, player, state.num_moves.clamp(max=MAX_MOVES - 1))
        called = active & (actions == LIAR)
        state.last_bid.copy_(torch.where(active & ~called, actions, state.last_bid))
        state.caller.copy_(torch.where(called, player, state.caller))
        state.terminal |= called
        state.num_moves += active.long()
        return state

    # Observations ------------------------------------------------------------------------
    def observe(self, state: LiarsDiceState, player: int | torch.Tensor) -> torch.Tensor:
        return private_observation(state.dice, player, state.history).to(self.obs_dtype)

    def encode(self, obs: torch.Tensor) -> torch.Tensor:
        o = obs.long()
        one_hot = torch.nn.functional.one_hot
        seat = o[:, 0]
        history = o[:, 2:]
        # [n, 13 slots, 12 bids]: which bid each slot holds (an empty slot or the call: zeros)
        slot_bids = one_hot(torch.where(history < NUM_BIDS, history + 1, 0), NUM_BIDS + 1)[:, :, 1:]
        by_seat0, by_seat1 = slot_bids[:, 0::2].sum(dim=1), slot_bids[:, 1::2].sum(dim=1)
        first = (seat == 0)[:, None]
        mine = torch.where(first, by_seat0, by_seat1)
        theirs = torch.where(first, by_seat1, by_seat0)
        standing = torch.where(history < NUM_BIDS, history, -1).max(dim=1).values  # bids increase
        last = one_hot(standing + 1, NUM_BIDS + 1)[:, 1:]
        called = (history == LIAR).any(dim=1, keepdim=True)
        return torch.cat([one_hot(seat, 2), one_hot(o[:, 1], NUM_FACES), mine, theirs, last, called], dim=1).to(
            torch.float32
        )


class LiarsDiceReference(PokerReference):
    """One game of Liar's Dice in plain Python (the test oracle; also for play and replays)."""

    num_actions = NUM_ACTIONS
    deal_size = NUM_DICE

    def __init__(self, deal):
        check_dice(deal)
        self.dice = tuple(int(d) for d in deal)
        self.history: list[int] = []
        self.terminal = False

    @classmethod
    def new(cls, seed: int | None = None):
        rng = random.Random(seed)
        return cls([rng.randrange(NUM_FACES) for _ in range(NUM_DICE)])

    def deal(self) -> list[int]:
        """The dice of this game (what ``from_deal`` takes)."""
        return list(self.dice)

    @property
    def last_bid(self) -> int | None:
        bids = [a for a in self.history if a != LIAR]
        return bids[-1] if bids else None

    def current_player(self) -> int:
        return -1 if self.terminal else len(self.history) % 2

    def legal_actions(self) -> list[int]:
        if self.terminal:
            return []
        last = self.last_bid
        if last is None:
            return list(range(NUM_BIDS))
        return list(range(last + 1, NUM_BIDS)) + [LIAR]

    def apply(self, action: int) -> None:
        legal = self.legal_actions()
        if action not in legal:
            what = ACTION_NAMES[action] if 0 <= action < NUM_ACTIONS else "out of range"
            why = "the game is over" if self.terminal else f"legal: {[ACTION_NAMES[a] for a in legal]}"
            raise IllegalActionError(f"liars_dice: illegal action {action} ({what}); {why}")
        self.history.append(action)
        if action == LIAR:
            self.terminal = True

    def is_terminal(self) -> bool:
        return self.terminal

    def bid_holds(self) -> bool:
        """Whether the standing bid is true: enough dice show its face or the wild 6."""
        bid = cast(int, self.last_bid)  # asked once a bid stands
        face = bid_face(bid) - 1
        count = sum(1 for d in self.dice if d == face or d == WILD_FACE)
        return count >= bid_quantity(bid)

    def returns(self) -> list[float]:
        if not self.terminal:
            return [0.0, 0.0]
        caller = (len(self.history) - 1) % 2
        bidder = 1 - caller
        loser = caller if self.bid_holds() else bidder
        return [-1.0, 1.0] if loser == 0 else [1.0, -1.0]

    def observe(self, player: int) -> list[int]:
        return [player, self.dice[player]] + self.history + [-1] * (MAX_MOVES - len(self.history))

    def __repr__(self) -> str:
        return (
            f"LiarsDiceReference(dice={[d + 1 for d in self.dice]}, history={[ACTION_NAMES[a] for a in self.history]})"
        )
