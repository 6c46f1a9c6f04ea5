"""Games held in server memory: one ``Table`` per game, found by an unguessable id.

A table keeps the game twice, in lockstep: the reference engine, which re-checks every move
before anything changes and presents the state, and the batched engine (a batch of one), whose
``observe`` and ``legal_mask`` the computer players act on, exactly as in training and
evaluation. Each table has its own lock, so many games run at once and two requests on one game
are serialised; a refused move leaves both engines untouched.
"""

from __future__ import annotations

import secrets
import threading
from collections import OrderedDict
from collections.abc import Sequence

import torch

from ..evaluate.replay import GameRecord, make_record, reference_deal
from ..games.base import IllegalActionError
from ..games.lost_cities.reference import PHASE_CARD, LostCitiesReference
from ..play.session import why_illegal
from ..players import top_probabilities
from .present import check_web_table_game, describe_action, legal_json, table_json

HUMAN = "human"
MAX_TABLES = 1000  # games kept in memory; the least recently used one goes first


class TableError(Exception):
    """A request this game cannot take; ``status`` is the HTTP answer (404, 409, ...)."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


class Table:
    """One game. ``players[seat]`` decides the computer's moves (``decide``, as ``players.Seated``; the
    server gives a ``batching.DecisionBatcher`` shared with the other tables of that player), or is
    None for the person at this table."""

    def __init__(self, game, players: Sequence, names: Sequence[str], seed: int, mode: str):
        check_web_table_game(game)
        self.id = secrets.token_urlsafe(18)
        self.game = game
        self.rules = game.rules
        self.players = list(players)
        self.names = list(names)
        self.mode = mode
        self.seed = seed
        self.human_seat = next((s for s, p in enumerate(self.players) if p is None), None)
        self.ref = LostCitiesReference.new(self.rules, seed)
        self.deal = reference_deal(game.name, self.ref)
        self.state = game.init_from_deal(torch.tensor([self.deal]))
        self.generator = torch.Generator().manual_seed(seed + 1)
        # Every decision as (seat, action, extra): extra holds a computer player's probabilities and
        # search values, or None. Kept this compact (a game is ~20 KB); the JSON is built per view.
        self.moves: list[tuple[int, int, dict | None]] = []
        self.lock = threading.Lock()
        self.saved_to: str | None = None

    # Moves -------------------------------------------------------------------------------
    def _apply(self, action: int, seat: int, probs=None, values=None) -> None:
        self.ref.apply(action)  # raises before changing anything when the move is illegal
        self.state = self.game.step(self.state, torch.tensor([action]))
        extra = {}
        if probs is not None:
            extra["probs"] = top_probabilities(probs, self.rules.action_name, action)
        if values is not None:
            extra["values"] = values
        self.moves.append((seat, int(action), extra or None))

    def _move_json(self, i: int, extra: bool) -> dict:
        """Decision ``i`` (from 0) for the page; with the probabilities and values when ``extra``."""
        seat, action, more = self.moves[i]
        out = {"n": i + 1, "seat": seat, **describe_action(self.rules, action)}
        if extra and more:
            out.update(more)
        return out

    def _computer_move(self) -> None:
        seat = self.ref.current_player()
        obs = self.game.observe(self.state, seat)
        mask = self.game.legal_mask(self.state)
        decision = self.players[seat].decide(obs, mask, self.generator, self.rules.action_name)
        self._apply(decision.action, seat, decision.probs, decision.values)

    def _run_computers(self) -> None:
        while not self.ref.is_terminal() and self.players[self.ref.current_player()] is not None:
            self._computer_move()

    def start(self) -> None:
        """Let the computer move first when it has seat 0 (play), nothing for watch games."""
        with self.lock:
            if self.mode == "play":
                self._run_computers()

    def human_move(self, action: int, decision: int | None = None) -> None:
        with self.lock:
            if self.ref.is_terminal():
                raise TableError(409, "the game is over: no more moves")
            if self.human_seat is None:
                raise TableError(409, "this is a watched game: nobody moves by hand (step it instead)")
            if decision is not None and decision != self.ref.num_decisions:
                raise TableError(
                    409,
                    f"out of turn: the move was meant for decision {decision + 1}, but the game "
                    f"is at decision {self.ref.num_decisions + 1} (reload the game)",
                )
            if self.ref.current_player() != self.human_seat:
                raise TableError(
                    409, f"out of turn: seat {self.ref.current_player()} is to move, you play seat {self.human_seat}"
                )
            try:
                self._apply(action, self.human_seat)
            except IllegalActionError as e:
                raise TableError(400, f"illegal move: {e}") from None
            self._run_computers()

    def step(self) -> None:
        """One decision of a watched game."""
        with self.lock:
            if self.ref.is_terminal():
                raise TableError(409, "the game is over: no more moves")
            if self.players[self.ref.current_player()] is None:
                raise TableError(409, "it is your move: a played game is not stepped")
            self._computer_move()

    # Views -------------------------------------------------------------------------------
    @property
    def private(self) -> bool:
        """Whether the game is played by a person and still running: then nothing the person's seat
        could not know leaves the server (the deal, the seed that rebuilds it, the opponent's
        probabilities and search values, which name the cards in its hand)."""
        return self.human_seat is not None and not self.ref.is_terminal()

    def moves_json(self) -> list[dict]:
        """Every move of the game with the players' probabilities and search values (after the end)."""
        with self.lock:
            if self.private:
                raise TableError(
                    409,
                    "the game is still running: the players' probabilities and search values are shown when it is over",
                )
            return [self._move_json(i, True) for i in range(len(self.moves))]

    def view(self) -> dict:
        with self.lock:
            private = self.private
            out = {
                "id": self.id,
                "mode": self.mode,
                "seed": None if private else self.seed,
                "human_seat": self.human_seat,
                "players": [{"seat": s, "name": self.names[s], "human": self.players[s] is None} for s in range(2)],
                **table_json(self.ref, self.human_seat),
            }
            your_turn = not self.ref.is_terminal() and self.ref.current_player() == self.human_seat
            out["legal"] = legal_json(self.ref) if your_turn else []
            out["refusals"] = self._refusals() if your_turn else {}
            # The opponent's moves since the person's last one (all moves for watched games: the last few).
            recent = []
            for i in range(len(self.moves) - 1, -1, -1):
                if self.human_seat is not None and self.moves[i][0] == self.human_seat:
                    break
                recent.append(i)
                if self.human_seat is None and len(recent) >= 4:
                    break
            out["last_moves"] = [self._move_json(i, not private) for i in reversed(recent)]
            # The whole game, both seats, without the probabilities (those ride on last_moves).
            out["moves"] = [self._move_json(i, False) for i in range(len(self.moves))]
            out["move_count"] = len(self.moves)
            out["saved_to"] = self.saved_to
            return out

    def _refusals(self) -> dict[str, str]:
        """Why each card of the person's hand that cannot be played now cannot (``"colour:value"``)."""
        seat = self.human_seat
        if seat is None or self.ref.phase != PHASE_CARD:  # no person at the table, or not a card to play
            return {}
        rules, legal = self.rules, set(self.ref.legal_actions())
        out = {}
        for kind in sorted({rules.card_kind_index(c) for c in self.ref.hands[seat]}):
            if kind not in legal:
                color, k = divmod(kind, rules.n_ranks + 1)
                reason = why_illegal(self.ref, kind)
                out[f"{color}:{rules.kind_value(k)}"] = reason.split(": ", 1)[-1]
        return out

    def record(self) -> GameRecord:
        """The game as a replay record: the whole deal, so only once a played game is over."""
        with self.lock:
            if self.private:
                raise TableError(
                    409,
                    "the game is still running: its record holds the whole deal (the opponent's "
                    "hand and the deck order) and is available when the game is over",
                )
            names = [HUMAN if p is None else n for p, n in zip(self.players, self.names)]
            actions = [action for _, action, _ in self.moves]
            return make_record(
                self.game.name, self.game.config_dict(), self.deal, actions, names, self.seed, ref=self.ref
            )


class TableStore:
    """Tables by id; thread-safe. Beyond ``capacity`` the least recently used table is dropped."""

    def __init__(self, capacity: int = MAX_TABLES):
        self.capacity = capacity
        self._tables: OrderedDict[str, Table] = OrderedDict()
        self._lock = threading.Lock()

    def add(self, table: Table) -> Table:
        with self._lock:
            self._tables[table.id] = table
            while len(self._tables) > self.capacity:
                self._tables.popitem(last=False)
        return table

    def get(self, table_id: str) -> Table:
        with self._lock:
            table = self._tables.get(table_id)
            if table is None:
                shown = table_id if len(table_id) <= 40 else table_id[:40] + "..."
                raise TableError(404, f"no game with id {shown!r} (unknown, or dropped after a server restart)")
            self._tables.move_to_end(table_id)
            return table

    def __len__(self) -> int:
        with self._lock:
            return len(self._tables)

    def clear(self) -> None:
        """Forget every game (what a restart does)."""
        with self._lock:
            self._tables.clear()
