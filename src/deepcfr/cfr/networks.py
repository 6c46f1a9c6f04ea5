"""Networks for Deep CFR: a plain MLP used for both the advantage head (size A, raw outputs)
and the strategy head (size A, logits turned into a policy by a masked softmax).

Illegal actions never get probability: ``masked_softmax`` returns exact zeros there, whatever
the logits (including inf/nan), and the arithmetic runs in float32 even under autocast.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn


class DeepCFRMLP(nn.Module):
    """``num_layers`` hidden layers of ``hidden_size`` (Linear -> ReLU), then a linear head of
    ``output_size``. Input ``[n, input_size]`` float, output ``[n, output_size]``."""

    def __init__(self, input_size: int, output_size: int, hidden_size: int, num_layers: int) -> None:
        super().__init__()
        for name, value in (
            ("input_size", input_size),
            ("output_size", output_size),
            ("hidden_size", hidden_size),
            ("num_layers", num_layers),
        ):
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"DeepCFRMLP: {name} must be a positive int, got {value!r}")
        self.input_size = input_size
        self.output_size = output_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        layers: list[nn.Module] = []
        width = input_size
        for _ in range(num_layers):
            layers += [nn.Linear(width, hidden_size), nn.ReLU()]
            width = hidden_size
        self.body = nn.Sequential(*layers)
        self.head = nn.Linear(width, output_size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.body(x))

    def shape_dict(self) -> dict[str, Any]:
        """What a checkpoint must match to load these weights."""
        return {
            "input_size": self.input_size,
            "output_size": self.output_size,
            "hidden_size": self.hidden_size,
            "num_layers": self.num_layers,
        }


def masked_log_softmax(logits: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Log-probabilities over legal actions, computed in float32; illegal entries are -inf.
    A row with no legal action gets all -inf (callers never produce one)."""
    logits = logits.float()
    mask = mask.bool()
    masked = logits.masked_fill(~mask, float("-inf"))
    # Rows with no legal action would give nan from (-inf) - (-inf); shift by 0 there instead.
    row_max = masked.amax(dim=-1, keepdim=True)
    row_max = torch.where(torch.isfinite(row_max), row_max, torch.zeros_like(row_max))
    shifted = masked - row_max
    lse = torch.logsumexp(shifted, dim=-1, keepdim=True)
    return (shifted - lse).masked_fill(~mask, float("-inf"))


def masked_softmax(logits: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Probabilities over legal actions (float32): exact zeros on illegal actions, rows sum to 1."""
    return masked_log_softmax(logits, mask).exp().masked_fill(~mask.bool(), 0.0)


def _field(config: Any, name: str, default: Any = None) -> Any:
    if isinstance(config, dict):
        return config.get(name, default)
    return getattr(config, name, default)


def build_network(network_config: Any, input_size: int, output_size: int) -> DeepCFRMLP:
    """A ``DeepCFRMLP`` from a ``NetworkConfig`` (or a dict with the same keys)."""
    return DeepCFRMLP(
        input_size=int(input_size),
        output_size=int(output_size),
        hidden_size=_field(network_config, "hidden_size", 128),
        num_layers=_field(network_config, "num_layers", 2),
    )
