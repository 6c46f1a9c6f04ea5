"""`deepcfr serve` through FastAPI's test client: whole games, every refusal, paths, runs, replays,
concurrency, and the real command in a subprocess."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import threading
import urllib.request
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

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
    assert f["scores"] == list(mirror.scores()) and f["expedition_scores"] == [mirror.expedition_scores(0),
                                                                                 mirror.expedition_scores(1)]
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
        ({"opponent": "no_such_bot"}, 400, "valid bots"), ({"opponent": ""}, 422, "opponent"),
        ({"opponent": "random", "seat": 2}, 422, "seat"), ({"opponent": "random", "seed": -1}, 422, "seed"),
        ({"opponent": "random", "variant": "huge"}, 400, "classic, mini"),
        ({"opponent": "/etc/passwd"}, 400, "not one this server serves"),
        ({"opponent": "../outside.pt"}, 400, "not one this server serves"),
        ({"opponent": "search:"}, 400, "valid player specs"), ({"opponent": "x@y z"}, 400, "valid player specs"),
        ({"opponent": "search[nope=1]:random"}, 400, "valid settings"),
        ({"opponent": "search:../outside.pt"}, 400, "not one this server serves"),
        ({"opponent": "random", "colour": 1}, 422, "colour"),
    ]
    for body, status, words in bad_games:
        r = client.post("/api/games", json=body)
        assert r.status_code == status and words in r.json()["error"], (body, r.text)
    assert client.post("/api/watch", json={"players": ["random"]}).status_code == 422
    # A finished game takes no move; a watched game no move by hand.
    done = _play_to_end(client, client.post("/api/games", json={"opponent": "random", "variant": "mini"}).json(),
                        random.Random(1))
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
        view = client.post("/api/games", json={"opponent": "heuristic_balanced", "seed": 100 + k,
                                               "variant": "mini", "seat": k % 2}).json()
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


def _tiny_checkpoint(path: Path) -> Path:
    from deepcfr.train.checkpoint import make_meta, save_checkpoint
    from deepcfr.train.config import TrainConfig
    from deepcfr.train.trainer import Trainer

    config = TrainConfig.model_validate({"game": {"name": "lost_cities", "variant": "mini"},
                                         "memory": {"advantage_capacity": 64, "strategy_capacity": 64},
                                         "critic": {"capacity": 64}, "network": {"hidden_size": 8}})
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
    assert str(listed) in specs and "r1/checkpoints/latest.pt" in specs
    for spec in ("r1/checkpoints/latest.pt", "r1/checkpoints/latest.pt@current", "r1/checkpoints/latest.pt@current,greedy", str(listed), str(inside)):
        view = client.post("/api/games", json={"opponent": spec, "seat": 1, "seed": 3}).json()
        assert view["rules"]["n_colors"] == 3, view  # the checkpoint's own rules (mini)
        moves = view["last_moves"]
        assert len(moves) == 2 and all(m["probs"] for m in moves)
        for m in moves:
            assert sum(p["chosen"] for p in m["probs"]) == 1
            assert 0 < sum(p["p"] for p in m["probs"]) <= 1.0001
        _play_to_end(client, view, random.Random(2))
    r = client.post("/api/games", json={"opponent": "r1/checkpoints/latest.pt@best"})
    assert r.status_code == 400 and "unknown checkpoint option" in r.json()["error"]
    r = client.post("/api/games", json={"opponent": str(unlisted)})
    assert r.status_code == 400 and "not one this server serves" in r.json()["error"]
    r = client.post("/api/games", json={"opponent": "r1/checkpoints/latest.pt", "variant": "classic"})
    assert r.status_code == 400 and "other rules" in r.json()["error"]
    # A search over the checkpoint: its moves come with the candidates' values.
    view = client.post("/api/games", json={"opponent": "search[determinizations=8,candidates=3]:r1/checkpoints/latest.pt",
                                           "seat": 1, "seed": 4}).json()
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


def test_saved_games_replay_step_by_step(tmp_path):
    client = _client(tmp_path, replays=str(tmp_path / "replays"))
    done = _play_to_end(client, client.post("/api/games", json={"opponent": "random", "seed": 8, "variant": "mini"}).json(),
                        random.Random(3))
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
    for params, status in [({"file": "web_games.jsonl", "step": 10**4}, 400), ({"file": "web_games.jsonl", "game": 3}, 400),
                           ({"file": "web_games.jsonl", "step": -1}, 422), ({"file": "nope.jsonl"}, 404)]:
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
    attempts = ["../outside/secret.jsonl", str(outside / "secret.jsonl"), "link.jsonl", "a/../../outside/secret.jsonl",
                "..\\outside\\secret.jsonl", "C:/secret.jsonl"]
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
    return json.dumps({"iteration": it, "loss/advantage_p0": 1.0 / it, "loss/strategy": 0.5 / it,
                       "time/traversal_seconds": 2.0, "eval/random/average/win_rate": win,
                       "eval/random/average/mean_score_diff": 30.0 * win, "eval/random/average/score_diff_ci95": 4.0})


def test_runs_list_and_report_follow_a_running_run(tmp_path):
    runs = tmp_path / "runs"
    run = runs / "lost_cities-1"
    run.mkdir(parents=True)
    (run / "config.yaml").write_text("game:\n  name: lost_cities\n  variant: classic\neval:\n  games: 100\n")
    (run / "metrics.jsonl").write_text(_metrics_line(1, 0.6) + "\n" + _metrics_line(2, 0.7) + "\n" + '{"iterat')
    client = _client(tmp_path, runs=runs)
    (listed,) = client.get("/api/runs").json()["runs"]
    assert listed["run"] == "lost_cities-1" and listed["game"] == "lost_cities" and listed["running"]
    report = client.get("/api/runs/report", params={"run": "lost_cities-1"}).json()
    assert report["iterations"] == 2 and report["still_writing"]
    (match,) = report["evaluation"]["matches"]
    assert match == {"opponent": "random", "policy": "average", "win_rate": 0.7, "mean_score_diff": 21.0,
                     "score_diff_ci95": 4.0}
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
    proc = subprocess.Popen([sys.executable, "-m", "deepcfr.cli.main", "serve", "--port", "0", "--runs", str(tmp_path)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        line = proc.stdout.readline()
        assert "http://127.0.0.1:" in line, (line, proc.stderr.read() if proc.poll() is not None else "")
        url = line.split()[line.split().index("open") + 1]
        with urllib.request.urlopen(url + "api/info", timeout=30) as r:
            info = json.loads(r.read())
        assert "heuristic_careful" in info["bots"]
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    bad = subprocess.run([sys.executable, "-m", "deepcfr.cli.main", "serve", "--checkpoint", str(tmp_path / "no.pt")],
                         capture_output=True, text=True, env=env, timeout=120)
    assert bad.returncode == 2 and "checkpoint not found" in bad.stderr
