"""Distillation: fitting a policy network to the improved targets of searched positions.

The loss is the cross-entropy from the target over the search's candidates to the network's
policy over the legal actions (masked log-softmax, read at the candidates). With the game's
symmetry (Lost Cities' colour permutations, ``improve.augment``) every drawn batch is relabelled
by a random permutation per position, so each searched position teaches all its relabellings.
Measured on 164k positions of a search over ``heuristic_balanced``: without it the network
memorised them (train loss 0.25, held-out 0.99), with it 0.52 / 0.57 (docs/log/results.md).
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from ..cfr.networks import masked_log_softmax
from .positions import Positions


def relabel(positions: Positions, symmetry, colour_of: torch.Tensor) -> Positions:
    """``positions`` with the colours of each row permuted by ``colour_of [n, C]`` (observation,
    legal mask and candidate actions; values and targets belong to the candidates' slots)."""
    valid = positions.candidates >= 0
    moved = symmetry.actions(positions.candidates.clamp(min=0), colour_of)
    return Positions(
        obs=symmetry.obs(positions.obs, colour_of),
        mask=positions.mask.gather(1, symmetry.action_columns(colour_of)),
        candidates=torch.where(valid, moved.to(positions.candidates.dtype), positions.candidates),
        values=positions.values,
        target=positions.target,
    )


def distillation_loss(net: torch.nn.Module, game, batch: Positions) -> tuple[torch.Tensor, torch.Tensor]:
    """The mean cross-entropy of ``batch``'s targets against ``net``, and the share of positions
    whose most probable legal action is the target's most probable candidate (agreement)."""
    candidates = batch.candidates.long()
    valid = candidates >= 0
    logp = masked_log_softmax(net(game.encode(batch.obs)), batch.mask)
    picked = logp.gather(1, candidates.clamp(min=0)).masked_fill(~valid, 0.0)
    target = batch.target.float()
    loss = -(target * picked).sum(dim=1).mean()
    best = candidates.gather(1, target.argmax(dim=1, keepdim=True)).squeeze(1)
    agreement = (logp.argmax(dim=1) == best).float().mean()
    return loss, agreement


def held_out_split(n: int, fraction: float, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """A random split of ``n`` positions: (training rows, held-out rows); none held out for 0."""
    order = torch.randperm(n, generator=generator)
    held = int(n * fraction)
    return order[held:], order[:held]


def fit_policy(
    net: torch.nn.Module,
    game,
    positions: Positions,
    *,
    steps: int,
    batch_size: int,
    lr: float,
    grad_clip: float | None,
    generator: torch.Generator,
    augment: bool,
    on_steps: Callable[[int], None] | None = None,
    report_every: int = 1000,
) -> torch.Tensor:
    """Adam on ``distillation_loss`` for ``steps`` batches drawn uniformly from ``positions`` (on
    the network's device); returns the per-step losses (on the device: read them once).
    ``on_steps(done)`` is called every ``report_every`` steps (progress lines)."""
    device = next(net.parameters()).device
    data = positions.to(device)
    optimizer = torch.optim.Adam(net.parameters(), lr=lr)
    losses = torch.empty(steps, device=device)
    net.train()
    for step in range(steps):
        batch = data[torch.randint(len(data), (batch_size,), generator=generator).to(device)]
        if augment:
            batch = relabel(batch, game.symmetry, game.symmetry.sample(batch_size, generator=generator, device=device))
        loss, _ = distillation_loss(net, game, batch)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if grad_clip is not None:
            torch.nn.utils.clip_grad_norm_(net.parameters(), grad_clip)
        optimizer.step()
        losses[step] = loss.detach()
        if on_steps is not None and (step + 1) % report_every == 0:
            on_steps(step + 1)
    return losses


@torch.no_grad()
def evaluate_fit(net: torch.nn.Module, game, positions: Positions, chunk: int = 8192) -> tuple[float, float]:
    """(loss, agreement) of ``net`` over all of ``positions`` (in chunks; one read at the end)."""
    device = next(net.parameters()).device
    net.eval()
    total_loss = torch.zeros((), device=device)
    total_agree = torch.zeros((), device=device)
    n = len(positions)
    for start in range(0, n, chunk):
        part = positions[start : start + chunk].to(device)
        loss, agree = distillation_loss(net, game, part)
        total_loss += loss * len(part)
        total_agree += agree * len(part)
    return float(total_loss) / n, float(total_agree) / n


__all__ = ["relabel", "distillation_loss", "held_out_split", "fit_policy", "evaluate_fit"]
