"""The batched game API every game implements, and the state helpers shared by all of them.

A batched engine advances N games at once. Its state is a dataclass whose fields are tensors
with a leading batch dimension (plus, optionally, non-tensor metadata fields marked with
``field(metadata={"static": True})`` that are shared by every row).

Conventions (all games):
- ``step(state, actions)`` updates ``state`` in place and returns it; rows that are already
  terminal are left unchanged whatever their action. Call ``clone_state`` first to keep the old
  state (traversal branches with ``index_state``, which copies).
- ``current_player(state)`` is the seat to move (0 or 1) on live rows and -1 on terminal rows
  (``is_terminal``); where a seat is needed for every row, mask by ``is_terminal`` or use
  ``.clamp(min=0)``.
- ``observe(state, player)`` returns the compact information state ``[n, obs_size]`` of
  ``obs_dtype`` (small ints). It contains everything that player may know, and the observer's
  seat, so that ``obs_player(obs)`` recovers it: a policy needs nothing but obs and mask.
- ``encode(obs)`` is a pure batched function ``[n, obs_size] -> [n, feature_size]`` float32.
- Optional capabilities (``CAPABILITIES``): what only some games can do, such as
  ``determinize`` (the search), ``symmetry`` (``memory.augment``: Lost Cities' colours, see
  lost_cities/symmetry.py) or ``match_diagnostics`` (the arena). Code above ``games`` asks for a
  capability with ``capability(game, name)`` (a clear error naming the game and the capability
  when it lacks it) or ``has_capability(game, name)``, never for the game's name.
- A *policy* is a callable ``policy(obs, mask) -> probs [n, A]`` (rows sum to 1, zero on
  illegal actions). A *bot* is an object with ``act(obs, mask, generator) -> actions [n]``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar, cast, runtime_checkable

import torch

S = TypeVar("S")

Policy = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


class IllegalActionError(ValueError):
    """An action that is not legal in the state it was applied to."""


@runtime_checkable
class BatchedGame(Protocol):
    name: str
    version: int  # bump when rules, observation layout or encoding change (checkpoints check it)
    num_players: int  # always 2 here
    num_actions: int  # A
    obs_size: int  # K
    obs_dtype: torch.dtype
    feature_size: int  # F
    max_game_length: int  # upper bound on decisions in one game (a cap for long games)

    def init(self, n: int, generator: torch.Generator | None = None, device: str | torch.device = "cpu") -> Any: ...
    def current_player(self, state: Any) -> torch.Tensor: ...
    def legal_mask(self, state: Any) -> torch.Tensor: ...
    def step(self, state: Any, actions: torch.Tensor, check: bool = False) -> Any: ...
    def is_terminal(self, state: Any) -> torch.Tensor: ...
    def returns(self, state: Any) -> torch.Tensor: ...
    def observe(self, state: Any, player: int | torch.Tensor) -> torch.Tensor: ...
    def encode(self, obs: torch.Tensor) -> torch.Tensor: ...
    def obs_player(self, obs: torch.Tensor) -> torch.Tensor: ...
    def action_name(self, action: int) -> str: ...
    def config_dict(self) -> dict: ...


# Optional capabilities: a game that has one offers the attribute or method of that name, with
# the meaning given here (``tests/test_game_contract.py`` checks each one a game declares).
CAPABILITIES: dict[str, str] = {
    "determinize": "determinization for the search: determinize(obs, d, generator, hand_logits=None) -> n * d "
    "full states consistent with the observations (row i * d + j is sample j of obs[i]; the hidden "
    "information drawn uniformly, or, with hand_logits [n, obs cards] (games with hidden_hand), "
    "the opponent's unknown cards drawn one by one in proportion to exp(logit))",
    "shuffle_deck": "shuffle_deck(state, d, generator) -> n * d copies of the full states (row i * d + j is copy j "
    "of state i), each with its undrawn cards in a fresh uniform order and everything else as it "
    "is: the worlds of a search that knows all but the order still to be dealt (the oracle bound)",
    "hidden_hand": "hidden_hand(obs, other_obs) -> (unknown [n, hand_kind_count], held [n, hand_kind_count]): by "
    "kind of card (copies no observer can tell apart share one), the cards obs's observer cannot "
    "see and how many of them the other seat holds (other_obs: its view of the same states); "
    "card_kinds(device) -> [cards] each card's kind: what a learned belief of the opponent's hand "
    "is fitted to (fitted/hand_belief.py)",
    "symmetry": "a relabelling the rules cannot tell apart, with sample(n, generator, device), obs(obs, r), "
    "action_columns(r), actions(actions, r) and inverse(r)",
    "scores": "scores(state) -> [n, 2] points of each seat (the utilities are a function of them)",
    "cut_off": "cut_off(state) -> [n] bool: games ended by the ply cap before their natural end",
    "match_diagnostics": "match_diagnostics(state, seat_a) -> {name: float}: play diagnostics of finished "
    "games for the side in seat_a (suffix _a) and the other side (suffix _b)",
    "move_diagnostics": "move_diagnostics(obs, actions) -> {name: [n] float}: what each move shows of the play "
    "of its mover (obs: the mover's observation before the move); the arena sums them per game "
    "and side (match fields NAME_a, NAME_b: per game)",
    "chance_outcomes": "chance_outcomes(state, actions, samples=None, generator=None) -> (source [M], outcomes, "
    "weights [M] float64): where chance decides what step(state, actions) leads to (a card "
    "drawn, a card revealed), the states it can lead to, for those rows only (source[j]: the "
    "row of outcome j; each row's weights sum to 1; state is left unchanged): the weighted mean "
    "of a function of the outcomes is its expectation over chance given everything dealt "
    "but not yet revealed being unknown (exact; with samples, unbiased from that many outcomes "
    "drawn without replacement); with_kinds=True (games with chance_kinds) adds [M] the kind "
    "of each outcome",
    "chance_kinds": "chance_kinds(state, actions) -> (source [M], probabilities [M, chance_kind_count] float64, "
    "taken [M] long): the rows where chance decides what step(state, actions) leads to (as "
    "chance_outcomes), the probability of each kind of outcome (a card's identity: outcomes "
    "no observer can tell apart share a kind) given everything not yet revealed being unknown, "
    "and the kind the state will actually bring; a state has at most one action that involves "
    "chance, so a state and a kind name the outcome. The game's chance_kind_count says how many "
    "kinds there are, and its symmetry (where it has one) relabels them with kinds(kinds, r)",
    "chance_deals": "chance_deals() -> (deals, probabilities) of every deal: the game tree can be enumerated "
    "(exact exploitability, external sampling)",
    "history_deals": "history_deals(obs, history, d, generator) -> (deals [n * d, deal_len], log_weights [n * d] "
    "float64): deals (what init_from_deal takes; row i * d + j is sample j of obs[i]) whose replay "
    "through the public action history [n, L] (-1 after the last) gives back obs, with importance "
    "weights under which they are draws from the deal prior given everything the observer knows",
    "carry_deals": "carry_deals(obs, history, fresh, previous, previous_length, generator) -> (deals [n * d, "
    "deal_len], log_weights [n * d] float64): deals for obs and history that keep what the previous "
    "deals (consistent with the first previous_length [n] actions) gave the observer's opponent up "
    "to then, the rest drawn from the prior given that (the observer's own cards from the fresh "
    "history_deals), weighted by the likelihood of what the observer has seen since; where they do "
    "not fit, the fresh deal with log weight -inf: the belief's particles, carried from decision to "
    "decision",
    "deal_log_weights": "deal_log_weights(obs, history, deals) -> [n * d] float64: the log importance weight "
    "history_deals gives each of any deals consistent with obs and history (the prior's "
    "over its proposal's, up to a constant per row): what an independence Metropolis-Hastings "
    "move to a fresh proposal needs of the deal it leaves",
    "swap_deals": "swap_deals(obs, history, deals, generator) -> deals: each deal with two cards swapped that "
    "the observer cannot see and the opponent never played, one of them the opponent's, by a move "
    "symmetric under the deal prior (the Metropolis move of those particles)",
    "deals_of": "deals_of(state) -> [n, deal_len] the deals the games started from (what init_from_deal takes)",
    "action_history": "action_history(obs) -> [n, max_game_length] long: the game's actions so far in order, -1 "
    "after the last, read from an observation that holds them all",
    "describe": "describe() -> the game and its rules in words",
    "bots": "bots() -> {name: () -> Bot}: the game's own bots (beside the generic random), built by name",
    "evaluation_opponents": "the bot names a checkpoint of the game is evaluated against when none is named",
    "variants": "named rule variants: variants (their names, the first the default; make_game(name, variant=NAME) "
    "builds one) and variant (the name of this game's rules; None when they are no named variant)",
    "rules": "the rule set the game was built with (a pydantic model whose fields are config_dict(); "
    "deck_size cards make a deal)",
}


class MissingCapability(ValueError):
    """A game asked for a capability it does not have; the message names both."""


def _known(name: str) -> None:
    if name not in CAPABILITIES:
        raise KeyError(f"unknown game capability {name!r}; known: {', '.join(CAPABILITIES)}")


def has_capability(game: Any, name: str) -> bool:
    """Whether ``game`` offers the optional capability ``name`` (a key of ``CAPABILITIES``)."""
    _known(name)
    return getattr(game, name, None) is not None


def capability(game: Any, name: str) -> Any:
    """The capability ``name`` of ``game`` (its attribute or bound method); a game without it
    raises ``MissingCapability`` naming the game and what the capability is."""
    _known(name)
    value = getattr(game, name, None)
    if value is None:
        raise MissingCapability(
            f"game {getattr(game, 'name', game)!r} has no {name!r} capability ({CAPABILITIES[name]})"
        )
    return value


def declared_capabilities(game: Any) -> list[str]:
    """The optional capabilities ``game`` offers."""
    return [name for name in CAPABILITIES if getattr(game, name, None) is not None]


def tensor_fields(state: Any):
    """The names of a batched state's tensor fields (every dataclass field not marked static)."""
    for f in dataclasses.fields(state):
        if not f.metadata.get("static", False):
            yield f.name


def index_state(state: S, idx: torch.Tensor) -> S:
    """Rows ``idx`` of a batched state (a copy; ``idx`` may repeat rows or be a bool mask)."""
    return dataclasses.replace(cast(Any, state), **{k: getattr(state, k)[idx] for k in tensor_fields(state)})


def clone_state(state: S) -> S:
    return dataclasses.replace(cast(Any, state), **{k: getattr(state, k).clone() for k in tensor_fields(state)})


def concat_states(states: Sequence[S]) -> S:
    first = states[0]
    return dataclasses.replace(
        cast(Any, first), **{k: torch.cat([getattr(s, k) for s in states], dim=0) for k in tensor_fields(first)}
    )


def batch_size(state: Any) -> int:
    return getattr(state, next(iter(tensor_fields(state)))).shape[0]


def sample_from_probs(
    probs: torch.Tensor, generator: torch.Generator | None = None, uniform: torch.Tensor | None = None
) -> torch.Tensor:
    """One action per row from ``probs [n, A]`` (non-negative, any row sum) by inverse CDF: one
    uniform number per row and a search in the row's cumulative sums (no torch.multinomial, no
    host sync; over 106 actions, 0.15-0.5 us per row at batches of 2000-64 against 1.8-2.3 us
    for Gumbel-max, measured side by side). Zero-probability actions are never chosen; an all-zero row gets action 0.
    ``uniform`` (``[n]`` in [0, 1), default fresh from ``generator``) lets rows share their
    randomness (common random numbers: rows with equal probabilities then pick equal actions)."""
    cdf = probs.float().cumsum(dim=1)
    if uniform is None:
        uniform = torch.rand(probs.shape[0], generator=generator, device=probs.device, dtype=torch.float32)
    total = cdf[:, -1:]
    # The first action whose cumulative sum exceeds u * total: a zero-probability action repeats
    # its predecessor's sum, so it is never the first to exceed it.
    action = torch.searchsorted(cdf, uniform.unsqueeze(1) * total, right=True).squeeze(1)
    return torch.where(total.squeeze(1) > 0, action.clamp_(max=probs.shape[1] - 1), 0)


def sample_uniform_legal(mask: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
    """One uniformly random legal action per row of ``mask [n, A]`` (bool). Rows without a legal
    action get an arbitrary index."""
    n, num_actions = mask.shape
    dtype = torch.uint8 if num_actions < 256 else torch.int16 if num_actions < 32768 else torch.int32
    counts = mask.view(torch.uint8).cumsum(dim=1, dtype=dtype)
    pick = (torch.rand(n, 1, generator=generator, device=mask.device) * counts[:, -1:]).to(dtype)
    return torch.searchsorted(counts, pick + 1).squeeze(1).clamp_(max=num_actions - 1)


def legal_probabilities(probs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """What a sampling player draws from: ``probs`` on the legal actions, rows normalised (a policy
    must never put weight on an illegal one; masking keeps a sloppy policy from breaking the game),
    uniform over them where that leaves nothing."""
    probs = probs.float() * mask
    probs = torch.where(probs.sum(dim=1, keepdim=True) > 0, probs, mask.float())
    return probs / probs.sum(dim=1, keepdim=True).clamp(min=1e-30)


def uniform_policy(obs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    m = mask.to(torch.float32)
    return m / m.sum(dim=1, keepdim=True)
