"""A bounded load on a running ``deepcfr serve``: many games at once, each a thread playing
uniformly random legal moves through the page's API, with every request's latency kept.

Bounded three ways, so a test or a script can run it unattended: loopback servers only (it
refuses any other host), a fixed list of games (one per opponent spec given), and a deadline
after which no new request starts (a game cut off by it counts as unfinished). ``play_load``
returns a :class:`LoadResult`; ``LoadResult.summary()`` has the percentiles by opponent.
"""

from __future__ import annotations

import json
import random
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field
from ipaddress import ip_address
from urllib.parse import urlsplit

from .timing import PHASES
from .timing import parse as parse_server_timing

LOOPBACK_NAMES = {"localhost"}


def check_loopback(url: str) -> str:
    """``url`` (with a trailing slash) when its host is this machine's loopback; ValueError otherwise:
    a load test is never pointed at someone else's server."""
    host = urlsplit(url).hostname or ""
    try:
        local = host in LOOPBACK_NAMES or ip_address(host).is_loopback
    except ValueError:
        local = False
    if not local:
        raise ValueError(f"a load test runs against a loopback server only (127.0.0.1, ::1, localhost), not {host!r}")
    return url if url.endswith("/") else url + "/"


@dataclass
class LoadResult:
    """What a load run saw. ``latencies[(kind, opponent)]`` are seconds per request, for the kinds
    ``start`` (POST /api/games, with the computer's first moves when it has seat 0), ``reply`` (a
    move that handed the turn to the computer: the answer waited for its moves) and ``move`` (a move
    after which the person moves again)."""

    games: int
    finished: int = 0
    opponent_moves: dict[str, int] = field(default_factory=dict)  # the computer's moves seen, by opponent
    errors: list[str] = field(default_factory=list)
    latencies: dict[tuple[str, str], list[float]] = field(default_factory=dict)
    # each request's phases as the server reported them (serve.timing: players, queue, decide, app)
    phases: dict[tuple[str, str], list[dict[str, float]]] = field(default_factory=dict)
    seconds: float = 0.0

    def summary(self) -> list[dict]:
        """One row per (kind, opponent): requests, p50, p95 and max seconds, and where the time of
        the requests at or above the p95 went (``tail``: the mean seconds of each server phase,
        and ``http``: what the client waited beyond the application, the server's request queue
        and the connection)."""
        rows = []
        for key, values in sorted(self.latencies.items()):
            v = sorted(values)
            p95 = _quantile(v, 0.95)
            tail = [(t, ph) for t, ph in zip(values, self.phases.get(key, [{}] * len(values))) if t >= p95]
            means = {name: sum(ph.get(name, 0.0) for _, ph in tail) / len(tail) for name in (*PHASES, "app")}
            means["http"] = sum(t - ph.get("app", 0.0) for t, ph in tail) / len(tail)
            rows.append(
                {
                    "kind": key[0],
                    "opponent": key[1],
                    "requests": len(v),
                    "p50": _quantile(v, 0.5),
                    "p95": p95,
                    "max": v[-1],
                    "tail": means,
                }
            )
        return rows


def _quantile(sorted_values: list[float], q: float) -> float:
    """The nearest-rank quantile (the value at or below which a fraction ``q`` of requests fall)."""
    rank = max(1, -(-len(sorted_values) * q // 1))
    return sorted_values[int(rank) - 1]


class _Game:
    """One table of the load: its own thread, random generator and HTTP requests."""

    def __init__(
        self,
        url: str,
        opponent: str,
        seat: int,
        seed: int,
        variant: str | None,
        result: LoadResult,
        lock: threading.Lock,
        deadline: float,
        request_timeout_s: float,
    ):
        self.url, self.opponent, self.seat, self.seed, self.variant = url, opponent, seat, seed, variant
        self.result, self.lock, self.deadline, self.request_timeout_s = result, lock, deadline, request_timeout_s
        self.rng = random.Random(seed)

    def _post(self, kind: str, path: str, body: dict) -> dict:
        if time.monotonic() > self.deadline:
            raise TimeoutError("the load's deadline passed before the game ended")
        request = urllib.request.Request(
            self.url + path, data=json.dumps(body).encode(), method="POST", headers={"Content-Type": "application/json"}
        )
        start = time.perf_counter()
        try:
            with urllib.request.urlopen(request, timeout=self.request_timeout_s) as answer:
                view = json.loads(answer.read())
                phases = parse_server_timing(answer.headers.get("Server-Timing"))
        except urllib.error.HTTPError as e:
            raise RuntimeError(f"{path}: HTTP {e.code} {e.read()[:300]!r}") from None
        elapsed = time.perf_counter() - start
        replies = sum(m["seat"] != self.seat for m in view["last_moves"])
        if kind == "move":  # a reply when the computer moved before the answer came
            kind = "reply" if replies else "move"
        with self.lock:
            self.result.latencies.setdefault((kind, self.opponent), []).append(elapsed)
            self.result.phases.setdefault((kind, self.opponent), []).append(phases)
            self.result.opponent_moves[self.opponent] = self.result.opponent_moves.get(self.opponent, 0) + replies
        return view

    def play(self) -> None:
        try:
            view = self._post(
                "start",
                "api/games",
                {"opponent": self.opponent, "seat": self.seat, "seed": self.seed, "variant": self.variant},
            )
            while not view["finished"]:
                action = self.rng.choice(view["legal"])["action"]
                view = self._post(
                    "move", f"api/games/{view['id']}/move", {"action": action, "decision": view["decisions"]}
                )
            with self.lock:
                self.result.finished += 1
        except Exception as e:  # every failure is a finding of the load, kept with its game
            with self.lock:
                self.result.errors.append(f"game {self.seed} vs {self.opponent}: {type(e).__name__}: {e}")


def play_load(
    url: str,
    opponents: Sequence[str],
    *,
    seed: int = 0,
    variant: str | None = None,
    deadline_s: float = 600.0,
    request_timeout_s: float = 120.0,
) -> LoadResult:
    """One game per entry of ``opponents`` (a player spec), all at once against the loopback server
    at ``url``; game ``k`` has seed ``seed + k`` and the person takes seat ``k % 2``."""
    url = check_loopback(url)
    result, lock = LoadResult(games=len(opponents)), threading.Lock()
    start = time.monotonic()
    games = [
        _Game(url, spec, k % 2, seed + k, variant, result, lock, start + deadline_s, request_timeout_s)
        for k, spec in enumerate(opponents)
    ]
    threads = [threading.Thread(target=g.play, name=f"load-game-{k}", daemon=True) for k, g in enumerate(games)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(max(0.0, start + deadline_s + request_timeout_s - time.monotonic()))
    result.seconds = time.monotonic() - start
    if any(t.is_alive() for t in threads):
        result.errors.append("some games were still waiting on the server after the deadline")
    return result


__all__ = ["LoadResult", "check_loopback", "play_load"]
