"""One batched call for the pending decisions of every table that shares a player.

Many games against one spec share one loaded player (``players.PlayerCache``). Deciding their
moves one request at a time makes every table wait behind the others' batch-of-one calls, each
costing about what a whole batch does (a search's rollouts, a network's forward). A
``DecisionBatcher`` stands in front of the shared player: a table that needs a move adds its
observation to the pending list; when no call is running, the first waiting request takes every
pending decision and makes them one ``decide_batch`` call, and the others get their rows. There
is no waiting window: a decision alone is made at once, and under load the batch is whatever
arrived while the last call ran (so it grows with the load, with no thread of its own).

What a batch shares: the random generator of its first table (a table's seeded game replays its
opponent's sampled moves only while nothing was batched with them; the deal and the greedy and
search players do not depend on it).
"""

from __future__ import annotations

import math
import threading
import time
import weakref
from collections.abc import Callable

import torch

from ..players import Decision, Seated
from . import timing


class _Pending:
    """One table's decision, waiting for a batch: its inputs, then its Decision or the call's error."""

    def __init__(self, obs: torch.Tensor, mask: torch.Tensor, generator: torch.Generator | None):
        self.obs, self.mask, self.generator = obs, mask, generator
        self.asked = time.perf_counter()
        self.taken = self.asked  # when a call took it into its batch
        self.done = False
        self.decision: Decision | None = None
        self.error: BaseException | None = None

    def outcome(self) -> Decision:
        timing.add("queue", self.taken - self.asked)  # behind another batch's call
        timing.add("decide", time.perf_counter() - self.taken)  # in the call that made it
        if self.error is not None:
            raise self.error
        if self.decision is None:
            raise RuntimeError("the player's batched call returned no decision for this table")
        return self.decision


class DecisionBatcher:
    """A shared ``Seated`` player that makes the concurrent decisions of its tables as one call.
    ``calls`` and ``decisions`` count what reached the player (decisions / calls: the batch size)."""

    def __init__(self, seated: Seated):
        self.seated = seated
        self.player, self.name, self.game = seated.player, seated.name, seated.game
        self.calls = 0
        self.decisions = 0
        self._pending: list[_Pending] = []
        self._deciding = False
        self._changed = threading.Condition()

    def decide(
        self,
        obs: torch.Tensor,
        mask: torch.Tensor,
        generator: torch.Generator | None = None,
        action_name: Callable[[int], str] = str,
    ) -> Decision:
        """One table's decision (``obs [1, K]``, ``mask [1, A]``), made with whatever else is pending."""
        mine = _Pending(obs, mask, generator)
        with self._changed:
            self._pending.append(mine)
            while self._deciding and not mine.done:
                self._changed.wait()
            if mine.done:
                return mine.outcome()
            batch, self._pending, self._deciding = self._pending, [], True
            taken = time.perf_counter()
            for p in batch:
                p.taken = taken
        try:
            decisions = self.seated.decide_batch(
                torch.cat([p.obs for p in batch]), torch.cat([p.mask for p in batch]), batch[0].generator, action_name
            )
            for p, decision in zip(batch, decisions):
                p.decision = decision
        except BaseException as e:  # every table of the batch gets the call's error (a 500 names it in the log)
            for p in batch:
                p.error = e
        finally:
            with self._changed:
                for p in batch:
                    p.done = True
                self.calls += 1
                self.decisions += len(batch)
                self._deciding = False
                self._changed.notify_all()
        return mine.outcome()


class Batchers:
    """The one batcher of each shared player, for as long as a table holds it (keyed by the
    player's id, which cannot be reused while its batcher, holding it, lives)."""

    def __init__(self):
        self._of: weakref.WeakValueDictionary[int, DecisionBatcher] = weakref.WeakValueDictionary()
        self._lock = threading.Lock()

    def of(self, seated: Seated) -> DecisionBatcher:
        with self._lock:
            batcher = self._of.get(id(seated))
            if batcher is None:
                batcher = self._of[id(seated)] = DecisionBatcher(seated)
            return batcher

    def stats(self) -> list[dict]:
        """What reached each live shared player: ``{player, calls, decisions}`` (decisions / calls:
        the mean batch), and a search's mean ``determinizations_per_decision``."""
        with self._lock:
            batchers = list(self._of.values())
        out = []
        for b in batchers:
            row = {"player": b.name, "calls": b.calls, "decisions": b.decisions}
            search = getattr(b.player, "search", None)
            if search is not None:  # what a time limit left of its determinizations
                used = search.stats.to_dict()["determinizations_per_decision"]
                row["determinizations_per_decision"] = used if math.isfinite(used) else None  # none rolled out yet
            out.append(row)
        return out


__all__ = ["Batchers", "DecisionBatcher"]
