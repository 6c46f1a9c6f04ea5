"""Recorded games: JSON lines, one game per line, replayed with the reference engines.

A line (format 1)::

    {"format": 1, "game": "lost_cities", "game_version": 1, "game_config": {...rules...},
     "seed": 3, "index": 0, "deal": [...], "actions": [...], "players": ["you", "random"],
     "result": {"finished": true, "decisions": 190, "returns": [..], "winner": 0, ...}}

``deal`` is what the reference engine's ``from_deal`` takes (Lost Cities: the whole shuffled
deck, hands first; Kuhn: the two private cards; Leduc: two private cards and the public card),
``actions`` every decision in order, ``players`` the names in seat order. Reading validates
every line (structure, rules, deal, legality of each action, recorded result) and names the
line of the first problem.

Recording a batched match: :class:`RecordingGame` wraps a batched game and notes the first
state and every action that passes through ``step``; :func:`record_games` writes those games.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from ..games.base import IllegalActionError, capability, clone_state, has_capability

FORMAT_VERSION = 1
REQUIRED_FIELDS: dict[str, type | tuple[type, ...]] = {
    "format": int,
    "game": str,
    "game_config": dict,
    "seed": (int, type(None)),
    "deal": list,
    "actions": list,
    "players": list,
    "result": dict,
}


class ReplayError(ValueError):
    """A record file or line that cannot be replayed; the message names the file and line."""


@dataclass
class GameRecord:
    game: str
    game_config: dict
    game_version: int | None
    seed: int | None
    deal: list[int]
    actions: list[int]
    players: list[str]
    result: dict
    index: int | None = None
    line: int | None = None  # line number in the file it was read from

    def to_dict(self) -> dict:
        out = {
            "format": FORMAT_VERSION,
            "game": self.game,
            "game_version": self.game_version,
            "game_config": self.game_config,
            "seed": self.seed,
        }
        if self.index is not None:
            out["index"] = self.index
        out.update(deal=self.deal, actions=self.actions, players=self.players, result=self.result)
        return out


# Games ------------------------------------------------------------------------------------------
def game_version(name: str) -> int:
    from ..games.registry import make_game

    return make_game(name).version


def game_of_record(name: str, game_config: dict):
    """The batched game of a recorded ``game_config`` (its rules; ValueError for rules this build
    does not know)."""
    from ..games.registry import game_from_config_dict

    return game_from_config_dict(name, game_config)


def new_reference(name: str, game_config: dict, deal: Sequence[int]):
    """A reference engine at the start of the game dealt ``deal``."""
    from ..games.registry import game_names, reference_from_deal

    if name not in game_names():
        raise ValueError(f"unknown game {name!r}; valid games: {', '.join(game_names())}")
    return reference_from_deal(name, game_config, deal)


def reference_deal(name: str, ref) -> list[int]:
    """The deal of a reference engine that has not moved yet (what ``new_reference`` takes; the
    engine's own ``deal()``; ``name`` is the game's, kept for the callers)."""
    return [int(c) for c in ref.deal()]


def state_deals(game, state) -> torch.Tensor:
    """Deals ``[n, deal_len]`` of a batched state that has not moved yet (what the game's
    ``init_from_deal`` takes): the game's ``deals_of`` capability."""
    return capability(game, "deals_of")(state).long()


def decisions_made(ref) -> int:
    if hasattr(ref, "num_decisions"):
        return int(ref.num_decisions)
    if hasattr(ref, "rounds"):
        return sum(len(r) for r in ref.rounds)
    return len(ref.history)


def game_result(name: str, ref) -> dict:
    """The result of a (possibly unfinished) game, for the record's ``result`` field."""
    returns = [float(x) for x in ref.returns()]
    result: dict[str, Any] = {"finished": bool(ref.is_terminal()), "decisions": decisions_made(ref)}
    detail = getattr(ref, "score_detail", None)  # points where the game has them (Lost Cities)
    if detail is not None:
        result.update(detail())
    result["returns"] = returns
    margin = returns[0]  # the utilities have the sign of the score difference
    result["winner"] = None if margin == 0 or not ref.is_terminal() else (0 if margin > 0 else 1)
    return result


# Writing ------------------------------------------------------------------------------------------
def append_records(path: str | Path, records: Iterable[GameRecord | dict]) -> int:
    """Append records to ``path`` as JSON lines; returns how many were written."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    with open(path, "a", encoding="utf-8") as f:
        for r in records:
            f.write(json.dumps(r.to_dict() if isinstance(r, GameRecord) else r) + "\n")
            n += 1
    return n


def make_record(
    name: str,
    game_config: dict,
    deal: Sequence[int],
    actions: Sequence[int],
    players: Sequence[str],
    seed: int | None,
    ref=None,
    index: int | None = None,
) -> GameRecord:
    """A record of one game; ``ref`` (the engine after the actions) gives the result, else the
    game is replayed to compute it."""
    if ref is None:
        ref = new_reference(name, game_config, deal)
        for a in actions:
            ref.apply(int(a))
    return GameRecord(
        game=name,
        game_config=dict(game_config),
        game_version=game_version(name),
        seed=seed,
        deal=[int(c) for c in deal],
        actions=[int(a) for a in actions],
        players=[str(p) for p in players],
        result=game_result(name, ref),
        index=index,
    )


def record_games(
    path: str | Path,
    game,
    initial_state,
    actions: Sequence[torch.Tensor] | torch.Tensor,
    players: Sequence[Sequence[str]],
    seed: int | None = None,
) -> int:
    """Write the games of a batched run as JSON lines (appending); returns the number written.

    ``initial_state``: the batched state before the first step (its deals are recorded);
    ``actions``: the actions passed to each ``step`` call, ``[T, n]`` (entries of rows that were
    already terminal, or marked -1, are ignored); ``players[i]``: names in seat order of game i.
    Each game is replayed by the reference engine, which checks it and computes its result.
    """
    deals = state_deals(game, initial_state).cpu()
    n = deals.shape[0]
    log = (
        torch.stack([torch.as_tensor(a).cpu().long() for a in actions])
        if len(actions)
        else torch.zeros(0, n, dtype=torch.long)
    )
    if log.dim() != 2 or log.shape[1] != n:
        raise ValueError(f"actions must be [steps, {n}] for {n} games, got {tuple(log.shape)}")
    if len(players) != n:
        raise ValueError(f"players must name the seats of each of the {n} games, got {len(players)} entries")
    config = game.config_dict()
    records = []
    columns = log.t().tolist()
    for i in range(n):
        deal = deals[i].tolist()
        ref = new_reference(game.name, config, deal)
        taken = []
        for a in columns[i]:
            if ref.is_terminal():
                break
            if a < 0:
                continue
            ref.apply(a)
            taken.append(a)
        records.append(make_record(game.name, config, deal, taken, players[i], seed, ref=ref, index=i))
    return append_records(path, records)


class RecordingGame:
    """A batched game that notes what passes through it, so a match can be recorded without
    changing the code that plays it: ``rec = RecordingGame(game)``, play with ``rec`` in place
    of ``game``, then ``rec.save(path, players)``. ``init`` starts a new recording; the first
    ``step`` notes the state it receives (after any row duplication by the caller)."""

    def __init__(self, game):
        self._game = game
        self.initial_state = None
        self.actions: list[torch.Tensor] = []

    def __getattr__(self, name):
        return getattr(self._game, name)

    def init(self, *args, **kwargs):
        self.initial_state, self.actions = None, []
        return self._game.init(*args, **kwargs)

    def step(self, state, actions, *args, **kwargs):
        if self.initial_state is None:
            self.initial_state = clone_state(state)
        live = ~self._game.is_terminal(state)
        self.actions.append(torch.where(live, torch.as_tensor(actions, device=live.device).long(), -1).cpu())
        return self._game.step(state, actions, *args, **kwargs)

    def save(self, path: str | Path, players: Sequence[Sequence[str]], seed: int | None = None) -> int:
        if self.initial_state is None:
            raise ValueError("nothing to record: no game was played through this RecordingGame")
        return record_games(path, self._game, self.initial_state, self.actions, players, seed)


def arena_players(games: int, name_a: str, name_b: str) -> list[list[str]]:
    """Seat names of the games of ``evaluate.arena.play_match``: the first half has A in seat 0,
    the second half the same deals with A in seat 1."""
    pairs = games // 2
    return [[name_a, name_b]] * pairs + [[name_b, name_a]] * pairs


# Reading ------------------------------------------------------------------------------------------
def _config_differences(expected: dict, actual: dict) -> list[str]:
    keys = sorted(set(expected) | set(actual))
    return [
        f"{k} {actual.get(k, '(absent)')!r} (expected {expected.get(k, '(absent)')!r})"
        for k in keys
        if expected.get(k) != actual.get(k)
    ]


def parse_record(text: str, where: str) -> GameRecord:
    """One line -> GameRecord, checking structure only. ``where`` prefixes error messages."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise ReplayError(f"{where}: not valid JSON ({e.msg} at column {e.colno}); the line is corrupted") from None
    if not isinstance(data, dict):
        raise ReplayError(f"{where}: expected a JSON object describing one game, got {type(data).__name__}")
    for key, types in REQUIRED_FIELDS.items():
        if key not in data:
            raise ReplayError(f"{where}: missing field {key!r}")
        if not isinstance(data[key], types) or isinstance(data[key], bool):
            raise ReplayError(f"{where}: field {key!r} has the wrong type ({type(data[key]).__name__})")
    if data["format"] != FORMAT_VERSION:
        raise ReplayError(
            f"{where}: record format {data['format']} is not supported (this version reads format {FORMAT_VERSION})"
        )
    for key in ("deal", "actions"):
        if not all(isinstance(x, int) and not isinstance(x, bool) for x in data[key]):
            raise ReplayError(f"{where}: field {key!r} must be a list of integers")
    if len(data["players"]) != 2:
        raise ReplayError(f"{where}: field 'players' must name 2 seats, got {len(data['players'])}")
    return GameRecord(
        game=data["game"],
        game_config=data["game_config"],
        game_version=data.get("game_version"),
        seed=data["seed"],
        deal=data["deal"],
        actions=data["actions"],
        players=[str(p) for p in data["players"]],
        result=data["result"],
        index=data.get("index"),
    )


def replay_record(record: GameRecord, where: str = "record"):
    """Replay a record with the reference engine, checking rules, deal, every action and the
    recorded result; returns the engine after the last action."""
    from ..games.registry import game_names

    if record.game not in game_names():
        raise ReplayError(f"{where}: unknown game {record.game!r}; valid games: {', '.join(game_names())}")
    current = game_version(record.game)
    if record.game_version is not None and record.game_version != current:
        raise ReplayError(
            f"{where}: recorded with {record.game} rules version {record.game_version}, but this "
            f"build implements version {current}; the game cannot be replayed"
        )
    try:
        game = game_of_record(record.game, record.game_config)
    except ValueError as e:
        first = str(e).strip().splitlines()
        raise ReplayError(f"{where}: game_config is not a rule set this build knows ({'; '.join(first[:3])})") from None
    rules = capability(game, "rules") if has_capability(game, "rules") else None
    if rules is not None and len(record.deal) != rules.deck_size:
        raise ReplayError(
            f"{where}: the deal has {len(record.deal)} cards but these rules have a "
            f"{rules.deck_size}-card deck (recorded under another rule set?)"
        )
    try:
        ref = new_reference(record.game, record.game_config, record.deal)
    except ValueError as e:
        raise ReplayError(f"{where}: invalid deal: {e}") from None
    for number, action in enumerate(record.actions, start=1):
        try:
            ref.apply(action)
        except IllegalActionError as e:
            raise ReplayError(f"{where}: decision {number} (action {action}) cannot be replayed: {e}") from None
    replayed = game_result(record.game, ref)
    for key in ("finished", "returns", "scores"):
        if key in record.result and record.result[key] != replayed.get(key):
            raise ReplayError(
                f"{where}: recorded result {key}={record.result[key]!r} but the replay gives {replayed.get(key)!r}"
            )
    return ref


def read_records(
    path: str | Path, game: str | None = None, game_config: dict | None = None, validate: bool = True
) -> list[GameRecord]:
    """Read and (by default) validate every game in a record file.

    ``game`` / ``game_config``: when given, every record must be of that game with exactly
    those rules (a file from another rule set is refused, naming the differing rules)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"record file not found: {path}")
    records = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for number, text in enumerate(f, start=1):
            if not text.strip():
                continue
            where = f"{path} line {number}"
            record = parse_record(text, where)
            record.line = number
            if game is not None and record.game != game:
                raise ReplayError(f"{where}: a {record.game} game, but {game} was asked for")
            if game_config is not None and record.game_config != game_config:
                diffs = _config_differences(game_config, record.game_config)
                raise ReplayError(f"{where}: recorded under another rule set: " + "; ".join(diffs))
            if validate:
                replay_record(record, where)
            records.append(record)
    if not records:
        raise ReplayError(f"{path}: no recorded games in the file")
    return records


def replay_steps(record: GameRecord) -> Iterable[tuple[Any, int, int]]:
    """Yield ``(engine before the decision, decision number from 1, action)`` for every decision
    of a valid record (the engine is the same object, advanced after each yield)."""
    ref = new_reference(record.game, record.game_config, record.deal)
    for number, action in enumerate(record.actions, start=1):
        yield ref, number, action
        ref.apply(action)
