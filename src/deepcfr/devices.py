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


CPUINFO = "/proc/cpuinfo"  # where a Linux CPU lists its instruction sets
# The instruction sets that compute bfloat16 natively: x86 (flags) and Arm (Features)
BFLOAT16_FLAGS = frozenset({"avx512_bf16", "amx_bf16", "bf16"})


def cpu_flags(path: str | None = None) -> set[str] | None:
    """The instruction sets the CPU lists in ``path`` (default ``CPUINFO``; ``flags`` on x86,
    ``Features`` on Arm), or None where the file cannot be read (not Linux)."""
    try:
        with open(path or CPUINFO) as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() in ("flags", "Features"):
                    return set(value.split())
    except OSError:
        return None
    return set()


def native_bfloat16(device: torch.device) -> bool:
    """Whether ``device`` computes bfloat16 matmuls natively (a CUDA GPU that supports them, or a
    CPU whose oneDNN has bfloat16 kernels and which has the instructions for them: avx512_bf16 /
    AMX, or Arm's bf16); elsewhere bfloat16 is emulated and slower than float32. A CPU whose
    instructions cannot be read (not Linux) is taken at oneDNN's word."""
    if device.type == "cuda":
        return torch.cuda.is_available() and torch.cuda.is_bf16_supported()
    if device.type == "cpu":
        try:
            kernels = bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
        except (AttributeError, RuntimeError):  # a torch built without oneDNN
            return False
        flags = cpu_flags()
        return kernels and (flags is None or bool(flags & BFLOAT16_FLAGS))
    return False


__all__ = ["cpu_flags", "native_bfloat16", "resolve_device"]
