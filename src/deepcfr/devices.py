"""Device names of the configs, resolved in one place (the bottom layer)."""

from __future__ import annotations

import torch


def resolve_device(name: str, setting: str = "run.device") -> torch.device:
    """The torch device of a config's device name: ``auto`` is cuda when present, else cpu; a
    cuda device on a machine without CUDA is an error naming the ``setting``."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    device = torch.device(name)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"{setting}={name!r}: CUDA is not available on this machine")
    return device


__all__ = ["resolve_device"]
