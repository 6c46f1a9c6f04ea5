"""Loaded players by spec, for a long-lived process (the web server): a player is loaded once per
spec, checkpoint version and rules, and a new game does not read the checkpoint again. The cache
is bounded (least recently used players go first)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import cast

from ..player_specs import PlayerSpec, parse_player, quote
from .build import checkpoint_file, describe_game, load_player, same_game
from .seated import Seated

MAX_CACHED_PLAYERS = 32


def checkpoint_nodes(spec: PlayerSpec) -> list[PlayerSpec]:
    """The checkpoint specs inside ``spec`` (itself, or the base of a search)."""
    inner = spec.innermost
    return [inner] if inner.kind == "checkpoint" else []


class _Build:
    """A player being built: its waiters get its player or its error."""

    def __init__(self):
        self.done = threading.Event()
        self.seated: Seated | None = None
        self.error: BaseException | None = None


class PlayerCache:
    """Loaded players by spec; thread-safe. ``confine(spec) -> spec`` checks (and may resolve) the
    spec's checkpoint paths before anything is loaded: a server refuses files it does not serve.
    A spec is built once however many games start with it at once (they wait for its one build);
    players of other specs are built meanwhile, and a cached player is had without waiting."""

    def __init__(
        self,
        device: str = "cpu",
        confine: Callable[[PlayerSpec], PlayerSpec] | None = None,
        capacity: int = MAX_CACHED_PLAYERS,
        seat: Callable[[PlayerSpec, object, tuple], Seated] | None = None,
        localize: Callable[[PlayerSpec], PlayerSpec] | None = None,
    ):
        """``seat(spec, game, key)`` builds a player where the default (``Seated(load_player(...))``,
        here) will not do: the server seats its search players in a process of their own.
        ``localize(spec) -> spec`` turns the names ``confine`` gives into the files loaded (a player
        keeps its confined spec as its name: a server's answers never show where its files lie)."""
        self.device = device
        self.confine = confine or (lambda spec: spec)
        self.localize = localize or (lambda spec: spec)
        self.seat = seat or (lambda spec, game, key: Seated(load_player(spec, game, device=self.device)))
        self.capacity = capacity
        self._players: OrderedDict[tuple, Seated] = OrderedDict()
        self._lock = threading.Lock()  # the dicts; never held while a player is built
        self._building: dict[tuple, _Build] = {}
        self.builds = 0  # players built (loads), for tests and the load figures

    def _get_or_build(self, key: tuple, build: Callable[[], Seated]) -> Seated:
        """The cached player of ``key``, or the one built by ``build`` (once: a concurrent request
        for ``key`` waits for that build and gets its player or its error)."""
        with self._lock:
            seated = self._players.get(key)
            if seated is not None:
                self._players.move_to_end(key)
                return seated
            pending = self._building.get(key)
            mine = pending is None
            if pending is None:
                pending = self._building[key] = _Build()
        if not mine:
            pending.done.wait()
            if pending.error is not None:
                raise pending.error
            return cast(Seated, pending.seated)  # set where no error was
        try:
            pending.seated = build()
        except BaseException as e:
            pending.error = e
            raise
        finally:
            with self._lock:
                if pending.seated is not None:
                    self.builds += 1
                    self._players[key] = pending.seated
                    while len(self._players) > self.capacity:
                        self._players.popitem(last=False)
                del self._building[key]
            pending.done.set()
        return cast(Seated, pending.seated)

    def __len__(self) -> int:
        return len(self._players)

    def loaded(self) -> list[str]:
        """The specs of the players built and kept."""
        with self._lock:
            return sorted({key[0] for key in self._players})

    def resolve(self, text: str, game=None) -> Seated:
        """The player ``text`` names, for ``game`` (None: a checkpoint's own game). ValueError
        (PlayerSpecError, a confinement error, a load error) when it cannot be had."""
        spec = self.confine(parse_player(text))
        local = self.localize(spec)
        files = [checkpoint_file(node) for node in checkpoint_nodes(local)]
        # A checkpoint's player is loaded once, for its own game, then checked against the table's.
        rules = None if files or game is None else (game.name, tuple(sorted(game.config_dict().items())))
        key = (str(spec), tuple(f.stat().st_mtime_ns if f.is_file() else 0 for f in files), rules)

        def build() -> Seated:
            try:
                seated = self.seat(local, None if files else game, key)
                seated.name = str(spec)
                return seated
            except (ValueError, OSError, RuntimeError, KeyError) as e:
                raise ValueError(f"cannot load player {quote(text)}: {e}") from None

        seated = self._get_or_build(key, build)
        if game is not None and seated.game is not None and not same_game(seated.game, game):
            raise ValueError(
                f"player {quote(text)} plays {describe_game(seated.game)}, but this table plays {describe_game(game)}"
            )
        return seated

    def game_of(self, text: str):
        """The game of a spec's checkpoint, or None for a bot (and search over a bot)."""
        if not checkpoint_nodes(parse_player(text)):
            return None
        return self.resolve(text).game


__all__ = ["PlayerCache", "checkpoint_nodes", "MAX_CACHED_PLAYERS"]
