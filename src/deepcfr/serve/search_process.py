"""The served search players run in a process of their own.

A search call is thousands of small tensor operations, and each gives the interpreter lock up and
takes it back. In the server's process the tables' request threads hold that lock between two of
them, so a call that takes 0.35 s alone took 2.4 s beside one busy thread and up to 33 s beside
three (docs/performance.md, "The served page under load"); the server also used about one of its
two cores. In a process of their own the searches keep their own lock and their own core, and
the network players, whose calls are a few large operations, stay in the server.

``SearchProcess`` is one child process (spawned on first use, again if it died) that builds and
runs every served search player, one call at a time; ``ProcessSeated`` stands in for a
``players.Seated`` search player in the server (the batcher, the tables and ``/api/info`` use it
as they use a Seated). The child applies the server's time limit to what it builds
(``limit_time``) and sends back a copy of the search settings that resulted.
"""

from __future__ import annotations

import multiprocessing
import threading
from collections import OrderedDict
from collections.abc import Callable
from multiprocessing.connection import Connection
from multiprocessing.context import SpawnProcess

import torch

from ..players import Decision, Seated

MAX_PLAYERS = 32  # search players kept in the child (the server's PlayerCache keeps as many)


class SearchProcessError(RuntimeError):
    """The search process ended or could not start; the message says what to look at."""


def _child(conn, device: str, limit_time: Callable | None) -> None:
    from ..players import load_player

    # A served search's batches are small: a second torch thread only adds hand-offs, 20 times
    # slower on a busy CPU (docs/performance.md, "Search"), and the server has the other core.
    torch.set_num_threads(1)
    players: OrderedDict[tuple, Seated] = OrderedDict()

    def seated_of(key: tuple, spec, game) -> Seated:
        seated = players.get(key)
        if seated is None:
            seated = Seated(load_player(spec, game, device=device))
            if limit_time is not None:
                limit_time(seated.player.search.config)
            players[key] = seated
            while len(players) > MAX_PLAYERS:
                players.popitem(last=False)
        players.move_to_end(key)
        return seated

    while True:
        try:
            op, key, spec, game, *args = conn.recv()
        except (EOFError, KeyboardInterrupt):
            return
        try:
            seated = seated_of(key, spec, game)
            value: object  # what the op sends back
            if op == "build":
                value = (seated.name, seated.game, seated.player.search.config.model_dump())
            elif op == "decide":
                obs, mask = args
                if seated.game is None:
                    raise ValueError(f"search player {seated.name} has no game")
                value = seated.decide_batch(obs, mask, None, seated.game.action_name)
            elif op == "stats":
                value = seated.player.search.stats.to_dict()
            else:
                raise ValueError(f"unknown request {op!r}")
            conn.send((True, value))
        except BaseException as e:  # the server raises it where the call was made
            try:
                conn.send((False, e))
            except Exception:  # an error that does not pickle: its text
                conn.send((False, RuntimeError(f"{type(e).__name__}: {e}")))


class SearchProcess:
    """One child process for every served search player; thread-safe (calls wait their turn)."""

    def __init__(self, device: str = "cpu", limit_time: Callable | None = None):
        """``limit_time(config)``: what the child does to each search's settings it builds (a
        module-level function: the child gets it pickled); None: nothing."""
        self.device, self.limit_time = device, limit_time
        self._lock = threading.Lock()
        self._proc: SpawnProcess | None = None
        self._conn: Connection | None = None
        self.starts = 0  # processes started (a test counts them)

    def call(self, op: str, key: tuple, spec, game, *args):
        with self._lock:
            conn = self._conn
            if self._proc is None or not self._proc.is_alive() or conn is None:
                conn = self._start()
            try:
                conn.send((op, key, spec, game, *args))
                ok, value = conn.recv()
            except (EOFError, OSError, BrokenPipeError):
                self._proc = None
                raise SearchProcessError(
                    "the search process ended during a call (the server log has its error); "
                    "the next call starts a new one"
                ) from None
        if not ok:
            raise value
        return value

    def _start(self) -> Connection:
        """Start the child; returns the server's end of its pipe."""
        context = multiprocessing.get_context("spawn")  # a fork would copy the server's threads' locks
        self._conn, child = context.Pipe()
        self._proc = context.Process(
            target=_child, args=(child, self.device, self.limit_time), name="deepcfr-search", daemon=True
        )
        self._proc.start()
        child.close()
        self.starts += 1
        return self._conn


class _SearchView:
    """What the server reads of a search player in the child: its settings (a copy) and its stats."""

    def __init__(self, seated: ProcessSeated, config):
        self._seated, self.config = seated, config

    @property
    def stats(self):
        return _Stats(self._seated.process.call("stats", *self._seated.identity))


class _Stats:
    def __init__(self, figures: dict):
        self._figures = figures

    def to_dict(self) -> dict:
        return dict(self._figures)


class _PlayerView:
    def __init__(self, search: _SearchView, name: str, game):
        self.search, self.name, self.game = search, name, game


class ProcessSeated:
    """A search player built and run in ``process``; used as a ``players.Seated``."""

    def __init__(self, process: SearchProcess, spec, game, key: tuple):
        """``key``: the server's PlayerCache key of ``spec`` (its checkpoints' versions, the rules),
        under which the child keeps the player it builds."""
        from ..search import SearchConfig

        self.process = process
        self.identity = (key, spec, game)
        self.name, self.game, config = process.call("build", *self.identity)
        self.player = _PlayerView(_SearchView(self, SearchConfig(**config)), self.name, self.game)

    def decide_batch(
        self, obs: torch.Tensor, mask: torch.Tensor, generator=None, action_name: Callable[[int], str] = str
    ) -> list[Decision]:
        """The decisions of ``n`` tables in one call of the child's player (the search draws its own
        random numbers; the names of the candidates' moves are the game's own)."""
        return self.process.call("decide", *self.identity, obs, mask)

    def decide(
        self, obs: torch.Tensor, mask: torch.Tensor, generator=None, action_name: Callable[[int], str] = str
    ) -> Decision:
        return self.decide_batch(obs, mask, generator, action_name)[0]


__all__ = ["ProcessSeated", "SearchProcess", "SearchProcessError"]
