"""serve/library: what the server reads from disk. Record files are listed (newest first, hidden
and too-deep ones and links out of the served directory left out), read once per version of the
file, confined to the served directory, validated (a corrupt line or another game refused by
name) and stepped through; run directories are listed with their game and checkpoints, and
their reports drawn again only when metrics.jsonl changes."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

import pytest

import deepcfr.serve.library as library
from deepcfr.evaluate.arena import play_match
from deepcfr.evaluate.replay import RecordingGame, ReplayError, arena_players, new_reference
from deepcfr.games.bots import make_bot
from deepcfr.games.registry import make_game
from deepcfr.serve.library import ReplayLibrary, RunLibrary
from deepcfr.serve.paths import PathError


def _record(path, game_name: str = "lost_cities", games: int = 2, seed: int = 3, **params) -> None:
    game = make_game(game_name, **params)
    recorder = RecordingGame(game)
    a, b = make_bot(game, "random"), make_bot(game, "random")
    play_match(recorder, a, b, games=games, seed=seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    recorder.save(path, arena_players(games, a.name, b.name), seed=seed)


@pytest.fixture(scope="module")
def replays(tmp_path_factory):
    root = tmp_path_factory.mktemp("replays")
    _record(root / "mini.jsonl", variant="mini")
    _record(root / "a" / "b" / "deep.jsonl", variant="mini", games=2, seed=4)  # depth 3: listed
    _record(root / "a" / "b" / "c" / "too_deep.jsonl", variant="mini")  # depth 4: not looked for
    (root / ".hidden.jsonl").write_text((root / "mini.jsonl").read_text())
    (root / "notes.txt").write_text("not a record")
    _record(root / "kuhn.jsonl", "kuhn")
    os.utime(root / "kuhn.jsonl", (1e9, 1e9))  # the oldest
    os.utime(root / "mini.jsonl", (2e9, 2e9))  # the newest
    return root


def test_files_are_listed_newest_first_without_hidden_deep_or_other_files(replays, tmp_path):
    listed = ReplayLibrary(replays).files()
    names = [f["file"] for f in listed]
    assert names[0] == "mini.jsonl" and names[-1] == "kuhn.jsonl"
    assert set(names) == {"mini.jsonl", "a/b/deep.jsonl", "kuhn.jsonl"}
    assert all(f["bytes"] == (replays / f["file"]).stat().st_size for f in listed)
    assert ReplayLibrary(tmp_path / "missing").files() == []


def test_a_link_out_of_the_served_directory_is_not_listed_or_read(replays, tmp_path):
    root = tmp_path / "served"
    root.mkdir()
    (root / "out.jsonl").symlink_to(replays / "mini.jsonl")
    lib = ReplayLibrary(root)
    assert lib.files() == []
    with pytest.raises(PathError, match="leads out of the served directory"):
        lib.records("out.jsonl")


@pytest.mark.parametrize(
    "file, error, message",
    [
        ("../mini.jsonl", PathError, "contains '..'"),
        ("/etc/passwd", PathError, "is absolute"),
        ("", PathError, "empty record file"),
        ("notes.txt", PathError, "is not a .jsonl file"),
        ("a", PathError, "is not a .jsonl file"),  # a directory
        ("none.jsonl", FileNotFoundError, "not found"),
    ],
)
def test_bad_paths_are_refused_with_what_is_wrong(replays, file, error, message):
    with pytest.raises(error, match=message):
        ReplayLibrary(replays).records(file)


def test_records_of_another_game_or_a_corrupt_line_are_refused_naming_the_line(replays, tmp_path):
    with pytest.raises(ReplayError, match=r"kuhn\.jsonl line 1: a kuhn game, but lost_cities was asked for"):
        ReplayLibrary(replays).records("kuhn.jsonl")  # the web table shows Lost Cities only
    root = tmp_path / "corrupt"
    root.mkdir()
    lines = (replays / "mini.jsonl").read_text().splitlines()
    data = json.loads(lines[1])
    data["actions"][3] = data["actions"][2] = 10_000  # not an action of the game
    (root / "bad.jsonl").write_text(lines[0] + "\n" + json.dumps(data) + "\n")
    with pytest.raises(ReplayError, match=r"bad\.jsonl line 2"):
        ReplayLibrary(root).records("bad.jsonl")


def test_a_file_is_read_once_per_version(replays, tmp_path, monkeypatch):
    root = tmp_path / "cached"
    root.mkdir()
    path = root / "games.jsonl"
    path.write_text((replays / "mini.jsonl").read_text())
    reads = []
    real = library.read_records
    monkeypatch.setattr(library, "read_records", lambda *a, **k: reads.append(a[0]) or real(*a, **k))
    lib = ReplayLibrary(root)
    first = lib.records("games.jsonl")
    assert lib.records("games.jsonl") is first and len(reads) == 1
    with open(path, "a") as f:  # the file grows (a game saved from the page): read again
        f.write((replays / "a" / "b" / "deep.jsonl").read_text())
    assert len(lib.records("games.jsonl")) == len(first) + 2 and len(reads) == 2
    assert len(lib._cache) == 1  # the old version was dropped


def test_games_and_the_table_at_each_step(replays):
    lib = ReplayLibrary(replays)
    games = lib.games("mini.jsonl")
    assert [g["game"] for g in games] == [0, 1] and games[0]["players"] == ["random", "random"]
    record = lib.records("mini.jsonl")[1]
    total = len(record.actions)
    assert games[1]["decisions"] == total and games[1]["seed"] == record.seed
    start = lib.state("mini.jsonl", 1, 0)
    assert start["step"] == 0 and start["steps"] == total and start["moves"] == [] and start["previous_move"] is None
    assert start["next_move"]["action"] == record.actions[0] and start["next_move"]["seat"] == 0
    assert all(hand["cards"] is not None for hand in start["hands"])  # both hands open
    middle = lib.state("mini.jsonl", 1, 7)
    ref = new_reference(record.game, record.game_config, record.deal)
    for action in record.actions[:7]:
        ref.apply(action)
    assert [m["action"] for m in middle["moves"]] == record.actions[:7] and middle["moves"][-1]["n"] == 7
    assert middle["previous_move"]["action"] == record.actions[6]
    assert middle["next_move"]["action"] == record.actions[7] and middle["next_move"]["seat"] == ref.current_player()
    assert middle["deck"] == len(ref.deck) and middle["scores"] == list(ref.scores())
    end = lib.state("mini.jsonl", 1, total)
    assert end["finished"] and end["next_move"] is None and end["final"] is not None
    with pytest.raises(ValueError, match=rf"step {total + 1} is out of range: game 1 has steps 0..{total}"):
        lib.state("mini.jsonl", 1, total + 1)
    with pytest.raises(ValueError, match=r"game 2 is not in mini.jsonl: it holds games 0..1"):
        lib.state("mini.jsonl", 2, 0)


# ------------------------------------------------------------------ runs
def _metrics(iteration: int) -> str:
    return json.dumps(
        {
            "iteration": iteration,
            "loss/advantage_p0": 1.0 / iteration,
            "loss/strategy": 0.5 / iteration,
            "eval/random/average/win_rate": 0.6,
            "eval/random/average/mean_score_diff": 20.0,
            "eval/random/average/score_diff_ci95": 4.0,
        }
    )


def test_runs_are_listed_with_their_game_and_checkpoints(tmp_path):
    root = tmp_path / "runs"
    run = root / "group" / "r1"
    (run / "checkpoints").mkdir(parents=True)
    (run / "config.yaml").write_text("game:\n  name: lost_cities\n  variant: mini\n")
    (run / "metrics.jsonl").write_text(_metrics(1) + "\n")
    for name in ("latest.pt", "iter_000002.pt", "iter_000004.pt"):
        (run / "checkpoints" / name).write_bytes(b"x")
    old = root / "old"
    old.mkdir()
    (old / "metrics.jsonl").write_text(_metrics(1) + "\n")
    os.utime(old / "metrics.jsonl", (1e9, 1e9))
    (root / "not_a_run").mkdir()
    # running: the run's marker names a live process of this host (group/r1: this test's own), or for a
    # marker of another host, its metrics changed lately (elsewhere: fresh, old: long ago)
    marker = lambda pid, host: json.dumps({"pid": pid, "host": host, "started": 0})  # noqa: E731
    (run / "running.json").write_text(marker(os.getpid(), socket.gethostname()))
    (old / "running.json").write_text(marker(1, "another-host"))
    elsewhere = root / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "metrics.jsonl").write_text(_metrics(1) + "\n")
    (elsewhere / "running.json").write_text(marker(1, "another-host"))
    finished = root / "finished"  # metrics just written, no marker: the run closed
    finished.mkdir()
    (finished / "metrics.jsonl").write_text(_metrics(1) + "\n")
    runs = {r["run"]: r for r in RunLibrary(root, tmp_path / "cache").runs()}
    assert set(runs) == {"group/r1", "old", "elsewhere", "finished"}
    assert runs["group/r1"]["game"] == "lost_cities" and runs["group/r1"]["variant"] == "mini"
    assert runs["group/r1"]["running"] and runs["elsewhere"]["running"]
    assert not runs["old"]["running"] and not runs["finished"]["running"]
    checkpoints = runs["group/r1"]["checkpoints"]
    assert checkpoints[0] == "group/r1/checkpoints/latest.pt"  # latest first, then the numbered ones
    assert set(checkpoints[1:]) == {"group/r1/checkpoints/iter_000002.pt", "group/r1/checkpoints/iter_000004.pt"}
    assert runs["old"]["game"] is None and runs["old"]["checkpoints"] == []
    assert RunLibrary(tmp_path / "missing", tmp_path / "cache").runs() == []


def test_a_report_is_drawn_again_only_when_the_metrics_change(tmp_path, monkeypatch):
    root, cache = tmp_path / "runs", tmp_path / "cache"
    run = root / "r"
    run.mkdir(parents=True)
    (run / "metrics.jsonl").write_text(_metrics(1) + "\n" + _metrics(2) + "\n")
    drawn = []
    real = library.write_report
    monkeypatch.setattr(library, "write_report", lambda run_dir, out: drawn.append(out) or real(run_dir, out))
    lib = RunLibrary(root, cache)
    with pytest.raises(FileNotFoundError, match="plot losses.png of run 'r' is not drawn"):
        lib.plot("r", "losses.png")
    report = lib.report("r")
    assert report["iterations"] == 2 and report["last_iteration"] == 2 and not report["still_writing"]
    assert "losses.png" in report["plots"] and lib.plot("r", "losses.png").is_file()
    assert lib.plot("r", "losses.png").is_relative_to(cache) and not (run / "report").exists()
    assert lib.report("r")["drawn_from"] == report["drawn_from"] and len(drawn) == 1  # unchanged: not redrawn
    with open(run / "metrics.jsonl", "a") as f:
        f.write(_metrics(3) + "\n")
    os.utime(run / "metrics.jsonl", ns=(10**18, 10**18))  # a later mtime, however fast the test
    assert lib.report("r")["iterations"] == 3 and len(drawn) == 2
    with pytest.raises(ValueError, match="unknown plot 'nope.png'; valid plots: losses.png"):
        lib.plot("r", "nope.png")
    (root / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="run 'empty' has no metrics.jsonl yet"):
        lib.report("empty")
    with pytest.raises(PathError, match="contains '..'"):
        lib.report("../r")


def test_a_run_that_logged_all_its_iterations_is_finished_not_stopped(tmp_path):
    """A run that ended after every iteration (deepcfr train) or round (deepcfr improve) its config asks
    for reads "finished"; one that ended short of them (killed, out of its time budget) "stopped"; one
    whose process has it open "running", whatever it logged."""
    root = tmp_path / "runs"

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)

    def make(name: str, config: str, logged: int, tail: str = "", marker: int | None = None, pad: int = 0):
        run = root / name
        run.mkdir(parents=True)
        (run / "config.yaml").write_text(config)
        lines = [
            json.dumps({"iteration": i, "pad": "x" * pad, **json.loads(_metrics(i))}) for i in range(1, logged + 1)
        ]
        (run / "metrics.jsonl").write_text("".join(line + "\n" for line in lines) + tail)
        if marker is not None:  # the run's process: this one (running), or one that is gone (killed)
            (run / "running.json").write_text(json.dumps({"pid": marker, "host": socket.gethostname(), "started": 0}))

    train = "game:\n  name: lost_cities\nrun:\n  iterations: 3\n"
    make("done", train, 3)
    make("killed", train, 2)
    make("live", train, 3, marker=os.getpid())
    make("killed_in_the_final_fit", train, 3, marker=int(dead.stdout))  # every iteration logged, never closed
    make("improved", "improve:\n  rounds: 2\nrun:\n  seed: 0\n", 2)  # deepcfr improve: its rounds
    make("unknown", "game:\n  name: lost_cities\n", 4)  # no iterations named: it cannot be said finished
    make("long", train, 3, pad=40_000)  # a log longer than the tail read: its last line counts
    make("writing", train, 2, tail='{"iteration": 3, "loss')  # a last line being written is not logged yet
    make("final_fit", train, 3, tail=json.dumps({"iteration": 3, "loss/strategy_final": 0.1}) + "\n")
    runs = {r["run"]: r for r in RunLibrary(root, tmp_path / "cache").runs()}
    assert {name: r["status"] for name, r in runs.items()} == {
        "done": "finished",
        "killed": "stopped",
        "live": "running",
        "improved": "finished",
        "unknown": "stopped",
        "long": "finished",
        "writing": "stopped",
        "final_fit": "finished",
        "killed_in_the_final_fit": "stopped",
    }
    assert (runs["done"]["last_iteration"], runs["done"]["target_iterations"]) == (3, 3)
    assert (runs["killed"]["last_iteration"], runs["improved"]["target_iterations"]) == (2, 2)
    assert runs["unknown"]["target_iterations"] is None and runs["live"]["running"]
    assert [
        library.run_status(False, None, 3),
        library.run_status(False, 5, 3),
        library.run_status(True, 3, 3),
        library.run_status(False, 3, 3, closed=False),
    ] == ["stopped", "finished", "running", "stopped"]
