"""Strength tables (players/strength.py, `deepcfr strength`): the standard matches of a network,
each row's estimate (corrected where a value function is given), Markdown."""

import json

import pytest
import torch

from deepcfr.fitted.value_fn import FullStateValue, value_network
from deepcfr.games.registry import make_game
from deepcfr.players.strength import markdown, match_row, strength_matches


def test_standard_matches_include_what_the_search_adds():
    matches = strength_matches(
        "net.pt", ["random", "heuristic_balanced"], "ref.pt", 2000, ["search:{net}"], 400, ["heuristic_balanced"]
    )
    assert matches == [
        ("net.pt@greedy", "ref.pt@greedy", 2000),
        ("net.pt@greedy", "random", 2000),
        ("net.pt@greedy", "heuristic_balanced", 2000),
        ("search:net.pt", "net.pt@greedy", 400),
        ("search:net.pt", "heuristic_balanced", 400),
    ]
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


# --- the benchmark population (players/population.py, `deepcfr strength SPEC --population`) -------------


def _row(member, diff, ci):
    return {"member": member, "score_diff": diff, "score_diff_ci": ci}


def test_population_summary_is_the_mean_its_ci_and_the_worst_member():
    from deepcfr.players.population import member_target, population_summary

    rows = [_row("a", 10.0, 3.0), _row("b", -2.0, 4.0), _row("c", 4.0, 0.0)]
    summary = population_summary(rows)
    assert summary["population_score"] == 4.0
    assert summary["population_ci"] == 5.0 / 3  # independent matches: sqrt(9 + 16 + 0) / 3
    assert (summary["worst_member"], summary["worst_score_diff"], summary["worst_score_diff_ci"]) == ("b", -2.0, 4.0)
    assert summary["member_count"] == 3
    assert member_target(1.0, 4) == 2.0 and member_target(None, 4) is None  # each member's CI for the mean's


def test_population_lists_every_kind_of_member_and_past_champions_when_shipped(tmp_path):
    from deepcfr.players.population import POPULATION_BOTS, POPULATION_VERSION, Member, population_specs
    from deepcfr.players.strength import REFERENCE_FILE

    assert POPULATION_VERSION >= 1
    specs = population_specs(tmp_path / "absent")
    assert [m.spec for m in specs] == list(POPULATION_BOTS) + [f"{REFERENCE_FILE}@greedy"]
    assert len(set(POPULATION_BOTS)) >= 10 and "heuristic_balanced" in POPULATION_BOTS and "denier" in POPULATION_BOTS
    for name in ("round_13.pt", "round_1.pt", "round_7.pt", "round_19.pt", "notes.txt", "round_x.pt"):
        (tmp_path / name).write_bytes(b"")
    members = population_specs(tmp_path)
    past = [m for m in members if m.kind == "past_champion"]
    assert [m.name for m in past] == [f"champion round {n}@greedy" for n in (1, 7, 13, 19)]
    assert past[0].spec == f"{tmp_path / 'round_1.pt'}@greedy"
    # the sampled champion is a fixed file: the population stays when another champion ships
    assert members[-1] == Member("champion round 19 sampled", str(tmp_path / "round_19.pt"), "champion")


def test_population_skips_what_cannot_play_with_a_reason():
    from deepcfr.players.population import POPULATION_BOTS, past_champion_files, population_members, same_player

    mini = make_game("lost_cities", variant="mini")
    members, skipped = population_members(mini, "heuristic_balanced")
    assert [m.name for m in members] == list(POPULATION_BOTS)
    assert [m.name for m in members if m.kind == "self"] == ["heuristic_balanced"]  # counted, as 0 +- 0
    reasons = {s["member"]: s["reason"] for s in skipped}
    past = {f"champion round {n}@greedy" for n, _ in past_champion_files()}
    assert past >= {"champion round 7@greedy", "champion round 13@greedy"}
    assert set(reasons) == {"reference@greedy", "champion round 19 sampled"} | past  # networks of the classic rules
    assert "mini" in reasons["champion round 19 sampled"] and "mini" in reasons["reference@greedy"]
    kuhn_members, _ = population_members(make_game("kuhn"))
    assert [m.name for m in kuhn_members] == ["random"]
    assert same_player("reference/../reference/x.pt@greedy", "reference/x.pt@greedy")
    assert not same_player("champion", "champion@greedy")
    assert same_player("search:denier", "search:denier") and not same_player("search:denier", "denier")


def test_population_rows_have_every_member_and_the_summary_reads_them():
    from deepcfr.players.population import population_members, population_rows, population_summary

    game = make_game("lost_cities", variant="mini")
    members, _ = population_members(game, "heuristic_careful")
    seen = []
    rows = population_rows(game, "heuristic_careful", members, 4, seed=2, on_row=seen.append)
    assert [r["member"] for r in rows] == [m.name for m in members] and seen == rows
    assert all(r["games"] == (0 if r["kind"] == "self" else 4) and r["a"] == "heuristic_careful" for r in rows)
    (itself,) = [r for r in rows if r["kind"] == "self"]
    assert itself["member"] == "heuristic_careful" and itself["score_diff"] == itself["score_diff_ci"] == 0
    summary = population_summary(rows)
    floors = [r for r in rows if r["kind"] == "floor"]
    scored = [r for r in rows if r["kind"] != "floor"]
    assert {r["member"] for r in floors} == {"random", "discard_only"} == set(summary["floors"])
    assert summary["member_count"] == len(scored) == len(rows) - 2  # the floors are played, not scored
    assert abs(summary["population_score"] - sum(r["score_diff"] for r in scored) / len(scored)) < 1e-12
    assert summary["worst_score_diff"] == min(r["score_diff"] for r in scored)
    # a floor's margin moves the score not at all, any other member's by its share
    bumped = [dict(r, score_diff=r["score_diff"] + (100 if r["kind"] == "floor" else 0)) for r in rows]
    assert population_summary(bumped)["population_score"] == summary["population_score"]


def test_strength_population_command(capsys):
    from deepcfr.cli.main import main
    from deepcfr.cli.strength_cmd import population_spec
    from deepcfr.players.population import POPULATION_BOTS

    assert (
        population_spec("champion") == "champion@greedy" and population_spec("champion@average") == "champion@average"
    )
    assert population_spec("x/net.pt") == "x/net.pt@greedy" and population_spec("denier") == "denier"
    assert (
        main(
            [
                "strength",
                "heuristic_careful",
                "--population",
                "--variant",
                "mini",
                "--games",
                "4",
                "--value-fn",
                "none",
                "--json",
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert out["player"] == "heuristic_careful" and out["population_version"] >= 1
    rows = out["members"]
    assert [r["member"] for r in rows] == list(POPULATION_BOTS)
    scored = [r for r in rows if r["kind"] != "floor"]
    assert abs(out["population_score"] - sum(r["score_diff"] for r in scored) / len(scored)) < 1e-9
    assert abs(out["population_ci"] - sum(r["score_diff_ci"] ** 2 for r in scored) ** 0.5 / len(scored)) < 1e-9
    assert out["worst_member"] == min(scored, key=lambda r: r["score_diff"])["member"]
    assert {s["member"] for s in out["skipped"]} >= {"reference@greedy", "champion round 19 sampled"}


def test_strength_population_of_the_champion_plays_the_networks(capsys):
    from deepcfr.cli.main import main

    assert main(["strength", "champion", "--population", "--games", "2", "--value-fn", "none", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["player"] == "champion@greedy"
    members = {r["member"]: r for r in out["members"]}
    assert {"reference@greedy", "champion round 19 sampled", "random", "patient_opener"} <= set(members)
    sampled = members["champion round 19 sampled"]
    assert sampled["kind"] == "champion" and sampled["games"] == 2
    # the shipped file is the league run's round 2, none of the past rounds: nothing counted as itself
    assert members["champion round 13@greedy"]["kind"] == "past_champion"
    assert [m for m, r in members.items() if r["kind"] == "self"] == []
    assert members["champion round 19@greedy"]["kind"] == "past_champion"
    assert out["skipped"] == []


def test_a_version_1_record_is_rescored_without_its_floors():
    from deepcfr.players.population import record_summary

    members = {
        "random": [180.0, 2.0, 2000],
        "denier": [20.0, 1.0, 2000],
        "me": [0.0, 0.0, 0],
        "rusher": [10.0, 1.0, 2000],
    }
    summary = record_summary(members)
    assert summary["population_score"] == pytest.approx(10.0) and summary["member_count"] == 3
    assert summary["floors"] == ["random"] and summary["worst_member"] == "rusher"
    assert summary["population_ci"] == pytest.approx(2**0.5 / 3)
