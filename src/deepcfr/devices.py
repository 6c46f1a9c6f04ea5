"""Device names of the configs, resolved in one place (the bottom layer)."""

from __future__ import annotations

import functools
import time

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


def fast_bfloat16(device: torch.device) -> bool:
    """Whether network forwards on ``device`` should run in bfloat16: a CUDA GPU with native
    bfloat16, or a CPU with native bfloat16 where it also *measures* faster than float32. The
    instruction flags do not decide that alone: on an AMD EPYC with avx512_bf16 a rollout forward
    ran 2.3 times faster in bfloat16, on an Intel Xeon VM listing avx512_bf16 (its AMX hidden) 2
    times slower (docs/performance.md). Measured once a process (``cpu_bfloat16_speedup``)."""
    if not native_bfloat16(device):
        return False
    return device.type != "cpu" or cpu_bfloat16_speedup() >= BFLOAT16_MIN_SPEEDUP


BFLOAT16_MIN_SPEEDUP = 1.1  # below it float32 keeps its exact arithmetic for little loss of speed


@functools.cache
def cpu_bfloat16_speedup(rows: int = 1024, features: int = 713, hidden: int = 256, repeats: int = 3) -> float:
    """float32 seconds over bfloat16-autocast seconds of a forward shaped like the project's
    networks (``features`` -> ``hidden`` -> ``hidden`` -> 106, a batch of ``rows``) on this CPU at
    the thread count of the first call, the best of ``repeats`` each (about 0.1 s, once a process:
    the answer is kept, as the setting it decides is taken once per search or value function)."""
    generator = torch.Generator().manual_seed(0)
    net = torch.nn.Sequential(
        torch.nn.Linear(features, hidden),
        torch.nn.ReLU(),
        torch.nn.Linear(hidden, hidden),
        torch.nn.ReLU(),
        torch.nn.Linear(hidden, 106),
    ).eval()
    x = (torch.rand(rows, features, generator=generator) < 0.3).float()
    best = {False: float("inf"), True: float("inf")}
    with torch.no_grad():
        for _ in range(repeats + 1):  # one round more: the first warms both paths up (the best is kept)
            for bfloat16 in (False, True):
                with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bfloat16):
                    start = time.perf_counter()
                    net(x)
                    best[bfloat16] = min(best[bfloat16], time.perf_counter() - start)
    return best[False] / max(best[True], 1e-9)


__all__ = ["cpu_bfloat16_speedup", "cpu_flags", "fast_bfloat16", "native_bfloat16", "resolve_device"]
