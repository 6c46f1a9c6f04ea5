"""The served page under load (issue 39, item 4): the decisions of the tables that share a player
made as one batched call (serve.batching), players built once however many games start at once
(players.PlayerCache), and a bounded loopback load (serve.load) in which every game finishes."""

from __future__ import annotations

import socket
import threading
import time

import pytest
import torch

pytest.importorskip("fastapi")
uvicorn = pytest.importorskip("uvicorn")

from deepcfr.players import PlayerCache, Seated  # noqa: E402
from deepcfr.serve import ServeSettings, create_app  # noqa: E402
from deepcfr.serve.batching import Batchers, DecisionBatcher  # noqa: E402
from deepcfr.serve.load import check_loopback, play_load  # noqa: E402

ACTIONS = 12


class Recorder:
    """A player whose ``act`` records each call's batch size, may block until released, may fail,
    and plays the action written in each row's first feature (so a row's answer is recognisable)."""

    name = "recorder"

    def __init__(self, block_first: bool = False, fail_after: int | None = None):
        self.sizes: list[int] = []
        self.entered = threading.Event()
        self.release = threading.Event()
        if not block_first:
            self.release.set()
        self.fail_after = fail_after

    def act(self, obs, mask, generator=None):
        self.sizes.append(obs.shape[0])
        self.entered.set()
        assert self.release.wait(30), "the test never released the player"
        if self.fail_after is not None and len(self.sizes) > self.fail_after:
            raise RuntimeError("the player broke")
        return obs[:, 0].long()


def _row(action: int) -> tuple[torch.Tensor, torch.Tensor]:
    obs = torch.zeros(1, 5)
    obs[0, 0] = action
    return obs, torch.ones(1, ACTIONS, dtype=torch.bool)


def _wait_for(condition, timeout: float = 30.0) -> None:
    end = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < end, "timed out waiting"
        time.sleep(0.005)


def _pile_up(player: Recorder, waiting: list[int]):
    """One decision (action 0) holds the player; ``waiting`` tables then ask while it runs. The
    answers (or errors) by table, once the player is released."""
    batcher = DecisionBatcher(Seated(player))
    out: dict[int, object] = {}

    def ask(action: int) -> None:
        try:
            out[action] = batcher.decide(*_row(action)).action
        except Exception as e:  # the test looks at what each table got
            out[action] = e

    first = threading.Thread(target=ask, args=(0,))
    first.start()
    assert player.entered.wait(30)
    others = [threading.Thread(target=ask, args=(a,)) for a in waiting]
    for t in others:
        t.start()
    _wait_for(lambda: len(batcher._pending) == len(waiting))  # all queued behind the running call
    player.release.set()
    for t in [first, *others]:
        t.join(30)
        assert not t.is_alive()
    return batcher, out


def test_decisions_waiting_on_a_running_call_are_made_as_one_call_each_table_its_own_row():
    player = Recorder(block_first=True)
    batcher, out = _pile_up(player, [3, 7, 5, 11])
    assert player.sizes == [1, 4]  # the running call alone, then every waiting table in one call
    assert out == {0: 0, 3: 3, 7: 7, 5: 5, 11: 11}
    assert (batcher.calls, batcher.decisions) == (2, 5)


def test_an_error_of_a_batched_call_reaches_every_table_of_its_batch():
    player = Recorder(block_first=True, fail_after=1)
    batcher, out = _pile_up(player, [2, 4, 6])
    assert player.sizes == [1, 3]
    assert out[0] == 0
    for action in (2, 4, 6):
        assert isinstance(out[action], RuntimeError) and "the player broke" in str(out[action])
    player.fail_after = None
    assert batcher.decide(*_row(9)).action == 9  # the batcher is free for the next decision
    assert player.sizes == [1, 3, 1]


def test_a_decision_alone_is_made_at_once():
    player = Recorder()
    batcher = DecisionBatcher(Seated(player))
    start = time.perf_counter()
    decision = batcher.decide(*_row(6))
    assert decision.action == 6 and player.sizes == [1]
    assert time.perf_counter() - start < 0.5  # no window waiting for others
    assert (batcher.calls, batcher.decisions) == (1, 1)


def test_the_tables_of_one_player_share_one_batcher():
    batchers = Batchers()
    a, b = Seated(Recorder()), Seated(Recorder())
    held = batchers.of(a)  # as a table holds it
    assert batchers.of(a) is held and batchers.of(b) is not held
    held.decide(*_row(1))
    assert {"player": "recorder", "calls": 1, "decisions": 1} in batchers.stats()
    del held
    import gc

    gc.collect()
    assert batchers.stats() == []  # no table holds it: gone with its player's last table


def test_concurrent_starts_of_one_spec_build_its_player_once(monkeypatch):
    import deepcfr.players.cache as cache

    built, gate = [], threading.Event()

    def slow_load(spec, game=None, device="cpu"):
        built.append(str(spec))
        assert gate.wait(30)
        return Recorder()

    monkeypatch.setattr(cache, "load_player", slow_load)
    players = PlayerCache()
    got: list[object] = []
    threads = [
        threading.Thread(target=lambda s=s: got.append(players.resolve(s)))
        for s in ["random"] * 6 + ["heuristic_balanced"] * 2
    ]
    for t in threads:
        t.start()
    _wait_for(lambda: len(built) == 2)  # the other spec is built meanwhile, not after the first
    time.sleep(0.2)
    assert sorted(built) == ["heuristic_balanced", "random"]
    gate.set()
    for t in threads:
        t.join(30)
    assert sorted(built) == ["heuristic_balanced", "random"] and players.builds == 2
    assert len({id(s) for s in got}) == 2 and len(got) == 8
    assert players.resolve("random") in got and players.builds == 2  # later games: the cached player


def test_a_failed_build_reaches_its_waiters_and_is_tried_again(monkeypatch):
    import deepcfr.players.cache as cache

    calls, gate = [], threading.Event()

    def broken_load(spec, game=None, device="cpu"):
        calls.append(1)
        assert gate.wait(30)
        raise RuntimeError("no such file")

    monkeypatch.setattr(cache, "load_player", broken_load)
    players = PlayerCache()
    errors: list[Exception] = []

    def start():
        try:
            players.resolve("random")
        except ValueError as e:
            errors.append(e)

    threads = [threading.Thread(target=start) for _ in range(3)]
    for t in threads:
        t.start()
    _wait_for(lambda: len(calls) == 1)
    time.sleep(0.1)
    gate.set()
    for t in threads:
        t.join(30)
    assert len(calls) == 1 and len(errors) == 3 and all("cannot load player" in str(e) for e in errors)
    with pytest.raises(ValueError):
        players.resolve("random")
    assert len(calls) == 2 and len(players) == 0


@pytest.mark.parametrize(
    "url",
    [
        "http://example.com/",
        "http://10.0.0.1:8000",
        "http://127.0.0.1.example.com/",
        "http://192.168.1.2/",
        "http:///nohost",
    ],
)
def test_the_load_generator_refuses_a_server_not_on_loopback(url):
    with pytest.raises(ValueError, match="loopback"):
        play_load(url, ["random"])


def test_the_load_generator_takes_loopback_servers():
    assert check_loopback("http://127.0.0.1:8000") == "http://127.0.0.1:8000/"
    assert check_loopback("http://localhost/") == "http://localhost/"
    assert check_loopback("http://[::1]:9/") == "http://[::1]:9/"


class _Server:
    """``create_app`` served by uvicorn on a free loopback port, in this process (so a test reads
    the app's batchers and player cache)."""

    def __init__(self, tmp_path):
        (tmp_path / "runs").mkdir()
        self.app = create_app(ServeSettings(runs=str(tmp_path / "runs")))
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(128)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/"
        self.server = uvicorn.Server(uvicorn.Config(self.app, log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)

    def __enter__(self):
        self.thread.start()
        _wait_for(lambda: self.server.started)
        return self

    def __exit__(self, *exc):
        self.server.should_exit = True
        self.thread.join(30)
        self.sock.close()


CHEAP_SEARCH = "search[determinizations=4,candidates=2]:heuristic_balanced"


def test_a_bounded_load_finishes_every_game_with_batched_decisions(tmp_path):
    """4 games against champion@greedy and 1 against a cheap search at once, random legal moves:
    every game ends without an error, each player was built once, and every computer move the
    clients saw went through its player's batcher (decisions / calls is the batch size)."""
    opponents = ["champion@greedy"] * 4 + [CHEAP_SEARCH]
    with _Server(tmp_path) as served:
        result = play_load(served.url, opponents, seed=11, deadline_s=60, request_timeout_s=60)
        stats = {s["player"]: s for s in served.app.state.batchers.stats()}
        builds = served.app.state.players.builds
    assert result.errors == [] and result.finished == 5, result.errors
    assert builds == 2  # one champion@greedy for its four games, one search
    champion = next(s for name, s in stats.items() if "champion" in name)
    search = next(s for name, s in stats.items() if "search" in name)
    assert champion["decisions"] == result.opponent_moves["champion@greedy"] > 0
    assert search["decisions"] == result.opponent_moves[CHEAP_SEARCH] > 0
    assert search["calls"] == search["decisions"]  # one game: nothing to batch with
    assert champion["calls"] < champion["decisions"]  # four games: some of their moves were made together
    rows = result.summary()
    kinds = {(r["kind"], r["opponent"]) for r in rows}
    assert ("reply", "champion@greedy") in kinds and ("start", CHEAP_SEARCH) in kinds
    # where the slow requests' time went, from the server's Server-Timing header
    reply = next(r for r in rows if r["kind"] == "reply" and r["opponent"] == CHEAP_SEARCH)
    assert reply["tail"]["decide"] > 0 and reply["tail"]["app"] >= reply["tail"]["decide"]
    print(
        f"\nbatch size against champion@greedy: {champion['decisions']}/{champion['calls']} = "
        f"{champion['decisions'] / champion['calls']:.2f}"
    )


def _search_table(client, opponent: str):
    """A mini game against ``opponent`` where it moves first: (the answer, the table)."""
    view = client.post("/api/games", json={"opponent": opponent, "seat": 1, "variant": "mini", "seed": 5})
    assert view.status_code == 200, view.text
    return view, client.app.state.tables.get(view.json()["id"])


def test_search_players_run_in_a_process_of_their_own_with_the_served_time_limit(tmp_path):
    """A served search player is built and run in the search process (not in the server's
    interpreter, where the tables' threads hold its lock), and gets the served budget unless its
    spec sets a time limit of its own; its moves come with their candidates' values."""
    import os

    from fastapi.testclient import TestClient

    from deepcfr.serve.app import SERVED_SEARCH_BUDGET_S, search_process
    from deepcfr.serve.search_process import ProcessSeated

    client = TestClient(create_app(ServeSettings(runs=str(tmp_path))))
    view, table = _search_table(client, CHEAP_SEARCH)
    seated = table.players[0].seated
    assert isinstance(seated, ProcessSeated)
    assert seated.process._proc.pid != os.getpid() and seated.process is search_process("cpu")
    assert seated.player.search.config.time_limit_s == SERVED_SEARCH_BUDGET_S
    assert len(view.json()["moves"]) >= 1  # the computer moved first, in the search process
    timing = view.headers["Server-Timing"]
    assert "decide;dur=" in timing and "players;dur=" in timing and "app;dur=" in timing
    _, own = _search_table(client, "search[determinizations=4,candidates=2,time_limit_s=2]:heuristic_balanced")
    assert own.players[0].player.search.config.time_limit_s == 2.0
    info = client.get("/api/info").json()
    assert CHEAP_SEARCH in info["players_loaded"]
    row = next(b for b in info["batching"] if b["player"] == CHEAP_SEARCH)
    assert row["decisions"] >= 1 and row["determinizations_per_decision"] >= 1


def test_a_search_process_that_died_is_started_again_and_rebuilds_its_players(tmp_path):
    from fastapi.testclient import TestClient

    client = TestClient(create_app(ServeSettings(runs=str(tmp_path))))
    view, table = _search_table(client, CHEAP_SEARCH)
    process = table.players[0].seated.process
    starts = process.starts
    process._proc.kill()
    process._proc.join(30)
    state, replies = view.json(), 0
    while not replies:  # the person's moves (a card, then a draw) until the computer has replied
        moved = client.post(
            f"/api/games/{state['id']}/move",
            json={"action": state["legal"][0]["action"], "decision": state["decisions"]},
        )
        assert moved.status_code == 200, moved.text
        state = moved.json()
        replies = sum(m["seat"] == 0 for m in state["last_moves"])
    assert process.starts == starts + 1 and process._proc.is_alive()


def test_the_server_builds_the_players_the_page_offers_before_the_first_game(tmp_path):
    from deepcfr.players.shipped import CHAMPION_FILE
    from deepcfr.serve.app import offered_champions, warm_players

    if not CHAMPION_FILE.is_file():
        pytest.skip("the champion is not shipped in this checkout")
    app = create_app(ServeSettings(runs=str(tmp_path)))
    assert app.state.players.loaded() == []
    warm_players(app)
    assert sorted(app.state.players.loaded()) == sorted(offered_champions()) == ["champion@greedy", "search:champion"]
