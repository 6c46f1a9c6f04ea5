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


def native_bfloat16(device: torch.device) -> bool:
    """Whether ``device`` computes bfloat16 matmuls natively (a CUDA GPU that supports them, or a
    CPU whose oneDNN has bfloat16 kernels: avx512_bf16 / AMX); elsewhere bfloat16 is emulated
    and slower than float32."""
    if device.type == "cuda":
        return torch.cuda.is_available() and torch.cuda.is_bf16_supported()
    if device.type == "cpu":
        try:
            return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
        except (AttributeError, RuntimeError):  # a torch built without oneDNN
            return False
    return False


__all__ = ["native_bfloat16", "resolve_device"]
