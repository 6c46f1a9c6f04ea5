"""Where a request's time goes, as the standard ``Server-Timing`` answer header: the server adds
up named phases of each request (``players``: getting the table's players, built or waiting for
their one build; ``queue``: a computer decision waiting while its shared player makes another
batch; ``decide``: the batched calls that made its decisions), and ``app`` is the whole of it in
the application. A load test reads the header to explain its latencies (serve.load); the rest of
``app`` is the engines, the JSON and waiting for the interpreter lock, and the rest of what the
client measured is HTTP and the server's request queue."""

from __future__ import annotations

import contextvars
import time
from contextlib import contextmanager

PHASES = ("players", "queue", "decide")
_current: contextvars.ContextVar[dict[str, float] | None] = contextvars.ContextVar(
    "deepcfr_request_timing", default=None
)


def begin() -> dict[str, float]:
    """A fresh account of phases for the request being served (the context's copies share it)."""
    phases: dict[str, float] = {}
    _current.set(phases)
    return phases


def add(phase: str, seconds: float) -> None:
    """``seconds`` more in ``phase`` for the current request (nothing outside a request)."""
    phases = _current.get()
    if phases is not None:
        phases[phase] = phases.get(phase, 0.0) + seconds


@contextmanager
def phase(name: str):
    start = time.perf_counter()
    try:
        yield
    finally:
        add(name, time.perf_counter() - start)


def header(phases: dict[str, float], app_seconds: float) -> str:
    """The ``Server-Timing`` value: each phase and ``app`` in milliseconds."""
    parts = [f"{name};dur={phases[name] * 1000:.1f}" for name in PHASES if name in phases]
    return ", ".join(parts + [f"app;dur={app_seconds * 1000:.1f}"])


def parse(value: str | None) -> dict[str, float]:
    """Seconds by name from a ``Server-Timing`` value (what ``header`` wrote)."""
    out: dict[str, float] = {}
    for part in (value or "").split(","):
        name, _, rest = part.strip().partition(";")
        if name and rest.startswith("dur="):
            out[name] = float(rest[4:]) / 1000
    return out


__all__ = ["PHASES", "add", "begin", "header", "parse", "phase"]
