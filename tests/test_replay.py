"""Recorded games: record / replay round trips, and clear errors for other rule sets and corrupted lines."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from deepcfr.evaluate.arena import play_match
from deepcfr.evaluate.replay import (
    RecordingGame,
    ReplayError,
    arena_players,
    read_records,
    record_games,
    replay_record,
)
from deepcfr.games.bots import make_bot
from deepcfr.games.lost_cities import make_rules
from deepcfr.games.registry import make_game
from deepcfr.play import make_view, play_game
from deepcfr.play.replay_view import show_replay
from deepcfr.players import BotPlayer, Seated

SRC = Path(__file__).parents[1] / "src"
ENV = {**os.environ, "PYTHONPATH": str(SRC)}


def _cli(*args: str, stdin: str = "") -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "deepcfr.cli.main", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        env=ENV,
    )


@pytest.fixture
def mini_arena_file(tmp_path):
    """A recorded 6-game Lost Cities (mini) match of two bots, and its arena result."""
    game = make_game("lost_cities", variant="mini")
    recorder = RecordingGame(game)
    a, b = make_bot(game, "heuristic_careful"), make_bot(game, "random")
    result = play_match(recorder, a, b, games=6, seed=11)
    path = tmp_path / "mini.jsonl"
    assert recorder.save(path, arena_players(6, a.name, b.name), seed=11) == 6
    return path, result


def test_arena_recording_round_trip(mini_arena_file):
    path, result = mini_arena_file
    records = read_records(path)  # validates every line by replaying it
    assert len(records) == 6
    assert [r.line for r in records] == [1, 2, 3, 4, 5, 6]
    first = records[0]
    assert first.game == "lost_cities" and first.game_config == make_rules("mini").model_dump()
    assert first.players == ["heuristic_careful", "random"] and records[3].players == ["random", "heuristic_careful"]
    assert first.deal == records[3].deal  # paired deals
    # The recorded results agree with the arena's own figures.
    diffs = []
    for r in records:
        assert r.result["finished"]
        s = r.result["scores"]
        a_seat = r.players.index("heuristic_careful")
        diffs.append(s[a_seat] - s[1 - a_seat])
        ref = replay_record(r)
        assert ref.is_terminal() and list(ref.scores()) == s
    assert sum(diffs) / len(diffs) == pytest.approx(result.mean_score_diff)


def test_record_games_from_action_log(tmp_path):
    game = make_game("kuhn")
    state = game.init(4, generator=torch.Generator().manual_seed(0))
    from deepcfr.games.base import clone_state

    initial = clone_state(state)
    log = []
    gen = torch.Generator().manual_seed(1)
    while not bool(game.is_terminal(state).all()):
        actions = torch.randint(0, 2, (4,), generator=gen)
        log.append(actions)
        state = game.step(state, actions)
    path = tmp_path / "kuhn.jsonl"
    record_games(path, game, initial, log, [["a", "b"]] * 4, seed=0)
    records = read_records(path)
    returns = game.returns(state)
    for i, r in enumerate(records):
        assert r.index == i and r.result["returns"] == returns[i].tolist()
        assert r.deal == initial.cards[i].tolist()


def test_play_record_and_replay_round_trip(tmp_path):
    game = make_game("lost_cities", variant="mini")
    view = make_view(game)
    path = tmp_path / "played.jsonl"
    # The person always takes the first listed move; end of input is never reached.
    out = io.StringIO()
    outcome = play_game(
        view,
        Seated(BotPlayer(make_bot(game, "heuristic_careful"), game), seed=4),
        1,
        4,
        io.StringIO("1\n" * 400),
        out,
        record=path,
    )
    assert outcome.finished and outcome.exit_code == 0
    (record,) = read_records(path)
    assert record.players == ["heuristic_careful", "human"] and record.seed == 4
    assert record.actions == outcome.actions and record.deal == outcome.deal
    assert record.result["scores"] == list(outcome.ref.scores())
    shown = io.StringIO()
    assert show_replay(record, io.StringIO(""), shown, step=True, plain=True, width=100) == 0
    text = shown.getvalue()
    assert f"decision {len(record.actions)} of {len(record.actions)}" in text
    assert "heuristic_careful (seat 0) hand:" in text and "human (seat 1) hand:" in text
    s0, s1 = record.result["scores"]
    assert f"heuristic_careful's expeditions: {s0} points" in text and f"human's expeditions: {s1} points" in text


def test_replay_steps_on_enter_and_stops_on_q(mini_arena_file):
    path, _ = mini_arena_file
    record = read_records(path)[0]
    out = io.StringIO()
    assert show_replay(record, io.StringIO("\n\nq\n"), out, step=True, plain=True, width=100) == 0
    text = out.getvalue()
    assert "decision 3 of" in text and "decision 4 of" not in text and "Replay stopped." in text
    out = io.StringIO()
    assert show_replay(record, io.StringIO("\na\n"), out, step=True, plain=True, width=100) == 0
    assert f"decision {len(record.actions)} of" in out.getvalue() and out.getvalue().count("[Enter] next") == 2


def test_unfinished_game_is_recorded_and_replays(tmp_path):
    game = make_game("leduc")
    path = tmp_path / "quit.jsonl"
    outcome = play_game(
        make_view(game),
        Seated(BotPlayer(make_bot(game, "random"), game)),
        0,
        2,
        io.StringIO("2\nq\n"),
        io.StringIO(),
        record=path,
    )
    assert not outcome.finished
    (record,) = read_records(path)
    assert record.result["finished"] is False and record.actions == outcome.actions


def test_other_rule_set_is_refused(mini_arena_file, tmp_path, capsys):
    from deepcfr.cli.main import main

    path, _ = mini_arena_file
    with pytest.raises(
        ReplayError, match=r"mini\.jsonl line 1: recorded under another rule set: .*n_colors 3 \(expected 5\)"
    ):
        read_records(path, game="lost_cities", game_config=make_rules("classic").model_dump())
    # the command line's --variant names one of the recorded game's variants
    assert main(["replay", str(path), "--variant", "mini", "--list"]) == 0
    capsys.readouterr()
    assert main(["replay", str(path), "--variant", "classic", "--list"]) == 2
    assert "recorded under another rule set" in capsys.readouterr().err
    assert main(["replay", str(path), "--variant", "huge", "--list"]) == 2
    assert "unknown lost_cities variant 'huge'; valid: classic, mini" in capsys.readouterr().err
    # A line whose rules were changed no longer fits its deal.
    lines = path.read_text().splitlines()
    data = json.loads(lines[1])
    data["game_config"]["n_colors"] = 5
    bad = tmp_path / "bad_rules.jsonl"
    bad.write_text("\n".join([lines[0], json.dumps(data)]) + "\n")
    with pytest.raises(
        ReplayError, match=r"bad_rules\.jsonl line 2: the deal has 18 cards but these rules have a 30-card deck"
    ):
        read_records(bad)
    # Rules this build does not know, and another engine version.
    data = json.loads(lines[0])
    data["game_config"]["jokers"] = 2
    bad.write_text(json.dumps(data) + "\n")
    with pytest.raises(ReplayError, match=r"line 1: game_config is not a rule set this build knows .*jokers"):
        read_records(bad)
    data = json.loads(lines[0])
    data["game_version"] = 99
    bad.write_text(json.dumps(data) + "\n")
    with pytest.raises(ReplayError, match=r"line 1: recorded with lost_cities rules version 99"):
        read_records(bad)


def test_corrupted_lines_name_the_line(mini_arena_file, tmp_path):
    path, _ = mini_arena_file
    lines = path.read_text().splitlines()
    bad = tmp_path / "cut.jsonl"
    bad.write_text("\n".join([lines[0], lines[1][: len(lines[1]) // 2], lines[2]]) + "\n")
    with pytest.raises(ReplayError, match=r"cut\.jsonl line 2: not valid JSON .*corrupted"):
        read_records(bad)
    data = json.loads(lines[0])
    data["actions"][5] = data["actions"][4]  # a move that is not legal there
    bad.write_text("\n\n" + json.dumps(data) + "\n")
    with pytest.raises(ReplayError, match=r"line 3: decision 6 \(action \d+\) cannot be replayed"):
        read_records(bad)
    data = json.loads(lines[0])
    del data["deal"]
    bad.write_text(json.dumps(data) + "\n")
    with pytest.raises(ReplayError, match=r"line 1: missing field 'deal'"):
        read_records(bad)
    data = json.loads(lines[0])
    data["result"]["scores"] = [99, 0]
    bad.write_text(json.dumps(data) + "\n")
    with pytest.raises(ReplayError, match=r"line 1: recorded result scores=\[99, 0\] but the replay gives"):
        read_records(bad)


def test_replay_and_arena_command_line(tmp_path, capsys):
    from deepcfr.cli.main import main

    path = tmp_path / "arena.jsonl"
    # One real subprocess (as a user runs it); the rest in-process to keep the suite fast.
    proc = _cli(
        "arena",
        "--game",
        "kuhn",
        "--a",
        "random",
        "--b",
        "random",
        "--games",
        "4",
        "--seed",
        "2",
        "--record",
        str(path),
        "--json",
    )
    assert proc.returncode == 0, proc.stderr
    assert len(path.read_text().splitlines()) == 4
    assert main(["replay", str(path), "--game", "3", "--plain"]) == 0
    out = capsys.readouterr().out
    assert "Replay of game 3 of 4" in out and "decision 1 of" in out
    assert "random (seat 0) card:" in out and "random (seat 1) card:" in out
    assert "wins by" in out or "draw" in out
    assert main(["replay", str(path), "--list"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 4
    assert main(["replay", str(path), "--game", "9"]) == 2
    assert "the file holds games 1 to 4" in capsys.readouterr().err
    assert main(["replay", str(path), "--variant", "mini"]) == 2  # a variant of the recorded game's own
    assert (
        "--variant mini: game 'kuhn' has no named rule variants (no 'variants' capability)" in capsys.readouterr().err
    )
    path.write_text(path.read_text()[:-20] + "\n")
    assert main(["replay", str(path)]) == 2
    assert "line 4: not valid JSON" in capsys.readouterr().err
