"""The server opens only the files it serves, whatever setting names them, and no answer shows
where it runs: every search setting that names a player or a file, walked through the API with
absolute, '..', symlinked, non-checkpoint and missing paths (none is opened, and the refusal does
not tell which exist); then a bounded fuzz of every endpoint with hostile values, whose answers
never hold the working directory, a home directory or /etc."""

from __future__ import annotations

import json
import os
import random
import re
import warnings
from pathlib import Path
from urllib.parse import quote

import pytest

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from fastapi.routing import APIRoute
    from fastapi.testclient import TestClient

import deepcfr.checkpoints as checkpoints
from deepcfr.player_specs import named_settings
from deepcfr.search.config import SearchConfig
from deepcfr.serve import ServeSettings, create_app
from test_serve_api import _run_with_checkpoint, _tiny_checkpoint


@pytest.fixture
def served(tmp_path, monkeypatch):
    """A server started with an absolute runs directory and an absolute --checkpoint, from a
    working directory of its own, and the files a hostile request may try (outside the runs, a
    link out of them, a run's non-checkpoint files); ``opened`` lists every file loaded."""
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    runs = tmp_path / "runs"
    _run_with_checkpoint(runs)
    outside = _tiny_checkpoint(tmp_path / "outside" / "good.pt")
    (runs / "r1" / "link.pt").symlink_to(outside)
    (runs / "linkdir").symlink_to(outside.parent, target_is_directory=True)
    given = _tiny_checkpoint(tmp_path / "given" / "mine.pt")
    opened = []
    load = checkpoints._load_plain
    monkeypatch.setattr(
        checkpoints, "_load_plain", lambda path, *a: (opened.append(Path(path).resolve()), load(path, *a))[1]
    )
    client = TestClient(create_app(ServeSettings(runs=str(runs), checkpoints=[str(given)])))
    return client, tmp_path, outside, opened


HOSTILE = {  # kind -> names; every one is refused the same way
    "absolute": ["{outside}", "/etc/passwd", "/etc/hostname"],
    "dotdot": ["../outside/good.pt", "r1/../../outside/good.pt", "..\\outside\\good.pt"],
    "symlinked": ["r1/link.pt", "linkdir/good.pt"],
    "not a checkpoint": ["r1/config.yaml", "r1/metrics.jsonl", "r1/checkpoints"],
    "missing": ["r1/nope.pt", "nope/x.pt"],
}


def _spec(key: str, names: str, value: str) -> str:
    extra = {"value_fn": "rollout_plies=2,", "hand_belief": "belief=learned,"}.get(key, "")
    return f"search[{extra}{key}={value}{'@greedy' if names == 'player' else ''},determinizations=2]:random"


def test_every_setting_that_names_a_file_is_confined_and_the_refusal_tells_nothing(served):
    client, root, outside, opened = served
    fields = named_settings(SearchConfig)
    assert set(fields) >= {"rollout_policy", "belief", "value_fn", "hand_belief"}
    for key, (names, _) in fields.items():
        errors = set()
        for values in HOSTILE.values():
            for value in values:
                value = value.format(outside=outside)
                r = client.post("/api/games", json={"opponent": _spec(key, names, value), "seat": 0})
                assert r.status_code == 400, (key, value, r.text)
                error = r.json()["error"]
                assert "not one this server serves" in error, (key, value, error)
                assert str(root) not in error and "/etc" not in error, error
                errors.add(re.sub(r"'[^']*'|\"[^\"]*\"", "NAME", error))  # the name quoted
        # the same words whether the file exists, is a link, is a run's other file or is missing
        assert len(errors) == 1, errors
    assert opened == []  # nothing was opened, not even to be refused
    # a checkpoint the server serves is taken by every one of these settings' forms
    r = client.post("/api/games", json={"opponent": "r1/checkpoints/latest.pt@greedy", "seat": 0})
    assert r.status_code == 200, r.text
    assert opened and all(p.is_relative_to((root / "runs").resolve()) for p in opened)


def test_info_names_players_and_directories_as_served_never_where_they_lie(served):
    client, root, outside, opened = served
    for opponent in ("r1/checkpoints/latest.pt", "mine.pt@greedy", str(root / "given" / "mine.pt")):
        r = client.post("/api/games", json={"opponent": opponent, "seat": 1})
        assert r.status_code == 200, r.text
        assert str(root) not in r.text
    info = client.get("/api/info").json()
    text = json.dumps(info)
    assert str(root) not in text and str(root.resolve()) not in text, text
    assert info["runs"] == "runs" and {c["spec"] for c in info["checkpoints"]} >= {
        "mine.pt",
        "r1/checkpoints/latest.pt",
    }
    assert set(info["players_loaded"]) == {"r1/checkpoints/latest.pt", "mine.pt@greedy", "mine.pt"}
    assert {row["player"] for row in info["batching"]} <= set(info["players_loaded"])


def _hostile_text(rng: random.Random, root: Path) -> str:
    pool = [
        "/etc/passwd",
        "/etc/hostname",
        "../../../../etc/hostname",
        str(root),
        str(root / "outside" / "good.pt"),
        str(Path.home()),
        "~/.ssh/id_rsa",
        os.getcwd(),
        "r1/config.yaml",
        "r1/link.pt",
        "linkdir/good.pt",
        "r1/checkpoints/latest.pt",
        "mine.pt",
        "C:\\Windows\\win.ini",
        "file:///etc/passwd",
        "%2e%2e%2fetc",
        "\x00",
        "a" * 300,
        "random",
        "r1",
        "..",
        "web_games.jsonl",
        "r1/metrics.jsonl",
        "losses.png",
    ]
    text = rng.choice(pool)
    if rng.random() < 0.4:
        key = rng.choice(list(named_settings(SearchConfig)))
        text = f"search[{key}={text},determinizations=2]:{rng.choice(['random', 'r1/checkpoints/latest.pt', text])}"
    elif rng.random() < 0.2:
        text += rng.choice(["@greedy", "@current", "@nope"])
    return text


def _value(rng: random.Random, root: Path):
    return rng.choice([_hostile_text(rng, root), rng.randint(-3, 200), None, True, [_hostile_text(rng, root)], {}])


def test_a_fuzz_of_every_endpoint_never_answers_a_path_of_this_machine(served):
    client, root, outside, opened = served
    app = client.app
    forbidden = [str(root), str(root.resolve()), os.getcwd(), str(Path.home()), "/etc"]
    game = client.post("/api/games", json={"opponent": "random", "variant": "mini", "seed": 1}).json()
    routes = [r for r in app.routes if isinstance(r, APIRoute)]
    assert {r.path for r in routes} >= {"/api/games", "/api/info", "/api/runs/report", "/api/replays/state"}
    rng = random.Random(0)
    answered = 0
    for i in range(560):
        route = routes[i % len(routes)]
        method = sorted(route.methods)[0]
        path = route.path
        for param in route.dependant.path_params:
            path = path.replace(
                f"{{{param.name}}}", game["id"] if rng.random() < 0.6 else quote(_hostile_text(rng, root), safe="")
            )
        query = {q.name: _hostile_text(rng, root) for q in route.dependant.query_params}
        body = None
        if route.body_field is not None:
            fields = route.body_field.field_info.annotation.model_fields
            body = {name: _value(rng, root) for name in fields if rng.random() < 0.9}
            if "players" in fields and rng.random() < 0.7:
                body["players"] = [_hostile_text(rng, root), "random"]
            if "opponent" in fields and rng.random() < 0.7:
                body = {"opponent": _hostile_text(rng, root), "seat": rng.randint(0, 1)}
        r = client.request(method, path, params=query, json=body)
        assert r.status_code < 500, (method, path, query, body, r.text)
        text = r.text + json.dumps(dict(r.headers))
        for bad in forbidden:
            assert bad not in text, (method, path, query, body, r.text)
        answered += 1
    assert answered >= 500
    inside = (root / "runs").resolve()
    assert all(p.is_relative_to(inside) or p == (root / "given" / "mine.pt").resolve() for p in opened), opened
