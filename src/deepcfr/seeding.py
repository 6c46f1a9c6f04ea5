"""Every seed the package derives, in one place (the bottom layer: imports nothing of deepcfr).

Three algorithms, each kept exactly as it was first written so that runs, checkpoints and
figures made before this module existed reproduce bit for bit:

- ``derive_seed(seed, stream)``: the trainer's named random streams (``init``, ``traversal``,
  ``league-pool``, ...): numpy's SeedSequence over the 64-bit run seed and the stream's code points.
- ``chunk_seed(run_seed, iteration, traverser, index)``: one traversal chunk's seed, from where the
  chunk sits (not from where it runs): SeedSequence over the same 64-bit seed, the chunk's
  coordinates and a "trav" tag that keeps these seeds apart from the named streams.
- ``derived_seed(*parts)``: expert iteration's seeds (run seed, stream name, round, batch, ...):
  BLAKE2b of ``repr(parts)``, 62 bits. Any hashable mix of ints and strings names a stream.

All three are stable across processes and Python versions (no ``hash()`` salt).
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

_TRAVERSAL_TAG = 0x74726176  # "trav"


def _seed_sequence(key: list[int]) -> int:
    """A 63-bit seed from numpy's SeedSequence over ``key``."""
    return int(np.random.SeedSequence(key).generate_state(1, dtype=np.uint64)[0]) & (2**63 - 1)


def _words(seed: int) -> list[int]:
    """A 64-bit seed as its two 32-bit words (low first)."""
    return [int(seed) & 0xFFFFFFFF, (int(seed) >> 32) & 0xFFFFFFFF]


def derive_seed(seed: int, stream: str) -> int:
    """A stable 63-bit seed for one named random stream (independent of Python's hash salt)."""
    return _seed_sequence(_words(seed) + [ord(c) for c in stream])


def chunk_seed(run_seed: int, iteration: int, traverser: int, index: int) -> int:
    """A stable 63-bit seed for chunk ``index`` of ``traverser``'s traversals in ``iteration``."""
    return _seed_sequence(_words(run_seed) + [int(iteration), int(traverser), int(index), _TRAVERSAL_TAG])


def derived_seed(*parts: Any) -> int:
    """A 62-bit seed from the run seed and the names of a random stream (stable across runs)."""
    digest = hashlib.blake2b(repr(parts).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") >> 2


__all__ = ["derive_seed", "chunk_seed", "derived_seed"]
