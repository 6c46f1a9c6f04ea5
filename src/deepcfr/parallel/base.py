"""The executor interface and its errors, shared by every executor (inline, processes, Ray)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch

from .chunks import Task, referenced_networks

EXECUTORS = ("inline", "processes", "ray")
DEFAULT_CHUNK_TIMEOUT = 1800.0  # seconds without any finished chunk before a run gives up


class ExecutorError(RuntimeError):
    """An executor cannot run (broken by an earlier failure, a timeout, a bad request)."""


class WorkerError(ExecutorError):
    """A worker died or failed a chunk; the message says which and why."""


def check_networks(networks: Mapping[str, Any], chunks: Sequence[Task]) -> set[str]:
    """The networks ``chunks`` name; a ValueError when ``networks`` lacks any of them."""
    names = referenced_networks(chunks)
    missing = names - set(networks)
    if missing:
        raise ValueError(f"chunks use networks {sorted(missing)} that were not provided (have {sorted(networks)})")
    return names


class TraversalExecutor:
    """Runs the chunks of a phase (traversal ChunkSpecs, or any :class:`~.chunks.Task`):
    ``run(networks, chunks)`` returns one result per chunk, in chunk order, its tensors on the
    caller's device; ``on_chunk(chunk.size)`` is called as each chunk finishes."""

    kind = "base"

    def run(
        self,
        networks: Mapping[str, torch.nn.Module],
        chunks: Sequence[Task],
        on_chunk: Callable[[int], None] | None = None,
    ) -> list[Any]:
        raise NotImplementedError

    def metrics(self) -> dict[str, float]:
        """Executor metrics since the last call (e.g. ``inference_server/*``)."""
        return {}

    def close(self) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()
