"""Helpers shared by the Kuhn, Leduc and Liar's Dice engines: deals, the start of a step (action
checks, the history), the observer's private card and the chips won."""

from __future__ import annotations

import torch

from ..base import IllegalActionError


def check_deal(deal, num_cards: int, deal_len: int) -> None:
    cards = list(deal)
    if len(cards) != deal_len or any(not 0 <= c < num_cards for c in cards) or len(set(cards)) != deal_len:
        raise ValueError(f"invalid deal {cards}: need {deal_len} distinct cards in 0..{num_cards - 1}")


def check_deals(deals: torch.Tensor, num_cards: int, deal_len: int) -> None:
    """The batched form of check_deal (one sync; init_from_deal is not a hot path)."""
    if deals.dim() != 2 or deals.shape[1] != deal_len:
        raise ValueError(f"deals must have shape [n, {deal_len}], got {list(deals.shape)}")
    in_range = ((deals >= 0) & (deals < num_cards)).all(dim=1)
    sorted_cards = deals.sort(dim=1).values
    distinct = (sorted_cards[:, 1:] != sorted_cards[:, :-1]).all(dim=1)
    bad = (~(in_range & distinct)).nonzero()
    if bad.numel():
        i = int(bad[0, 0])
        raise ValueError(
            f"invalid deal {deals[i].tolist()} in row {i}: need {deal_len} distinct cards in 0..{num_cards - 1}"
        )


def random_deals(n: int, num_cards: int, deal_len: int, generator, device) -> torch.Tensor:
    """``[n, deal_len]`` distinct cards per row, uniformly (a random permutation's prefix)."""
    if n < 0:
        raise ValueError(f"number of games n must be >= 0, got {n}")
    gen_device = generator.device if generator is not None else torch.device(device)
    keys = torch.rand((n, num_cards), generator=generator, device=gen_device)
    return keys.argsort(dim=1)[:, :deal_len].to(device)


def action_error(game, actions: torch.Tensor, mask: torch.Tensor, active: torch.Tensor, player: torch.Tensor):
    """Raise IllegalActionError for the first active row whose action is out of range or illegal."""
    in_range = (actions >= 0) & (actions < game.num_actions)
    legal = mask.gather(1, actions.clamp(0, game.num_actions - 1)[:, None]).squeeze(1) & in_range
    bad = (active & ~legal).nonzero()
    if bad.numel():
        i = int(bad[0, 0])
        a = int(actions[i])
        what = game.action_name(a) if 0 <= a < game.num_actions else "out of range"
        legal_names = [game.action_name(b) for b in mask[i].nonzero().squeeze(1).tolist()]
        raise IllegalActionError(
            f"{game.name}: illegal action {a} ({what}) for player {int(player[i])} in row {i}; legal: {legal_names}"
        )


def start_step(game, state, actions, check: bool, player: torch.Tensor, slot: torch.Tensor):
    """The start of every small game's ``step``: ``actions`` as long on the state's device and the
    live rows (``(actions, active)``), the actions checked against the legal mask when ``check``
    (``player [n]``: whose they are) and written into each live row's ``history`` at ``slot [n]``."""
    actions = torch.as_tensor(actions, device=state.history.device).long()
    active = ~state.terminal
    if check:
        action_error(game, actions, game.legal_mask(state), active, player)
    record_action(state.history, slot, actions, active)
    return actions, active


def record_action(history: torch.Tensor, slot: torch.Tensor, actions: torch.Tensor, active: torch.Tensor) -> None:
    """Write each active row's action into its column ``slot [n]`` of ``history [n, L]`` (the
    rows of finished games keep theirs)."""
    rows = torch.arange(actions.shape[0], device=actions.device)
    history[rows, slot] = torch.where(active, actions, history[rows, slot])


def private_observation(private: torch.Tensor, player: int | torch.Tensor, *public: torch.Tensor) -> torch.Tensor:
    """``[seat, seat's private card or die, *public columns]`` per row, long: the observation row of
    the small games (``private [n, >=2]`` holds each seat's card at column seat)."""
    n = private.shape[0]
    seat = torch.as_tensor(player, dtype=torch.long, device=private.device).expand(n)
    return torch.cat([seat[:, None], private.gather(1, seat[:, None]), *public], dim=1)


def own_private_by_seat(obs: torch.Tensor, other: int | torch.Tensor) -> torch.Tensor:
    """``[n, 2]`` long: the observer's private card or die (observation column 1) at its seat
    (column 0), ``other`` at the other seat."""
    seat = obs[:, 0].long()
    return torch.where(torch.arange(2, device=obs.device) == seat[:, None], obs[:, 1:2].long(), other)


def chips_won(state, strength: torch.Tensor) -> torch.Tensor:
    """``[n, 2]`` float32, zero-sum: at a fold the folder loses what it put in, at a showdown the
    stronger hand (``strength [n, 2]`` per seat) wins the other's stake, a tie nothing; 0 while a
    game goes on."""
    c0, c1 = state.contrib[:, 0], state.contrib[:, 1]
    showdown = torch.sign(strength[:, 0] - strength[:, 1]) * c0  # contributions are equal
    fold = torch.where(state.folded == 0, -c0, c1)
    r0 = torch.where(state.folded >= 0, fold, showdown) * state.terminal
    return torch.stack([r0, -r0], dim=1).to(torch.float32)
