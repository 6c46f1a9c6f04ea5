"""Batched regret matching: advantages -> current strategy sigma_t.

Positive regrets of legal actions are normalised. When no legal action has a positive regret
the row falls back to ``argmax`` (all mass on the legal action with the largest advantage, as in
Deep CFR: a network's small negative values carry information) or to ``uniform`` over legal
actions. Illegal actions never get probability; a row with no legal action (a terminal state)
gets all zeros.

:func:`kl_regularized` is the other rule for sigma_t (config ``init.kl_temperature``): a softmax
of the advantages over a start policy, which stays near the start where the regrets are small.
"""

from __future__ import annotations

import torch

from .networks import masked_softmax

FALLBACKS = ("argmax", "uniform")


def regret_matching(advantages: torch.Tensor, mask: torch.Tensor, fallback: str = "argmax") -> torch.Tensor:
    """``advantages [n, A]`` (any float dtype), ``mask [n, A]`` bool -> ``probs [n, A]`` float32."""
    if fallback not in FALLBACKS:
        raise ValueError(f"regret_matching: unknown fallback {fallback!r}; valid: {', '.join(FALLBACKS)}")
    if advantages.shape != mask.shape or advantages.dim() != 2:
        raise ValueError(
            f"regret_matching: advantages {tuple(advantages.shape)} and mask {tuple(mask.shape)} must be equal [n, A]"
        )
    mask = mask.bool()
    # Non-finite outputs are made finite (nan -> 0) so one bad value cannot poison a row.
    big = torch.finfo(torch.float32).max / 4
    adv = advantages.float().nan_to_num(nan=0.0, posinf=big, neginf=-big)
    positive = torch.where(mask & (adv > 0), adv, torch.zeros_like(adv))
    total = positive.sum(dim=1, keepdim=True)
    if fallback == "argmax":
        best = adv.masked_fill(~mask, -torch.inf).argmax(dim=1, keepdim=True)
        fallback_probs = torch.zeros_like(adv).scatter_(1, best, 1.0) * mask
    else:
        legal = mask.float()
        fallback_probs = legal / legal.sum(dim=1, keepdim=True).clamp(min=1.0)
    has_positive = total > 0
    return torch.where(
        has_positive, positive / torch.where(has_positive, total, torch.ones_like(total)), fallback_probs
    )


def kl_regularized(
    advantages: torch.Tensor, start_logits: torch.Tensor, mask: torch.Tensor, temperature: float
) -> torch.Tensor:
    """sigma_t regularised toward a start policy pi (piKL: Jacob et al., ICML 2022): the
    maximiser of ``<sigma, R> - temperature * KL(sigma || pi)``, i.e.
    ``sigma(a) ∝ pi(a) exp(R(a) / temperature)`` over the legal actions, where ``R`` are the
    advantages (average regrets: a per-row shift cancels) and ``pi`` the masked softmax of
    ``start_logits``. A large temperature plays pi, a small one the best action by ``R``; zero
    advantages play pi exactly. ``[n, A]`` each -> ``probs [n, A]`` float32, zero off ``mask``."""
    if not temperature > 0:
        raise ValueError(f"kl_regularized: temperature must be > 0, got {temperature}")
    if advantages.shape != mask.shape or start_logits.shape != mask.shape or advantages.dim() != 2:
        raise ValueError(
            f"kl_regularized: advantages {tuple(advantages.shape)}, start_logits "
            f"{tuple(start_logits.shape)} and mask {tuple(mask.shape)} must be equal [n, A]"
        )
    # every term finite before the sum, and the sum made finite again: no inf - inf anywhere
    logits = start_logits.float().nan_to_num(posinf=1e30, neginf=-1e30) + advantages.float().nan_to_num(
        posinf=1e30, neginf=-1e30
    ) / float(temperature)
    return masked_softmax(logits.nan_to_num(posinf=1e30, neginf=-1e30), mask)
