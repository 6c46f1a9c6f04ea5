"""Compact replay samples: how the trainer's memories store what traversals produce.

A sample keeps the observation (the game's small-int dtype), the legal mask packed into bits, the
legal actions' values only (float16 by default) and its iteration: tens of bytes where the
encoded features would take kilobytes. :class:`SampleCodec` packs and unpacks the mask and the
values; :func:`memory_fields` names a memory's fields; :func:`row_keys` gives equal rows equal keys
(to merge repeated observations).
"""

from __future__ import annotations

import math

import torch

from deepcfr.cfr.memory import FieldSpec


class SampleCodec:
    """Packs samples for a memory: legal mask -> bits (uint8), per-action values -> the legal
    actions' values only, in action order (``max_legal`` slots; dense when that is every action)."""

    def __init__(self, num_actions: int, max_legal: int, value_dtype: torch.dtype):
        self.num_actions = int(num_actions)
        self.max_legal = int(min(max_legal, num_actions))
        self.value_dtype = value_dtype
        self.mask_bytes = (self.num_actions + 7) // 8
        self.sparse = self.max_legal < self.num_actions
        self._bit_tables: dict[torch.device, tuple[torch.Tensor, torch.Tensor]] = {}  # per device: int32, uint8
        self.value_limit = torch.finfo(value_dtype).max if value_dtype.is_floating_point else math.inf

    def bits(self, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
        """The bit values 1, 2, ..., 128 (int32 and uint8) on ``device``, made once per device (a
        copy to a GPU on every pack and unpack would be a host-to-device transfer each time)."""
        tables = self._bit_tables.get(device)
        if tables is None:
            bits = 2 ** torch.arange(8, dtype=torch.int32, device=device)
            tables = self._bit_tables[device] = (bits, bits.to(torch.uint8))
        return tables

    def pack_mask(self, mask: torch.Tensor) -> torch.Tensor:
        # uint8 throughout (distinct bits: the sum is the OR and fits): 8x faster than int32.
        m = mask.shape[0]
        padded = torch.zeros(m, self.mask_bytes * 8, dtype=torch.uint8, device=mask.device)
        padded[:, : self.num_actions] = mask
        return (padded.view(m, self.mask_bytes, 8) * self.bits(mask.device)[1]).sum(dim=2, dtype=torch.uint8)

    def unpack_mask(self, packed: torch.Tensor) -> torch.Tensor:
        bits = (packed.to(torch.int32)[:, :, None] & self.bits(packed.device)[0]) != 0
        return bits.flatten(1)[:, : self.num_actions]

    def pack_values(self, values: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, int]:
        """``(packed [m, max_legal], count of values clamped to the storage dtype's range)``."""
        values = values.float()
        overflow = 0
        if math.isfinite(self.value_limit):
            too_big = values.abs() > self.value_limit
            overflow = int(too_big.sum())
            if overflow:
                values = values.clamp(-self.value_limit, self.value_limit)
        if not self.sparse:
            return (values * mask).to(self.value_dtype), overflow
        legal_count = mask.sum(dim=1)
        if legal_count.numel() and int(legal_count.max()) > self.max_legal:
            raise ValueError(
                f"a sample has {int(legal_count.max())} legal actions, more than the game's "
                f"max_legal_actions={self.max_legal}"
            )
        # The legal entries in row-major order, each placed at its rank within its row (4x faster
        # than a dense cumsum + scatter over every action).
        rows, cols = torch.nonzero(mask, as_tuple=True)
        starts = torch.cumsum(legal_count, 0) - legal_count
        rank = torch.arange(rows.numel(), device=mask.device) - starts[rows]
        out = torch.zeros(values.shape[0], self.max_legal, dtype=self.value_dtype, device=values.device)
        out[rows, rank] = values[rows, cols].to(self.value_dtype)
        return out, overflow

    def unpack_values(self, packed: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        packed = packed.float()
        if not self.sparse:
            return packed * mask
        rank = (mask.long().cumsum(dim=1) - 1).clamp(0, self.max_legal - 1)
        return packed.gather(1, rank) * mask


def row_keys(rows: torch.Tensor) -> torch.Tensor:
    """One int64 per row, equal exactly when rows are equal. The rows' bytes are read as 64-bit
    words; each word is replaced by its rank among the distinct words and the ranks combined as
    a mixed-radix number (a lexicographic ``unique`` when that would overflow)."""
    n = rows.shape[0]
    raw = rows.contiguous().view(torch.uint8).reshape(n, -1)
    width = -(-raw.shape[1] // 8) * 8
    if width != raw.shape[1]:
        raw = torch.cat([raw, raw.new_zeros(n, width - raw.shape[1])], dim=1)
    words = raw.view(torch.int64)
    key = torch.zeros(n, dtype=torch.int64, device=rows.device)
    radix = 1
    for w in range(words.shape[1]):
        distinct, rank = torch.unique(words[:, w], return_inverse=True)
        radix *= max(int(distinct.shape[0]), 1)
        if radix >= 2**62:
            return torch.unique(rows, dim=0, return_inverse=True)[1]
        key = key * int(distinct.shape[0]) + rank
    return key


def max_legal_actions(game) -> int:
    """The most legal actions any state can have (for sparse value storage)."""
    return int(getattr(game, "max_legal_actions", game.num_actions))


def memory_fields(game, codec: SampleCodec, value_name: str) -> dict[str, FieldSpec]:
    """The fields of a memory of packed samples whose per-action values are called ``value_name``
    (``target`` for regrets, ``policy`` for recorded strategies)."""
    return {
        "obs": ((game.obs_size,), game.obs_dtype),
        "mask": ((codec.mask_bytes,), torch.uint8),
        value_name: ((codec.max_legal,), codec.value_dtype),
        "iteration": ((), torch.int32),
    }


__all__ = ["SampleCodec", "max_legal_actions", "memory_fields", "row_keys"]
