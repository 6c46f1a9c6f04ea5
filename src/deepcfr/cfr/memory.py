"""Reservoir replay memory in preallocated tensors, with batched insertion.

Each field (e.g. ``obs`` uint8 [K], ``mask`` bool [A], ``target`` float32 [A], ``iteration``
int32 []) is one tensor ``[capacity, *shape]`` on the memory's device. ``add`` inserts a whole
batch with no Python loop over samples and gives exactly the distribution of sequential
reservoir sampling (Vitter's algorithm R): after ``seen`` offers, every offered sample is held
with probability ``min(1, capacity / seen)``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import torch

from deepcfr.host_syncs import to_device

FieldSpec = tuple[tuple[int, ...], torch.dtype]


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def _dtype_from_name(name: str) -> torch.dtype:
    dtype = getattr(torch, name, None)
    if not isinstance(dtype, torch.dtype):
        raise ValueError(f"unknown dtype {name!r} in memory state")
    return dtype


class ReservoirMemory:
    """A reservoir of at most ``capacity`` samples; ``fields`` maps a name to (shape, dtype) of
    one sample. ``pin_memory`` pins CPU storage (only when CUDA is present; otherwise ignored)
    so that ``sample(..., device="cuda")`` copies asynchronously."""

    def __init__(
        self,
        capacity: int,
        fields: Mapping[str, FieldSpec],
        device: str | torch.device = "cpu",
        pin_memory: bool = False,
    ) -> None:
        if not isinstance(capacity, int) or capacity < 1:
            raise ValueError(f"ReservoirMemory: capacity must be a positive int, got {capacity!r}")
        if not fields:
            raise ValueError("ReservoirMemory: fields must name at least one field")
        self.capacity = capacity
        self.device = torch.device(device)
        self.pinned = bool(pin_memory and self.device.type == "cpu" and torch.cuda.is_available())
        self.fields: dict[str, FieldSpec] = {}
        self._data: dict[str, torch.Tensor] = {}
        for name, spec in fields.items():
            try:
                shape, dtype = spec
                shape = tuple(int(s) for s in shape)
            except (TypeError, ValueError):
                raise ValueError(
                    f"ReservoirMemory: field {name!r} must be (shape tuple, torch.dtype), got {spec!r}"
                ) from None
            if not isinstance(dtype, torch.dtype):
                raise ValueError(f"ReservoirMemory: field {name!r} dtype must be a torch.dtype, got {dtype!r}")
            self.fields[name] = (shape, dtype)
            t = torch.zeros((capacity, *shape), dtype=dtype, device=self.device)
            self._data[name] = t.pin_memory() if self.pinned else t
        self._size = 0
        self._seen = 0

    # ------------------------------------------------------------------ sizes
    def __len__(self) -> int:
        return self._size

    @property
    def seen(self) -> int:
        """Exact number of samples offered to ``add`` so far."""
        return self._seen

    @property
    def nbytes_per_sample(self) -> int:
        return sum(
            math.prod(shape) * torch.empty((), dtype=dtype).element_size() for shape, dtype in self.fields.values()
        )

    @property
    def nbytes(self) -> int:
        return self.capacity * self.nbytes_per_sample

    def data(self, name: str) -> torch.Tensor:
        """The filled part of field ``name`` (a view, ``[len(self), *shape]``)."""
        if name not in self._data:
            raise KeyError(f"ReservoirMemory has no field {name!r}; fields: {', '.join(self.fields)}")
        return self._data[name][: self._size]

    def clear(self) -> None:
        self._size = 0
        self._seen = 0

    # ------------------------------------------------------------------ insertion
    def _check_batch(self, tensors: Mapping[str, torch.Tensor]) -> int:
        missing = set(self.fields) - set(tensors)
        extra = set(tensors) - set(self.fields)
        if missing or extra:
            parts = []
            if missing:
                parts.append(f"missing {sorted(missing)}")
            if extra:
                parts.append(f"unknown {sorted(extra)}")
            raise ValueError(f"ReservoirMemory.add: fields {', '.join(parts)}; expected {sorted(self.fields)}")
        m = None
        for name, t in tensors.items():
            shape, _ = self.fields[name]
            if not isinstance(t, torch.Tensor) or tuple(t.shape[1:]) != shape or t.dim() != len(shape) + 1:
                got = tuple(t.shape) if isinstance(t, torch.Tensor) else type(t).__name__
                raise ValueError(
                    f"ReservoirMemory.add: field {name!r} must have shape [m, {', '.join(map(str, shape))}], got {got}"
                )
            if m is None:
                m = t.shape[0]
            elif t.shape[0] != m:
                raise ValueError(f"ReservoirMemory.add: field {name!r} has {t.shape[0]} rows, others have {m}")
        return int(m or 0)

    def add(self, generator: torch.Generator | None = None, **tensors: torch.Tensor) -> int:
        """Offer a batch of ``m`` samples (every field ``[m, *shape]``); returns how many were stored.

        Sample i of the batch is the (seen + i + 1)-th offer k: while filling it goes to slot
        k - 1; afterwards slot j ~ U[0, k) and it is kept when j < capacity. Within a batch,
        later samples overwrite earlier ones on the same slot, exactly as sequential insertion would.
        """
        m = self._check_batch(tensors)
        if m == 0:
            return 0
        gen_device = generator.device if generator is not None else torch.device("cpu")
        k = torch.arange(self._seen + 1, self._seen + m + 1, dtype=torch.int64, device=gen_device)
        filling = k <= self.capacity
        # float64 keeps j exact-enough uniform for counts far beyond any realistic capacity.
        u = torch.rand(m, dtype=torch.float64, generator=generator, device=gen_device)
        j = torch.minimum((u * k.to(torch.float64)).to(torch.int64), k - 1)
        slot = torch.where(filling, k - 1, j)
        keep = slot < self.capacity
        positions = torch.nonzero(keep).squeeze(1)
        slot = slot[positions]
        if slot.numel() > 1:
            # Last writer wins: a stable sort keeps batch order within a slot; take each group's last.
            sorted_slot, perm = torch.sort(slot, stable=True)
            last = torch.ones_like(sorted_slot, dtype=torch.bool)
            last[:-1] = sorted_slot[1:] != sorted_slot[:-1]
            slot = sorted_slot[last]
            positions = positions[perm[last]]
        # Slots are drawn by the (CPU) generator, so the same seed stores the same samples on
        # every device; the copies to the device do not block the host.
        slot = to_device(slot, self.device)
        on_device = {}
        for name, t in tensors.items():
            if t.device not in on_device:
                on_device[t.device] = to_device(positions, t.device)
            rows = t[on_device[t.device]]
            self._data[name][slot] = rows.to(self.device, self.fields[name][1])
        self._seen += m
        self._size = min(self._seen, self.capacity)
        return int(slot.numel())

    # ------------------------------------------------------------------ sampling
    def sample(
        self,
        batch_size: int,
        generator: torch.Generator | None = None,
        device: str | torch.device | None = None,
    ) -> dict[str, torch.Tensor]:
        """``batch_size`` samples drawn uniformly with replacement from the filled part."""
        if self._size == 0:
            raise ValueError("ReservoirMemory.sample: the memory is empty")
        if batch_size < 1:
            raise ValueError(f"ReservoirMemory.sample: batch_size must be >= 1, got {batch_size}")
        gen_device = generator.device if generator is not None else torch.device("cpu")
        idx = to_device(
            torch.randint(0, self._size, (batch_size,), generator=generator, device=gen_device), self.device
        )
        target = torch.device(device) if device is not None else self.device
        non_blocking = self.pinned and target.type == "cuda"
        out = {}
        for name, t in self._data.items():
            if non_blocking:  # gathered straight into pinned memory (one copy), then queued to the device
                rows = torch.empty((batch_size, *t.shape[1:]), dtype=t.dtype, pin_memory=True)
                out[name] = torch.index_select(t, 0, idx, out=rows).to(target, non_blocking=True)
            else:
                out[name] = t[idx].to(target)
        return out

    # ------------------------------------------------------------------ persistence
    def state_dict(self, copy: bool = True) -> dict[str, Any]:
        """Counts, field specs and only the filled rows (on CPU). ``copy=False`` (for a checkpoint
        that is written at once): a full CPU memory hands over its own storage instead of a
        copy, and a device memory is copied to the host once (no second copy): a 4M-sample
        memory is gigabytes. The state then changes with the memory."""
        return {
            "capacity": self.capacity,
            "seen": self._seen,
            "size": self._size,
            "fields": {name: (list(shape), _dtype_name(dtype)) for name, (shape, dtype) in self.fields.items()},
            "data": {name: self._saved_rows(t, copy) for name, t in self._data.items()},
        }

    def _saved_rows(self, t: torch.Tensor, copy: bool) -> torch.Tensor:
        rows = t[: self._size].detach()
        if rows.device.type != "cpu":
            return rows.cpu()
        # A view of part of the storage would save the whole storage: copy unless it is all of it.
        return rows.clone() if copy or self._size < self.capacity else rows

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        try:
            fields = {name: (tuple(shape), _dtype_from_name(dt)) for name, (shape, dt) in state["fields"].items()}
            size, seen, capacity, data = int(state["size"]), int(state["seen"]), int(state["capacity"]), state["data"]
        except (KeyError, TypeError, ValueError) as e:
            raise ValueError(f"ReservoirMemory.load_state_dict: malformed state ({e})") from None
        if fields != self.fields:
            raise ValueError(
                f"ReservoirMemory.load_state_dict: fields differ: saved {fields}, memory has {self.fields}"
            )
        if capacity != self.capacity:
            # Reservoir probabilities depend on capacity; changing it mid-run would bias the sample.
            raise ValueError(
                f"ReservoirMemory.load_state_dict: capacity differs: saved {capacity}, memory has {self.capacity}"
            )
        if size != min(seen, capacity):
            raise ValueError(f"ReservoirMemory.load_state_dict: size {size} inconsistent with seen {seen}")
        for name, t in self._data.items():
            src = data[name]
            if src.shape[0] != size:
                raise ValueError(
                    f"ReservoirMemory.load_state_dict: field {name!r} has {src.shape[0]} rows, expected {size}"
                )
            t[:size] = src.to(self.device, self.fields[name][1])
        self._size = size
        self._seen = seen

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(capacity={self.capacity}, size={self._size}, seen={self._seen}, "
            f"device={self.device}, fields={ {k: (s, _dtype_name(d)) for k, (s, d) in self.fields.items()} })"
        )


class WindowMemory(ReservoirMemory):
    """The ``capacity`` most recent samples (a ring buffer): for values that follow the current
    policy (a critic's Q of sigma_t), where old samples would be wrong rather than just old.
    Same fields, sampling and persistence as ``ReservoirMemory``; the write position is
    ``seen % capacity``, so a saved state resumes exactly."""

    def add(self, generator: torch.Generator | None = None, **tensors: torch.Tensor) -> int:
        """Append a batch (the oldest samples are overwritten); ``generator`` is unused."""
        m = self._check_batch(tensors)
        if m == 0:
            return 0
        keep_from = max(0, m - self.capacity)  # a batch larger than the window keeps its tail
        slot = torch.arange(self._seen + keep_from, self._seen + m, device=self.device) % self.capacity
        for name, t in tensors.items():
            self._data[name][slot] = t[keep_from:].to(self.device, self.fields[name][1])
        self._seen += m
        self._size = min(self._seen, self.capacity)
        return m - keep_from
