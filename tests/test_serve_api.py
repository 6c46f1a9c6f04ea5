"""`deepcfr serve` through FastAPI's test client: whole games, every refusal, paths, runs, replays,
concurrency, and the real command in a subprocess."""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
import threading
import urllib.error
import urllib.request
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import quote

import pytest

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # starlette's note about httpx vs httpx2
    from fastapi.testclient import TestClient

from deepcfr.evaluate.replay import read_records
from deepcfr.games.lost_cities import LostCitiesReference, LostCitiesRules
from deepcfr.games.lost_cities.rules import make_rules
from deepcfr.serve import ServeSettings, create_app

SRC = str(Path(__file__).resolve().parent.parent / "src")


def _client(tmp_path: Path, **kw) -> TestClient:
    runs = kw.pop("runs", tmp_path / "runs")
    Path(runs).mkdir(parents=True, exist_ok=True)
    return TestClient(create_app(ServeSettings(runs=str(runs), **kw)))


def _mirror_apply(mirror: LostCitiesReference, moves: list[dict]) -> None:
    for m in moves:
        mirror.apply(m["action"])


def _check_view_against(view: dict, mirror: LostCitiesReference, viewer: int | None) -> None:
    """Everything the page is shown agrees with an independent reference engine, and the hidden
    hand is not sent."""
    assert view["decisions"] == mirror.num_decisions and view["deck"] == len(mirror.deck)
    assert view["scores"] == list(mirror.scores())
    for seat in range(2):
        hand = view["hands"][seat]
        assert hand["count"] == len(mirror.hands[seat])
        assert hand["known_ids"] == sorted(mirror.known[seat])
        if viewer is not None and seat != viewer and not view["finished"]:
            assert hand["cards"] is None
        else:
            assert sorted(c["id"] for c in hand["cards"]) == sorted(mirror.hands[seat])
        assert [e["score"] for e in view["expeditions"][seat]] == mirror.expedition_scores(seat)
        assert [[c["id"] for c in e["cards"]] for e in view["expeditions"][seat]] == mirror.expeditions[seat]
    assert [[c["id"] for c in p["cards"]] for p in view["piles"]] == mirror.piles


def _play_to_end(client: TestClient, view: dict, rng: random.Random, mirror=None) -> dict:
    gid, seat = view["id"], view["human_seat"]
    while not view["finished"]:
        assert view["to_move"] == seat and view["legal"]
        action = rng.choice(view["legal"])["action"]
        r = client.post(f"/api/games/{gid}/move", json={"action": action, "decision": view["decisions"]})
        assert r.status_code == 200, r.text
        if mirror is not None:
            mirror.apply(action)
        view = r.json()
        if mirror is not None:
            _mirror_apply(mirror, view["last_moves"])
            _check_view_against(view, mirror, seat)
    return view


@pytest.mark.parametrize("seat", [0, 1])
def test_a_whole_game_against_a_bot(tmp_path, seat):
    client = _client(tmp_path)
    view = client.post("/api/games", json={"opponent": "heuristic_careful", "seat": seat, "seed": 11}).json()
    assert view["human_seat"] == seat and view["players"][1 - seat]["name"] == "heuristic_careful"
    assert len(view["id"]) >= 20
    mirror = LostCitiesReference.new(LostCitiesRules(), 11)
    _mirror_apply(mirror, view["last_moves"])  # the bot's first turn when it has seat 0
    assert len(view["last_moves"]) == (2 if seat == 1 else 0)
    _check_view_against(view, mirror, seat)
    table = client.app.state.tables.get(view["id"])
    final = _play_to_end(client, view, random.Random(seat), mirror)
    # The batched engine the bot acted on went along move for move.
    assert bool(table.game.is_terminal(table.state)[0])
    assert table.game.scores(table.state)[0].tolist() == list(mirror.scores())
    f = final["final"]
    assert f["scores"] == list(mirror.scores()) and f["expedition_scores"] == [
        mirror.expedition_scores(0),
        mirror.expedition_scores(1),
    ]
    assert final["hands"][1 - seat]["cards"] is not None  # the end shows the opponent's hand
    # The record is what `deepcfr replay` reads.
    r = client.get(f"/api/games/{final['id']}/record")
    assert r.status_code == 200 and "attachment" in r.headers["content-disposition"]
    path = tmp_path / "game.jsonl"
    path.write_text(r.text)
    (record,) = read_records(path)
    assert record.result["scores"] == f["scores"] and record.players[seat] == "human"
    assert record.actions == mirror.history


def test_legal_moves_and_refusal_reasons_match_the_engine(tmp_path):
    client = _client(tmp_path)
    view = client.post("/api/games", json={"opponent": "random", "seat": 0, "seed": 5}).json()
    rng = random.Random(0)
    mirror = LostCitiesReference.new(LostCitiesRules(), 5)
    refused = 0
    while not view["finished"]:
        assert sorted(a["action"] for a in view["legal"]) == mirror.legal_actions()
        for key, reason in view["refusals"].items():
            color, value = map(int, key.split(":"))
            assert reason and ("higher" in reason or "wager" in reason)
            refused += 1
        action = rng.choice(view["legal"])["action"]
        mirror.apply(action)
        view = client.post(f"/api/games/{view['id']}/move", json={"action": action}).json()
        _mirror_apply(mirror, view["last_moves"])
    assert refused > 0


def test_refused_requests_are_4xx_json_and_change_nothing(tmp_path):
    client = _client(tmp_path)
    view = client.post("/api/games", json={"opponent": "heuristic_careful", "seed": 2}).json()
    gid = view["id"]
    card_phase_illegal = LostCitiesRules().draw_deck_action  # drawing before playing a card
    bad_moves = [
        (dict(content=b"{not json", headers={"content-type": "application/json"}), 422),
        (dict(json=[1, 2]), 422),
        (dict(json={}), 422),
        (dict(json={"action": "play red 5"}), 422),
        (dict(json={"action": 3, "extra": 1}), 422),
        (dict(json={"action": -1}), 400),
        (dict(json={"action": 10**6}), 400),
        (dict(json={"action": card_phase_illegal}), 400),
        (dict(json={"action": view["legal"][0]["action"], "decision": view["decisions"] + 3}), 409),
    ]
    for kwargs, status in bad_moves:
        r = client.post(f"/api/games/{gid}/move", **kwargs)
        assert r.status_code == status, (kwargs, r.status_code, r.text)
        assert isinstance(r.json()["error"], str) and r.json()["error"]
        assert client.get(f"/api/games/{gid}").json() == view  # the game did not change
    assert "illegal move" in client.post(f"/api/games/{gid}/move", json={"action": card_phase_illegal}).json()["error"]
    assert client.post(f"/api/games/{gid}/step").status_code == 409  # a played game is not stepped
    for url in (f"/api/games/{gid}x", "/api/games/unknown", "/api/games/unknown/record"):
        assert client.get(url).status_code == 404
    assert client.post("/api/games/unknown/move", json={"action": 1}).status_code == 404
    bad_games = [
        ({"opponent": "no_such_bot"}, 400, "valid bots"),
        ({"opponent": ""}, 400, "empty player spec"),
        ({"opponent": "random", "seat": 2}, 422, "seat"),
        ({"opponent": "random", "seed": -1}, 422, "seed"),
        ({"opponent": "random", "variant": "huge"}, 400, "classic, mini"),
        ({"opponent": "/etc/passwd"}, 400, "not one this server serves"),
        ({"opponent": "../outside.pt"}, 400, "not one this server serves"),
        ({"opponent": "search:"}, 400, "valid player specs"),
        ({"opponent": "x@y z"}, 400, "valid player specs"),
        ({"opponent": "search[nope=1]:random"}, 400, "valid settings"),
        ({"opponent": "search:../outside.pt"}, 400, "not one this server serves"),
        # files a search's settings name are confined too (a checkpoint is unpickled when loaded)
        ({"opponent": "search[rollout_policy=../outside.pt]:random"}, 400, "not one this server serves"),
        ({"opponent": "search[rollout_policy=/etc/passwd@greedy]:random"}, 400, "not one this server serves"),
        ({"opponent": "search[rollout_plies=2,value_fn=/etc/passwd]:random"}, 400, "not one this server serves"),
        ({"opponent": "random", "colour": 1}, 422, "colour"),
    ]
    for body, status, words in bad_games:
        r = client.post("/api/games", json=body)
        assert r.status_code == status and words in r.json()["error"], (body, r.text)
    assert client.post("/api/watch", json={"players": ["random"]}).status_code == 422
    # A finished game takes no move; a watched game no move by hand.
    done = _play_to_end(
        client, client.post("/api/games", json={"opponent": "random", "variant": "mini"}).json(), random.Random(1)
    )
    r = client.post(f"/api/games/{done['id']}/move", json={"action": 0})
    assert r.status_code == 409 and "over" in r.json()["error"]
    assert client.get(f"/api/games/{done['id']}").json() == done
    watch = client.post("/api/watch", json={"players": ["random", "random"], "variant": "mini"}).json()
    r = client.post(f"/api/games/{watch['id']}/move", json={"action": 0})
    assert r.status_code == 409 and "watched" in r.json()["error"]
    assert client.post(f"/api/games/{gid}/save").status_code == 409  # not finished


def test_ids_are_unguessable_and_games_independent(tmp_path):
    client = _client(tmp_path)
    ids = {client.post("/api/games", json={"opponent": "random", "seed": 1}).json()["id"] for _ in range(20)}
    assert len(ids) == 20 and all(len(i) >= 20 for i in ids)


def test_concurrent_games_and_concurrent_moves_on_one_game(tmp_path):
    client = _client(tmp_path)

    def one_game(k: int) -> dict:
        view = client.post(
            "/api/games", json={"opponent": "heuristic_balanced", "seed": 100 + k, "variant": "mini", "seat": k % 2}
        ).json()
        return _play_to_end(client, view, random.Random(k))

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(one_game, range(8)))
    assert len({v["id"] for v in results}) == 8
    for view in results:
        record = client.get(f"/api/games/{view['id']}/record").text
        path = tmp_path / f"{view['id']}.jsonl"
        path.write_text(record)
        assert read_records(path)[0].result["scores"] == view["final"]["scores"]
    # The same move sent by many tabs at once is taken once; the others are out of turn.
    view = client.post("/api/games", json={"opponent": "random", "seed": 9}).json()
    action = view["legal"][0]["action"]
    barrier = threading.Barrier(6)

    def send(_):
        barrier.wait()
        return client.post(f"/api/games/{view['id']}/move", json={"action": action, "decision": view["decisions"]})

    with ThreadPoolExecutor(6) as pool:
        answers = list(pool.map(send, range(6)))
    assert sorted(r.status_code for r in answers) == [200] + [409] * 5
    after = client.get(f"/api/games/{view['id']}").json()
    assert after["decisions"] == view["decisions"] + 1


def test_watch_steps_to_the_end_with_both_hands_open(tmp_path):
    client = _client(tmp_path)
    view = client.post("/api/watch", json={"players": ["heuristic_careful", "random"], "seed": 4}).json()
    assert view["human_seat"] is None and view["decisions"] == 0
    mirror = LostCitiesReference.new(LostCitiesRules(), 4)
    while not view["finished"]:
        r = client.post(f"/api/games/{view['id']}/step")
        assert r.status_code == 200
        view = r.json()
        mirror.apply(view["last_moves"][-1]["action"])
        _check_view_against(view, mirror, None)
    assert client.post(f"/api/games/{view['id']}/step").status_code == 409
    assert view["final"]["scores"] == list(mirror.scores())


def _tiny_checkpoint(path: Path, sections: dict | None = None) -> Path:
    """An untrained checkpoint of mini Lost Cities, or of the config ``sections`` given."""
    from deepcfr.checkpoints import make_meta, save_checkpoint
    from deepcfr.train.config import TrainConfig
    from deepcfr.train.trainer import Trainer

    data = {
        "game": {"name": "lost_cities", "variant": "mini"},
        "memory": {"advantage_capacity": 64, "strategy_capacity": 64},
        "critic": {"capacity": 64},
        "network": {"hidden_size": 8},
    }
    for section, values in (sections or {}).items():
        data[section] = values if section == "game" else {**data.get(section, {}), **values}
    config = TrainConfig.model_validate(data)
    trainer = Trainer(config)  # untrained networks play well enough for the page
    path.parent.mkdir(parents=True, exist_ok=True)
    save_checkpoint(path, {**trainer.state_dict(), "meta": make_meta(config, 0, trainer.game)})
    return path


def test_checkpoint_players_with_probabilities_and_confinement(tmp_path):
    runs = tmp_path / "runs"
    inside = _tiny_checkpoint(runs / "r1" / "checkpoints" / "latest.pt")
    listed = _tiny_checkpoint(tmp_path / "elsewhere" / "agent.pt")
    unlisted = _tiny_checkpoint(tmp_path / "other" / "agent.pt")
    (runs / "r1" / "config.yaml").write_text("game:\n  name: lost_cities\n  variant: mini\n")
    client = _client(tmp_path, runs=runs, checkpoints=[str(listed)])
    specs = [c["spec"] for c in client.get("/api/info").json()["checkpoints"]]
    assert specs == ["agent.pt", "r1/checkpoints/latest.pt"]  # served names: never where the files lie
    for spec in (
        "r1/checkpoints/latest.pt",
        "r1/checkpoints/latest.pt@current",
        "r1/checkpoints/latest.pt@current,greedy",
        "agent.pt",
        str(listed),
    ):  # a --checkpoint file by its served name or as given
        view = client.post("/api/games", json={"opponent": spec, "seat": 1, "seed": 3}).json()
        assert view["rules"]["n_colors"] == 3, view  # the checkpoint's own rules (mini)
        # While the game runs the agent's probabilities (which name the cards it holds) stay on
        # the server; at the end every move of it comes with them.
        assert len(view["last_moves"]) == 2 and not any("probs" in m for m in view["last_moves"])
        assert client.get(f"/api/games/{view['id']}/moves").status_code == 409
        final = _play_to_end(client, view, random.Random(2))
        moves = [m for m in client.get(f"/api/games/{view['id']}/moves").json()["moves"] if m["seat"] == 0]
        assert moves and all(m["probs"] for m in moves)
        assert all(m["probs"] for m in final["last_moves"] if m["seat"] == 0)
        for m in moves:
            assert sum(p["chosen"] for p in m["probs"]) == 1
            assert 0 < sum(p["p"] for p in m["probs"]) <= 1.0001
    r = client.post("/api/games", json={"opponent": "r1/checkpoints/latest.pt@best"})
    assert r.status_code == 400 and "unknown checkpoint option" in r.json()["error"]
    for outside in (str(unlisted), str(inside)):  # a file under --runs is named by its path there, not absolutely
        r = client.post("/api/games", json={"opponent": outside})
        assert r.status_code == 400 and "not one this server serves" in r.json()["error"]
    r = client.post("/api/games", json={"opponent": "r1/checkpoints/latest.pt", "variant": "classic"})
    assert r.status_code == 400 and "other rules" in r.json()["error"]
    # A search over the checkpoint: its moves come with the candidates' values (watched: both
    # hands are open anyway).
    view = client.post(
        "/api/watch",
        json={"players": ["search[determinizations=8,candidates=3]:r1/checkpoints/latest.pt", "random"], "seed": 4},
    ).json()
    view = client.post(f"/api/games/{view['id']}/step").json()
    card_move = view["last_moves"][0]
    assert card_move["values"] and sum(v["chosen"] for v in card_move["values"]) == 1
    assert {v["action"] for v in card_move["values"]} <= set(range(make_rules("mini").num_actions))
    assert all("ci95" in v and "mean" in v for v in card_move["values"])
    assert view["players"][0]["name"] == "search[determinizations=8,candidates=3]:r1/checkpoints/latest.pt"
    assert str(tmp_path) not in json.dumps(view)  # the server's paths stay on the server
    r = client.post("/api/watch", json={"players": ["r1/checkpoints/latest.pt", "heuristic_careful"], "seed": 1})
    assert r.status_code == 200 and r.json()["rules"]["n_colors"] == 3
    (runs / "r1" / "checkpoints" / "broken.pt").write_bytes(b"not a checkpoint")
    r = client.post("/api/games", json={"opponent": "r1/checkpoints/broken.pt"})
    assert r.status_code == 400 and "cannot load player" in r.json()["error"]


def test_a_checkpoint_of_another_game_is_refused_by_name(tmp_path):
    kuhn = _tiny_checkpoint(
        tmp_path / "kuhn.pt",
        {"game": {"name": "kuhn"}, "traversal": {"algorithm": "external"}, "memory": {"augment": False}},
    )
    client = _client(tmp_path, checkpoints=[str(kuhn)])
    r = client.post("/api/games", json={"opponent": str(kuhn)})
    assert r.status_code == 400
    assert r.json()["error"] == "the web table plays lost_cities only; the checkpoint's game is 'kuhn'"


def test_saved_games_replay_step_by_step(tmp_path):
    client = _client(tmp_path, replays=str(tmp_path / "replays"))
    done = _play_to_end(
        client,
        client.post("/api/games", json={"opponent": "random", "seed": 8, "variant": "mini"}).json(),
        random.Random(3),
    )
    r = client.post(f"/api/games/{done['id']}/save")
    assert r.status_code == 200 and client.get(f"/api/games/{done['id']}").json()["saved_to"] == r.json()["saved_to"]
    client.post(f"/api/games/{done['id']}/save")  # saved once, however often asked
    files = client.get("/api/replays").json()["files"]
    assert [f["file"] for f in files] == ["web_games.jsonl"]
    games = client.get("/api/replays/games", params={"file": "web_games.jsonl"}).json()["games"]
    assert len(games) == 1 and games[0]["result"]["scores"] == done["final"]["scores"]
    record = read_records(tmp_path / "replays" / "web_games.jsonl")[0]
    for step in (0, 1, 2, 17, len(record.actions)):
        state = client.get("/api/replays/state", params={"file": "web_games.jsonl", "game": 0, "step": step}).json()
        ref = LostCitiesReference.from_deal(LostCitiesRules(**record.game_config), record.deal)
        for a in record.actions[:step]:
            ref.apply(a)
        _check_view_against(state, ref, None)
        assert state["steps"] == len(record.actions)
        assert (state["next_move"] is None) == (step == len(record.actions))
    for params, status in [
        ({"file": "web_games.jsonl", "step": 10**4}, 400),
        ({"file": "web_games.jsonl", "game": 3}, 400),
        ({"file": "web_games.jsonl", "step": -1}, 422),
        ({"file": "nope.jsonl"}, 404),
    ]:
        assert client.get("/api/replays/state", params=params).status_code == status, params
    (tmp_path / "replays" / "bad.jsonl").write_text('{"format": 1}\n')
    r = client.get("/api/replays/games", params={"file": "bad.jsonl"})
    assert r.status_code == 400 and "missing field" in r.json()["error"]


def test_paths_stay_under_the_served_directories(tmp_path):
    replays, runs, outside = tmp_path / "replays", tmp_path / "runs", tmp_path / "outside"
    for d in (replays, runs, outside / "run"):
        d.mkdir(parents=True)
    (outside / "secret.jsonl").write_text("{}\n")
    (outside / "run" / "metrics.jsonl").write_text('{"iteration": 1, "loss/x": 1.0}\n')
    os.symlink(outside / "secret.jsonl", replays / "link.jsonl")
    os.symlink(outside / "run", runs / "linked_run")
    client = _client(tmp_path, runs=runs, replays=str(replays))
    assert client.get("/api/replays").json()["files"] == []  # the link out is not listed
    assert client.get("/api/runs").json()["runs"] == []
    attempts = [
        "../outside/secret.jsonl",
        str(outside / "secret.jsonl"),
        "link.jsonl",
        "a/../../outside/secret.jsonl",
        "..\\outside\\secret.jsonl",
        "C:/secret.jsonl",
    ]
    for file in attempts:
        r = client.get("/api/replays/games", params={"file": file})
        assert r.status_code in (400, 404) and "error" in r.json(), (file, r.text)
        assert r.status_code == 400 or "not found" in r.json()["error"]
    for run in ["..", "../outside/run", str(outside / "run"), "linked_run"]:
        r = client.get("/api/runs/report", params={"run": run})
        assert r.status_code == 400, (run, r.text)
        r = client.get("/api/runs/plot", params={"run": run, "name": "losses.png"})
        assert r.status_code == 400, (run, r.text)
    assert client.get("/api/runs/plot", params={"run": "x", "name": "../../etc/passwd"}).status_code == 400


def _metrics_line(it: int, win: float) -> str:
    return json.dumps(
        {
            "iteration": it,
            "loss/advantage_p0": 1.0 / it,
            "loss/strategy": 0.5 / it,
            "time/traversal_seconds": 2.0,
            "eval/random/average/win_rate": win,
            "eval/random/average/mean_score_diff": 30.0 * win,
            "eval/random/average/score_diff_ci95": 4.0,
        }
    )


def _mark_running(run: Path, pid: int, host: str | None = None) -> None:
    import socket

    from deepcfr.train.run import RUNNING_FILE

    (run / RUNNING_FILE).write_text(json.dumps({"pid": pid, "host": host or socket.gethostname(), "started": 0}))


def test_runs_list_and_report_follow_a_running_run(tmp_path):
    runs = tmp_path / "runs"
    run = runs / "lost_cities-1"
    run.mkdir(parents=True)
    (run / "config.yaml").write_text("game:\n  name: lost_cities\n  variant: classic\neval:\n  games: 100\n")
    (run / "metrics.jsonl").write_text(_metrics_line(1, 0.6) + "\n" + _metrics_line(2, 0.7) + "\n" + '{"iterat')
    _mark_running(run, os.getpid())  # as train.run.Run does while its process has the run open
    client = _client(tmp_path, runs=runs)
    (listed,) = client.get("/api/runs").json()["runs"]
    assert listed["run"] == "lost_cities-1" and listed["game"] == "lost_cities" and listed["running"]
    report = client.get("/api/runs/report", params={"run": "lost_cities-1"}).json()
    assert report["iterations"] == 2 and report["still_writing"]
    (match,) = report["evaluation"]["matches"]
    assert match == {
        "opponent": "random",
        "policy": "average",
        "win_rate": 0.7,
        "mean_score_diff": 21.0,
        "score_diff_ci95": 4.0,
        "mean_game_length": None,
        "useless_pile_draws_a": None,
    }  # not logged
    assert "losses.png" in report["plots"] and "win_rates.png" in report["plots"]
    png = client.get("/api/runs/plot", params={"run": "lost_cities-1", "name": "losses.png"})
    assert png.status_code == 200 and png.headers["content-type"] == "image/png" and png.content[:4] == b"\x89PNG"
    # The run goes on: the next report shows the new iteration.
    with open(run / "metrics.jsonl", "w") as f:
        f.write("\n".join(_metrics_line(i, 0.5 + i / 10) for i in (1, 2, 3)) + "\n")
    os.utime(run / "metrics.jsonl", ns=(10**18, 10**18))  # a later mtime, however fast the test
    again = client.get("/api/runs/report", params={"run": "lost_cities-1"}).json()
    assert again["iterations"] == 3 and again["evaluation"]["iteration"] == 3 and not again["still_writing"]
    assert not (run / "report").exists()  # the server draws into its own cache, not into the run
    assert client.get("/api/runs/plot", params={"run": "lost_cities-1", "name": "nope.png"}).status_code == 400
    (runs / "empty").mkdir()
    (runs / "empty" / "config.yaml").write_text("game:\n  name: kuhn\n")
    assert client.get("/api/runs/report", params={"run": "empty"}).status_code == 404


def test_the_page_and_its_files_are_served(tmp_path):
    client = _client(tmp_path)
    page = client.get("/")
    assert page.status_code == 200 and "text/html" in page.headers["content-type"] and "app.js" in page.text
    for name in ("app.js", "style.css"):
        assert client.get(f"/static/{name}").status_code == 200
    assert client.get("/static/../app.py").status_code == 404
    assert client.get("/no/such/page").json()["error"]


def test_serve_command_prints_a_localhost_url_and_answers(tmp_path):
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "deepcfr.cli.main", "serve", "--port", "0", "--runs", str(tmp_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        line = proc.stdout.readline()
        assert "http://127.0.0.1:" in line, (line, proc.stderr.read() if proc.poll() is not None else "")
        url = line.split()[line.split().index("open") + 1]
        with urllib.request.urlopen(url + "api/info", timeout=30) as r:
            info = json.loads(r.read())
            assert "server" not in {k.lower() for k in r.headers} and r.headers["x-content-type-options"] == "nosniff"
        with urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=30) as r:
            assert r.status == 200 and r.read() == b"" and "text/html" in r.headers["content-type"]  # uptime monitors
        foreign = urllib.request.Request(url + "api/info", headers={"Host": "rebound.example"})
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(foreign, timeout=30)
        assert refused.value.code == 400 and "not served here" in json.loads(refused.value.read())["error"]
        assert "heuristic_careful" in info["bots"]
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    bad = subprocess.run(
        [sys.executable, "-m", "deepcfr.cli.main", "serve", "--checkpoint", str(tmp_path / "no.pt")],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert bad.returncode == 2 and "checkpoint not found" in bad.stderr


# Fairness: nothing the person's seat could not know leaves the server before the end --------------
def _card_objects(value):
    """Every card object ({id, color, value, ...}) anywhere in a JSON value."""
    if isinstance(value, dict):
        if {"id", "color", "value"} <= value.keys():
            yield value
        for v in value.values():
            yield from _card_objects(v)
    elif isinstance(value, list):
        for v in value:
            yield from _card_objects(v)


def _assert_nothing_hidden(response, table) -> None:
    """No card the person cannot see (the opponent's unknown cards, the deck) is in the answer:
    not as a card object, not in a list of ids, not by its name, not the deck order; no deal, no seed."""
    ref, seat = table.ref, table.human_seat
    rules = ref.rules
    hidden = (set(ref.hands[1 - seat]) - set(ref.known[1 - seat])) | set(ref.deck)
    text = response.text
    body = response.json()
    assert not any(c["id"] in hidden for c in _card_objects(body)), text
    for hand in body.get("hands", []) if isinstance(body, dict) else []:
        assert not set(hand["known_ids"]) & hidden
    from deepcfr.games.lost_cities.rules import COLOR_NAMES

    for card_id in hidden:
        kind = rules.card_kind(card_id)
        if kind == 0:
            continue  # the wagers of a colour are interchangeable: their name is no secret
        name = f"{COLOR_NAMES[rules.card_color(card_id)]} {rules.kind_value(kind)}"
        assert not re.search(rf"\b{name}\b", text), (name, text[:2000])
    deck = list(ref.deck)
    for sep in (",", ", "):
        if len(deck) >= 3:
            assert sep.join(map(str, deck[:3])) not in text and sep.join(map(str, deck[-3:])) not in text
    assert '"deal"' not in text and "probs" not in text and '"values"' not in text
    if isinstance(body, dict) and "seed" in body:
        assert body["seed"] is None


FAIR_OPPONENTS = [
    ("heuristic_careful", None),
    ("search[determinizations=4,candidates=2]:heuristic_balanced", "mini"),
    ("r1/checkpoints/latest.pt", None),
]


@pytest.mark.parametrize("opponent,variant", FAIR_OPPONENTS)
def test_no_answer_shows_hidden_cards_until_the_game_is_over(tmp_path, opponent, variant):
    runs = tmp_path / "runs"
    _tiny_checkpoint(runs / "r1" / "checkpoints" / "latest.pt")
    client = _client(tmp_path, runs=runs, replays=str(tmp_path / "replays"))
    for seed, seat in ((21, 0), (22, 1), (23, 1)):
        r = client.post("/api/games", json={"opponent": opponent, "seat": seat, "seed": seed, "variant": variant})
        assert r.status_code == 200, r.text
        view = r.json()
        gid = view["id"]
        table = client.app.state.tables.get(gid)
        rng = random.Random(seed)
        checked = 0
        while True:
            answers = [
                r,
                client.get(f"/api/games/{gid}"),
                client.get(f"/api/games/{gid}/record"),
                client.get(f"/api/games/{gid}/moves"),
                client.post(f"/api/games/{gid}/save"),
                client.post(f"/api/games/{gid}/step"),
            ]
            if table.ref.is_terminal():
                break
            for answer in answers:
                _assert_nothing_hidden(answer, table)
                checked += 1
            assert [a.status_code for a in answers[2:]] == [409] * 4
            view = answers[1].json()
            r = client.post(
                f"/api/games/{gid}/move",
                json={"action": rng.choice(view["legal"])["action"], "decision": view["decisions"]},
            )
            assert r.status_code == 200, r.text
        assert checked > 30
        # Over: the record (the whole deal), the seed and the opponent's probabilities or values.
        final = answers[1].json()
        assert final["finished"] and final["seed"] == seed
        assert final["hands"][1 - seat]["cards"] is not None
        record = answers[2]
        assert record.status_code == 200
        line = json.loads(record.text)
        assert line["deal"] == table.deal and line["seed"] == seed
        moves = answers[3].json()["moves"]
        assert [m["action"] for m in moves] == table.ref.history
        theirs = [m for m in moves if m["seat"] == 1 - seat]
        if opponent.startswith("search"):
            assert all(m.get("values") for m in theirs)
        elif opponent.endswith(".pt"):
            assert all(m.get("probs") for m in theirs)
        if opponent != "heuristic_careful":
            assert all(m.get("probs") or m.get("values") for m in final["last_moves"])
        assert answers[4].status_code == 200  # saved


def test_watched_games_show_everything_from_the_start(tmp_path):
    client = _client(tmp_path)
    view = client.post("/api/watch", json={"players": ["heuristic_careful", "random"], "seed": 6}).json()
    assert view["seed"] == 6 and all(h["cards"] is not None for h in view["hands"])
    assert client.get(f"/api/games/{view['id']}/record").status_code == 200
    assert client.get(f"/api/games/{view['id']}/moves").json() == {"moves": []}


# No 500s: caps, strict types, bounded messages, a JSON 500 for the unforeseen ------------------------
def test_search_requests_are_capped(tmp_path):
    client = _client(tmp_path)
    for setting in (
        "determinizations=100000",
        "candidates=50",
        "max_batch=10000000",
        "time_limit_s=3600",
        "time_limit_s=.inf",
    ):
        r = client.post("/api/games", json={"opponent": f"search[{setting}]:random"})
        assert r.status_code == 400 and "cap" in r.json()["error"], (setting, r.text)
    for spec in (
        "search[candidates=[2,3]]:heuristic_balanced",
        "search[candidates=@]:random",
        "x" * 300,
        "a/" + "b" * 300 + ".pt",
        "search:" + "c" * 400,
        "search[determinizations=" + "9" * 400 + "]:random",
        "search[determinizations=1.0e9]:random",
    ):
        r = client.post("/api/games", json={"opponent": spec})
        assert r.status_code == 400, (spec, r.status_code, r.text)
        assert len(r.json()["error"]) < 1500 and "b" * 100 not in r.json()["error"]
    r = client.post("/api/games", json={"opponent": "search[determinizations=4]:random", "seat": 1, "variant": "mini"})
    assert r.status_code == 200
    table = client.app.state.tables.get(r.json()["id"])
    assert table.players[0].player.search.config.time_limit_s <= 10  # no search decision runs unbounded


def test_booleans_and_floats_are_not_numbers(tmp_path):
    client = _client(tmp_path)
    view = client.post("/api/games", json={"opponent": "random", "seed": 3, "variant": "mini"}).json()
    legal = view["legal"][0]["action"]
    for body in (
        {"action": True},
        {"action": float(legal)},
        {"action": str(legal)},
        {"action": legal, "decision": False},
    ):
        r = client.post(f"/api/games/{view['id']}/move", json=body)
        assert r.status_code == 422, (body, r.text)
        assert client.get(f"/api/games/{view['id']}").json() == view
    for body in ({"opponent": "random", "seat": True}, {"opponent": "random", "seed": 1.5}):
        assert client.post("/api/games", json=body).status_code == 422
    long_id = "z" * 5000
    r = client.get(f"/api/games/{long_id}")
    assert r.status_code == 404 and len(r.json()["error"]) < 200


def test_an_unexpected_error_is_a_json_500_without_a_traceback(tmp_path):
    app = create_app(ServeSettings(runs=str(tmp_path)))

    @app.get("/api/boom")
    def boom():
        raise RuntimeError("secret internals /home/x/y.py line 3")

    r = TestClient(app, raise_server_exceptions=False).get("/api/boom")
    assert r.status_code == 500 and r.json()["error"].startswith("internal error (RuntimeError)")
    assert "secret internals" not in r.text and "Traceback" not in r.text
    assert r.headers["x-content-type-options"] == "nosniff"


def test_hardening_headers_hosts_and_docs(tmp_path):
    app = create_app(ServeSettings(runs=str(tmp_path), allowed_hosts=["127.0.0.1", "localhost", "::1"]))
    client = TestClient(app, base_url="http://127.0.0.1:8000")
    for url in ("/", "/api/info", "/static/app.js", "/api/docs", "/api/games/nope"):
        r = client.get(url)
        assert r.headers["x-content-type-options"] == "nosniff", url
        assert "frame-ancestors 'none'" in r.headers["content-security-policy"], url
        assert "server" not in r.headers, url
    for host in ("localhost:8000", "[::1]:8000", "127.0.0.1"):
        assert client.get("/api/info", headers={"host": host}).status_code == 200, host
    for host in ("evil.example", "evil.example:8000", "127.0.0.1.evil.example", ""):
        r = client.get("/api/info", headers={"host": host})
        assert r.status_code == 400 and "not served here" in r.json()["error"], host
    docs = client.get("/api/docs")
    assert docs.status_code == 200 and "/api/games/{game_id}/move" in docs.text and "<script" not in docs.text
    assert "cdn" not in docs.text.lower()


def test_the_command_refuses_a_replays_file(tmp_path):
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    file = tmp_path / "games.jsonl"
    file.write_text("")
    bad = subprocess.run(
        [sys.executable, "-m", "deepcfr.cli.main", "serve", "--replays", str(file), "--runs", str(tmp_path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert bad.returncode == 2 and "--replays takes a directory" in bad.stderr, bad.stderr


def test_replay_files_are_listed_newest_first(tmp_path):
    replays = tmp_path / "replays"
    replays.mkdir()
    for i, name in enumerate(("b.jsonl", "a.jsonl", "c.jsonl")):
        (replays / name).write_text("")
        os.utime(replays / name, (1000 + i, 1000 + i))
    client = _client(tmp_path, replays=str(replays))
    assert [f["file"] for f in client.get("/api/replays").json()["files"]] == ["c.jsonl", "a.jsonl", "b.jsonl"]


def test_fuzzed_requests_are_never_a_500(tmp_path):
    """Hypothesis over every endpoint's inputs: a 4xx JSON error (or a 200), never a 500, and a
    refused move leaves the game as it was."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    runs = tmp_path / "runs"
    (runs / "r1").mkdir(parents=True)
    (runs / "r1" / "metrics.jsonl").write_text(_metrics_line(1, 0.5) + "\n")
    (tmp_path / "replays").mkdir()
    (tmp_path / "replays" / "bad.jsonl").write_text('{"format": 1}\n{not json\n')
    app = create_app(ServeSettings(runs=str(runs), replays=str(tmp_path / "replays")))
    client = TestClient(app, raise_server_exceptions=False)
    json_value = st.recursive(
        st.none()
        | st.booleans()
        | st.integers(-(2**70), 2**70)
        | st.floats(allow_nan=False, allow_infinity=False)
        | st.text(max_size=30),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
        max_leaves=6,
    )
    spec = st.one_of(
        st.text(max_size=40),
        st.text(alphabet="ab/.@:[]=,x", min_size=200, max_size=600),
        st.from_regex(
            r"\Asearch(\[((determinizations|candidates|max_batch|time_limit_s|seed|nope)=[-0-9a-z@\[\]{}.,:]{0,4},?){0,3}\])?"
            r":(random|discard_only|r1/x\.pt|\.\./y\.pt|search:random|)\Z"
        ),
        st.sampled_from(
            [
                "random",
                "heuristic_careful",
                "r1/metrics.jsonl",
                "/etc/passwd",
                "x@",
                "@greedy",
                "search",
                "search[",
                "search[]:random",
                "a" * 256,
                "search[candidates=[2,3]]:heuristic_balanced",
            ]
        ),
    )
    game_body = st.one_of(
        json_value,
        st.fixed_dictionaries(
            {"opponent": spec},
            optional={
                "seat": st.one_of(st.integers(-1, 2), json_value),
                "seed": json_value,
                "variant": st.one_of(st.sampled_from(["mini", "classic", "huge"]), json_value),
            },
        ),
    )
    watch_body = st.one_of(
        json_value,
        st.fixed_dictionaries(
            {"players": st.lists(spec, min_size=0, max_size=3)},
            optional={"variant": st.just("mini"), "seed": json_value},
        ),
    )
    move_body = st.one_of(
        json_value,
        st.fixed_dictionaries(
            {"action": st.one_of(st.integers(-3, 120), json_value)},
            optional={"decision": st.one_of(st.integers(-1, 400), json_value)},
        ),
    )
    text = st.text(max_size=60) | st.sampled_from(
        ["..", "../x", "/etc/passwd", "bad.jsonl", "r1", "losses.png", "\x00"]
    )
    number = st.integers(-5, 2**40).map(str) | text
    game = {"view": None}

    def fresh() -> dict:
        r = client.post("/api/games", json={"opponent": "random", "variant": "mini", "seed": 1})
        assert r.status_code == 200
        return r.json()

    def check(r) -> None:
        assert r.status_code < 500, (r.status_code, r.text)
        if r.status_code >= 400:
            assert isinstance(r.json()["error"], str) and len(r.json()["error"]) <= 1500

    @settings(max_examples=250, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
    @given(
        st.one_of(
            st.tuples(st.just("game"), game_body),
            st.tuples(st.just("watch"), watch_body),
            st.tuples(st.just("move"), move_body),
            st.tuples(
                st.just("raw"),
                st.binary(max_size=40)
                | st.sampled_from(
                    [
                        b'{"action": NaN}',
                        b'{"action": Infinity}',
                        b'{"action": 1e400}',
                        b'{"action": -0.0}',
                        b'{"action": 1, "decision": NaN}',
                        b'{"action": "\\ud800"}',
                        b"\xff\xfe",
                        b"[" * 5000,
                    ]
                ),
            ),
            st.tuples(st.just("get"), st.tuples(st.sampled_from(["", "/record", "/moves"]), text)),
            st.tuples(st.just("post"), st.tuples(st.sampled_from(["/step", "/save", "/move"]), text)),
            st.tuples(st.just("files"), st.tuples(text, number, number, text)),
        )
    )
    def one(request):
        kind, arg = request
        if game["view"] is None or game["view"]["finished"]:
            game["view"] = fresh()
        view = game["view"]
        if kind == "game":
            check(client.post("/api/games", json=arg))
        elif kind == "watch":
            check(client.post("/api/watch", json=arg))
        elif kind in ("move", "raw"):
            kwargs = (
                {"json": arg} if kind == "move" else {"content": arg, "headers": {"content-type": "application/json"}}
            )
            r = client.post(f"/api/games/{view['id']}/move", **kwargs)
            check(r)
            if r.status_code == 200:
                assert isinstance(arg, dict) and arg["action"] in {a["action"] for a in view["legal"]}
                game["view"] = r.json()
            else:
                assert client.get(f"/api/games/{view['id']}").json() == view  # the game did not change
        elif kind == "get":
            check(client.get(f"/api/games/{quote(arg[1], safe='')}{arg[0]}"))
        elif kind == "post":
            check(client.post(f"/api/games/{quote(arg[1], safe='')}{arg[0]}"))
        else:
            file, g, step, name = arg
            for url, params in (
                ("/api/replays/games", {"file": file}),
                ("/api/replays/state", {"file": file, "game": g, "step": step}),
                ("/api/runs/report", {"run": file}),
                ("/api/runs/plot", {"run": file, "name": name}),
            ):
                check(client.get(url, params=params))

    one()


def test_kept_games_are_compact(tmp_path):
    """A finished game kept in memory is a few tens of KB (moves as (seat, action, extra) tuples),
    so the 1,000-game cap stays well under 100 MB."""
    import gc
    import tracemalloc

    client = _client(tmp_path)
    _play_to_end(
        client, client.post("/api/games", json={"opponent": "heuristic_careful", "seed": 1}).json(), random.Random(1)
    )
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for k in range(4):
            _play_to_end(
                client,
                client.post("/api/games", json={"opponent": "heuristic_careful", "seed": 2 + k}).json(),
                random.Random(k),
            )
        gc.collect()
        per_game = (tracemalloc.get_traced_memory()[0] - before) / 4
    finally:
        tracemalloc.stop()
    assert len(client.app.state.tables) == 5
    assert per_game < 45_000, per_game  # (moves as dicts: about 60 KB)


def test_the_command_allows_its_own_host_names():
    import socket

    from deepcfr.cli.serve_cmd import allowed_hosts

    local = allowed_hosts("127.0.0.1", [])
    assert {"127.0.0.1", "localhost", "::1"} <= set(local) and socket.gethostname() not in local
    everywhere = allowed_hosts("0.0.0.0", ["lab.example"])
    assert {"localhost", "lab.example", socket.gethostname()} <= set(everywhere)


# The page's defects found by trying it as a new user (issue 39) ------------------------------------
def _run_with_checkpoint(runs: Path, name: str = "r1") -> Path:
    run = runs / name
    _tiny_checkpoint(run / "checkpoints" / "latest.pt")
    (run / "config.yaml").write_text("game:\n  name: lost_cities\n  variant: mini\n")
    (run / "metrics.jsonl").write_text("".join(_metrics_line(i, 0.4 + i / 20) + "\n" for i in (1, 2, 3)))
    return run


def test_the_default_relative_runs_directory_serves_reports_plots_and_play_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _run_with_checkpoint(Path("runs"))
    client = TestClient(create_app(ServeSettings()))  # runs="runs", relative, as `deepcfr serve` has it
    (listed,) = client.get("/api/runs").json()["runs"]
    assert listed["run"] == "r1" and listed["checkpoints"] == ["r1/checkpoints/latest.pt"]
    report = client.get("/api/runs/report", params={"run": "r1"})
    assert report.status_code == 200, report.text
    assert report.json()["evaluation"]["iteration"] == 3 and "losses.png" in report.json()["plots"]
    assert client.get("/api/runs/plot", params={"run": "r1", "name": "losses.png"}).status_code == 200
    game = client.post("/api/games", json={"opponent": listed["checkpoints"][0]})  # the page's "Play it"
    assert game.status_code == 200, game.text
    assert client.get("/api/info").json()["runs"] == "runs"


def test_replays_offer_game_records_only_and_no_answer_shows_an_absolute_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    run = _run_with_checkpoint(Path("runs"))
    (run / "games.jsonl").write_text('{"format": 1, "game": "lost_cities"}\n')  # a record file, broken
    client = TestClient(create_app(ServeSettings()))  # replays default to the runs directory
    files = [f["file"] for f in client.get("/api/replays").json()["files"]]
    assert files == ["r1/games.jsonl"]  # not r1/metrics.jsonl
    answers = [
        client.get("/api/replays/games", params={"file": "r1/games.jsonl"}),
        client.get("/api/replays/games", params={"file": "r1/metrics.jsonl"}),
        client.get("/api/replays/state", params={"file": "r1/metrics.jsonl"}),
        client.get("/api/replays/games", params={"file": "r1/nope.jsonl"}),
        client.get("/api/runs/report", params={"run": "r1/checkpoints"}),
    ]
    for r in answers:
        assert 400 <= r.status_code < 500, r.text
        assert str(tmp_path) not in r.text and str(tmp_path.resolve()) not in r.text, r.text
    assert "r1/games.jsonl" in answers[0].json()["error"]


def test_one_spec_limit_and_one_status_for_games_and_watch(tmp_path):
    from deepcfr.players import MAX_SPEC_LENGTH

    client = _client(tmp_path)
    for spec in ("x" * (MAX_SPEC_LENGTH + 1), "", "search:" + "y" * MAX_SPEC_LENGTH):
        play = client.post("/api/games", json={"opponent": spec})
        watch = client.post("/api/watch", json={"players": [spec, "random"]})
        assert play.status_code == watch.status_code == 400, (play.text, watch.text)
        assert play.json()["error"] == watch.json()["error"]
    long_error = client.post("/api/games", json={"opponent": "x" * (MAX_SPEC_LENGTH + 1)}).json()["error"]
    assert f"at most {MAX_SPEC_LENGTH} characters" in long_error
    at_limit = "search[candidates=2]:" + "a/" + "b" * (MAX_SPEC_LENGTH - 26) + ".pt"
    assert len(at_limit) == MAX_SPEC_LENGTH
    r = client.post("/api/games", json={"opponent": at_limit})
    assert r.status_code == 400 and "characters" not in r.json()["error"]  # refused for what it names, not its length


def test_a_finished_run_is_not_shown_running(tmp_path):
    from deepcfr.train.config import TrainConfig
    from deepcfr.train.run import RUNNING_FILE, Run

    runs = tmp_path / "runs"
    client = _client(tmp_path, runs=runs)
    run = Run(runs / "live", TrainConfig(), console=False)
    with open(runs / "live" / "metrics.jsonl", "w") as f:
        f.write(_metrics_line(1, 0.5) + "\n")
    assert (runs / "live" / RUNNING_FILE).is_file()
    assert [r["running"] for r in client.get("/api/runs").json()["runs"]] == [True]
    run.close()  # metrics written a moment ago, but the run is over
    assert [r["running"] for r in client.get("/api/runs").json()["runs"]] == [False]
    assert [r["status"] for r in client.get("/api/runs").json()["runs"]] == ["stopped"]  # 1 of its 100 iterations
    with open(runs / "live" / "metrics.jsonl", "a") as f:
        f.write(_metrics_line(TrainConfig().run.iterations, 0.5) + "\n")
    assert [r["status"] for r in client.get("/api/runs").json()["runs"]] == ["finished"]  # all of them (issue 64)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    _mark_running(runs / "live", int(dead.stdout))  # a killed run: its process is gone
    assert [r["running"] for r in client.get("/api/runs").json()["runs"]] == [False]


def test_a_list_valued_search_setting_is_named_whole_without_command_line_flags(tmp_path):
    client = _client(tmp_path)
    r = client.post("/api/games", json={"opponent": "search[candidates=[2,3]]:heuristic_balanced"})
    error = r.json()["error"]
    assert r.status_code == 400 and "'[2,3]'" in error and "not a list" in error, error
    assert "'[2'" not in error and "--" not in error
    forms = error.split("valid player specs:\n", 1)[1].splitlines()
    assert len({line.index(line.split()[1]) for line in forms if not line.startswith("  " * 3)}) == 1  # one column
    assert "--" not in client.get("/api/info").json()["spec_forms"]


# HEAD wherever GET is (issue 64: uptime monitors and link checkers ask with HEAD) -----------------
def test_every_get_route_answers_head_with_the_same_status_and_headers_and_no_body(tmp_path):
    from fastapi.routing import APIRoute
    from starlette.routing import Mount, Route

    runs = tmp_path / "runs"
    _run_with_checkpoint(runs)
    app = create_app(ServeSettings(runs=str(runs)))  # replays: the runs directory
    client = TestClient(app)
    done = _play_to_end(
        client,
        client.post("/api/games", json={"opponent": "random", "seed": 5, "variant": "mini"}).json(),
        random.Random(5),
    )
    assert client.post(f"/api/games/{done['id']}/save").status_code == 200
    assert client.get("/api/runs/report", params={"run": "r1"}).status_code == 200  # draws the plots
    # a value for every path or query parameter a GET route takes: a new route's new parameter fails here
    values = {"game_id": done["id"], "file": "web_games.jsonl", "run": "r1", "name": "losses.png", "game": 0, "step": 3}
    urls = []
    for route in app.routes:
        if isinstance(route, Mount):  # the static files: every one of them
            static = Path(route.app.directory)
            urls += [
                f"{route.path}/{p.relative_to(static).as_posix()}" for p in sorted(static.rglob("*")) if p.is_file()
            ]
        elif isinstance(route, (APIRoute, Route)) and "GET" in route.methods:
            params = route.dependant.query_params if isinstance(route, APIRoute) else []
            path = route.path.format(**{name: values[name] for name in route.param_convertors})
            urls.append(path + ("?" + "&".join(f"{p.name}={values[p.name]}" for p in params) if params else ""))
    assert "/" in urls and "/api/info" in urls and "/static/app.js" in urls and len(urls) >= 14, urls
    for url in urls:
        get, head = client.get(url), client.head(url)
        assert get.status_code == 200, (url, get.text[:300])  # the walk reaches every route's real answer
        assert head.status_code == get.status_code, (url, head.status_code, head.text[:300])
        assert head.content == b"", url
        without_timing = lambda r: {k: v for k, v in r.headers.items() if k != "server-timing"}  # noqa: E731
        assert without_timing(head) == without_timing(get), url
        assert int(head.headers["content-length"]) == len(get.content), url
        assert "server-timing" in head.headers and head.headers["x-frame-options"] == "DENY", url
    # where GET is refused, HEAD is refused the same way (a path without GET, a missing game)
    for url in (f"/api/games/{done['id']}/move", "/api/games/nope", "/no/such/page"):
        get, head = client.get(url), client.head(url)
        assert head.status_code == get.status_code and head.status_code in (404, 405) and head.content == b"", url
