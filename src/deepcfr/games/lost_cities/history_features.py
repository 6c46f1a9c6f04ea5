"""What the public action history tells about the opponent's hand beyond the observation, as
network features (the learned hand belief's second input, train/hand_belief.py).

The compact observation (layout.py) shows where every seen card is now, not how it got there:
who discarded each pile card and when, what the opponent played lately, when it opened each
expedition, how often it took from the piles. A player discards what it does not need and plays
a colour while it holds more of it, so these tell about its hand.

``history_features(game, obs, history) -> [n, size]`` float32 for observations ``obs [n,
obs_size]`` (any observer) and public histories ``history [n, L]`` (actions in order, -1 after
the last: evaluate.arena.ActionHistory), all games at once and no loop over time. Events are
weighed by how many of the opponent's turns ago they came, ``RECENCY ** turns`` (1 for its
last turn). Blocks (K card kinds, C colours):

- per kind, three groups of K: the opponent's discards of the kind (count), the same weighed
  by recency, its plays of the kind weighed by recency;
- per colour, four groups of C: the opponent's draws from the colour's pile weighed by
  recency; the recency of its last play in the colour and of its first (0: none); the recency
  of its last discard in the colour (0: none);
- two scalars: the share of the opponent's draws taken from the piles, and its turns / 32.
"""

from __future__ import annotations

import torch

RECENCY = 0.8
TURN_SCALE = 32.0


def history_feature_size(rules) -> int:
    return 3 * rules.num_kinds + 4 * rules.n_colors + 2


def history_features(game, obs: torch.Tensor, history: torch.Tensor) -> torch.Tensor:
    r = game.rules
    K, C, R1 = r.num_kinds, r.n_colors, r.n_ranks + 1
    n = obs.shape[0]
    if history.dim() != 2 or history.shape[0] != n:
        raise ValueError(f"history must have shape [{n}, L], got {tuple(history.shape)}")
    device = obs.device
    a = history.to(device=device, dtype=torch.long)
    live = a >= 0
    deck = r.draw_deck_action
    ends_turn = live & (a >= deck)  # a draw ends the mover's turn; seat 0 moves first
    turns_before = ends_turn.long().cumsum(dim=1) - ends_turn.long()  # [n, L] turns completed before t
    seat = turns_before % 2
    observer = game.obs_player(obs).to(device).long()
    theirs = live & (seat != observer[:, None])
    turns_now = ends_turn.sum(dim=1)  # [n]
    # the opponent's turns since the event's own turn (0: its last turn or the current one)
    ago = ((turns_now[:, None] - turns_before - 1).clamp(min=0) // 2).float()
    weight = torch.where(theirs, RECENCY ** ago, 0.0)

    play = theirs & (a < K)
    discard = theirs & (a >= K) & (a < 2 * K)
    pile = theirs & (a > deck)
    kind = torch.where(a >= K, a - K, a).clamp(0, K - 1)
    colour = torch.where(pile, a - deck - 1, kind // R1).clamp(0, C - 1)

    out = torch.zeros(n, history_feature_size(r), dtype=torch.float32, device=device)
    at = 0
    for values, mask, index in ((torch.ones_like(weight), discard, kind), (weight, discard, kind),
                                (weight, play, kind)):
        out[:, at:at + K].scatter_add_(1, index, torch.where(mask, values, 0.0))
        at += K
    out[:, at:at + C].scatter_add_(1, colour, torch.where(pile, weight, 0.0))
    at += C
    for mask, reduce in ((play, "amax"), (play, "amin"), (discard, "amax")):
        # the recency of the last (amax) or first (amin) such event; 0 where none
        fill = 2.0 if reduce == "amin" else -1.0
        part = torch.full((n, C), fill, device=device).scatter_reduce_(
            1, colour, torch.where(mask, weight, fill), reduce=reduce, include_self=True)
        out[:, at:at + C] = torch.where((part < 0) | (part > 1), 0.0, part)
        at += C
    their_draws = (theirs & (a >= deck)).sum(dim=1).float()
    out[:, at] = pile.sum(dim=1).float() / their_draws.clamp(min=1)
    out[:, at + 1] = (turns_now // 2).float() / TURN_SCALE
    return out
