"""Helpers shared by the Kuhn and Leduc engines: deals and action checks."""

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
