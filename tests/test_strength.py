"""Strength tables (players/strength.py, `deepcfr strength`): the standard matches of a network,
each row's estimate (corrected where a value function is given), Markdown."""

import json

import torch

from deepcfr.games.registry import make_game
from deepcfr.players.strength import markdown, match_row, strength_matches
from deepcfr.train.value_fn import FullStateValue, value_network


def test_standard_matches_include_what_the_search_adds():
    matches = strength_matches("net.pt", ["random", "heuristic_balanced"], "ref.pt", 2000,
                               ["search:{net}"], 400, ["heuristic_balanced"])
    assert matches == [("net.pt@greedy", "ref.pt@greedy", 2000), ("net.pt@greedy", "random", 2000),
                       ("net.pt@greedy", "heuristic_balanced", 2000),
                       ("search:net.pt", "net.pt@greedy", 400), ("search:net.pt", "heuristic_balanced", 400)]
    assert strength_matches("n", ["random"], None, 10, ["search:{net}"], 0) == [("n@greedy", "random", 10)]


def test_rows_stand_on_the_corrected_estimate_where_there_is_one():
    game = make_game("lost_cities", variant="mini")
    plain = match_row(game, "heuristic_careful", "random", 40, seed=1)
    assert (plain["score_diff"], plain["score_diff_ci"]) == (plain["mean_score_diff"], plain["score_diff_ci95"])
    torch.manual_seed(0)
    value = FullStateValue(game, value_network(game, 16, 1))
    row = match_row(game, "heuristic_careful", "random", 40, seed=1, value_fn=value)
    assert row["mean_score_diff"] == plain["mean_score_diff"]  # the same games
    assert (row["score_diff"], row["score_diff_ci"]) == (row["corrected_score_diff"], row["corrected_ci95"])
    table = markdown([plain, row])
    assert "corrected" in table.splitlines()[0] and "variance ratio" in table.splitlines()[0]
    assert f"{row['corrected_score_diff']:+.2f}" in table.splitlines()[3]


def test_strength_command(capsys):
    from deepcfr.cli.main import main

    assert main(["strength", "champion", "--vs", "random", "--games", "20", "--value-fn", "none", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["champion@greedy vs random"]["games"] == 20
    assert out["champion@greedy vs random"]["score_diff"] > 0
