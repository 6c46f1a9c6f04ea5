"""Forward-pass measurements of Deep CFR networks: time per call and per state across batch sizes,
states per second, and achieved FLOP/s against the device's measured matrix-multiply peak.

The forward pass bounds traversal: a lockstep traversal cannot make more decisions per second
than one bare batched forward of its network at the same batch size. ``forward_bound_states_per_second``
gives that bound; traversal benchmarks compare against it.

Method: inputs are random features already on the device; every call runs under
``torch.inference_mode``; warm-up calls first; each timed sample runs enough calls to last
``min_sample_seconds`` and is bracketed by CUDA synchronisation (so a sample measures pipelined
throughput; ``sync_every_call=True`` measures latency instead); the median over ``repeats``
samples is reported. Nothing here sets the thread count: callers do, and it is recorded.
"""

from __future__ import annotations

import copy
import statistics
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from typing import Any

import torch
from torch import nn

DEFAULT_BATCHES = (1, 4, 16, 64, 256, 1024, 4096, 16384, 65536)
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


@dataclass(frozen=True)
class ForwardTiming:
    device: str
    dtype: str
    batch: int
    threads: int  # torch intra-op threads when measured
    us_per_call: float  # median
    us_per_state: float  # us_per_call / batch
    states_per_second: float
    flops_per_state: int  # multiply-adds counted as 2 FLOPs, Linear layers only
    flop_per_second: float
    peak_flop_per_second: float | None  # measured matmul peak of this device and dtype, if given
    peak_fraction: float | None  # flop_per_second / peak_flop_per_second
    calls_per_sample: int
    repeats: int
    sync_every_call: bool

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class MatmulPeak:
    device: str
    dtype: str
    size: int  # square matrices of size x size
    threads: int
    seconds_per_matmul: float  # median
    flop_per_second: float

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def resolve_dtype(dtype: str | torch.dtype) -> torch.dtype:
    if isinstance(dtype, torch.dtype):
        return dtype
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
    return DTYPES[dtype]


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def cuda_available() -> bool:
    return torch.cuda.is_available()


def check_device(device: str | torch.device) -> torch.device:
    device = torch.device(device)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device {str(device)!r}: CUDA is not available on this machine")
    if device.type not in ("cpu", "cuda"):
        raise ValueError(f"device must be cpu or cuda[:N], got {str(device)!r}")
    return device


def mlp_flops_per_state(net: nn.Module) -> int:
    """FLOPs of one state through ``net``'s Linear layers (2 per multiply-add); activations,
    biases and normalisation are ignored (they are a small fraction for these widths)."""
    return sum(2 * m.in_features * m.out_features for m in net.modules() if isinstance(m, nn.Linear))


def input_size_of(net: nn.Module) -> int:
    size = getattr(net, "input_size", None)
    if size is not None:
        return int(size)
    for m in net.modules():
        if isinstance(m, nn.Linear):
            return int(m.in_features)
    raise ValueError("cannot tell the network's input size: give it an input_size attribute or a Linear layer")


def _synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _on(net: nn.Module, device: torch.device, dtype: torch.dtype) -> nn.Module:
    """``net`` itself when it already lives on ``device`` in ``dtype``, else a copy there (the
    caller's network is never moved)."""
    param = next(net.parameters(), None)
    if param is not None and param.device == device and param.dtype == dtype:
        return net
    return copy.deepcopy(net).to(device=device, dtype=dtype)


def _time_samples(
    fn: Callable[[], Any],
    device: torch.device,
    repeats: int,
    min_sample_seconds: float,
    warmup_seconds: float,
    sync_every_call: bool = False,
) -> tuple[float, int]:
    """(median seconds per call, calls per sample). Calls per sample are chosen after warm-up
    so that one sample lasts about ``min_sample_seconds``."""
    # Warm-up: at least 3 calls, and at least warmup_seconds (lazy init, allocator, caches).
    _synchronize(device)
    start = time.perf_counter()
    calls = 0
    while calls < 3 or time.perf_counter() - start < warmup_seconds:
        fn()
        if sync_every_call:
            _synchronize(device)
        calls += 1
    _synchronize(device)
    per_call = (time.perf_counter() - start) / calls
    calls_per_sample = max(1, int(min_sample_seconds / max(per_call, 1e-9)))

    samples = []
    for _ in range(repeats):
        _synchronize(device)
        t0 = time.perf_counter()
        for _ in range(calls_per_sample):
            fn()
            if sync_every_call:
                _synchronize(device)
        _synchronize(device)
        samples.append((time.perf_counter() - t0) / calls_per_sample)
    return statistics.median(samples), calls_per_sample


def _check_timing_args(repeats: int, min_sample_seconds: float) -> None:
    if not isinstance(repeats, int) or repeats < 1:
        raise ValueError(f"repeats must be a positive int, got {repeats!r}")
    if min_sample_seconds < 0:
        raise ValueError(f"min_sample_seconds must be non-negative, got {min_sample_seconds!r}")


def time_forward(
    net: nn.Module,
    batch: int,
    device: str | torch.device = "cpu",
    dtype: str | torch.dtype = torch.float32,
    repeats: int = 5,
    min_sample_seconds: float = 0.05,
    warmup_seconds: float = 0.02,
    sync_every_call: bool = False,
    peak_flop_per_second: float | None = None,
    seed: int = 0,
) -> ForwardTiming:
    """Time ``net``'s forward on a random ``[batch, input_size]`` input on ``device`` (see the
    module docstring). ``peak_flop_per_second`` (from ``matmul_peak``) fills ``peak_fraction``."""
    if not isinstance(batch, int) or batch < 1:
        raise ValueError(f"batch must be a positive int, got {batch!r}")
    _check_timing_args(repeats, min_sample_seconds)
    device = check_device(device)
    dtype = resolve_dtype(dtype)
    model = _on(net, device, dtype)
    was_training = model.training
    model.eval()
    generator = torch.Generator().manual_seed(seed)
    x = torch.rand(batch, input_size_of(model), generator=generator).to(device=device, dtype=dtype)
    try:
        with torch.inference_mode():
            seconds, calls = _time_samples(
                lambda: model(x), device, repeats, min_sample_seconds, warmup_seconds, sync_every_call
            )
    finally:
        model.train(was_training)
    flops = mlp_flops_per_state(model)
    flop_rate = flops * batch / seconds
    return ForwardTiming(
        device=str(device),
        dtype=dtype_name(dtype),
        batch=batch,
        threads=torch.get_num_threads(),
        us_per_call=seconds * 1e6,
        us_per_state=seconds * 1e6 / batch,
        states_per_second=batch / seconds,
        flops_per_state=flops,
        flop_per_second=flop_rate,
        peak_flop_per_second=peak_flop_per_second,
        peak_fraction=(flop_rate / peak_flop_per_second) if peak_flop_per_second else None,
        calls_per_sample=calls,
        repeats=repeats,
        sync_every_call=sync_every_call,
    )


def forward_bound_states_per_second(
    net: nn.Module, batch: int, device: str | torch.device = "cpu", repeats: int = 5, min_sample_seconds: float = 0.05
) -> float:
    """The bare batched forward bound: states per second of ``net``'s forward alone at ``batch``
    on ``device`` (float32, inference mode, median of ``repeats``). A traversal making one forward
    per decision step over ``batch`` games cannot exceed it."""
    return time_forward(net, batch, device, repeats=repeats, min_sample_seconds=min_sample_seconds).states_per_second


def default_matmul_sizes(device: str | torch.device) -> tuple[int, ...]:
    # CPU throughput depends on cache blocking, so several sizes are tried and the best kept.
    return (4096, 8192) if torch.device(device).type == "cuda" else (512, 1024, 2048)


def matmul_peak(
    device: str | torch.device = "cpu",
    dtype: str | torch.dtype = torch.float32,
    size: int | None = None,
    repeats: int = 5,
    min_sample_seconds: float = 0.1,
) -> MatmulPeak:
    """Measured matrix-multiply throughput of ``device`` in ``dtype``: a ``size x size`` square
    matmul (2 size^3 FLOPs), median of ``repeats`` samples; with ``size=None`` the best over
    ``default_matmul_sizes``. This is the practical peak that ``ForwardTiming.peak_fraction``
    refers to."""
    device = check_device(device)
    dtype = resolve_dtype(dtype)
    if device.type == "cpu" and dtype != torch.float32:
        # Reduced-precision CPU matmuls are emulated on most CPUs; a "peak" there misleads.
        raise ValueError(f"matmul_peak: dtype {dtype_name(dtype)} is measured on CUDA only; use float32 on CPU")
    _check_timing_args(repeats, min_sample_seconds)
    if size is None:
        peaks = [matmul_peak(device, dtype, s, repeats, min_sample_seconds) for s in default_matmul_sizes(device)]
        return max(peaks, key=lambda p: p.flop_per_second)
    if not isinstance(size, int) or size < 1:
        raise ValueError(f"size must be a positive int, got {size!r}")
    generator = torch.Generator().manual_seed(0)
    a = torch.rand(size, size, generator=generator).to(device=device, dtype=dtype)
    b = torch.rand(size, size, generator=generator).to(device=device, dtype=dtype)
    out = torch.empty(size, size, device=device, dtype=dtype)
    with torch.inference_mode():
        seconds, _ = _time_samples(lambda: torch.mm(a, b, out=out), device, repeats, min_sample_seconds, 0.05)
    return MatmulPeak(
        device=str(device),
        dtype=dtype_name(dtype),
        size=size,
        threads=torch.get_num_threads(),
        seconds_per_matmul=seconds,
        flop_per_second=2 * size**3 / seconds,
    )


def sweep_forward(
    net: nn.Module,
    batches: Iterable[int] = DEFAULT_BATCHES,
    device: str | torch.device = "cpu",
    dtype: str | torch.dtype = torch.float32,
    peak_flop_per_second: float | None = None,
    repeats: int = 5,
    min_sample_seconds: float = 0.05,
    sync_every_call: bool = False,
) -> list[ForwardTiming]:
    """``time_forward`` at each batch size (the network is copied to the device once)."""
    device = check_device(device)
    dtype = resolve_dtype(dtype)
    model = _on(net, device, dtype)
    results = [
        time_forward(
            model,
            int(b),
            device,
            dtype,
            repeats=repeats,
            min_sample_seconds=min_sample_seconds,
            sync_every_call=sync_every_call,
            peak_flop_per_second=peak_flop_per_second,
        )
        for b in batches
    ]
    if device.type == "cuda":
        del model
        torch.cuda.empty_cache()
    return results


def parse_shape(text: str) -> tuple[int, int]:
    """``"512x3"`` -> (hidden_size 512, num_layers 3)."""
    try:
        hidden, layers = text.lower().split("x")
        shape = int(hidden), int(layers)
    except ValueError:
        raise ValueError(f"network shape must look like HIDDENxLAYERS (e.g. 512x3), got {text!r}") from None
    if shape[0] < 1 or shape[1] < 1:
        raise ValueError(f"network shape {text!r}: hidden size and layer count must be positive")
    return shape
