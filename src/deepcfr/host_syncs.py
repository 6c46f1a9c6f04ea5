"""Host syncs: the points where the CPU must wait for the device (a GPU) to finish its queue.

On CUDA a sync is any read of a device value by the host: ``int(t)``, ``float(t)``,
``bool(t)``, ``.item()``, ``.tolist()``, ``.cpu()``, and every op whose output *size* depends on
the data (``nonzero``, boolean-mask indexing, ``masked_select``, ``unique``,
``repeat_interleave`` without ``output_size``). Each one stops the CPU from running ahead and
queueing the next kernels, so a hot loop should do only the few it needs.

:func:`to_host` is the one way hot loops here read device values (several at once, one sync).
:class:`SyncCounter` counts syncs on any device, CPU included (where nothing waits, but the
code path is the same): a ``TorchDispatchMode`` that sees every op and counts the scalar reads,
the data-dependent-size ops and copies off the device, plus each :func:`to_host` call. On CUDA,
``torch.cuda.set_sync_debug_mode`` is the ground truth; :func:`cuda_sync_warnings` counts what
it reports.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager

import torch
from torch.utils._python_dispatch import TorchDispatchMode

_aten = torch.ops.aten
# Ops whose output size depends on the values (the host must read them to allocate the output).
_DATA_DEPENDENT = {
    _aten.nonzero.default,
    _aten.masked_select.default,
    _aten._unique.default,
    _aten._unique2.default,
    _aten.unique_dim.default,
    _aten.unique_consecutive.default,
    _aten.unique_dim_consecutive.default,
}
_active: list[SyncCounter] = []


def to_host(tensor: torch.Tensor) -> list:
    """``tensor.tolist()`` (one host sync for all its values), counted by active :class:`SyncCounter`s."""
    for counter in _active:
        counter.count += 1
        counter.by_op["to_host"] = counter.by_op.get("to_host", 0) + 1
    return tensor.tolist()


def _has_bool_index(args) -> bool:
    indices = args[1] if len(args) > 1 else ()
    return any(isinstance(i, torch.Tensor) and i.dtype == torch.bool for i in (indices or ()))


class SyncCounter(TorchDispatchMode):
    """``with SyncCounter() as c: ...`` then ``c.count`` (total) and ``c.by_op`` (per op name)."""

    def __init__(self) -> None:
        super().__init__()
        self.count = 0
        self.by_op: dict[str, int] = {}

    def _note(self, name: str) -> None:
        self.count += 1
        self.by_op[name] = self.by_op.get(name, 0) + 1

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is _aten._local_scalar_dense.default:
            self._note("scalar read")
        elif func in _DATA_DEPENDENT:
            self._note(func.__name__)
        elif func is _aten.repeat_interleave.Tensor and kwargs.get("output_size") is None:
            self._note("repeat_interleave")
        elif func in (_aten.index.Tensor, _aten.index_put.default, _aten.index_put_.default) and _has_bool_index(args):
            self._note("boolean index")
        elif (
            func is _aten._to_copy.default
            and isinstance(args[0], torch.Tensor)
            and args[0].device.type != "cpu"
            and torch.device(kwargs.get("device") or args[0].device).type == "cpu"
        ):
            self._note("copy to host")
        return func(*args, **kwargs)

    def __enter__(self) -> SyncCounter:
        _active.append(self)
        return super().__enter__()

    def __exit__(self, *exc) -> None:
        _active.remove(self)
        return super().__exit__(*exc)


@contextmanager
def cuda_sync_warnings() -> Iterator[list]:
    """The synchronizing CUDA operations of the block, as reported by
    ``torch.cuda.set_sync_debug_mode("warn")`` (a list of warning messages, filled on exit)."""
    found: list[str] = []
    previous = torch.cuda.get_sync_debug_mode()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.cuda.set_sync_debug_mode("warn")
        try:
            yield found
        finally:
            torch.cuda.set_sync_debug_mode(previous)
    found.extend(str(w.message) for w in caught if "synchroniz" in str(w.message))


def to_device(tensor: torch.Tensor, device: torch.device | str) -> torch.Tensor:
    """``tensor`` on ``device``. A CPU -> CUDA copy goes through pinned memory with
    ``non_blocking=True``: a copy from pageable memory waits for the device's queue to drain
    (a sync), one from pinned memory is queued like a kernel (the caching host allocator keeps
    the pinned buffer until the copy is done)."""
    device = torch.device(device)
    if tensor.device.type == "cpu" and device.type == "cuda":
        return tensor.pin_memory().to(device, non_blocking=True)
    return tensor.to(device)
