"""The command line with player specs and search: arena with two checkpoints, eval --json with a
search sweep, bench search, and play --search in a pseudo-terminal."""

import json
import re

import pytest

from deepcfr.cli.main import main
from search_helpers import tiny_checkpoint
from test_play_terminal import PROMPT, terminal  # noqa: F401 (the fixture)


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    d = tmp_path_factory.mktemp("cli")
    return (
        tiny_checkpoint(d / "a.pt"),
        tiny_checkpoint(d / "b.pt", hidden=16),
        tiny_checkpoint(d / "classic.pt", variant="classic"),
    )


def _json(capsys) -> dict:
    lines = [x for x in capsys.readouterr().out.splitlines() if x.strip()]
    assert len(lines) == 1, lines
    return json.loads(lines[0])


def test_arena_two_checkpoints_and_a_search_agent(checkpoints, capsys):
    a, b, _ = checkpoints
    assert main(["arena", "--a", str(a), "--b", f"{b}@current", "--games", "8", "--json"]) == 0
    out = _json(capsys)
    assert out["games"] == 8 and out["a"] == str(a) and 0 <= out["win_rate"] <= 1
    assert "a_rollouts" not in out
    assert (
        main(["arena", "--a", f"search:{a}", "--b", str(a), "--games", "4", "--search-determinizations", "2", "--json"])
        == 0
    )
    out = _json(capsys)
    assert out["a_search_determinizations"] == 2 and out["a_search_candidates"] == 2  # the default
    assert out["a_rollouts"] > 0 and out["a_seconds_per_move"] > 0 and out["a_capped_rollouts"] >= 0
    # A bot against a checkpoint plays the checkpoint's game.
    assert main(["arena", "--a", "heuristic_balanced", "--b", str(a), "--games", "4", "--json"]) == 0
    assert _json(capsys)["games"] == 4


def test_arena_refuses_mismatched_checkpoints_and_bad_specs(checkpoints, capsys):
    a, _, classic = checkpoints
    assert main(["arena", "--a", str(a), "--b", str(classic), "--games", "4"]) == 2
    assert (
        "is for lost_cities (variant classic), but this match plays lost_cities (variant mini"
        in capsys.readouterr().err
    )
    assert main(["arena", "--a", "search:", "--b", "random", "--games", "4"]) == 2
    assert "valid player specs" in capsys.readouterr().err
    assert main(["arena", "--a", f"search[bogus=1]:{a}", "--b", "random", "--games", "4"]) == 2
    assert "valid settings: determinizations" in capsys.readouterr().err
    # settings YAML cannot read, or that are no scalar, are the spec's own errors
    for bad in ("search[candidates=[2,3]]:random", "search[candidates=@]:random", "search[candidates={a: 1}]:random"):
        assert main(["arena", "--a", bad, "--b", "random", "--games", "4"]) == 2
        err = capsys.readouterr().err
        assert "search setting 'candidates'" in err and "valid player specs" in err


def test_eval_json_reports_each_search_setting(checkpoints, capsys):
    a, _, _ = checkpoints
    assert (
        main(
            [
                "eval",
                "--checkpoint",
                str(a),
                "--vs",
                "random,self",
                "--games",
                "4",
                "--search",
                "--sweep",
                "determinizations=2,3",
                "--search-candidates",
                "2",
                "--json",
            ]
        )
        == 0
    )
    out = _json(capsys)
    assert "self_win_rate" in out and "random_win_rate_ci95" in out
    assert [p["settings"]["determinizations"] for p in out["search"]] == [2, 3]
    for point in out["search"]:
        for name in ("random", "self"):
            figures = point[name]
            for key in (
                "win_rate",
                "win_rate_ci95",
                "mean_score_diff",
                "score_diff_ci95",
                "rollout_decisions_per_second",
                "seconds_per_move",
                "capped_rollouts",
            ):
                assert key in figures
            assert figures["seconds_per_move"] > 0
    assert main(["eval", "--checkpoint", str(a), "--games", "4", "--sweep", "determinizations=2"]) == 2
    assert "--sweep needs --search" in capsys.readouterr().err


def test_bench_search_prints_the_rate_beside_the_forward_bound(checkpoints, capsys):
    a, _, _ = checkpoints
    assert (
        main(
            [
                "bench",
                "search",
                "--player",
                str(a),
                "--decisions",
                "4",
                "--plies",
                "4",
                "--repeats",
                "1",
                "--search-determinizations",
                "2",
                "--search-candidates",
                "4",
                "--json",
            ]
        )
        == 0
    )
    out = _json(capsys)
    assert out["player"] == f"search:{a}" and out["rollout_decisions_per_second"] > 0
    assert out["forward_bound_states_per_second"] > 0 and out["fraction_of_forward_bound"] > 0
    assert out["rollout_batch"] == out["decisions"] * 4 * 2


def test_play_search_shows_progress_and_the_candidates_at_question_mark(terminal, checkpoints):  # noqa: F811
    a, _, _ = checkpoints
    t = terminal(
        "play", "--checkpoint", str(a), "--search", "--search-determinizations", "4", "--seat", "1", "--seed", "2"
    )
    screen = t.expect(PROMPT)
    assert "is thinking (4 hidden-card samples x up to 2 moves" in screen
    t.send("?\n")
    shown = t.expect(PROMPT)
    assert "candidates when it chose" in shown
    assert "value +- 95% CI" in shown and "(base move)" in shown and "<- played" in shown
    assert re.search(r"[+-]\d+\.\d \+- \d+\.\d", shown)  # a value with its confidence interval
    t.send("q\n")
    assert t.wait() == 0
