"""One list of player specs through every entry point that names a player: arena, eval --vs,
play --vs, the web server, improve (teacher, opponents, evaluation), the config lists
(eval.opponents, league.anchor) and the search's rollout policy. Each valid spec plays there;
each bad one fails there with the parser's own message."""

from __future__ import annotations

import io
import json

import pytest
import torch

from deepcfr.cli.main import main
from deepcfr.games.lost_cities.engine import LostCitiesGame
from deepcfr.players import PlayerSpecError, load_player, parse_player
from deepcfr.players.shipped import CHAMPION_FILE
from search_helpers import tiny_checkpoint

FAST = "search[determinizations=2,candidates=2]"


@pytest.fixture(scope="module")
def ck(tmp_path_factory) -> str:
    return str(tiny_checkpoint(tmp_path_factory.mktemp("everywhere") / "mini.pt"))


def valid_specs(ck: str) -> list[str]:
    """Every form, on the mini variant (short games); the champion plays classic rules."""
    return [
        "heuristic_careful",
        ck,
        f"{ck}@current",
        f"{ck}@greedy",
        f"{ck}@current,greedy",
        f"{FAST}:heuristic_careful",
        f"{FAST}:{ck}",
        f"{FAST}:{ck}@greedy",
    ]


CHAMPION_SPECS = ["champion", "champion@greedy", f"{FAST}:champion"]
needs_champion = pytest.mark.skipif(not CHAMPION_FILE.is_file(), reason="no champion shipped in this tree")


# (spec, what the error says): the parser's messages, wherever the spec is given
BAD_SPECS = [
    ("nobody", "unknown bot 'nobody'"),
    ("x.pt@fast", "unknown checkpoint option 'fast'"),
    ("search:search:random", "search over search"),
    ("search[candidates=[2,3]]:random", "search setting 'candidates'"),
    ("search[candidates=@]:random", "cannot read the value"),
    ("a" * 300, "neither a bot name"),  # past the file system's name limit: no OSError
    ("x" * 600 + ".pt", "longer than 512 characters"),
    ("learner", "the network that improve trains"),
]


def _every_valid(ck):
    return [pytest.param(s, id=s.replace(ck, "CK")) for s in valid_specs(ck)]


def test_arena_eval_and_play_take_every_spec(ck, capsys, monkeypatch):
    for spec in valid_specs(ck):
        assert main(["arena", "--a", spec, "--b", "random", "--variant", "mini", "--games", "2", "--json"]) == 0, spec
        out = json.loads(capsys.readouterr().out)
        assert out["a"] == spec and out["games"] == 2
        assert main(["eval", "--checkpoint", ck, "--vs", f"{spec},random", "--games", "2", "--json"]) == 0, spec
        out = json.loads(capsys.readouterr().out)
        assert f"{spec}_win_rate" in out and "random_win_rate" in out
        monkeypatch.setattr("sys.stdin", io.StringIO(""))  # end of input: leave after the first screen
        assert main(["play", "--vs", spec, "--variant", "mini", "--seed", "1", "--seat", "1", "--plain"]) == 0, spec
        out = capsys.readouterr().out
        assert "Your move" in out and "End of input" in out  # the opponent moved first, then the person left


@pytest.mark.parametrize("spec, problem", BAD_SPECS)
def test_arena_eval_and_play_refuse_a_bad_spec_with_its_message(ck, spec, problem, capsys):
    for argv in (
        ["arena", "--a", spec, "--b", "random", "--games", "2"],
        ["eval", "--checkpoint", ck, "--vs", spec, "--games", "2"],
        ["play", "--vs", spec, "--seed", "1"],
    ):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert problem in err and "Traceback" not in err, (argv, err)
        assert len(err) < 2500  # a bad spec is quoted cut short, never echoed whole


def test_the_server_seats_every_spec_and_refuses_bad_ones(ck, tmp_path):
    from fastapi.testclient import TestClient

    from deepcfr.serve import ServeSettings, create_app

    client = TestClient(create_app(ServeSettings(runs=str(tmp_path), checkpoints=[ck])))
    for spec in valid_specs(ck):
        r = client.post("/api/games", json={"opponent": spec, "seat": 1, "seed": 3, "variant": "mini"})
        assert r.status_code == 200, (spec, r.text)
    for spec, problem in BAD_SPECS:
        r = client.post("/api/games", json={"opponent": spec, "seat": 1})
        assert 400 <= r.status_code < 500 and "error" in r.json(), (spec, r.text)
        if len(spec) <= 255:  # longer ones may be cut off by the request's own length limit first
            assert problem in r.json()["error"], (spec, r.json())


def test_improve_takes_every_spec_as_opponent_and_a_search_as_teacher(ck):
    from deepcfr.improve import ImproveRunConfig
    from deepcfr.improve.labelling import LabelChunk
    from deepcfr.parallel.chunks import ChunkRunner, ModuleNetworks
    from deepcfr.train.config import ConfigError, config_from_dict

    game = LostCitiesGame.from_params("mini")
    runner = ChunkRunner(game)
    for spec in valid_specs(ck):
        config = config_from_dict(
            {
                "improve": {
                    "opponents": [spec, "self"],
                    "eval_opponents": [spec],
                    "teacher": f"{FAST}:heuristic_careful",
                }
            },
            config_class=ImproveRunConfig,
        )
        assert config.improve.opponents[0] == spec
        chunk = LabelChunk(
            index=0,
            round=1,
            games=2,
            teacher=config.improve.teacher,
            temperature=5.0,
            teacher_seed=1,
            deal_seed=2,
            play_seed=3,
            opponent=spec,
        )
        result = chunk.run(runner, ModuleNetworks({}))
        assert result.score_diffs.shape == (2,) and result.positions is not None
    # the teacher over the learner: the network the round trains, by name
    net = load_player(ck, game).agent.strategy_net
    chunk = LabelChunk(
        index=0, round=1, games=2, teacher=f"{FAST}:learner", temperature=5.0, teacher_seed=1, deal_seed=2, play_seed=3
    )
    assert chunk.network_names() == {"learner"}
    assert chunk.run(runner, ModuleNetworks({"learner": net})).positions is not None
    for spec, problem in BAD_SPECS[1:-1]:  # form errors: a bot name or `learner` is checked when built
        for section in ({"opponents": [spec]}, {"eval_opponents": [spec]}, {"teacher": spec}, {"eval_search": spec}):
            with pytest.raises(ConfigError, match=problem.replace("[", r"\[")):
                config_from_dict({"improve": section}, config_class=ImproveRunConfig)


def test_the_config_lists_take_specs(ck):
    from deepcfr.train.config import ConfigError, config_from_dict
    from deepcfr.train.trainer import Trainer

    base = {
        "game": {"name": "lost_cities", "variant": "mini"},
        "network": {"hidden_size": 8},
        "traversal": {"algorithm": "outcome", "traversals_per_player": 4, "chunk_size": 4, "opponent": "league"},
        "memory": {"advantage_capacity": 64, "strategy_capacity": 64},
        "eval": {"games": 2},
    }
    for spec in valid_specs(ck):
        anchored = parse_player(spec).kind in ("bot", "checkpoint") and not parse_player(spec).greedy
        # the anchor nearly always (the current policy must keep a share: the average strategy learns from it)
        league = {
            "anchor": spec,
            "weight_anchor": 1.0,
            "weight_current": 1e-6,
            "weight_recent": 0.0,
            "weight_older": 0.0,
        }
        config = config_from_dict(
            {**base, "eval": {"games": 2, "opponents": [spec]}, "league": league if anchored else {}}
        )
        with Trainer(config, load_player=load_player) as trainer:
            metrics = trainer.evaluate()
            assert f"eval/{spec}/average/win_rate" in metrics
            if config.league.anchor is not None:  # an iteration traverses against the anchor alone
                trainer.run_iteration()
                assert trainer.iteration == 1
    for spec in (f"{ck}@greedy", f"{FAST}:random"):
        config = config_from_dict({**base, "league": {"anchor": spec, "weight_anchor": 1.0}})
        with pytest.raises(ValueError, match="the anchor is a bot or a checkpoint's sampled policy"):
            Trainer(config, load_player=load_player)
    with pytest.raises(ValueError, match="league.anchor names players .'random'.: give the Trainer load_player="):
        Trainer(config_from_dict({**base, "league": {"anchor": "random", "weight_anchor": 1.0}}))
    with pytest.raises(ConfigError, match="league.weight_current must be > 0"):
        config_from_dict({**base, "league": {"anchor": "random", "weight_anchor": 1.0, "weight_current": 0.0}})
    for spec, problem in BAD_SPECS[1:-1]:
        for section in ({"eval": {"opponents": [spec]}}, {"league": {"anchor": spec}}):
            with pytest.raises(ConfigError, match=problem.replace("[", r"\[")):
                config_from_dict(section)


def test_the_rollout_policy_is_a_spec(ck):
    game = LostCitiesGame.from_params("mini")
    obs = game.observe(game.init(3, torch.Generator().manual_seed(0)), 0)
    mask = game.legal_mask(game.init(3, torch.Generator().manual_seed(0)))
    for rollout in ("heuristic_careful", ck, f"{ck}@greedy", "base"):
        player = load_player(f"{FAST}:random", game, search_settings={"rollout_policy": rollout})
        actions = player.act(obs, mask)
        assert bool(mask.gather(1, actions[:, None]).all())
        if rollout not in ("base", "heuristic_careful"):
            assert player.search.rollout.has_policy  # the network plays the rollouts
    with pytest.raises(ValueError, match="a search cannot play the rollouts"):
        load_player(f"{FAST}:random", game, search_settings={"rollout_policy": "search:random"})
    with pytest.raises(ValueError, match="rollout_policy.*unknown bot 'nobody'"):
        load_player(f"{FAST}:random", game, search_settings={"rollout_policy": "nobody"})


def test_learner_is_a_name_only_where_a_network_is_given(ck):
    game = LostCitiesGame.from_params("mini")
    with pytest.raises(PlayerSpecError, match="the network that improve trains"):
        load_player("search:learner", game)
    net = load_player(ck, game).agent.strategy_net
    player = load_player("learner@greedy", game, networks={"learner": net})
    assert player.greedy and player.name == "learner@greedy"


@needs_champion
def test_the_champion_is_a_spec_everywhere(ck, capsys, monkeypatch, tmp_path):
    from fastapi.testclient import TestClient

    from deepcfr.serve import ServeSettings, create_app

    client = TestClient(create_app(ServeSettings(runs=str(tmp_path))))  # served without --checkpoint
    champions = client.get("/api/info").json()["champions"]
    # the strongest measured (its card: the search where it beats the network head to head) first
    from deepcfr.players.shipped import strongest_champion_spec

    first = strongest_champion_spec()
    assert [c["spec"] for c in champions] == [first] + [s for s in ("champion@greedy", "search:champion") if s != first]
    assert "strongest" in champions[0]["label"] and "strongest" not in champions[1]["label"]
    for spec in CHAMPION_SPECS:
        assert main(["arena", "--a", spec, "--b", "random", "--games", "2", "--json"]) == 0, spec
        assert json.loads(capsys.readouterr().out)["a"] == spec
        assert client.post("/api/games", json={"opponent": spec, "seat": 1, "seed": 3}).status_code == 200
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    assert main(["play", "--seed", "1", "--seat", "1", "--plain", "--search-determinizations", "2"]) == 0
    # the default opponent: the strongest measured (the terminal may shorten a search's long name)
    assert ("champion@greedy" if first == "champion@greedy" else "against search:") in capsys.readouterr().out
    # the champion plays classic rules: another variant is refused by name
    assert main(["arena", "--a", "champion", "--b", "random", "--variant", "mini", "--games", "2"]) == 2
    assert "champion is for lost_cities (variant classic)" in capsys.readouterr().err
    with pytest.raises(PlayerSpecError, match="no current policy"):
        load_player("champion@current")
