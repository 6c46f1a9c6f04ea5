"""Shared-memory blocks and the per-phase network weights that travel through them.

- :class:`SharedBlock`: one POSIX shared-memory segment (``/dev/shm/deepcfr_*``) with tensor views.
  The process that creates a block owns it and unlinks it (``unlink``, ``close_all_owned``, and
  at interpreter exit); other processes only attach and close. Segments created here are also
  registered with multiprocessing's resource tracker, which spawn-context children share, so a
  segment left behind by a killed owner is unlinked when the tracker shuts down.
- :class:`WeightsPublisher` (owner side) writes a set of named networks into a fresh, immutable
  block per version; :class:`WeightsReader` (worker or server side) copies them into its own
  modules when it sees a new version and closes the block at once. A :class:`WeightsHandle`
  (segment name, version, layout; a few hundred bytes) is what goes with each task, so weights
  cross the process boundary once per version, not once per task, and a reader never mixes the
  weights of two versions.
"""

from __future__ import annotations

import atexit
import gc
import os
import secrets
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from multiprocessing import shared_memory
from typing import Any

import torch

SHM_PREFIX = "deepcfr_"
ALIGN = 64  # bytes: every tensor starts on a cache line

_owned: dict[str, shared_memory.SharedMemory] = {}
_owned_lock = threading.Lock()


def _round_up(n: int, to: int = ALIGN) -> int:
    return (n + to - 1) // to * to


def segment_name(tag: str) -> str:
    """A fresh segment name: prefix, pid, random token, tag (short: macOS allows 31 characters)."""
    return f"{SHM_PREFIX}{os.getpid()}_{secrets.token_hex(3)}_{tag}"[:31]


def list_segments(prefix: str = SHM_PREFIX) -> list[str]:
    """Names of the shared-memory segments in /dev/shm starting with ``prefix`` (Linux)."""
    try:
        return sorted(n for n in os.listdir("/dev/shm") if n.startswith(prefix))
    except FileNotFoundError:
        return []


class SharedBlock:
    """A shared-memory segment. ``create`` (owner) or ``attach`` (by name); ``tensor`` gives views."""

    def __init__(self, shm: shared_memory.SharedMemory, owner: bool):
        self._shm = shm
        self.owner = owner
        self.name = shm.name
        self.size = shm.size

    @classmethod
    def create(cls, nbytes: int, tag: str = "blk") -> SharedBlock:
        shm = shared_memory.SharedMemory(name=segment_name(tag), create=True, size=max(int(nbytes), ALIGN))
        with _owned_lock:
            _owned[shm.name] = shm
        return cls(shm, owner=True)

    @classmethod
    def attach(cls, name: str) -> SharedBlock:
        try:
            shm = shared_memory.SharedMemory(name=name)
        except FileNotFoundError:
            raise FileNotFoundError(
                f"shared-memory segment {name!r} does not exist (its owner closed or died)"
            ) from None
        return cls(shm, owner=False)

    @property
    def buf(self) -> memoryview:
        buf = self._shm.buf
        if buf is None:  # the mapping was closed
            raise ValueError(f"shared-memory segment {self.name!r} is closed")
        return buf

    def tensor(self, dtype: torch.dtype, shape: tuple[int, ...], offset: int = 0) -> torch.Tensor:
        """A view of ``shape`` elements of ``dtype`` starting at byte ``offset`` (writes are shared)."""
        count = 1
        for s in shape:
            count *= int(s)
        if count == 0:
            return torch.empty(shape, dtype=dtype)
        nbytes = count * torch.empty((), dtype=dtype).element_size()
        if offset < 0 or offset + nbytes > self.size:
            raise ValueError(f"SharedBlock {self.name}: {nbytes} bytes at offset {offset} exceed its {self.size} bytes")
        return torch.frombuffer(self._shm.buf, dtype=dtype, count=count, offset=offset).view(shape)

    def close(self) -> None:
        """Unmap this process's view. Tensor views must be gone first; if some are still alive the
        mapping simply stays until the process exits."""
        if self._shm is None:
            return
        try:
            self._shm.close()
        except BufferError:
            gc.collect()
            try:
                self._shm.close()
            except BufferError:
                pass

    def unlink(self) -> None:
        """Remove the segment's name (owner only); mappings stay valid until closed."""
        if not self.owner:
            return
        with _owned_lock:
            _owned.pop(self.name, None)
        try:
            self._shm.unlink()
        except FileNotFoundError:
            pass

    def destroy(self) -> None:
        self.close()
        self.unlink()


def close_all_owned() -> None:
    """Unlink every segment this process created and has not unlinked yet."""
    with _owned_lock:
        items = list(_owned.items())
        _owned.clear()
    for _, shm in items:
        try:
            shm.unlink()
        except FileNotFoundError:
            pass
        try:
            shm.close()
        except BufferError:
            pass


atexit.register(close_all_owned)


# ------------------------------------------------------------------------------------------------
# Network weights
# ------------------------------------------------------------------------------------------------

_DTYPES = {
    str(d): d
    for d in (
        torch.float32,
        torch.float16,
        torch.bfloat16,
        torch.float64,
        torch.int64,
        torch.int32,
        torch.uint8,
        torch.int8,
        torch.bool,
    )
}


@dataclass(frozen=True)
class TensorEntry:
    key: str
    dtype: str
    shape: tuple[int, ...]
    offset: int


@dataclass(frozen=True)
class NetworkEntry:
    name: str
    arch: tuple[tuple[str, Any], ...]  # DeepCFRMLP constructor arguments (shape_dict)
    tensors: tuple[TensorEntry, ...]


@dataclass(frozen=True)
class WeightsHandle:
    """Where one version of a set of named networks lives. ``segment`` is None when the set is
    empty (no block is needed)."""

    segment: str | None
    version: int
    networks: tuple[NetworkEntry, ...]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(e.name for e in self.networks)

    def index(self, name: str) -> int:
        for i, e in enumerate(self.networks):
            if e.name == name:
                return i
        raise KeyError(f"network {name!r} is not in weights version {self.version} (has {list(self.names)})")


def network_arch(module: torch.nn.Module) -> tuple[tuple[str, Any], ...]:
    """The constructor arguments a reader rebuilds ``module`` from (``DeepCFRMLP.shape_dict``)."""
    shape_dict = getattr(module, "shape_dict", None)
    if shape_dict is None:
        raise ValueError(
            f"only networks with shape_dict() (DeepCFRMLP) can be shared with workers, got {type(module).__name__}"
        )
    return tuple(sorted(shape_dict().items()))


def build_from_arch(arch: tuple[tuple[str, Any], ...]) -> torch.nn.Module:
    from deepcfr.cfr.networks import DeepCFRMLP

    return DeepCFRMLP(**dict(arch))


def weights_layout(networks: Mapping[str, torch.nn.Module]) -> tuple[tuple[NetworkEntry, ...], int, dict]:
    """(entries, total bytes, name -> state dict) for ``networks``."""
    entries, states, offset = [], {}, 0
    for name, module in networks.items():
        sd = module.state_dict()
        states[name] = sd
        tensors = []
        for key, t in sd.items():
            tensors.append(TensorEntry(key, str(t.dtype), tuple(t.shape), offset))
            offset = _round_up(offset + t.numel() * t.element_size())
        entries.append(NetworkEntry(name, network_arch(module), tuple(tensors)))
    return tuple(entries), offset, states


class WeightsPublisher:
    """Owner side: each ``publish`` writes the networks into a new block (version + 1) and
    unlinks the previous one (readers that still map it keep their mapping)."""

    def __init__(self, tag: str = "w"):
        self.tag = tag
        self.version = 0
        self.handle: WeightsHandle | None = None
        self._block: SharedBlock | None = None

    def publish(self, networks: Mapping[str, torch.nn.Module]) -> WeightsHandle:
        entries, nbytes, states = weights_layout(networks)
        version = self.version + 1
        block = None
        if entries:
            block = SharedBlock.create(nbytes, tag=f"{self.tag}{version}")
            with torch.no_grad():
                for entry in entries:
                    sd = states[entry.name]
                    for t in entry.tensors:
                        block.tensor(_DTYPES[t.dtype], t.shape, t.offset).copy_(sd[t.key].detach().to("cpu"))
        self._release()
        self._block = block
        self.version = version
        self.handle = WeightsHandle(block.name if block is not None else None, version, entries)
        return self.handle

    def _release(self) -> None:
        if self._block is not None:
            self._block.destroy()
            self._block = None

    def close(self) -> None:
        self._release()


class WeightsReader:
    """Reader side: ``load(handle)`` returns name -> module on ``device`` holding that version's
    weights (re-reading shared memory only when the version changes)."""

    def __init__(self, device: str | torch.device = "cpu"):
        self.device = torch.device(device)
        self.version: int | None = None
        self.modules: dict[str, torch.nn.Module] = {}
        self._archs: dict[str, tuple] = {}

    def load(self, handle: WeightsHandle) -> dict[str, torch.nn.Module]:
        if handle.version == self.version:
            return self.modules
        modules: dict[str, torch.nn.Module] = {}
        if handle.networks:
            if handle.segment is None:
                raise ValueError(f"weights version {handle.version} names networks but no segment")
            block = SharedBlock.attach(handle.segment)
            try:
                with torch.no_grad():
                    for entry in handle.networks:
                        module = self.modules.get(entry.name)
                        if module is None or self._archs.get(entry.name) != entry.arch:
                            module = build_from_arch(entry.arch).to(self.device).eval()
                        for p in module.parameters():
                            p.requires_grad_(False)
                        sd = module.state_dict()
                        if set(sd) != {t.key for t in entry.tensors}:
                            raise ValueError(f"weights of {entry.name!r} do not match its architecture")
                        for t in entry.tensors:
                            sd[t.key].copy_(block.tensor(_DTYPES[t.dtype], t.shape, t.offset))
                        modules[entry.name] = module
                        self._archs[entry.name] = entry.arch
                    del sd
            finally:
                block.close()
        self.modules = modules
        self.version = handle.version
        return modules
